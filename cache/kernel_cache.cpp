#include "cache/kernel_cache.hpp"

#include "cache/compiler_identity.hpp"

#include "cache/key_lease.hpp"
#include "cache/log.hpp"
#include "cache/manifest.hpp"
#include "cache/record.hpp"
#include "cache/remote_tier.hpp"
#include "cache/server_text.hpp"
#include "cache/signature_policy.hpp"
#include "cache/sqlite_store.hpp"
#include "cache/store.hpp"
#include "cache/unavailable.hpp"
#include "cache/warning.hpp"
#include "core/nvtx.hpp"

#include <cujit/error.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string_view>
#include <thread>
#include <unordered_map>

namespace cujit::detail {
namespace {

std::mutex& replay_mutex() {
  static std::mutex m;
  return m;
}

std::map<std::string, ReplayFn>& replay_registry() {
  static std::map<std::string, ReplayFn> registry;
  return registry;
}

// Error messages start with "cujit: "; warn() adds its own "cujit: warning: ".
using Clock = std::chrono::steady_clock;

// "kernel 'saxpy' (raw, sm_90)": how log messages name a request.
std::string describe(const KernelRequest& r) {
  return "kernel '" + (r.name.empty() ? r.kind : r.name) + "' (" + r.kind + ", " + r.target.name() +
         ")";
}

const char* outcome_text(CacheOutcome outcome) {
  switch (outcome) {
    case CacheOutcome::MemoryHit:
      return "memory hit";
    case CacheOutcome::DiskHit:
      return "hit in the writable database";
    case CacheOutcome::DeploymentHit:
      return "hit in a deployment database";
    case CacheOutcome::RemoteHit:
      return "hit in the fleet tier";
    case CacheOutcome::Compiled:
      return "compiled";
  }
  return "?";
}

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// Info: where a lookup that missed the memory layer found the kernel (compilations report
// themselves, with their time); Debug: memory hits too.
void log_outcome(const KernelRequest& request, CacheOutcome where, Clock::time_point start) {
  const LogLevel level = where == CacheOutcome::MemoryHit ? LogLevel::Debug : LogLevel::Info;
  if (where == CacheOutcome::Compiled || !log_enabled(level)) return;
  char ms[32];
  std::snprintf(ms, sizeof ms, "%.3f", ms_since(start));
  log_message(level, describe(request) + ": " + outcome_text(where) + " (" + ms + " ms)");
}

std::string without_prefix(const char* message) {
  std::string_view m(message);
  if (m.substr(0, 7) == "cujit: ") m.remove_prefix(7);
  return std::string(m);
}

std::size_t hash_request(const KernelRequest& r) noexcept {
  std::size_t h = std::hash<std::string_view>{}(r.spec);
  h ^= std::hash<std::string_view>{}(r.kind) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  h ^= (static_cast<std::size_t>(r.target.arch) * 2 + static_cast<std::size_t>(r.target.format)) *
       0x9e3779b97f4a7c15ULL;
  return h;
}

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

struct Slot {
  std::string kind;
  std::string spec;
  Target target;
  std::shared_ptr<const CompiledProgram> program;  // set once compiled; guarded by the map lock
  std::shared_future<std::shared_ptr<const CompiledProgram>> pending;

  bool matches(const KernelRequest& r) const {
    return target == r.target && kind == r.kind && spec == r.spec;
  }
};

// A kernel read ahead from the writable database: its checksum was verified when read.
struct Preloaded {
  std::string content_key;
  std::string kind;
  std::shared_ptr<const CompiledProgram> program;
  std::size_t rank = 0;  ///< 0: the most recently used
};

// The persistent layers of one configuration. Replaced as a whole by configure(), so that
// lookups in flight keep using the layers they started with.
struct Layers {
  CacheConfig config;
  std::mutex mutex;
  bool writable_opened = false;
  std::shared_ptr<Store> writable;
  bool writes_disabled = false;
  bool deployments_opened = false;
  std::vector<std::shared_ptr<Store>> deployments;
  std::unique_ptr<ManifestRecorder> recorder;
  bool recorder_failed = false;
  // With config.require_signed_deployments: the trusted keys and the warnings given, created
  // on the first deployment hit.
  std::unique_ptr<SignaturePolicy> signature_policy;
  // Damaged deployment entries already reported ("store\ncontent key"): they cannot be
  // deleted, and a lookup by request key then by content key would find them twice. And
  // writable stores whose damaged entries were warned about once (the store's name).
  std::set<std::string> damaged_reported;
  // Recently used kernels of the writable database, read ahead by prefetch() and keyed by
  // request key; a lookup takes its entry out (the memory layer keeps the program after).
  std::mutex preload_mutex;
  std::unordered_map<std::string, Preloaded> preloaded;
  // The fleet tier (CacheConfig::remote_url); null when none is configured.
  std::unique_ptr<RemoteTier> remote;

