#pragma once
// Ed25519 signatures over cache entries (libsodium), so that a reader can require that a
// kernel was produced by a builder it trusts: the signature covers every field of the entry a
// reader uses (binary, lowered names, metadata, log, options, source, content key, kind,
// target, codegen and NVRTC versions) and the request it answers, in one versioned encoding,
// so that no field of a signed entry can be edited, and a valid signature of another entry,
// or for another request, does not verify.
// The fleet tier (Redis) and signed deployment databases build on this.

#include "cache/record.hpp"

#include <string>
#include <vector>

namespace cujit::detail {

/// A writer's key pair (raw libsodium bytes).
struct SigningKey {
  std::string secret;      ///< 64 bytes (crypto_sign_SECRETKEYBYTES)
  std::string public_key;  ///< 32 bytes
};

/// A public key a reader trusts, with the short id messages name it by.
struct TrustedKey {
  std::string public_key;  ///< 32 bytes
  std::string id;          ///< key_id(public_key)
};

/// Initialises libsodium now (CPU feature detection, the random source), so that the first
/// verification does not pay for it; idempotent. Throws CacheError when it cannot initialise.
void prepare_signatures();

/// A fresh random key pair. Throws CacheError when libsodium cannot initialise.
SigningKey generate_signing_key();

/// 16 hex digits naming a public key (the start of its SHA-256).
std::string key_id(const std::string& public_key);

/// The 32-byte digest an entry's signature signs: BLAKE2b-256 over a format tag
/// ("cujit-entry-signature-v4") and every field of `record` but its use times and checksum,
/// each length-prefixed, in a fixed order. `request_key` binds the signature to the request it
/// answers (a fleet entry, a deployment database's request mapping); empty for a signature of
/// the entry alone, found by its content key. The record must carry its compressed source
/// (`source_zstd`): without it the digest is another one and the signature does not verify.
std::string entry_digest(const CacheRecord& record, const std::string& request_key);

/// True when a signature of `a` vouches for `b` too: they agree in every field entry_digest
/// covers. Throws CacheError when libsodium cannot initialise.
bool signs_alike(const CacheRecord& a, const CacheRecord& b);

/// The signature blob stored with an entry: the signer's public key (32 bytes) then the
/// Ed25519 signature of entry_digest(record, request_key) (64 bytes).
std::string sign_entry(const CacheRecord& record, const std::string& request_key,
                       const SigningKey& key);

/// What verify_entry found.
enum class SignatureVerdict {
  Valid,          ///< signed by a trusted key, over exactly this entry
  Unsigned,       ///< no signature
  Malformed,      ///< not a signature blob (wrong length)
  UnknownSigner,  ///< well formed, by a key not in the trusted list
  BadSignature,   ///< by a trusted key, but not over this entry (tampered or swapped)
};
const char* to_string(SignatureVerdict verdict) noexcept;

/// Checks `signature` (a sign_entry blob) against `record` found under `request_key` (empty:
/// by content key) and the `trusted` keys; on Valid and on UnknownSigner sets `*signer` (when
/// not null) to the signer's key id.
SignatureVerdict verify_entry(const CacheRecord& record, const std::string& request_key,
                              const std::string& signature, const std::vector<TrustedKey>& trusted,
                              std::string* signer);

/// Writes `prefix`.key (the secret key, mode 0600) and `prefix`.pub (the public key), one line
/// each ("cujit-ed25519-secret-v1 <hex>", "cujit-ed25519-public-v1 <hex>"). Refuses to replace
/// existing files unless `force`. Throws CacheError naming the file.
void write_key_pair(const std::string& prefix, const SigningKey& key, bool force);

/// Reads a secret key file written by write_key_pair (CUJIT_CACHE_SIGNING_KEY). Refuses a file
/// that is not a regular file owned by this user, or is readable or writable by group or others
/// (a secret others can read signs for them too). Throws CacheError naming the file.
SigningKey read_signing_key(const std::string& path);

/// Reads public key files (CUJIT_CACHE_TRUSTED_KEYS: paths separated by ':'), each holding one
/// "cujit-ed25519-public-v1 <hex>" line. Refuses a file that is not a regular file owned by
/// this user or root, or is writable by group or others. Throws CacheError naming the file.
std::vector<TrustedKey> read_trusted_keys(const std::string& paths);

}  // namespace cujit::detail
