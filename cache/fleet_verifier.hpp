#pragma once
// What the fleet tier loads: an entry read from the server is accepted only when it decodes,
// answers the exact request, and carries a valid signature by a trusted key (or the operator
// chose to trust any writer); everything else is refused, counted and warned about once per
// cause.

#include "cache/entry_signature.hpp"
#include "cache/fleet_connection.hpp"
#include "cache/redis_client.hpp"
#include "cache/remote_counters.hpp"
#include "cache/remote_entry.hpp"

#include <cujit/cache.hpp>

#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace cujit::detail {

/// What the caller asks the fleet for: the request key and what the entry must be.
struct RemoteRequest {
  std::string request_key;
  std::string kind;
  Target target;
  std::string name;  ///< the kernel's name, for messages
};

/// Decides which entries read from the fleet may be loaded. Thread-safe.
class FleetVerifier {
 public:
  /// Trusts the keys of `config.trusted_keys_path` (read on first use) or, with
  /// `config.trust_any_writer`, unsigned entries and unknown signers too. Warns through
  /// `connection` and counts refusals into `counters`; both must outlive it. Never throws.
  FleetVerifier(const CacheConfig& config, FleetConnection& connection, RemoteCounters& counters);

  /// Loads the trusted keys once (a key file that cannot be used: one warning); false when
  /// fleet kernels may not be loaded at all (no trusted key, and not trusting any writer; one
  /// warning). Never throws.
  bool can_load();
  /// The entry in `value` (read for `request`), when every check passes; else refuses it and
  /// returns nullopt. Call after can_load() returned true. Never throws but bad_alloc.
  std::optional<RemoteEntry> accept(const RemoteRequest& request, const BoundedValue& value);
  /// Refuses the entry of `request` for `cause` (`signer`: the key id its signature names, or
  /// ""): counted, and warned about the first time this cause is met.
  void refuse(const RemoteRequest& request, const std::string& cause, const std::string& signer);

  /// While alive, refusals on this thread are neither counted nor warned about: a re-read of
  /// an entry already refused once in this lookup is not counted again.
  class Quiet {
   public:
    Quiet() noexcept { quiet_ = true; }
    ~Quiet() { quiet_ = false; }
    Quiet(const Quiet&) = delete;
    Quiet& operator=(const Quiet&) = delete;
  };

 private:
  static thread_local bool quiet_;

  std::string trusted_keys_path_;
  bool trust_any_writer_;
  FleetConnection& connection_;
  RemoteCounters& counters_;
  std::mutex mutex_;  // the keys, loaded once
  bool keys_loaded_ = false;
  std::vector<TrustedKey> trusted_;
};

}  // namespace cujit::detail