  StoreOptions store_options() const {
    StoreOptions o;
    o.allow_foreign_owner = config.allow_foreign_owner;
    o.busy_timeout_ms = config.busy_timeout_ms;
    o.max_size = config.max_size;
    return o;
  }

  std::string writable_path() const {
    if (!config.database_path.empty()) return config.database_path;
    std::string dir = config.directory.empty() ? default_cache_directory() : config.directory;
    return dir + "/kernels.db";
  }

  ~Layers() {
    remote.reset();  // finishes its publications first
    try {
      if (writable) writable->flush();
    } catch (...) {
      // Last-used times are a hint.
    }
  }
};

}  // namespace

void register_replay(const std::string& kind, ReplayFn fn) {
  std::lock_guard lock(replay_mutex());
  replay_registry()[kind] = std::move(fn);
}

ReplayedKernel replay(const std::string& manifest_entry, const Target& target) {
  std::string kind = manifest_entry_kind(manifest_entry);
  ReplayFn fn;
  {
    std::lock_guard lock(replay_mutex());
    auto it = replay_registry().find(kind);
    if (it == replay_registry().end()) {
      std::string known;
      for (const auto& [k, f] : replay_registry()) known += (known.empty() ? "" : ", ") + k;
      throw ArgumentError("cujit: no kernel family can replay manifest entries of kind '" + kind +
                          "' (known kinds: " + known + ")");
    }
    fn = it->second;
  }
  return fn(manifest_entry, target);
}

struct KernelCache::Impl {
  mutable std::shared_mutex map_mutex;
  std::unordered_map<std::size_t, std::vector<std::shared_ptr<Slot>>> map;
  std::size_t count = 0;

  mutable std::mutex layers_mutex;
  std::shared_ptr<Layers> layers;

  std::atomic<std::uint64_t> memory_hits{0};
  std::atomic<std::uint64_t> disk_hits{0};
  std::atomic<std::uint64_t> deployment_hits{0};
  std::atomic<std::uint64_t> misses{0};
  std::atomic<std::uint64_t> arch_specific_hits{0};
  std::atomic<std::uint64_t> compatible_cubin_hits{0};
  std::atomic<std::uint64_t> ptx_hits{0};
  std::shared_ptr<RemoteCounters> remote_counters = std::make_shared<RemoteCounters>();
  std::atomic<std::uint64_t> deployment_refused{0};

  std::shared_ptr<Layers> current_layers() const {
    std::lock_guard lock(layers_mutex);
    return layers;
  }

  static std::shared_ptr<Store> writable(Layers& l) {
    std::lock_guard lock(l.mutex);
    if (!l.writable_opened) {
      l.writable_opened = true;
      if (l.config.writable) {
        std::string path = l.writable_path();
        try {
          l.writable = SqliteStore::open_writable(path, l.store_options());
        } catch (const Error& e) {
          warn(without_prefix(e.what()) + "; using the in-process cache only");
        }
      }
    }
    return l.writable;
  }

  static void open_deployments_locked(Layers& l) {
    if (l.deployments_opened) return;
    l.deployments_opened = true;
    for (const auto& path : l.config.deployment_databases) {
      try {
        l.deployments.push_back(SqliteStore::open_read_only(path, l.store_options()));
      } catch (const Error& e) {
        warn(without_prefix(e.what()) + "; deployment database skipped");
      }
    }
  }

  static std::vector<std::shared_ptr<Store>> deployments(Layers& l) {
    std::lock_guard lock(l.mutex);
    open_deployments_locked(l);
    return l.deployments;
  }

  // Turns a storage failure into the fallback the issue asks for, with one warning.
  // `generation` is the store's generation() from before the failed operation.
  static void degrade(Layers& l, const std::shared_ptr<Store>& store, const Error& e,
                      std::uint64_t generation) {
    const StoreFailure failure = store->failure_of(e);
    if (failure == StoreFailure::Corrupt && !store->read_only()) {
      try {
        store->recreate_after_corruption(without_prefix(e.what()), generation);
        return;
      } catch (const Error& again) {
        disable(l, store, again);
        return;
      }
    }
    if (failure == StoreFailure::Full && !store->read_only()) {
      std::lock_guard lock(l.mutex);
      if (!l.writes_disabled) {
        l.writes_disabled = true;
        warn(without_prefix(e.what()) + "; new kernels are kept in the in-process cache only");
      }
      return;
    }
    disable(l, store, e);
  }

  static void disable(Layers& l, const std::shared_ptr<Store>& store, const Error& e) {
    std::lock_guard lock(l.mutex);
    if (l.writable == store) {
      l.writable.reset();
      warn(without_prefix(e.what()) + "; using the in-process cache only");
      return;
    }
    for (auto it = l.deployments.begin(); it != l.deployments.end(); ++it) {
      if (*it == store) {
        l.deployments.erase(it);
        warn(without_prefix(e.what()) + "; deployment database skipped");
        return;
      }
    }
    // Already disabled by another thread, which warned.
  }

