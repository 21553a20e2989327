#include "cache/read_ahead.hpp"

#include <cujit/cache.hpp>

#include <algorithm>
#include <cstdint>
#include <utility>

namespace cujit::detail {

void ReadAhead::fill(Store& store, std::size_t limit) {
  auto recent = store.recent(limit);
  std::uint64_t bytes = 0;
  std::lock_guard lock(mutex_);
  for (auto& [rkey, record] : recent) {
    bytes += record.program.binary.size();
    if (bytes > kPreloadMaxBytes) break;
    auto program = std::make_shared<const CompiledProgram>(std::move(record.program));
    kernels_.emplace(rkey, Preloaded{std::move(record.content_key), std::move(record.kind),
                                     std::move(program), kernels_.size()});
  }
}

std::optional<Preloaded> ReadAhead::take(const std::string& rkey) {
  std::lock_guard lock(mutex_);
  auto it = kernels_.find(rkey);
  if (it == kernels_.end()) return std::nullopt;
  std::optional<Preloaded> out(std::move(it->second));
  kernels_.erase(it);
  return out;
}

std::vector<std::shared_ptr<const CompiledProgram>> ReadAhead::programs() const {
  std::vector<const Preloaded*> ahead;
  std::lock_guard lock(mutex_);
  for (const auto& entry : kernels_) ahead.push_back(&entry.second);
  std::sort(ahead.begin(), ahead.end(),
            [](const Preloaded* a, const Preloaded* b) { return a->rank < b->rank; });
  std::vector<std::shared_ptr<const CompiledProgram>> result;
  for (const Preloaded* p : ahead) result.push_back(p->program);
  return result;
}

}  // namespace cujit::detail
