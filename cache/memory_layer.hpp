#pragma once
// The kernel cache's first tier: this process's programs, with single flight (concurrent
// lookups of one missing kernel produce it once; the others wait for it).

#include "cache/kernel_cache.hpp"

#include <cstddef>
#include <functional>
#include <future>
#include <memory>
#include <shared_mutex>
#include <unordered_map>
#include <vector>

namespace cujit::detail {

/// Programs by request (kind, spec, target). Thread-safe.
class MemoryLayer {
 public:
  using Produce = std::function<std::shared_ptr<const CompiledProgram>()>;
  /// The program of `request`: from memory (also after waiting for another thread producing it),
  /// with `*hit` set; else from `produce`, run once for all concurrent callers and kept. What
  /// `produce` throws propagates to every caller waiting for it, and nothing is kept.
  std::shared_ptr<const CompiledProgram> get(const KernelRequest& request, const Produce& produce,
                                             bool* hit);
  /// Forgets every program (lookups in flight finish and are not kept).
  void clear();
  /// Programs kept or being produced.
  std::size_t size() const;

 private:
  struct Slot;
  using Bucket = std::vector<std::shared_ptr<Slot>>;
  std::shared_ptr<const CompiledProgram> find(std::size_t hash, const KernelRequest& request) const;
  void forget(std::size_t hash, const std::shared_ptr<Slot>& slot);

  mutable std::shared_mutex mutex_;
  std::unordered_map<std::size_t, Bucket> map_;
  std::size_t count_ = 0;
};

}  // namespace cujit::detail
