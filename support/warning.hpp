#pragma once
// The one function through which the cache (and the rest of cujit) issues warnings.

#include <string>
#include <string_view>

namespace cujit::detail {

/// Counts the warning and hands it to the sink set by cujit::set_warning_sink; without one, to
/// the log sink (cujit/log.hpp; by default stderr, "cujit: warning: <message>") unless the
/// level is off. Thread-safe; never throws.
void warn(const std::string& message) noexcept;

/// `message` without its leading "cujit: ": error messages start with it, and warn() adds its
/// own "cujit: warning: " when a caught error's message becomes a warning.
std::string without_cujit_prefix(std::string_view message);

}  // namespace cujit::detail
