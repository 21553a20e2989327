#include "support/sha256.hpp"

// libsodium's SHA-256 (cmake/CujitStaticDeps.cmake says why libsodium, linked statically and
// hidden). crypto_hash_sha256 needs no sodium_init: it has one portable implementation and
// no state to set up, so the first hash of a process costs no more than any other (the
// first kernel lookup of a process hashes its request key).
#include <sodium/crypto_hash_sha256.h>

namespace cujit::detail {
namespace {

crypto_hash_sha256_state* as_state(const std::unique_ptr<void, Sha256::Free>& p) {
  return static_cast<crypto_hash_sha256_state*>(p.get());
}

const unsigned char* as_bytes(std::string_view bytes) {
  return reinterpret_cast<const unsigned char*>(bytes.data());
}

}  // namespace

void Sha256::Free::operator()(void* state) const noexcept {
  delete static_cast<crypto_hash_sha256_state*>(state);
}

Sha256::Sha256() : ctx_(new crypto_hash_sha256_state) {
  // Always 0: initialising only writes the constant starting state.
  crypto_hash_sha256_init(as_state(ctx_));
}

Sha256::Sha256(const Sha256& other) : ctx_(new crypto_hash_sha256_state(*as_state(other.ctx_))) {}

Sha256& Sha256::update(std::string_view bytes) {
  if (!bytes.empty()) crypto_hash_sha256_update(as_state(ctx_), as_bytes(bytes), bytes.size());
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
  crypto_hash_sha256_update(as_state(ctx_), le, sizeof le);
  return *this;
}

std::string Sha256::finish() {
  unsigned char out[crypto_hash_sha256_BYTES];
  crypto_hash_sha256_final(as_state(ctx_), out);
  return std::string(reinterpret_cast<const char*>(out), sizeof out);
}

std::string sha256(std::string_view bytes) {
  unsigned char out[crypto_hash_sha256_BYTES];
  crypto_hash_sha256(out, as_bytes(bytes), bytes.size());
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
