#include "cache/entry_signature.hpp"

#include "core/checked_file.hpp"
#include "support/sha256.hpp"

#include <cujit/error.hpp>

#include <fcntl.h>
#include <sodium/core.h>
#include <sodium/crypto_generichash_blake2b.h>
#include <sodium/crypto_sign_ed25519.h>
#include <sodium/utils.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <string_view>

namespace cujit::detail {
namespace {

// Names the signed message's encoding (entry_digest); a signature of another encoding does
// not verify. v3 covered only the keys, kind, target, binary and versions.
constexpr const char* kEntrySignatureFormat = "cujit-entry-signature-v4";
constexpr const char* kSecretTag = "cujit-ed25519-secret-v1";
constexpr const char* kPublicTag = "cujit-ed25519-public-v1";
constexpr std::size_t kPublicBytes = crypto_sign_ed25519_PUBLICKEYBYTES;
constexpr std::size_t kSecretBytes = crypto_sign_ed25519_SECRETKEYBYTES;
constexpr std::size_t kSignatureBytes = crypto_sign_ed25519_BYTES;

const unsigned char* bytes(const std::string& s) {
  return reinterpret_cast<const unsigned char*>(s.data());
}

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw CacheError("cujit: key file " + path + ": " + what);
}

// A key file is one short line; anything much longer is not one (and is not read to its end).
constexpr std::size_t kMaxKeyFileBytes = 4096;

// The content of key file `path`, opened once and checked through that descriptor (a name
// checked and then opened again can be swapped for a link in between): a regular file (never a
// link, and a FIFO is not waited on), owned by this user (or root when `root_ok`), with none of
// the `forbidden` mode bits (`why` says which).
std::string read_key_file(const std::string& path, bool root_ok, mode_t forbidden,
                          const char* why) {
  struct stat st {};
  const FileDescriptor fd = open_and_stat(path, false, st);
  if (!fd.valid() && errno == ELOOP) fail(path, "is not a regular file (a symbolic link)");
  if (!fd.valid()) fail(path, std::strerror(errno));
  if (!S_ISREG(st.st_mode)) fail(path, "is not a regular file");
  if (st.st_uid != ::geteuid() && !(root_ok && st.st_uid == 0)) {
    fail(path, "is owned by another user");
  }
  if ((st.st_mode & forbidden) != 0) fail(path, why);
  std::optional<std::string> text = read_bounded(fd.get(), kMaxKeyFileBytes);
  if (!text && errno == EFBIG) fail(path, "is too long to be a key file");
  if (!text) fail(path, std::string("cannot be read (") + std::strerror(errno) + ")");
  return *text;
}

// The one line "<tag> <hex>" of key file `path` (its `text`), decoded to `size` bytes.
std::string read_key_line(const std::string& path, const std::string& text, const char* tag,
                          std::size_t size) {
  std::istringstream in(text);
  std::string found_tag, hex;
  in >> found_tag >> hex;
  if (found_tag != tag) fail(path, std::string("does not start with '") + tag + "'");
  std::string out(size, '\0');
  std::size_t length = 0;
  if (hex.size() != 2 * size ||
      sodium_hex2bin(reinterpret_cast<unsigned char*>(out.data()), size, hex.c_str(), hex.size(),
                     nullptr, &length, nullptr) != 0 ||
      length != size) {
    fail(path, "holds no key of " + std::to_string(size) + " bytes");
  }
  return out;
}

void write_file(const std::string& path, const std::string& text, mode_t mode, bool force) {
  const int fd =
      ::open(path.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | (force ? O_TRUNC : O_EXCL), mode);
  if (fd < 0) fail(path, std::string("cannot be created (") + std::strerror(errno) + ")");
  const bool ok = ::fchmod(fd, mode) == 0 &&
                  ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  if (!ok) fail(path, "could not be written");
}

// libsodium asks for sodium_init() before its other functions (thread-safe, idempotent).
void ensure_sodium() {
  static const bool ready = sodium_init() >= 0;
  if (!ready) throw CacheError("cujit: libsodium could not initialise");
}

}  // namespace

void prepare_signatures() { ensure_sodium(); }

SigningKey generate_signing_key() {
  ensure_sodium();
  SigningKey key;
  key.secret.resize(kSecretBytes);
  key.public_key.resize(kPublicBytes);
  crypto_sign_ed25519_keypair(reinterpret_cast<unsigned char*>(key.public_key.data()),
                              reinterpret_cast<unsigned char*>(key.secret.data()));
  return key;
}

std::string key_id(const std::string& public_key) {
  return to_hex(sha256(public_key)).substr(0, 16);
}

// The signed message is one BLAKE2b-256 hash over every field of the entry a reader uses, each
// as an 8-byte little-endian length and its bytes, after a tag naming this encoding's version:
// what the loader reads (binary, lowered names, metadata, target, kind), what tools show and
// replay (log, options, source), the keys and versions. Only the use times (created,
// last_used) and the checksum (derived from signed fields) are left out. BLAKE2b rather than
// SHA-256: as strong here and about three times faster in libsodium (SIMD after sodium_init;
// its SHA-256 is portable C), and a fleet or signed deployment hit hashes the whole cubin.
namespace {

class EntryHasher {
 public:
  EntryHasher() { crypto_generichash_blake2b_init(&state_, nullptr, 0, kDigestBytes); }
  EntryHasher& field(std::string_view bytes) {
    unsigned char length[8];
    for (int i = 0; i < 8; ++i) length[i] = static_cast<unsigned char>(bytes.size() >> (8 * i));
    crypto_generichash_blake2b_update(&state_, length, sizeof length);
    crypto_generichash_blake2b_update(&state_, reinterpret_cast<const unsigned char*>(bytes.data()),
                                      bytes.size());
    return *this;
  }
  EntryHasher& number(std::uint64_t value) { return field(std::to_string(value)); }
  std::string finish() {
    std::string out(kDigestBytes, '\0');
    crypto_generichash_blake2b_final(&state_, reinterpret_cast<unsigned char*>(out.data()),
                                     out.size());
    return out;
  }

