#include "cache/store.hpp"

#include <algorithm>

namespace cujit::detail {

Lookup MemoryStore::find_locked(const std::string& content_key) {
  Lookup out;
  auto it = records_.find(content_key);
  if (it == records_.end()) return out;
  out.record = it->second;
  out.record.source_zstd.clear();
  out.status = out.record.checksum_ok() ? Lookup::Status::Hit : Lookup::Status::Damaged;
  return out;
}

Lookup MemoryStore::find_by_request(const std::string& request_key) {
  std::lock_guard lock(mutex_);
  auto it = requests_.find(request_key);
  return it == requests_.end() ? Lookup{} : find_locked(it->second);
}

Lookup MemoryStore::find_by_content(const std::string& content_key) {
  std::lock_guard lock(mutex_);
  return find_locked(content_key);
}

void MemoryStore::put(const CacheRecord& record, const std::string& request_key) {
  std::lock_guard lock(mutex_);
  records_.emplace(record.content_key, record);
  if (!request_key.empty()) requests_[request_key] = record.content_key;
}

void MemoryStore::link(const std::string& request_key, const std::string& content_key) {
  std::lock_guard lock(mutex_);
  requests_[request_key] = content_key;
}

void MemoryStore::remove(const std::string& content_key) {
  std::lock_guard lock(mutex_);
  records_.erase(content_key);
  for (auto it = requests_.begin(); it != requests_.end();) {
    it = it->second == content_key ? requests_.erase(it) : std::next(it);
  }
}

void MemoryStore::touch(const std::string& content_key) {
  std::lock_guard lock(mutex_);
  auto it = records_.find(content_key);
  if (it != records_.end()) it->second.last_used = now_ms();
}

std::vector<std::pair<std::string, CacheRecord>> MemoryStore::recent(std::size_t max_records) {
  std::lock_guard lock(mutex_);
  std::vector<std::pair<std::string, CacheRecord>> out;
  for (const auto& [request, content] : requests_) {
    Lookup found = find_locked(content);
    if (found.status == Lookup::Status::Hit) out.emplace_back(request, std::move(found.record));
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return a.second.last_used > b.second.last_used;
  });
  if (out.size() > max_records) out.resize(max_records);
  return out;
}

std::size_t MemoryStore::size() const {
  std::lock_guard lock(mutex_);
  return records_.size();
}

}  // namespace cujit::detail
