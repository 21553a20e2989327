#include "cache/compiler_identity.hpp"

#include <mutex>

namespace cujit::detail {
namespace {

std::mutex& identity_mutex() {
  static std::mutex mutex;
  return mutex;
}

std::function<std::string()>& identity_source() {
  static std::function<std::string()> source;
  return source;
}

}  // namespace

void set_compiler_identity(std::function<std::string()> source) {
  std::lock_guard lock(identity_mutex());
  identity_source() = std::move(source);
}

const std::string& compiler_identity() {
  static const std::string identity = [] {
    std::lock_guard lock(identity_mutex());
    return identity_source() ? identity_source()() : std::string("none");
  }();
  return identity;
}

}  // namespace cujit::detail