 private:
  static constexpr std::size_t kDigestBytes = crypto_generichash_blake2b_BYTES;
  crypto_generichash_blake2b_state state_;
};

}  // namespace

std::string entry_digest(const CacheRecord& record, const std::string& request_key) {
  ensure_sodium();
  return EntryHasher()
      .field(kEntrySignatureFormat)
      .field(request_key)
      .field(record.content_key)
      .field(record.kind)
      .field(record.program.target.name())
      .field(record.program.binary)
      .field(encode_names(record.program.lowered_names))
      .field(record.program.metadata)
      .field(record.program.log)
      .field(record.options)
      .number(record.source_size)
      .field(record.source_zstd)
      .number(static_cast<std::uint64_t>(record.codegen_version))
      .field(record.nvrtc_version)
      .finish();
}

bool signs_alike(const CacheRecord& a, const CacheRecord& b) {
  return entry_digest(a, "") == entry_digest(b, "");
}

std::string sign_entry(const CacheRecord& record, const std::string& request_key,
                       const SigningKey& key) {
  if (key.secret.size() != kSecretBytes || key.public_key.size() != kPublicBytes) {
    throw CacheError("cujit: signing key has the wrong size");
  }
  ensure_sodium();
  const std::string digest = entry_digest(record, request_key);
  std::string signature(kSignatureBytes, '\0');
  crypto_sign_ed25519_detached(reinterpret_cast<unsigned char*>(signature.data()), nullptr,
                               bytes(digest), digest.size(), bytes(key.secret));
  return key.public_key + signature;
}

const char* to_string(SignatureVerdict verdict) noexcept {
  switch (verdict) {
    case SignatureVerdict::Valid:
      return "valid";
    case SignatureVerdict::Unsigned:
      return "unsigned";
    case SignatureVerdict::Malformed:
      return "malformed signature";
    case SignatureVerdict::UnknownSigner:
      return "signed by an untrusted key";
    case SignatureVerdict::BadSignature:
      return "signature does not match the entry";
  }
  return "unknown";
}

SignatureVerdict verify_entry(const CacheRecord& record, const std::string& request_key,
                              const std::string& signature, const std::vector<TrustedKey>& trusted,
                              std::string* signer) {
  if (signature.empty()) return SignatureVerdict::Unsigned;
  if (signature.size() != kPublicBytes + kSignatureBytes) return SignatureVerdict::Malformed;
  const std::string public_key = signature.substr(0, kPublicBytes);
  if (signer != nullptr) *signer = key_id(public_key);
  bool known = false;
  for (const TrustedKey& t : trusted) known = known || t.public_key == public_key;
  if (!known) return SignatureVerdict::UnknownSigner;
  ensure_sodium();
  const std::string digest = entry_digest(record, request_key);
  return crypto_sign_ed25519_verify_detached(bytes(signature) + kPublicBytes, bytes(digest),
                                             digest.size(), bytes(public_key)) == 0
             ? SignatureVerdict::Valid
             : SignatureVerdict::BadSignature;
}

void write_key_pair(const std::string& prefix, const SigningKey& key, bool force) {
  auto hex = [](const std::string& raw) {
    std::string out(2 * raw.size() + 1, '\0');
    sodium_bin2hex(out.data(), out.size(), bytes(raw), raw.size());
    out.pop_back();
    return out;
  };
  write_file(prefix + ".key", std::string(kSecretTag) + " " + hex(key.secret) + "\n", 0600, force);
  write_file(prefix + ".pub", std::string(kPublicTag) + " " + hex(key.public_key) + "\n", 0644,
             force);
}

SigningKey read_signing_key(const std::string& path) {
  const std::string text =
      read_key_file(path, false, 077, "is accessible by group or others (chmod 600 it)");
  SigningKey key;
  key.secret = read_key_line(path, text, kSecretTag, kSecretBytes);
  key.public_key.resize(kPublicBytes);
  crypto_sign_ed25519_sk_to_pk(reinterpret_cast<unsigned char*>(key.public_key.data()),
                               bytes(key.secret));
  return key;
}

std::vector<TrustedKey> read_trusted_keys(const std::string& paths) {
  std::vector<TrustedKey> out;
  std::istringstream list(paths);
  for (std::string path; std::getline(list, path, ':');) {
    if (path.empty()) continue;
    // Whoever can rewrite a trusted key file chooses whose code is loaded: the same rule as
    // for deployment databases.
    const std::string text = read_key_file(path, true, 022, "is writable by group or others");
    TrustedKey key;
    key.public_key = read_key_line(path, text, kPublicTag, kPublicBytes);
    key.id = key_id(key.public_key);
    out.push_back(std::move(key));
  }
  return out;
}

}  // namespace cujit::detail
