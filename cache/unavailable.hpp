#pragma once
// What a cache miss says when no compiler can be loaded: everything a deployment needs to
// cover the kernel next time.

#include "cache/kernel_cache.hpp"

#include <string>
#include <vector>

namespace cujit::detail {

/// The message of the CompilerUnavailableError raised for `request`: the kernel, its
/// specialisation (the manifest entry), its target, where it was looked for (`deployments`, the
/// `writable` database or "" for none, the compatible targets) and the `cujit-cache precompile`
/// command that would have covered it. `reason` says why no compiler could be loaded.
std::string compiler_unavailable_message(const KernelRequest& request,
                                         const std::vector<std::string>& deployments,
                                         const std::string& writable, const std::string& reason);

}  // namespace cujit::detail
