#pragma once
// SHA-256 through libsodium (statically linked), used for cache keys and binary checksums.

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace cujit::detail {

/// An incremental SHA-256. Not thread-safe (one instance per thread); cheap to create.
class Sha256 {
 public:
  /// Throws only std::bad_alloc.
  Sha256();
  /// A hasher in the state `other` is in (both go on independently).
  Sha256(const Sha256& other);
  Sha256& operator=(const Sha256&) = delete;
  Sha256(Sha256&&) noexcept = default;
  /// Appends raw bytes.
  Sha256& update(std::string_view bytes);
  /// Appends one field of a composite key: its length (8 bytes, little endian) then its
  /// bytes, so that ("ab", "c") and ("a", "bc") hash differently.
  Sha256& field(std::string_view bytes);
  /// Appends an integer field.
  Sha256& field(std::int64_t value);
  /// The digest (32 bytes); the hasher must not be used afterwards.
  std::string finish();

  /// Frees the hashing state.
  struct Free {
    void operator()(void* ctx) const noexcept;
  };

 private:
  std::unique_ptr<void, Free> ctx_;
};

/// SHA-256 of `bytes` as 32 raw bytes. Thread-safe.
std::string sha256(std::string_view bytes);

/// Lower-case hexadecimal spelling of `bytes`.
std::string to_hex(std::string_view bytes);

}  // namespace cujit::detail
