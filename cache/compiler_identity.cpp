#include "cache/compiler_identity.hpp"

#include <cujit/error.hpp>

#include <mutex>

namespace cujit::detail {
namespace {

std::mutex& identity_mutex() {
  static std::mutex mutex;
  return mutex;
}

CompilerHooks& hooks() {
  static CompilerHooks installed;
  return installed;
}

}  // namespace

void install_compiler_hooks(CompilerHooks installed) {
  std::lock_guard lock(identity_mutex());
  hooks() = std::move(installed);
}

const std::string& compiler_identity() {
  // Kept once a hook answered; without one, "none" is returned but not kept, so keys computed
  // before the runtime installed its hook can never stand for a compiler later on.
  static const std::string none = "none";
  static std::string identity;
  std::lock_guard lock(identity_mutex());
  if (identity.empty() && hooks().identity) identity = hooks().identity();
  return identity.empty() ? none : identity;
}

std::string compiler_version() {
  static std::string version;  // kept once known: loading the compiler is not repeated
  std::function<std::string()> hook;
  {
    std::lock_guard lock(identity_mutex());
    if (!version.empty()) return version;
    hook = hooks().version;
  }
  if (!hook) return {};
  std::string found;
  try {
    found = hook();
  } catch (const Error&) {
    return {};  // no compiler on this machine: nothing is stale by its version
  }
  std::lock_guard lock(identity_mutex());
  if (version.empty()) version = std::move(found);
  return version;
}

std::uint64_t compiler_compile_count() {
  std::function<std::uint64_t()> count;
  {
    std::lock_guard lock(identity_mutex());
    count = hooks().compile_count;
  }
  return count ? count() : 0;
}

}  // namespace cujit::detail