  static bool writes_disabled(Layers& l) {
    std::lock_guard lock(l.mutex);
    return l.writes_disabled;
  }

  // Runs a lookup; a storage failure degrades and reads as a miss.
  static std::uint64_t generation_of(const std::shared_ptr<Store>& store) {
    return store->generation();
  }

  template <class F>
  Lookup guarded_find(Layers& l, const std::shared_ptr<Store>& store, F find) {
    std::uint64_t generation = generation_of(store);
    try {
      return find(*store);
    } catch (const Error& e) {
      degrade(l, store, e, generation);
      return {};
    }
  }

  template <class F>
  static void guarded_write(Layers& l, const std::shared_ptr<Store>& store, F write) {
    if (writes_disabled(l)) return;
    std::uint64_t generation = generation_of(store);
    try {
      write(*store);
    } catch (const Error& e) {
      degrade(l, store, e, generation);
    }
  }

  void handle_damaged(Layers& l, const std::shared_ptr<Store>& store, const Lookup& lookup) {
    if (store->read_only()) {
      {
        std::lock_guard lock(l.mutex);
        if (!l.damaged_reported.insert(store->name() + "\n" + lookup.record.content_key).second) {
          return;
        }
      }
      warn("cache entry " + server_text(lookup.record.content_key) + " in deployment database " +
           store->name() + " failed its checksum or field checks; ignored");
      return;
    }
    bool first = false;
    {
      std::lock_guard lock(l.mutex);
      first = l.damaged_reported.insert(store->name()).second;
    }
    // One warning per database and process: a damaged file tends to have many damaged entries.
    if (first) {
      warn("cache entry " + server_text(lookup.record.content_key) + " in " + store->name() +
           " failed its checksum or field checks; deleted it, recompiling (further damaged "
           "entries of this database are deleted without a warning)");
    }
    guarded_write(l, store, [&](Store& s) { s.remove(lookup.record.content_key); });
  }

  static std::optional<Preloaded> take_preloaded(Layers& l, const std::string& rkey) {
    std::lock_guard lock(l.preload_mutex);
    auto it = l.preloaded.find(rkey);
    if (it == l.preloaded.end()) return std::nullopt;
    std::optional<Preloaded> out(std::move(it->second));
    l.preloaded.erase(it);
    return out;
  }

  // Reads the writable database's most recently used kernels into l.preloaded.
  static void preload(Layers& l, const std::shared_ptr<Store>& store) {
    std::size_t limit = 0;
    {
      std::lock_guard lock(l.mutex);
      limit = l.config.preload_records;
    }
    if (limit == 0) return;
    auto recent = store->recent(limit);
    std::uint64_t bytes = 0;
    std::lock_guard lock(l.preload_mutex);
    for (auto& [rkey, record] : recent) {
      bytes += record.program.binary.size();
      if (bytes > kPreloadMaxBytes) break;
      auto program = std::make_shared<const CompiledProgram>(std::move(record.program));
      l.preloaded.emplace(rkey, Preloaded{std::move(record.content_key), std::move(record.kind),
                                          std::move(program), l.preloaded.size()});
    }
  }

  void record(Layers& l, const KernelRequest& request) {
    if (l.config.record_path.empty() || request.manifest_entry.empty()) return;
    ManifestRecorder* recorder = nullptr;
    {
      std::lock_guard lock(l.mutex);
      if (l.recorder_failed) return;
      if (!l.recorder) l.recorder = std::make_unique<ManifestRecorder>(l.config.record_path);
      recorder = l.recorder.get();
    }
    try {
      recorder->record(request.manifest_entry);
    } catch (const ArgumentError& e) {
      warn(without_prefix(e.what()) + "; not recorded");
    } catch (const Error& e) {
      std::lock_guard lock(l.mutex);
      l.recorder_failed = true;
      warn(without_prefix(e.what()) + "; recording stopped");
    }
  }

