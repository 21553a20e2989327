#pragma once
// The writable database's most recently used kernels, read ahead into memory when a process
// starts (CacheConfig::preload_records): a first call of a kernel the last run used takes its
// binary from here instead of reading the database. Each is taken at most once.

#include <cujit/program.hpp>

#include "cache/store.hpp"

#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace cujit::detail {

/// A kernel read ahead from the writable database (checksum verified when read).
struct Preloaded {
  std::string content_key;
  std::string kind;
  std::shared_ptr<const CompiledProgram> program;
  std::size_t rank = 0;  ///< 0: the most recently used
};

/// Kernels read ahead, by request key. Thread-safe.
class ReadAhead {
 public:
  /// Reads at most `limit` of `store`'s most recently used records, and at most
  /// kPreloadMaxBytes of binaries. Throws what Store::recent throws.
  void fill(Store& store, std::size_t limit);
  /// The kernel read ahead under request key `rkey`, taken out; nullopt when none.
  std::optional<Preloaded> take(const std::string& rkey);
  /// The programs no lookup has taken yet, most recently used first.
  std::vector<std::shared_ptr<const CompiledProgram>> programs() const;

 private:
  mutable std::mutex mutex_;
  std::unordered_map<std::string, Preloaded> kernels_;
};

}  // namespace cujit::detail
