#include "cache/tier_chain.hpp"

#include "cache/compiler_identity.hpp"
#include "cache/record.hpp"
#include "cache/unavailable.hpp"
#include "support/log.hpp"
#include "support/warning.hpp"

#include <cujit/error.hpp>

#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <string_view>

namespace cujit::detail {
namespace {

using Clock = std::chrono::steady_clock;

// The process's CPU time (user and system, all threads: NVRTC compiles on a thread of its own)
// and page faults so far, for the "compiled in" line.
struct ProcessUsage {
  double cpu_ms = 0;
  long faults = 0;
};

ProcessUsage process_usage() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  const auto ms = [](const timeval& t) { return t.tv_sec * 1e3 + t.tv_usec * 1e-3; };
  return {ms(u.ru_utime) + ms(u.ru_stime), u.ru_minflt + u.ru_majflt};
}

}  // namespace

std::string describe_request(const KernelRequest& r) {
  return "kernel '" + (r.name.empty() ? r.kind : r.name) + "' (" + r.kind + ", " + r.target.name() +
         ")";
}

Search::Search(const KernelRequest& request, Compiler& compiler)
    : request_(request),
      compiler_(compiler),
      keys_(request.kind, request.spec),
      request_key_(request_key_for(request.target)) {}

std::string Search::request_key_for(const Target& target) const {
  return keys_.key(target, compiler_identity(), request_.include_digest);
}

const SourceProgram& Search::source() {
  if (!source_) source_ = compiler_.generate();
  return *source_;
}

const std::string& Search::content_key() {
  if (content_key_.empty())
    content_key_ = detail::content_key(source(), request_.target, request_.kind,
                                       compiler_identity(), request_.include_digest);
  return content_key_;
}

void CacheCounters::count(const Found& found) noexcept {
  switch (found.where) {
    case CacheOutcome::MemoryHit:
      memory_hits.fetch_add(1, std::memory_order_relaxed);
      break;
    case CacheOutcome::DiskHit:
      disk_hits.fetch_add(1, std::memory_order_relaxed);
      break;
    case CacheOutcome::DeploymentHit:
      deployment_hits.fetch_add(1, std::memory_order_relaxed);
      break;
    case CacheOutcome::RemoteHit:
      break;  // the fleet tier counts its own (RemoteCounters)
    case CacheOutcome::Compiled:
      misses.fetch_add(1, std::memory_order_relaxed);
      break;
  }
  switch (found.match) {
    case TargetMatch::Exact:
      break;
    case TargetMatch::ArchSpecific:
      arch_specific_hits.fetch_add(1, std::memory_order_relaxed);
      break;
    case TargetMatch::CompatibleCubin:
      compatible_cubin_hits.fetch_add(1, std::memory_order_relaxed);
      break;
    case TargetMatch::Ptx:
      ptx_hits.fetch_add(1, std::memory_order_relaxed);
      break;
  }
}

CacheStats CacheCounters::stats() const {
  CacheStats s;
  s.memory_hits = memory_hits.load(std::memory_order_relaxed);
  s.disk_hits = disk_hits.load(std::memory_order_relaxed);
  s.deployment_hits = deployment_hits.load(std::memory_order_relaxed);
  s.misses = misses.load(std::memory_order_relaxed);
  s.arch_specific_hits = arch_specific_hits.load(std::memory_order_relaxed);
  s.compatible_cubin_hits = compatible_cubin_hits.load(std::memory_order_relaxed);
  s.ptx_hits = ptx_hits.load(std::memory_order_relaxed);
  s.deployment_refused = deployment_refused->load(std::memory_order_relaxed);
  remote->add_to(s);
  s.nvrtc_compilations = compiler_compile_count();
  s.warnings = warning_count();
  return s;
}

void CacheCounters::reset() noexcept {
  for (auto* c : {&memory_hits, &disk_hits, &deployment_hits, &misses, &arch_specific_hits,
                  &compatible_cubin_hits, &ptx_hits}) {
    c->store(0, std::memory_order_relaxed);
  }
  deployment_refused->store(0, std::memory_order_relaxed);
  remote->reset();
}