  std::shared_ptr<const CompiledProgram> resolve(const KernelRequest& request,
                                                 const GenerateFn& generate,
                                                 const CompileFn& compile, CacheOutcome& outcome) {
    std::shared_ptr<Layers> lp = current_layers();
    Layers& l = *lp;
    record(l, request);
    auto found = [&](Lookup& lookup, CacheOutcome where) {
      (where == CacheOutcome::DiskHit ? disk_hits : deployment_hits)
          .fetch_add(1, std::memory_order_relaxed);
      outcome = where;
      return std::make_shared<const CompiledProgram>(std::move(lookup.record.program));
    };
    auto usable = [&](const Lookup& lookup) { return serves(lookup, request); };
    auto by_content = [&](Lookup lookup) { return mislabelled_as_damaged(lookup, request); };

    // 1. By request key: no source generation at all.
    std::vector<std::shared_ptr<Store>> deps = deployments(l);
    std::string rkey = request_key(request.kind, request.spec, request.target);
    for (const auto& d : deps) {
      Lookup lookup = guarded_find(l, d, [&](Store& s) { return s.find_by_request(rkey); });
      if (usable(lookup) && admits(l, *d, rkey, lookup)) {
        return found(lookup, CacheOutcome::DeploymentHit);
      }
      if (lookup.status == Lookup::Status::Damaged) handle_damaged(l, d, lookup);
    }
    std::shared_ptr<Store> w = writable(l);
    auto pre = take_preloaded(l, rkey);  // read ahead, checksum verified then
    if (pre && made_for(pre->kind, pre->program->target, request)) {
      if (w) guarded_write(l, w, [&](Store& s) { s.touch(pre->content_key); });
      disk_hits.fetch_add(1, std::memory_order_relaxed);
      outcome = CacheOutcome::DiskHit;
      return std::move(pre->program);
    }
    if (w) {
      Lookup lookup = guarded_find(l, w, [&](Store& s) { return s.find_by_request(rkey); });
      if (usable(lookup)) return found(lookup, CacheOutcome::DiskHit);
      if (lookup.status == Lookup::Status::Damaged) handle_damaged(l, w, lookup);
      w = writable(l);  // null if the lookup disabled it
    }
    if (auto compatible = find_compatible(l, request, deps, w, rkey, generate, outcome)) {
      return compatible;
    }
    if (auto remote = fetch_remote(l, w, request, rkey, outcome)) return remote;
    CUJIT_LOG_AT(LogLevel::Debug, describe(request) + ": no entry for request key " +
                                      rkey.substr(0, 16) + " in " + std::to_string(deps.size()) +
                                      " deployment database(s)" + (w ? ", the writable one" : "") +
                                      (l.remote ? ", the fleet tier" : "") +
                                      " or compatible targets; generating the source");

    // 2. By content key: the same source may have been compiled for another request.
    SourceProgram source = generate();
    std::string ckey = content_key(source, request.target, request.kind);
    for (const auto& d : deps) {
      Lookup lookup =
          by_content(guarded_find(l, d, [&](Store& s) { return s.find_by_content(ckey); }));
      if (usable(lookup) && admits(l, *d, "", lookup)) {
        return found(lookup, CacheOutcome::DeploymentHit);
      }
      if (lookup.status == Lookup::Status::Damaged) handle_damaged(l, d, lookup);
    }
    if (w) {
      Lookup lookup =
          by_content(guarded_find(l, w, [&](Store& s) { return s.find_by_content(ckey); }));
      if (usable(lookup)) {
        guarded_write(l, w, [&](Store& s) { s.link(rkey, ckey); });
        return found(lookup, CacheOutcome::DiskHit);
      }
      if (lookup.status == Lookup::Status::Damaged) handle_damaged(l, w, lookup);
      w = writable(l);
    }

    // 3. Compile, outside any lock or transaction, once per host, and store if anything can.
    CUJIT_LOG_AT(LogLevel::Debug,
                 describe(request) + ": no entry for content key " + ckey.substr(0, 16));
    std::optional<KeyLease> lease;
    Lookup lookup = take_lease(l, w, request, ckey, lease);
    if (usable(lookup)) {
      guarded_write(l, w, [&](Store& s) { s.link(rkey, ckey); });
      return found(lookup, CacheOutcome::DiskHit);
    }
    if (lookup.status == Lookup::Status::Damaged) handle_damaged(l, w, lookup);
    bool fleet_lease = false;
    if (auto waited = wait_for_fleet(l, w, request, rkey, fleet_lease, outcome)) return waited;
    return compile_and_store(l, w, request, source, ckey, rkey, compile, outcome, fleet_lease);
  }

  static RemoteRequest remote_request(const KernelRequest& request, const std::string& rkey) {
    return RemoteRequest{rkey, request.kind, request.target, request.name};
  }

  // A kernel the fleet tier served (verified): kept in the writable database from now on, with
  // the signature it was verified by (so that `cujit-cache verify --trusted-keys` can check
  // the local copy of what came from a signed source again), written there by the tier's
  // thread, off the caller's path (about 1 ms of an SQLite commit).
  std::shared_ptr<const CompiledProgram> from_remote(Layers& l, const std::shared_ptr<Store>& w,
                                                     const std::string& rkey, RemoteEntry entry,
                                                     CacheOutcome& outcome) {
    entry.record.last_used = now_ms();
    auto program = std::make_shared<const CompiledProgram>(entry.record.program);
    if (w) {
      l.remote->run_later([&l, w, rkey, entry = std::move(entry)] {
        guarded_write(l, w, [&](Store& s) { s.put(entry.record, rkey, {entry.signature, ""}); });
      });
    }
    outcome = CacheOutcome::RemoteHit;
    return program;
  }

