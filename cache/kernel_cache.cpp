#include "cache/kernel_cache.hpp"

#include "cache/background_work.hpp"
#include "cache/manifest.hpp"
#include "cache/memory_layer.hpp"
#include "cache/record.hpp"
#include "cache/remote_tier.hpp"
#include "cache/store_set.hpp"
#include "cache/tier_chain.hpp"
#include "core/nvtx.hpp"
#include "support/log.hpp"
#include "support/warning.hpp"

#include <cujit/error.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <map>
#include <mutex>
#include <string_view>

namespace cujit::detail {
namespace {

std::mutex& replay_mutex() {
  static std::mutex m;
  return m;
}

std::map<std::string, GenericFn>& generic_registry() {
  static std::map<std::string, GenericFn> registry;
  return registry;
}

std::map<std::string, ReplayFn>& replay_registry() {
  static std::map<std::string, ReplayFn> registry;
  return registry;
}

using Clock = std::chrono::steady_clock;

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

// Info: where a lookup that missed the memory layer found the kernel (compilations report
// themselves, with their time); Debug: memory hits too.
void log_outcome(const KernelRequest& request, CacheOutcome where, Clock::time_point start) {
  const LogLevel level = where == CacheOutcome::MemoryHit ? LogLevel::Debug : LogLevel::Info;
  if (where == CacheOutcome::Compiled || !log_enabled(level)) return;
  char ms[32];
  std::snprintf(ms, sizeof ms, "%.3f",
                std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  log_message(level, describe_request(request) + ": " + outcome_text(where) + " (" + ms + " ms)");
}

// What one configuration is made of. Replaced as a whole by configure(), so that lookups in
// flight keep using the tiers they started with. Destroyed in reverse: the fleet finishes its
// publications (which write into the stores) before the stores write their last-used times.
struct Configuration {
  Configuration(CacheConfig config, std::shared_ptr<CacheCounters> shared)
      : counters(std::move(shared)),
        stores(std::move(config), counters->deployment_refused),
        remote(fleet_of(stores.settings(), *counters)),
        chain(stores, remote.get(), *counters) {}
  Configuration(CacheConfig config, std::shared_ptr<CacheCounters> shared,
                std::shared_ptr<Store> writable, std::vector<std::shared_ptr<Store>> deployments)
      : counters(std::move(shared)),
        stores(std::move(config), counters->deployment_refused, std::move(writable),
               std::move(deployments)),
        chain(stores, nullptr, *counters) {}

  static std::unique_ptr<RemoteTier> fleet_of(const CacheConfig& config, CacheCounters& counters) {
    if (config.remote_url.empty()) return nullptr;
    return std::make_unique<RemoteTier>(config, counters.remote);
  }

  // Shared with the cache: a configuration may outlive it (prefetch()'s thread holds one).
  std::shared_ptr<CacheCounters> counters;
  StoreSet stores;
  std::unique_ptr<RemoteTier> remote;  ///< the fleet tier (CacheConfig::remote_url), or null
  TierChain chain;
  std::mutex prefetch_mutex;
  std::shared_future<void> prefetched;  ///< the first prefetch()'s; later calls return it
  std::mutex recorder_mutex;
  std::unique_ptr<ManifestRecorder> recorder;  ///< CacheConfig::record_path's, on first use
  bool recorder_failed = false;

  // Appends the request's manifest entry to CacheConfig::record_path.
  void record(const KernelRequest& request) {
    if (stores.settings().record_path.empty() || request.manifest_entry.empty()) return;
    ManifestRecorder* r = nullptr;
    {
      std::lock_guard lock(recorder_mutex);
      if (recorder_failed) return;
      if (!recorder) recorder = std::make_unique<ManifestRecorder>(stores.settings().record_path);
      r = recorder.get();
    }
    try {
      r->record(request.manifest_entry);
    } catch (const ArgumentError& e) {
      warn(without_cujit_prefix(e.what()) + "; not recorded");
    } catch (const Error& e) {
      std::lock_guard lock(recorder_mutex);
      recorder_failed = true;
      warn(without_cujit_prefix(e.what()) + "; recording stopped");
    }
  }
};

}  // namespace

std::string request_key(const KernelRequest& r, const Target& target) {
  return request_key(r.kind, r.spec, target, compiler_identity(), r.include_digest);
}

void register_replay(const std::string& kind, ReplayFn fn) {
  std::lock_guard lock(replay_mutex());
  replay_registry()[kind] = std::move(fn);
}

void register_generic(const std::string& kind, GenericFn fn) {
  std::lock_guard lock(replay_mutex());
  generic_registry()[kind] = std::move(fn);
}

std::optional<std::string> generic_entry(const std::string& manifest_entry) {
  const std::string kind = manifest_entry_kind(manifest_entry);
  GenericFn fn;
  {
    std::lock_guard lock(replay_mutex());
    auto it = generic_registry().find(kind);
    if (it == generic_registry().end()) return std::nullopt;
    fn = it->second;
  }
  return fn(manifest_entry);
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
  MemoryLayer memory;
  std::shared_ptr<CacheCounters> counters = std::make_shared<CacheCounters>();
  mutable std::mutex mutex;
  std::shared_ptr<Configuration> current;

  std::shared_ptr<Configuration> configuration() const {
    std::lock_guard lock(mutex);
    return current;
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
  CacheConfig config;
  config.writable = writable != nullptr;
  config.record_path = std::move(record_path);
  for (const auto& d : deployments) config.deployment_databases.push_back(d->name());
  impl_->current = std::make_shared<Configuration>(std::move(config), impl_->counters,
                                                   std::move(writable), std::move(deployments));
}

KernelCache::~KernelCache() { flush(); }

CompiledProgram Compiler::jit_ptx(const CompiledProgram& ptx) {
  throw CacheError("cujit: no PTX JIT for " + ptx.target.name());
}

namespace {

// The functions of the callback overload, by reference: a memory hit copies nothing.
class BorrowedCompiler final : public Compiler {
 public:
  BorrowedCompiler(const GenerateFn& generate, const CompileFn& compile)
      : generate_(generate), compile_(compile) {}
  SourceProgram generate() override { return generate_(); }
  CompiledProgram compile(const SourceProgram& source) override { return compile_(source); }

 private:
  const GenerateFn& generate_;
  const CompileFn& compile_;
};

}  // namespace

std::shared_ptr<const CompiledProgram> KernelCache::get_or_compile(const KernelRequest& request,
                                                                   const GenerateFn& generate,
                                                                   const CompileFn& compile,
                                                                   CacheOutcome* outcome) {
  BorrowedCompiler compiler(generate, compile);
  return get_or_compile(request, compiler, outcome);
}

// The memory layer first; on a miss (once for all threads asking), the chain of tiers of the
// configuration current at that moment.
std::shared_ptr<const CompiledProgram> KernelCache::get_or_compile(const KernelRequest& request,
                                                                   Compiler& compiler,
                                                                   CacheOutcome* outcome) {
  Impl& m = *impl_;
  CacheOutcome where = CacheOutcome::MemoryHit;
  const Clock::time_point start = log_enabled(LogLevel::Info) ? Clock::now() : Clock::time_point{};
  bool hit = false;
  auto program = m.memory.get(
      request,
      [&] {
        NvtxRange range(NvtxKind::CacheLookup, "cache lookup " + request.name);
        const std::shared_ptr<Configuration> c = m.configuration();
        c->record(request);
        Found found = c->chain.resolve(request, compiler);
        where = found.where;
        return std::move(found.program);
      },
      &hit);
  if (hit) {
    m.counters->count(Found{nullptr, CacheOutcome::MemoryHit});
    CUJIT_LOG_AT(LogLevel::Debug, describe_request(request) + ": memory hit");
  } else {
    log_outcome(request, where, start);
  }
  if (outcome != nullptr) *outcome = where;
  return program;
}

void KernelCache::configure(CacheConfig config) {
  auto c = std::make_shared<Configuration>(std::move(config), impl_->counters);
  std::shared_ptr<Configuration> old;
  {
    std::lock_guard lock(impl_->mutex);
    old = std::move(impl_->current);
    impl_->current = std::move(c);
  }
  clear_memory();
}

CacheConfig KernelCache::config() const { return impl_->configuration()->stores.config(); }

void KernelCache::add_deployment_database(const std::string& path) {
  impl_->configuration()->stores.add_deployment(path);
}

std::shared_future<void> KernelCache::prefetch() {
  // Opens the databases, then reads the writable one's most recently used kernels into
  // memory (CacheConfig::preload_records): a new process's first call of a kernel it used
  // before then costs no SQLite lookup (0.1-0.2 ms on an H100 host). One lookup of a key that
  // is never stored first brings the code of hashing and of an SQLite lookup into memory.
  // Once per configuration: a later call returns the first one's future.
  const std::shared_ptr<Configuration> c = impl_->configuration();
  std::lock_guard lock(c->prefetch_mutex);
  if (c->prefetched.valid()) return c->prefetched;
  // The key is computed here, not in the detached thread: it reads compiler_identity(), a
  // static that exit() destroys (ThreadSanitizer saw the race).
  std::string key;
  try {
    key = request_key("prefetch", "", Target{});
  } catch (const Error&) {
    // No NVRTC: the first real lookup meets the same failure.
  }
  // The thread owns what it touches (the configuration and the key), so it may outlive this
  // cache. A fork() waits for it (cache/background_work.hpp).
  auto done = std::make_shared<std::promise<void>>();
  c->prefetched = done->get_future().share();
  run_in_background([c, key = std::move(key), done] {
    std::vector<std::shared_ptr<Store>> stores = c->stores.deployments();
    stores.push_back(c->stores.writable());
    try {
      for (const auto& store : stores) {
        if (store) store->find_by_request(key);
      }
      c->stores.preload();
      if (c->remote) c->remote->warm_up();
    } catch (...) {
      // The first real lookup meets the same failure and degrades with its warning.
    }
    done->set_value();
  });
  return c->prefetched;
}

std::vector<std::shared_ptr<const CompiledProgram>> KernelCache::preloaded_programs() const {
  return impl_->configuration()->stores.read_ahead().programs();
}

std::shared_ptr<Store> KernelCache::writable_store() {
  return impl_->configuration()->stores.writable();
}

CacheStats KernelCache::stats() const { return impl_->counters->stats(); }

void KernelCache::reset_stats() { impl_->counters->reset(); }

void KernelCache::clear_memory() { impl_->memory.clear(); }

std::size_t KernelCache::memory_size() const { return impl_->memory.size(); }

void KernelCache::flush() {
  try {
    const std::shared_ptr<Configuration> c = impl_->configuration();
    if (!c) return;
    if (c->remote) c->remote->flush();  // publications in flight, before the process exits
    c->stores.flush();
  } catch (const Error& e) {
    warn(without_cujit_prefix(e.what()) + "; last-used times not saved");
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
