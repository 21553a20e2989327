#pragma once
// The one function through which the cache (and the rest of cujit) issues warnings.

#include <string>

namespace cujit::detail {

/// Counts the warning and hands it to the sink set by cujit::set_warning_sink; without one, to
/// the log sink (cujit/log.hpp; by default stderr, "cujit: warning: <message>") unless the
/// level is off. Thread-safe; never throws.
void warn(const std::string& message) noexcept;

}  // namespace cujit::detail