  // 1c. The fleet tier, by request key (after every local layer, before generating source).
  std::shared_ptr<const CompiledProgram> fetch_remote(Layers& l, const std::shared_ptr<Store>& w,
                                                      const KernelRequest& request,
                                                      const std::string& rkey,
                                                      CacheOutcome& outcome) {
    if (!l.remote) return nullptr;
    auto entry = l.remote->fetch(remote_request(request, rkey));
    return entry ? from_remote(l, w, rkey, std::move(*entry), outcome) : nullptr;
  }

  // Before compiling: takes the kernel's fleet lease (`held`), or, when another host holds it,
  // waits for that host's publication (null when it did not come in time).
  std::shared_ptr<const CompiledProgram> wait_for_fleet(Layers& l, const std::shared_ptr<Store>& w,
                                                        const KernelRequest& request,
                                                        const std::string& rkey, bool& held,
                                                        CacheOutcome& outcome) {
    if (!l.remote) return nullptr;
    const RemoteRequest remote = remote_request(request, rkey);
    const FleetLease lease = l.remote->lease(remote);
    held = lease == FleetLease::Held;
    if (lease == FleetLease::Unavailable) return nullptr;
    // Held: another host may have published it between the lookup and the lease.
    auto entry = held ? l.remote->recheck(remote) : l.remote->wait(remote);
    if (!entry) return nullptr;
    if (held) l.remote->release(rkey);
    held = false;
    return from_remote(l, w, rkey, std::move(*entry), outcome);
  }

  // Signed deployments (CacheConfig::require_signed_deployments): whether the deployment
  // database `d` may serve the hit `lookup`, found under `signed_key` (its request key; empty:
  // by content key). A refused hit is counted, and the search goes on as after a miss.
  bool admits(Layers& l, const Store& d, const std::string& signed_key, const Lookup& lookup) {
    if (!l.config.require_signed_deployments) return true;
    SignaturePolicy* policy = nullptr;
    {
      std::lock_guard lock(l.mutex);
      if (!l.signature_policy) {
        l.signature_policy = std::make_unique<SignaturePolicy>(l.config.trusted_keys_path);
      }
      policy = l.signature_policy.get();
    }
    if (policy->admits(d.name(), lookup.record, signed_key, lookup.signature)) return true;
    deployment_refused.fetch_add(1, std::memory_order_relaxed);
    return false;
  }

  // 1b. Code for a compatible target (request.compatible, best first), by request key: the
  // deployment databases, then the writable one. PTX is JIT-compiled for the request's target
  // (request.jit_ptx) and stored for it.
  std::shared_ptr<const CompiledProgram> find_compatible(
      Layers& l, const KernelRequest& request, const std::vector<std::shared_ptr<Store>>& deps,
      const std::shared_ptr<Store>& w, const std::string& rkey, const GenerateFn& generate,
      CacheOutcome& outcome) {
    for (const Target& target : request.compatible) {
      const std::string key = request_key(request.kind, request.spec, target);
      for (std::size_t k = 0; k <= deps.size(); ++k) {
        const std::shared_ptr<Store>& store = k < deps.size() ? deps[k] : w;
        if (!store) continue;
        Lookup lookup = guarded_find(l, store, [&](Store& s) { return s.find_by_request(key); });
        if (lookup.status == Lookup::Status::Damaged) handle_damaged(l, store, lookup);
        if (!is_for(lookup, request.kind, target)) continue;
        if (k < deps.size() && !admits(l, *store, key, lookup)) continue;
        auto program = serve_compatible(l, request, w, rkey, generate, lookup, store->name());
        if (!program) continue;
        (k < deps.size() ? deployment_hits : disk_hits).fetch_add(1, std::memory_order_relaxed);
        (target.arch_specific                 ? arch_specific_hits
         : target.format == BinaryFormat::Ptx ? ptx_hits
                                              : compatible_cubin_hits)
            .fetch_add(1, std::memory_order_relaxed);
        outcome = k < deps.size() ? CacheOutcome::DeploymentHit : CacheOutcome::DiskHit;
        return program;
      }
    }
    return nullptr;
  }

