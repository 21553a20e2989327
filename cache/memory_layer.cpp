#include "cache/memory_layer.hpp"

#include <mutex>
#include <string_view>

namespace cujit::detail {
namespace {

std::size_t hash_request(const KernelRequest& r) noexcept {
  std::size_t h = std::hash<std::string_view>{}(r.spec);
  h ^= std::hash<std::string_view>{}(r.kind) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  h ^=
      std::hash<std::string_view>{}(r.include_digest) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  h ^= (static_cast<std::size_t>(r.target.arch) * 2 + static_cast<std::size_t>(r.target.format)) *
       0x9e3779b97f4a7c15ULL;
  return h;
}

}  // namespace

struct MemoryLayer::Slot {
  std::string kind;
  std::string spec;
  std::string include_digest;  // the headers' contents: an edited header is another kernel
  Target target;
  std::shared_ptr<const CompiledProgram> program;  // set once produced; guarded by the lock
  std::shared_future<std::shared_ptr<const CompiledProgram>> pending;

  bool matches(const KernelRequest& r) const {
    return target == r.target && kind == r.kind && spec == r.spec &&
           include_digest == r.include_digest;
  }
};

std::shared_ptr<const CompiledProgram> MemoryLayer::find(std::size_t hash,
                                                         const KernelRequest& request) const {
  std::shared_lock lock(mutex_);
  auto it = map_.find(hash);
  if (it == map_.end()) return nullptr;
  for (const auto& slot : it->second) {
    if (slot->program && slot->matches(request)) return slot->program;
  }
  return nullptr;
}

void MemoryLayer::forget(std::size_t hash, const std::shared_ptr<Slot>& slot) {
  std::unique_lock lock(mutex_);
  auto it = map_.find(hash);
  if (it == map_.end()) return;  // cleared meanwhile
  Bucket& bucket = it->second;
  for (auto s = bucket.begin(); s != bucket.end(); ++s) {
    if (*s == slot) {
      bucket.erase(s);
      --count_;
      break;
    }
  }
  if (bucket.empty()) map_.erase(it);
}

std::shared_ptr<const CompiledProgram> MemoryLayer::get(const KernelRequest& request,
                                                        const Produce& produce, bool* hit) {
  const std::size_t h = hash_request(request);
  *hit = true;
  if (auto program = find(h, request)) return program;

  std::shared_ptr<Slot> slot;
  std::shared_future<std::shared_ptr<const CompiledProgram>> pending;
  std::promise<std::shared_ptr<const CompiledProgram>> promise;
  {
    std::unique_lock lock(mutex_);
    Bucket& bucket = map_[h];
    for (const auto& s : bucket) {
      if (!s->matches(request)) continue;
      if (s->program) return s->program;
      pending = s->pending;
      break;
    }
    if (!pending.valid()) {
      slot = std::make_shared<Slot>(Slot{request.kind, request.spec, request.include_digest,
                                         request.target, nullptr, promise.get_future().share()});
      bucket.push_back(slot);
      ++count_;
    }
  }
  // Another thread is producing this kernel: wait for it (its exception, if any, is ours).
  if (!slot) return pending.get();

  *hit = false;
  std::shared_ptr<const CompiledProgram> program;
  try {
    program = produce();
  } catch (...) {
    promise.set_exception(std::current_exception());
    forget(h, slot);
    throw;
  }
  {
    std::unique_lock lock(mutex_);
    slot->program = program;
  }
  promise.set_value(program);
  return program;
}

void MemoryLayer::clear() {
  std::unique_lock lock(mutex_);
  map_.clear();
  count_ = 0;
}

std::size_t MemoryLayer::size() const {
  std::shared_lock lock(mutex_);
  return count_;
}

}  // namespace cujit::detail
