#pragma once
// Signed deployment databases (CacheConfig::require_signed_deployments): whether an entry a
// deployment database found may be served, judged by its stored signature against the trusted
// keys, with one warning per cause per database.

#include "cache/entry_signature.hpp"
#include "cache/record.hpp"

#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace cujit::detail {

/// The trusted keys of one cache configuration and the refusals already warned about.
/// Thread-safe.
class SignaturePolicy {
 public:
  /// `trusted_keys_path` as CacheConfig::trusted_keys_path (`a.pub:b.pub`); read on first
  /// need, once. Reads nothing now and never throws.
  explicit SignaturePolicy(std::string trusted_keys_path);
  SignaturePolicy(const SignaturePolicy&) = delete;
  SignaturePolicy& operator=(const SignaturePolicy&) = delete;

  /// True when `record`, found in the deployment database `database` under `signed_key` (the
  /// request key it was looked up by; empty: by its content key) with `signature` (a
  /// sign_entry blob, empty when unsigned), verifies against a trusted key. Otherwise warns
  /// once per cause per database (naming the database, the cause and the signer's key id when
  /// known) and returns false. With no trusted keys (none configured, or a file that cannot be
  /// used), warns once and refuses everything. Never throws.
  bool admits(const std::string& database, const CacheRecord& record, const std::string& signed_key,
              const std::string& signature);

 private:
  // The trusted keys, read on the first call; empty (after one warning) when none can be used.
  const std::vector<TrustedKey>& keys();
  void warn_once(const std::string& database, const std::string& cause, const std::string& signer);

  std::string trusted_keys_path_;
  std::once_flag keys_read_;
  std::vector<TrustedKey> keys_;
  std::mutex mutex_;
  std::set<std::string> warned_;  // "database\ncause"
};

}  // namespace cujit::detail