  // The program a compatible entry serves: a cubin as it is; PTX JIT-compiled for the
  // request's target and stored for it (null, after a warning, when the JIT fails).
  std::shared_ptr<const CompiledProgram> serve_compatible(Layers& l, const KernelRequest& request,
                                                          const std::shared_ptr<Store>& w,
                                                          const std::string& rkey,
                                                          const GenerateFn& generate,
                                                          Lookup& lookup,
                                                          const std::string& where) {
    CompiledProgram& found = lookup.record.program;
    if (found.target.format != BinaryFormat::Ptx || !request.jit_ptx) {
      return std::make_shared<const CompiledProgram>(std::move(found));
    }
    CompiledProgram cubin;
    try {
      cubin = request.jit_ptx(found);
      if (cubin.target != request.target) throw CacheError("the JIT made " + cubin.target.name());
    } catch (const Error& e) {
      warn("PTX for " + found.target.name() + " in " + where + " could not be JIT-compiled for " +
           request.target.name() + " (" + without_prefix(e.what()) + "); trying further");
      return nullptr;
    }
    if (w) {
      const SourceProgram source = generate();
      const std::string ckey = content_key(source, request.target, request.kind);
      guarded_write(l, w, [&](Store& s) {
        s.put(make_record(ckey, request.kind, source, cubin, now_ms()), rkey);
      });
    }
    return std::make_shared<const CompiledProgram>(std::move(cubin));
  }

  std::string unavailable_message(Layers& l, const KernelRequest& request, const Error& e) {
    std::vector<std::string> names;
    for (const auto& d : deployments(l)) names.push_back(d->name());
    const std::shared_ptr<Store> w = writable(l);
    return compiler_unavailable_message(request, names, w ? w->name() : "", e.what());
  }

  // Takes the kernel's lease in `lease` (when the writable store is shared by processes and
  // can still be written), then looks the kernel up by content key again: another process may
  // have stored it since this one missed it, while holding the lease or just before.
  Lookup take_lease(Layers& l, const std::shared_ptr<Store>& w, const KernelRequest& request,
                    const std::string& ckey, std::optional<KeyLease>& lease) {
    if (!w || l.config.lease_timeout_ms <= 0 || writes_disabled(l) ||
        w->lease_directory().empty()) {
      return {};
    }
    bool waited = false;
    lease = KeyLease::acquire(w->lease_directory(), ckey,
                              std::chrono::milliseconds(l.config.lease_timeout_ms), &waited);
    return mislabelled_as_damaged(
        guarded_find(l, w, [&](Store& s) { return s.find_by_content(ckey); }), request);
  }

