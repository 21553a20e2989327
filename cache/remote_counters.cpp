#include "cache/remote_counters.hpp"

namespace cujit::detail {

void RemoteCounters::add_to(CacheStats& s) const noexcept {
  s.remote_hits = hits.load(std::memory_order_relaxed);
  s.remote_misses = misses.load(std::memory_order_relaxed);
  s.remote_refused = refused.load(std::memory_order_relaxed);
  s.remote_published = published.load(std::memory_order_relaxed);
  s.remote_errors = errors.load(std::memory_order_relaxed);
  s.remote_lookup_us = lookup_us.load(std::memory_order_relaxed);
  s.remote_lease_waits = lease_waits.load(std::memory_order_relaxed);
  s.remote_lease_served = lease_served.load(std::memory_order_relaxed);
}

void RemoteCounters::reset() noexcept {
  for (auto* c :
       {&hits, &misses, &refused, &published, &errors, &lookup_us, &lease_waits, &lease_served}) {
    c->store(0, std::memory_order_relaxed);
  }
}

}  // namespace cujit::detail
