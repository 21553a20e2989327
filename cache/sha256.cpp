#include "cache/sha256.hpp"

#include <cujit/error.hpp>

// OpenSSL's low-level SHA-256 functions are deprecated in favour of EVP, but EVP's first use
// initialises OpenSSL's provider machinery, which costs about 1 ms in a fresh process, and
// the first kernel lookup of a process hashes its request key: the low-level functions run
// the same assembly with no initialisation (13 us for the first hash).
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/sha.h>

namespace cujit::detail {
namespace {

SHA256_CTX* as_ctx(const std::unique_ptr<void, Sha256::Free>& p) {
  return static_cast<SHA256_CTX*>(p.get());
}

}  // namespace

void Sha256::Free::operator()(void* ctx) const noexcept { delete static_cast<SHA256_CTX*>(ctx); }

Sha256::Sha256() : ctx_(new SHA256_CTX) {
  if (SHA256_Init(as_ctx(ctx_)) != 1)
    throw CacheError("cujit: OpenSSL could not initialise SHA-256");
}

Sha256& Sha256::update(std::string_view bytes) {
  if (!bytes.empty()) SHA256_Update(as_ctx(ctx_), bytes.data(), bytes.size());
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
  SHA256_Update(as_ctx(ctx_), le, sizeof le);
  return *this;
}

std::string Sha256::finish() {
  unsigned char out[SHA256_DIGEST_LENGTH];
  SHA256_Final(out, as_ctx(ctx_));
  return std::string(reinterpret_cast<const char*>(out), sizeof out);
}

std::string sha256(std::string_view bytes) {
  unsigned char out[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), out);
  return std::string(reinterpret_cast<const char*>(out), sizeof out);
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
