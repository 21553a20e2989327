#include "cache/store.hpp"

#include "cache/entry_signature.hpp"

#include <algorithm>

namespace cujit::detail {

// `signed_key`: the key whose signature the lookup reports (the request or the content key).
Lookup MemoryStore::find_locked(const std::string& content_key, const std::string& signed_key) {
  Lookup out;
  auto it = records_.find(content_key);
  if (it == records_.end()) return out;
  out.record = it->second;
  out.status = out.record.checksum_ok() ? Lookup::Status::Hit : Lookup::Status::Damaged;
  auto signature = signatures_.find(signed_key);
  if (signature != signatures_.end()) {
    out.signature = signature->second;
  } else {
    out.record.source_zstd.clear();  // as SqliteStore: only a signed entry's source comes along
  }
  return out;
}

Lookup MemoryStore::find_by_request(const std::string& request_key) {
  std::lock_guard lock(mutex_);
  auto it = requests_.find(request_key);
  return it == requests_.end() ? Lookup{} : find_locked(it->second, request_key);
}

Lookup MemoryStore::find_by_content(const std::string& content_key) {
  std::lock_guard lock(mutex_);
  return find_locked(content_key, content_key);
}

void MemoryStore::put(const CacheRecord& record, const std::string& request_key,
                      const EntrySignatures& signatures) {
  std::lock_guard lock(mutex_);
  const auto [it, inserted] = records_.emplace(record.content_key, record);
  // As SqliteStore: a signature stays only with an entry equal to `record` where it is signed.
  const bool same = inserted || (signatures.content.empty() && signatures.request.empty()) ||
                    signs_alike(it->second, record);
  if (!signatures.content.empty() && same) signatures_[record.content_key] = signatures.content;
  if (request_key.empty()) return;
  requests_[request_key] = record.content_key;
  if (signatures.request.empty() || !same) {
    signatures_.erase(request_key);
  } else {
    signatures_[request_key] = signatures.request;
  }
}

void MemoryStore::link(const std::string& request_key, const std::string& content_key) {
  std::lock_guard lock(mutex_);
  requests_[request_key] = content_key;
  signatures_.erase(request_key);
}

void MemoryStore::remove(const std::string& content_key) {
  std::lock_guard lock(mutex_);
  records_.erase(content_key);
  signatures_.erase(content_key);
  for (auto it = requests_.begin(); it != requests_.end();) {
    if (it->second != content_key) {
      ++it;
      continue;
    }
    signatures_.erase(it->first);
    it = requests_.erase(it);
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
    Lookup found = find_locked(content, request);
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
