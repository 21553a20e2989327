#include "cache/signature_policy.hpp"

#include "support/warning.hpp"

#include <cujit/error.hpp>

#include <string_view>

namespace cujit::detail {
SignaturePolicy::SignaturePolicy(std::string trusted_keys_path)
    : trusted_keys_path_(std::move(trusted_keys_path)) {}

const std::vector<TrustedKey>& SignaturePolicy::keys() {
  std::call_once(keys_read_, [this] {
    const std::string refused =
        "; every kernel of a deployment database is refused (signed deployments are required: "
        "CUJIT_CACHE_REQUIRE_SIGNED)";
    try {
      keys_ = read_trusted_keys(trusted_keys_path_);
    } catch (const Error& e) {
      keys_.clear();  // fail closed: a key file that cannot be used trusts nobody
      warn("trusted keys cannot be used (" + without_cujit_prefix(e.what()) + ")" + refused);
      return;
    }
    if (keys_.empty()) {
      warn(
          "no trusted key is configured (CUJIT_CACHE_TRUSTED_KEYS, CacheConfig::"
          "trusted_keys_path)" +
          refused);
    }
  });
  return keys_;
}

void SignaturePolicy::warn_once(const std::string& database, const std::string& cause,
                                const std::string& signer) {
  {
    std::lock_guard lock(mutex_);
    if (!warned_.insert(database + "\n" + cause).second) return;
  }
  warn("deployment database " + database + ": kernel refused, " + cause +
       (signer.empty() ? std::string() : " (key id " + signer + ")") +
       "; kernels refused for this reason are looked up elsewhere or compiled (counted in "
       "CacheStats::deployment_refused, warned once)");
}

bool SignaturePolicy::admits(const std::string& database, const CacheRecord& record,
                             const std::string& signed_key, const std::string& signature) {
  const std::vector<TrustedKey>& trusted = keys();
  if (trusted.empty()) return false;  // warned once, when the keys were read
  std::string signer;
  try {
    const SignatureVerdict verdict = verify_entry(record, signed_key, signature, trusted, &signer);
    if (verdict == SignatureVerdict::Valid) return true;
    warn_once(database, to_string(verdict), signer);
  } catch (const Error& e) {
    // libsodium could not initialise: nothing can be verified, so nothing is served.
    warn_once(database, without_cujit_prefix(e.what()), "");
  }
  return false;
}

}  // namespace cujit::detail
