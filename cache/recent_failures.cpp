#include "cache/recent_failures.hpp"

#include <sstream>

namespace cujit::detail {

void RecentFailures::remember(const std::string& key, const CompileError& error) {
  if (error.line() <= 0) return;
  std::lock_guard lock(mutex_);
  if (errors_.size() >= kMaxKept) errors_.clear();
  errors_.insert_or_assign(key, error);
}

bool RecentFailures::rememberable(const SourceProgram& program) {
  std::istringstream source(program.source);
  for (std::string line; std::getline(source, line);) {
    const std::size_t hash = line.find_first_not_of(" \t");
    if (hash == std::string::npos || line[hash] != '#') continue;
    const std::size_t word = line.find_first_not_of(" \t", hash + 1);
    if (word == std::string::npos || line.compare(word, 7, "include") != 0) continue;
    const std::size_t name = line.find_first_not_of(" \t", word + 7);
    if (name == std::string::npos || (line[name] != '<' && line[name] != '"')) return false;
  }
  return true;
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
