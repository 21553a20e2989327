#include "cache/store_tiers.hpp"

#include "cache/record.hpp"
#include "support/warning.hpp"

#include <string_view>

namespace cujit::detail {
namespace {

// A sealed record is served only for its own kind and target. Found by request key, another
// one is a miss (the mapping is rewritten when the kernel is stored); found by content key,
// which names the target, it is mislabelled and handled as damaged.
bool made_for(const std::string& kind, const Target& target, const KernelRequest& request) {
  return kind == request.kind && target == request.target;
}

bool is_for(const Lookup& lookup, const std::string& kind, const Target& target) {
  return lookup.status == Lookup::Status::Hit && lookup.record.kind == kind &&
         lookup.record.program.target == target;
}

bool serves(const Lookup& lookup, const KernelRequest& request) {
  return lookup.status == Lookup::Status::Hit &&
         made_for(lookup.record.kind, lookup.record.program.target, request);
}

Lookup mislabelled_as_damaged(Lookup lookup, const KernelRequest& request) {
  if (lookup.status == Lookup::Status::Hit && !serves(lookup, request)) {
    lookup.status = Lookup::Status::Damaged;
  }
  return lookup;
}

Found found(Lookup& lookup, CacheOutcome where) {
  return {std::make_shared<const CompiledProgram>(std::move(lookup.record.program)), where};
}

TargetMatch match_of(const Target& target) {
  if (target.arch_specific) return TargetMatch::ArchSpecific;
  return target.format == BinaryFormat::Ptx ? TargetMatch::Ptx : TargetMatch::CompatibleCubin;
}

}  // namespace

Found DeploymentTier::by_request(Search& search) {
  const std::string& rkey = search.request_key();
  for (const auto& d : stores_.deployments()) {
    Lookup lookup = stores_.guarded_find(d, [&](Store& s) { return s.find_by_request(rkey); });
    if (serves(lookup, search.request()) && stores_.admits(*d, rkey, lookup)) {
      return found(lookup, CacheOutcome::DeploymentHit);
    }
    if (lookup.status == Lookup::Status::Damaged) stores_.handle_damaged(d, lookup);
  }
  return {};
}

Found DeploymentTier::by_content(Search& search) {
  const std::string& ckey = search.content_key();
  for (const auto& d : stores_.deployments()) {
    Lookup lookup = mislabelled_as_damaged(
        stores_.guarded_find(d, [&](Store& s) { return s.find_by_content(ckey); }),
        search.request());
    if (serves(lookup, search.request()) && stores_.admits(*d, "", lookup)) {
      return found(lookup, CacheOutcome::DeploymentHit);
    }
    if (lookup.status == Lookup::Status::Damaged) stores_.handle_damaged(d, lookup);
  }
  return {};
}

Found WritableTier::by_request(Search& search) {
  const std::string& rkey = search.request_key();
  const std::shared_ptr<Store> w = stores_.writable();
  auto pre = stores_.read_ahead().take(rkey);  // read ahead, checksum verified then
  if (pre && made_for(pre->kind, pre->program->target, search.request())) {
    if (w) stores_.guarded_write(w, [&](Store& s) { s.touch(pre->content_key); });
    return {std::move(pre->program), CacheOutcome::DiskHit};
  }
  if (!w) return {};
  Lookup lookup = stores_.guarded_find(w, [&](Store& s) { return s.find_by_request(rkey); });
  if (serves(lookup, search.request())) return found(lookup, CacheOutcome::DiskHit);
  if (lookup.status == Lookup::Status::Damaged) stores_.handle_damaged(w, lookup);
  return {};
}

// By content key in `w`: a hit maps the request to it.
Found WritableTier::found_by_content(Search& search, const std::shared_ptr<Store>& w) {
  const std::string& ckey = search.content_key();
  Lookup lookup = mislabelled_as_damaged(
      stores_.guarded_find(w, [&](Store& s) { return s.find_by_content(ckey); }), search.request());
  if (serves(lookup, search.request())) {
    stores_.guarded_write(w, [&](Store& s) { s.link(search.request_key(), ckey); });
    return found(lookup, CacheOutcome::DiskHit);
  }
  if (lookup.status == Lookup::Status::Damaged) stores_.handle_damaged(w, lookup);
  return {};
}

Found WritableTier::by_content(Search& search) {
  const std::shared_ptr<Store> w = stores_.writable();
  return w ? found_by_content(search, w) : Found{};
}

// Takes the kernel's lease (when the database is shared by processes and can still be
// written), then looks the kernel up by content key again: another process may have stored it
// since this one missed it, while holding the lease or just before.
Found WritableTier::before_compile(Search& search) {
  const std::shared_ptr<Store> w = stores_.writable();
  const int timeout_ms = stores_.settings().lease_timeout_ms;
  if (!w || timeout_ms <= 0 || stores_.writes_disabled() || w->lease_directory().empty()) {
    return {};
  }
  search.lease = KeyLease::acquire(w->lease_directory(), search.content_key(),
                                   std::chrono::milliseconds(timeout_ms), nullptr);
  return found_by_content(search, w);
}

void WritableTier::keep(Search& search, const CacheRecord* record) {
  const std::shared_ptr<Store> w = stores_.writable();
  if (record == nullptr || !w) return;
  const KernelRequest& r = search.request();
  stores_.guarded_write(w, [&](Store& s) {
    s.put(*record, search.request_key());
    if (r.link_without_headers && !r.include_digest.empty()) {
      s.link(request_key(r.kind, r.spec, r.target), record->content_key);
    }
  });
}

Found CompatibleTier::by_request(Search& search) {
  const KernelRequest& request = search.request();
  if (request.compatible.empty()) return {};
  const std::vector<std::shared_ptr<Store>> deps = stores_.deployments();
  const std::shared_ptr<Store> w = stores_.writable();
  for (const Target& target : request.compatible) {
    const std::string key = search.request_key_for(target);
    for (std::size_t k = 0; k <= deps.size(); ++k) {
      const std::shared_ptr<Store>& store = k < deps.size() ? deps[k] : w;
      if (!store) continue;
      Lookup lookup = stores_.guarded_find(store, [&](Store& s) { return s.find_by_request(key); });
      if (lookup.status == Lookup::Status::Damaged) stores_.handle_damaged(store, lookup);
      if (!is_for(lookup, request.kind, target)) continue;
      if (k < deps.size() && !stores_.admits(*store, key, lookup)) continue;
      auto program = serve(search, lookup, store->name());
      if (!program) continue;
      return {std::move(program),
              k < deps.size() ? CacheOutcome::DeploymentHit : CacheOutcome::DiskHit,
              match_of(target)};
    }
  }
  return {};
}

// The program a compatible entry serves: a cubin as it is; PTX JIT-compiled for the request's
// target and stored for it (null, after a warning, when the JIT fails).
std::shared_ptr<const CompiledProgram> CompatibleTier::serve(Search& search, Lookup& lookup,
                                                             const std::string& where) {
  const KernelRequest& request = search.request();
  CompiledProgram& ptx = lookup.record.program;
  if (ptx.target.format != BinaryFormat::Ptx || !search.compiler().jits_ptx()) {
    return std::make_shared<const CompiledProgram>(std::move(ptx));
  }
  CompiledProgram cubin;
  try {
    cubin = search.compiler().jit_ptx(ptx);
    if (cubin.target != request.target) throw CacheError("the JIT made " + cubin.target.name());
  } catch (const Error& e) {
    warn("PTX for " + ptx.target.name() + " in " + where + " could not be JIT-compiled for " +
         request.target.name() + " (" + without_cujit_prefix(e.what()) + "); trying further");
    return nullptr;
  }
  if (const std::shared_ptr<Store> w = stores_.writable()) {
    const SourceProgram& source = search.source();
    const std::string& ckey = search.content_key();
    stores_.guarded_write(w, [&](Store& s) {
      s.put(make_record(ckey, request.kind, source, cubin, now_ms()), search.request_key());
    });
  }
  return std::make_shared<const CompiledProgram>(std::move(cubin));
}

// A kernel the fleet served (verified): kept in the writable database from now on, with the
// signature it was verified by (so that `cujit-cache verify --trusted-keys` can check the local
// copy of what came from a signed source again), written there by the tier's thread, off the
// caller's path (about 1 ms of an SQLite commit).
Found FleetTier::served(Search& search, RemoteEntry entry) {
  entry.record.last_used = now_ms();
  auto program = std::make_shared<const CompiledProgram>(entry.record.program);
  if (std::shared_ptr<Store> w = stores_.writable()) {
    remote_.run_later([stores = &stores_, w, rkey = search.request_key(),
                       entry = std::move(entry)] {
      stores->guarded_write(w, [&](Store& s) { s.put(entry.record, rkey, {entry.signature, ""}); });
    });
  }
  return {std::move(program), CacheOutcome::RemoteHit};
}

Found FleetTier::by_request(Search& search) {
  const KernelRequest& r = search.request();
  auto entry = remote_.fetch(RemoteRequest{search.request_key(), r.kind, r.target, r.name});
  return entry ? served(search, std::move(*entry)) : Found{};
}

// Takes the kernel's fleet lease, or, when another host holds it, waits for that host's
// publication (a miss when it did not come in time).
Found FleetTier::before_compile(Search& search) {
  const KernelRequest& r = search.request();
  const RemoteRequest remote{search.request_key(), r.kind, r.target, r.name};
  const FleetLease lease = remote_.lease(remote);
  search.fleet_lease = lease == FleetLease::Held;
  if (lease == FleetLease::Unavailable) return {};
  // Held: another host may have published it between the lookup and the lease.
  auto entry = search.fleet_lease ? remote_.recheck(remote) : remote_.wait(remote);
  if (!entry) return {};
  if (search.fleet_lease) remote_.release(search.request_key());
  search.fleet_lease = false;
  return served(search, std::move(*entry));
}

void FleetTier::keep(Search& search, const CacheRecord* record) {
  if (record != nullptr) {
    remote_.publish(search.request_key(), *record, search.fleet_lease);
  } else if (search.fleet_lease) {
    remote_.release(search.request_key());
  }
  search.fleet_lease = false;
}

void FleetTier::abandon(Search& search) noexcept {
  if (!search.fleet_lease) return;
  search.fleet_lease = false;
  try {
    remote_.release(search.request_key());
  } catch (...) {
    // The lease expires on the server.
  }
}

}  // namespace cujit::detail
