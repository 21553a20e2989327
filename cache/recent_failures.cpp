#include "cache/recent_failures.hpp"

#include "cache/include_digest.hpp"

namespace cujit::detail {

void RecentFailures::remember(const std::string& key, const CompileError& error) {
  if (error.line() <= 0) return;
  std::lock_guard lock(mutex_);
  if (errors_.size() >= kMaxKept) errors_.clear();
  errors_.insert_or_assign(key, error);
}

bool RecentFailures::rememberable(const SourceProgram& program) {
  bool computed = false;
  include_names(program.source, &computed);
  return !computed;
}

void RecentFailures::rethrow_if_known(const std::string& key) const {
  std::unique_lock lock(mutex_);
  const auto found = errors_.find(key);
  if (found == errors_.end()) return;
  const CompileError error = found->second;
  lock.unlock();
  throw error;
}

}  // namespace cujit::detail
