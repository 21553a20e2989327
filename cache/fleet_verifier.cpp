#include "cache/fleet_verifier.hpp"

#include "support/warning.hpp"

namespace cujit::detail {

thread_local bool FleetVerifier::quiet_ = false;

FleetVerifier::FleetVerifier(const CacheConfig& config, FleetConnection& connection,
                             RemoteCounters& counters)
    : trusted_keys_path_(config.trusted_keys_path),
      trust_any_writer_(config.trust_any_writer),
      connection_(connection),
      counters_(counters) {}

bool FleetVerifier::can_load() {
  std::lock_guard lock(mutex_);
  if (!keys_loaded_) {
    keys_loaded_ = true;
    try {
      if (!trusted_keys_path_.empty()) trusted_ = read_trusted_keys(trusted_keys_path_);
    } catch (const Error& e) {
      warn(without_cujit_prefix(e.what()) + "; no fleet kernel is loaded without a trusted key");
    }
    if (trusted_.empty() && !trust_any_writer_) {
      connection_.warn_once(
          "no trusted keys",
          "kernels found there are not loaded, since no trusted key is configured "
          "(CUJIT_CACHE_TRUSTED_KEYS; or CUJIT_CACHE_TRUST_ANY_WRITER=1 to load whatever anyone "
          "who can write the server stored); kernels compiled here are still published");
    }
  }
  return !trusted_.empty() || trust_any_writer_;
}

void FleetVerifier::refuse(const RemoteRequest& request, const std::string& cause,
                           const std::string& signer) {
  if (quiet_) return;
  counters_.refused.fetch_add(1, std::memory_order_relaxed);
  const std::string kernel = request.name.empty() ? "" : " of kernel '" + request.name + "'";
  connection_.warn_once(
      "refused: " + cause,
      "refused the entry" + kernel + " (" + remote_kernel_key(request.request_key) + "): " + cause +
          (signer.empty() ? "" : " (signer " + signer + ")") +
          "; compiling it here instead (further entries refused for this cause are only counted)");
}

std::optional<RemoteEntry> FleetVerifier::accept(const RemoteRequest& request,
                                                 const BoundedValue& value) {
  if (value.status == BoundedValue::Status::TooLarge) {
    refuse(request,
           "a value of " + std::to_string(value.size) + " bytes, over the " +
               std::to_string(kMaxRemoteValue) + "-byte limit; not read",
           "");
    return std::nullopt;
  }
  RemoteEntry entry;
  const RemoteDecode decoded = decode_remote_entry(value.value, request.request_key, &entry);
  if (decoded != RemoteDecode::Ok) {
    refuse(request, to_string(decoded), "");
    return std::nullopt;
  }
  // The signature first: it covers every field, so nothing below reads an unverified one.
  std::string signer;
  const SignatureVerdict verdict =
      verify_entry(entry.record, request.request_key, entry.signature, trusted_, &signer);
  const bool trusted_anyway = trust_any_writer_ && (verdict == SignatureVerdict::Unsigned ||
                                                    verdict == SignatureVerdict::UnknownSigner);
  if (verdict != SignatureVerdict::Valid && !trusted_anyway) {
    refuse(request, to_string(verdict), signer);
    return std::nullopt;
  }
  if (entry.record.kind != request.kind || entry.record.program.target != request.target) {
    refuse(request, "an entry for another kind or target", "");
    return std::nullopt;
  }
  return entry;
}

}  // namespace cujit::detail