  std::shared_ptr<const CompiledProgram> compile_and_store(
      Layers& l, const std::shared_ptr<Store>& w, const KernelRequest& request,
      const SourceProgram& source, const std::string& ckey, const std::string& rkey,
      const CompileFn& compile, CacheOutcome& outcome, bool fleet_lease) {
    CompiledProgram program;
    const Clock::time_point start =
        log_enabled(LogLevel::Info) ? Clock::now() : Clock::time_point{};
    try {
      program = compile(source);
    } catch (const CompilerUnavailableError& e) {
      if (fleet_lease) l.remote->release(rkey);
      throw CompilerUnavailableError(unavailable_message(l, request, e));
    } catch (...) {
      if (fleet_lease) l.remote->release(rkey);
      throw;
    }
    misses.fetch_add(1, std::memory_order_relaxed);
    outcome = CacheOutcome::Compiled;
    if (log_enabled(LogLevel::Info)) {
      char ms[32];
      std::snprintf(ms, sizeof ms, "%.1f", ms_since(start));
      log_message(LogLevel::Info, describe(request) + ": compiled in " + ms + " ms (content key " +
                                      ckey.substr(0, 16) + ")");
    }
    if (w || l.remote) {
      std::optional<CacheRecord> record;
      try {
        record = make_record(ckey, request.kind, source, program, now_ms());
      } catch (const Error& e) {
        warn(without_prefix(e.what()) + "; the kernel is kept in memory only");
      }
      if (record && w) guarded_write(l, w, [&](Store& s) { s.put(*record, rkey); });
      if (record && l.remote) l.remote->publish(rkey, std::move(*record), fleet_lease);
      if (!record && fleet_lease) l.remote->release(rkey);
    }
    return std::make_shared<const CompiledProgram>(std::move(program));
  }
};

KernelCache& KernelCache::global() {
  // Never destroyed: kernels may still be requested from other threads during exit.
  static KernelCache* cache = [] {
    auto* c = new KernelCache(CacheConfig::from_environment());
    std::atexit([] { KernelCache::global().flush(); });
    return c;
  }();
  return *cache;
}

KernelCache::KernelCache(CacheConfig config) : impl_(std::make_unique<Impl>()) {
  configure(std::move(config));
}

KernelCache::KernelCache(std::shared_ptr<Store> writable,
                         std::vector<std::shared_ptr<Store>> deployments, std::string record_path)
    : impl_(std::make_unique<Impl>()) {
  auto l = std::make_shared<Layers>();
  l->config.writable = writable != nullptr;
  l->config.record_path = std::move(record_path);
  for (const auto& d : deployments) l->config.deployment_databases.push_back(d->name());
  l->writable_opened = true;
  l->writable = std::move(writable);
  l->deployments_opened = true;
  l->deployments = std::move(deployments);
  impl_->layers = std::move(l);
}

KernelCache::~KernelCache() { flush(); }

std::shared_ptr<const CompiledProgram> KernelCache::get_or_compile(const KernelRequest& request,
                                                                   const GenerateFn& generate,
                                                                   const CompileFn& compile) {
  return get_or_compile(request, generate, compile, nullptr);
}

std::shared_ptr<const CompiledProgram> KernelCache::get_or_compile(const KernelRequest& request,
                                                                   const GenerateFn& generate,
                                                                   const CompileFn& compile,
                                                                   CacheOutcome* outcome) {
  Impl& m = *impl_;
  const std::size_t h = hash_request(request);
  {
    std::shared_lock lock(m.map_mutex);
    auto it = m.map.find(h);
    if (it != m.map.end()) {
      for (const auto& slot : it->second) {
        if (slot->program && slot->matches(request)) {
          m.memory_hits.fetch_add(1, std::memory_order_relaxed);
          if (outcome != nullptr) *outcome = CacheOutcome::MemoryHit;
          CUJIT_LOG_AT(LogLevel::Debug, describe(request) + ": memory hit");
          return slot->program;
        }
      }
    }
  }

  std::shared_ptr<Slot> slot;
  std::shared_future<std::shared_ptr<const CompiledProgram>> pending;
  std::promise<std::shared_ptr<const CompiledProgram>> promise;
  {
    std::unique_lock lock(m.map_mutex);
    auto& bucket = m.map[h];
    for (const auto& s : bucket) {
      if (s->matches(request)) {
        if (s->program) {
          m.memory_hits.fetch_add(1, std::memory_order_relaxed);
          if (outcome != nullptr) *outcome = CacheOutcome::MemoryHit;
          return s->program;
        }
        pending = s->pending;
        break;
      }
    }
    if (!pending.valid()) {
      slot = std::make_shared<Slot>();
      slot->kind = request.kind;
      slot->spec = request.spec;
      slot->target = request.target;
      slot->pending = promise.get_future().share();
      bucket.push_back(slot);
      ++m.count;
    }
  }
  if (!slot) {
    // Another thread is producing this kernel: wait for it (its exception, if any, is ours).
    auto program = pending.get();
    m.memory_hits.fetch_add(1, std::memory_order_relaxed);
    if (outcome != nullptr) *outcome = CacheOutcome::MemoryHit;
    return program;
  }

  CacheOutcome where = CacheOutcome::Compiled;
  std::shared_ptr<const CompiledProgram> program;
  const Clock::time_point start = log_enabled(LogLevel::Info) ? Clock::now() : Clock::time_point{};
  try {
    NvtxRange range(NvtxKind::CacheLookup, "cache lookup " + request.name);
    program = m.resolve(request, generate, compile, where);
  } catch (...) {
    promise.set_exception(std::current_exception());
    std::unique_lock lock(m.map_mutex);
    auto it = m.map.find(h);
    if (it != m.map.end()) {
      auto& bucket = it->second;
      for (auto s = bucket.begin(); s != bucket.end(); ++s) {
        if (*s == slot) {
          bucket.erase(s);
          --m.count;
          break;
        }
      }
      if (bucket.empty()) m.map.erase(it);
    }
    throw;
  }
  {
    std::unique_lock lock(m.map_mutex);
    slot->program = program;
  }
  promise.set_value(program);
  if (outcome != nullptr) *outcome = where;
  log_outcome(request, where, start);
  return program;
}

void KernelCache::configure(CacheConfig config) {
  auto l = std::make_shared<Layers>();
  l->config = std::move(config);
  if (!l->config.remote_url.empty()) {
    l->remote = std::make_unique<RemoteTier>(l->config, impl_->remote_counters);
  }
  std::shared_ptr<Layers> old;
  {
    std::lock_guard lock(impl_->layers_mutex);
    old = std::move(impl_->layers);
    impl_->layers = std::move(l);
  }
  clear_memory();
}

CacheConfig KernelCache::config() const {
  auto l = impl_->current_layers();
  std::lock_guard lock(l->mutex);
  return l->config;
}

void KernelCache::add_deployment_database(const std::string& path) {
  auto l = impl_->current_layers();
  auto store = SqliteStore::open_read_only(path, l->store_options());
  std::lock_guard lock(l->mutex);
  impl_->open_deployments_locked(*l);
  l->deployments.push_back(std::move(store));
  l->config.deployment_databases.push_back(path);
}

std::shared_future<void> KernelCache::prefetch() {
  // Opens the databases, then reads the writable one's most recently used kernels into
  // memory (CacheConfig::preload_records): a new process's first call of a kernel it used
  // before then costs no SQLite lookup (0.1-0.2 ms on an H100 host). One lookup of a key that
  // is never stored first brings the code of hashing and of an SQLite lookup into memory. The key
  // is computed here, not in the detached thread: it reads compiler_identity(), a static that
  // exit() destroys (ThreadSanitizer saw the race).
  std::string key;
  try {
    key = request_key("prefetch", "", Target{});
  } catch (const Error&) {
    // No NVRTC: the first real lookup meets the same failure.
  }
  // The thread owns what it touches (the layers and the key), so it may outlive this cache.
  auto done = std::make_shared<std::promise<void>>();
  std::shared_future<void> ready = done->get_future().share();
  std::thread([l = impl_->current_layers(), key = std::move(key), done] {
    std::vector<std::shared_ptr<Store>> stores = Impl::deployments(*l);
    std::shared_ptr<Store> writable = Impl::writable(*l);
    stores.push_back(writable);
    try {
      for (const auto& store : stores) {
        if (store) store->find_by_request(key);
      }
      if (writable) Impl::preload(*l, writable);
      if (l->remote) l->remote->warm_up();
    } catch (...) {
      // The first real lookup meets the same failure and degrades with its warning.
    }
    done->set_value();
  }).detach();
  return ready;
}

std::vector<std::shared_ptr<const CompiledProgram>> KernelCache::preloaded_programs() const {
  auto l = impl_->current_layers();
  std::vector<const Preloaded*> ahead;
  std::lock_guard lock(l->preload_mutex);
  for (const auto& entry : l->preloaded) ahead.push_back(&entry.second);
  std::sort(ahead.begin(), ahead.end(),
            [](const Preloaded* a, const Preloaded* b) { return a->rank < b->rank; });
  std::vector<std::shared_ptr<const CompiledProgram>> programs;
  for (const Preloaded* p : ahead) programs.push_back(p->program);
  return programs;
}

std::shared_ptr<Store> KernelCache::writable_store() {
  auto l = impl_->current_layers();
  return impl_->writable(*l);
}

CacheStats KernelCache::stats() const {
  CacheStats s;
  s.memory_hits = impl_->memory_hits.load(std::memory_order_relaxed);
  s.disk_hits = impl_->disk_hits.load(std::memory_order_relaxed);
  s.deployment_hits = impl_->deployment_hits.load(std::memory_order_relaxed);
  s.misses = impl_->misses.load(std::memory_order_relaxed);
  s.arch_specific_hits = impl_->arch_specific_hits.load(std::memory_order_relaxed);
  s.compatible_cubin_hits = impl_->compatible_cubin_hits.load(std::memory_order_relaxed);
  s.ptx_hits = impl_->ptx_hits.load(std::memory_order_relaxed);
  s.deployment_refused = impl_->deployment_refused.load(std::memory_order_relaxed);
  impl_->remote_counters->add_to(s);
  s.nvrtc_compilations = compiler_compile_count();
  s.warnings = warning_count();
  return s;
}

void KernelCache::reset_stats() {
  impl_->memory_hits = 0;
  impl_->disk_hits = 0;
  impl_->deployment_hits = 0;
  impl_->misses = 0;
  impl_->arch_specific_hits = 0;
  impl_->compatible_cubin_hits = 0;
  impl_->ptx_hits = 0;
  impl_->deployment_refused = 0;
  impl_->remote_counters->reset();
}

void KernelCache::clear_memory() {
  std::unique_lock lock(impl_->map_mutex);
  impl_->map.clear();
  impl_->count = 0;
}

std::size_t KernelCache::memory_size() const {
  std::shared_lock lock(impl_->map_mutex);
  return impl_->count;
}

void KernelCache::flush() {
  try {
    auto l = impl_->current_layers();
    if (!l) return;
    std::shared_ptr<Store> w;
    {
      std::lock_guard lock(l->mutex);
      w = l->writable;
    }
    if (l->remote) l->remote->flush();  // publications in flight, before the process exits
    if (w) w->flush();
  } catch (const Error& e) {
    warn(without_prefix(e.what()) + "; last-used times not saved");
  } catch (...) {
    // flush() runs from destructors and atexit: never throw.
  }
}

}  // namespace cujit::detail

namespace cujit {

void configure_cache(const CacheConfig& config) { detail::KernelCache::global().configure(config); }

CacheConfig cache_config() { return detail::KernelCache::global().config(); }

void disable_cache() {
  CacheConfig config = detail::KernelCache::global().config();
  config.writable = false;
  config.deployment_databases.clear();
  config.remote_url.clear();
  detail::KernelCache::global().configure(config);
}

void add_deployment_database(const std::string& path) {
  detail::KernelCache::global().add_deployment_database(path);
}

void prefetch_cache() { detail::KernelCache::global().prefetch(); }

CacheStats cache_stats() { return detail::KernelCache::global().stats(); }

void reset_cache_stats() { detail::KernelCache::global().reset_stats(); }

}  // namespace cujit
