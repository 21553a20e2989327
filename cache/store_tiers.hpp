#pragma once
// The tiers over the cache's databases (tier.hpp): the deployment databases, the writable
// database, and code for compatible targets in either; and the fleet tier over Redis.

#include "cache/remote_tier.hpp"
#include "cache/store_set.hpp"
#include "cache/tier.hpp"

namespace cujit::detail {

/// The read-only deployment databases, in order; with require_signed_deployments, only what a
/// trusted key signed.
class DeploymentTier final : public Tier {
 public:
  explicit DeploymentTier(StoreSet& stores) : stores_(stores) {}
  Found by_request(Search& search) override;
  Found by_content(Search& search) override;

 private:
  StoreSet& stores_;
};

/// The writable database: the kernels read ahead first, then by request key; by content key
/// (mapping the request to what it found); the per-host lease before compiling; keeps what
/// was compiled.
class WritableTier final : public Tier {
 public:
  explicit WritableTier(StoreSet& stores) : stores_(stores) {}
  Found by_request(Search& search) override;
  Found by_content(Search& search) override;
  Found before_compile(Search& search) override;
  void keep(Search& search, const CacheRecord* record) override;

 private:
  Found found_by_content(Search& search, const std::shared_ptr<Store>& w);
  StoreSet& stores_;
};

/// Code for another target that runs where the request's is wanted (request.compatible, best
/// first), by request key in the deployment databases, then the writable one. PTX is JIT-
/// compiled for the request's target (Compiler::jit_ptx) and that cubin stored for it.
class CompatibleTier final : public Tier {
 public:
  explicit CompatibleTier(StoreSet& stores) : stores_(stores) {}
  Found by_request(Search& search) override;

 private:
  std::shared_ptr<const CompiledProgram> serve(Search& search, Lookup& lookup,
                                               const std::string& where);
  StoreSet& stores_;
};

/// The fleet tier (CacheConfig::remote_url): by request key after every local tier; its lease
/// before compiling (or the publication of the host holding it); publishes what was compiled.
/// What it serves is kept in the writable database, with the signature it was verified by.
class FleetTier final : public Tier {
 public:
  FleetTier(RemoteTier& remote, StoreSet& stores) : remote_(remote), stores_(stores) {}
  Found by_request(Search& search) override;
  Found before_compile(Search& search) override;
  void keep(Search& search, const CacheRecord* record) override;
  void abandon(Search& search) noexcept override;

 private:
  Found served(Search& search, RemoteEntry entry);
  RemoteTier& remote_;
  StoreSet& stores_;
};

}  // namespace cujit::detail
