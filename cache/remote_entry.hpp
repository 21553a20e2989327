#pragma once
// A kernel as stored in the fleet tier: one Redis string per request key, holding the whole
// record (so a hit needs one read) and its signature. Everything read back is untrusted: the
// decoder checks every length, the record's checksum and that the entry answers the request
// key it was found under, before the signature is even looked at.

#include "cache/record.hpp"

#include <cstdint>
#include <string>
#include <string_view>

namespace cujit::detail {

/// Version of the value layout and of the key names; part of every key.
inline constexpr int kRemoteFormatVersion = 1;
/// Largest value the fleet tier reads (64 MiB); larger ones are refused unread.
inline constexpr std::uint64_t kMaxRemoteValue = std::uint64_t{64} << 20;

/// The Redis key of the kernel answering `request_key`: "cujit:1:kernel:<request key>". The
/// request key is a SHA-256 of the kernel's kind, canonical specialisation, target, codegen
/// and record versions and compiler class: no path, host or user name.
std::string remote_kernel_key(const std::string& request_key);
/// The Redis key of the fleet lease of `request_key`: "cujit:1:lease:<request key>".
std::string remote_lease_key(const std::string& request_key);
/// The pattern matching every kernel key (for SCAN).
std::string remote_kernel_pattern();
/// The request key in a kernel key; empty when `key` is not one.
std::string request_key_of(std::string_view remote_key);

/// A decoded fleet entry.
struct RemoteEntry {
  std::string request_key;
  CacheRecord record;     ///< checksum verified; source included
  std::string signature;  ///< sign_entry blob; empty when unsigned
};

/// The value stored for `record` answering `request_key`.
std::string encode_remote_entry(const std::string& request_key, const CacheRecord& record,
                                const std::string& signature);

/// Why a value was not decoded.
enum class RemoteDecode : unsigned char { Ok, Malformed, WrongRequest, BadChecksum };
const char* to_string(RemoteDecode result) noexcept;

/// Decodes `value` found under `expected_request_key` into `*entry`.
RemoteDecode decode_remote_entry(std::string_view value, const std::string& expected_request_key,
                                 RemoteEntry* entry);

}  // namespace cujit::detail
