#include "cache/sha256.hpp"

#include <cujit/error.hpp>

#include <openssl/evp.h>

namespace cujit::detail {
namespace {

// Fetching the algorithm once avoids OpenSSL 3's per-call provider lookup (microseconds).
const EVP_MD* sha256_md() {
  static const EVP_MD* md = [] {
    const EVP_MD* fetched = EVP_MD_fetch(nullptr, "SHA256", nullptr);
    return fetched != nullptr ? fetched : EVP_sha256();
  }();
  return md;
}

EVP_MD_CTX* as_ctx(const std::unique_ptr<void, Sha256::Free>& p) {
  return static_cast<EVP_MD_CTX*>(p.get());
}

}  // namespace

void Sha256::Free::operator()(void* ctx) const noexcept {
  EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(ctx));
}

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  if (!ctx_ || EVP_DigestInit_ex(as_ctx(ctx_), sha256_md(), nullptr) != 1) {
    throw CacheError("cujit: OpenSSL could not initialise SHA-256");
  }
}

Sha256& Sha256::update(std::string_view bytes) {
  if (!bytes.empty()) EVP_DigestUpdate(as_ctx(ctx_), bytes.data(), bytes.size());
  return *this;
}

Sha256& Sha256::field(std::string_view bytes) {
  field(static_cast<std::int64_t>(bytes.size()));
  return update(bytes);
}

Sha256& Sha256::field(std::int64_t value) {
  unsigned char le[8];
  auto v = static_cast<std::uint64_t>(value);
  for (int i = 0; i < 8; ++i) le[i] = static_cast<unsigned char>(v >> (8 * i));
  EVP_DigestUpdate(as_ctx(ctx_), le, sizeof le);
  return *this;
}

std::string Sha256::finish() {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_DigestFinal_ex(as_ctx(ctx_), out, &size);
  return std::string(reinterpret_cast<const char*>(out), size);
}

std::string sha256(std::string_view bytes) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), out, &size, sha256_md(), nullptr) != 1) {
    throw CacheError("cujit: OpenSSL SHA-256 failed");
  }
  return std::string(reinterpret_cast<const char*>(out), size);
}

std::string to_hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(bytes.size() * 2, '0');
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    auto b = static_cast<unsigned char>(bytes[i]);
    out[2 * i] = kDigits[b >> 4];
    out[2 * i + 1] = kDigits[b & 15];
  }
  return out;
}

}  // namespace cujit::detail
