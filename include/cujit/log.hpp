#pragma once
/// \file What cujit says about its work: warnings, and on request what it looked up, compiled
/// and loaded. The level comes from CUJIT_LOG (off, warn, info, debug; default warn) and can be
/// changed at run time; messages go to stderr as "cujit: <level>: <message>" unless a sink is set.

#include <cstdint>
#include <cujit/export.hpp>
#include <functional>
#include <string>

namespace cujit {

/// How much cujit reports; each level includes those before it.
enum class LogLevel : std::uint8_t {
  Off = 0,    ///< nothing (warnings are still counted, and still reach a warning sink)
  Warn = 1,   ///< something degraded: a damaged cache, a bad environment variable
  Info = 2,   ///< per kernel specialisation: where the cache found it or how long it compiled,
              ///< module loads
  Debug = 3,  ///< also every tier a lookup missed and NVRTC's command lines
};

/// "off", "warn", "info" or "debug".
CUJIT_EXPORT const char* to_string(LogLevel level) noexcept;

/// The current level: CUJIT_LOG when the library was loaded (an unknown value gives warn and one
/// warning), or the last set_log_level. Thread-safe; one relaxed atomic load.
CUJIT_EXPORT LogLevel log_level() noexcept;

/// Sets the level for the whole process. Thread-safe.
CUJIT_EXPORT void set_log_level(LogLevel level) noexcept;

/// Receives each message at or below the current level (the text has no "cujit: " prefix).
using LogSink = std::function<void(LogLevel level, const std::string& message)>;

/// Replaces where messages go (by default stderr) and returns the previous sink; an empty sink
/// restores the default. A sink set by set_warning_sink (cujit/cache.hpp) keeps its old meaning:
/// it receives every warning, whatever the level, and this sink then receives none. The sink
/// may be called from any thread and should not throw (an exception it throws is swallowed and
/// the message goes to stderr). Thread-safe.
CUJIT_EXPORT LogSink set_log_sink(LogSink sink);

}  // namespace cujit