TierChain::TierChain(StoreSet& stores, RemoteTier* remote, CacheCounters& counters)
    : stores_(stores),
      counters_(counters),
      deployment_(stores),
      writable_(stores),
      compatible_(stores) {
  tiers_ = {&deployment_, &writable_, &compatible_};
  if (remote != nullptr) tiers_.push_back(&fleet_.emplace(*remote, stores));
}

Found TierChain::counted(Found found) {
  counters_.count(found);
  return found;
}

// The lookup order, top to bottom.
Found TierChain::resolve(const KernelRequest& request, Compiler& compiler) {
  Search search(request, compiler);
  // 1. By request key, before any source exists: no generation at all.
  for (Tier* tier : tiers_) {
    if (Found found = tier->by_request(search)) return counted(std::move(found));
  }
  CUJIT_LOG_AT(LogLevel::Debug, describe_request(request) + ": no entry for request key " +
                                    search.request_key().substr(0, 16) +
                                    " in the deployment databases, the writable one, compatible "
                                    "targets" +
                                    (fleet_ ? ", the fleet tier" : "") + "; generating the source");
  // 2. By content key: the same source may have been compiled for another request.
  for (Tier* tier : tiers_) {
    if (Found found = tier->by_content(search)) return counted(std::move(found));
  }
  CUJIT_LOG_AT(LogLevel::Debug, describe_request(request) + ": no entry for content key " +
                                    search.content_key().substr(0, 16));
  // A program that failed to compile in this process fails again, without the compiler.
  failures_.rethrow_if_known(search.request_key() + search.content_key());
  // 3. Another process or host may be compiling it: the leases.
  for (Tier* tier : tiers_) {
    if (Found found = tier->before_compile(search)) return counted(std::move(found));
  }
  // 4. The compiler, outside any lock or transaction; every tier keeps what it made.
  return counted(compile(search));
}

Found TierChain::compile(Search& search) {
  const KernelRequest& request = search.request();
  const bool timed = log_enabled(LogLevel::Info);
  const Clock::time_point start = timed ? Clock::now() : Clock::time_point{};
  const ProcessUsage before = timed ? process_usage() : ProcessUsage{};
  CompiledProgram program;
  try {
    program = search.compiler().compile(search.source());
  } catch (const CompilerUnavailableError& e) {
    for (Tier* tier : tiers_) tier->abandon(search);
    std::vector<std::string> names;
    for (const auto& d : stores_.deployments()) names.push_back(d->name());
    const std::shared_ptr<Store> w = stores_.writable();
    throw CompilerUnavailableError(
        compiler_unavailable_message(request, names, w ? w->name() : "", e.what()));
  } catch (const CompileError& e) {
    for (Tier* tier : tiers_) tier->abandon(search);
    if (RecentFailures::rememberable(search.source())) {
      failures_.remember(search.request_key() + search.content_key(), e);
    }
    throw;
  } catch (...) {
    for (Tier* tier : tiers_) tier->abandon(search);
    throw;
  }
  if (timed) {
    const ProcessUsage after = process_usage();
    char ms[96];
    std::snprintf(ms, sizeof ms, "%.1f ms (process CPU %.1f ms, %ld page faults)",
                  std::chrono::duration<double, std::milli>(Clock::now() - start).count(),
                  after.cpu_ms - before.cpu_ms, after.faults - before.faults);
    log_message(LogLevel::Info, describe_request(request) + ": compiled in " + ms +
                                    " (content key " + search.content_key().substr(0, 16) + ")");
  }
  keep(search, program);
  return {std::make_shared<const CompiledProgram>(std::move(program)), CacheOutcome::Compiled};
}

// Gives every tier the compiled program's record to keep (made only when a tier keeps
// programs: the writable database or the fleet).
void TierChain::keep(Search& search, const CompiledProgram& program) {
  if (!stores_.writable() && !fleet_) return;
  std::optional<CacheRecord> record;
  try {
    record = make_record(search.content_key(), search.request().kind, search.source(), program,
                         now_ms());
  } catch (const Error& e) {
    warn(without_cujit_prefix(e.what()) + "; the kernel is kept in memory only");
  }
  for (Tier* tier : tiers_) tier->keep(search, record ? &*record : nullptr);
}

}  // namespace cujit::detail
