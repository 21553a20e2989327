#pragma once
// Levelled messages (cujit/log.hpp). The level check is one relaxed atomic load, inline, so that
// a message below the level costs no string building: callers write
//   CUJIT_LOG_AT(LogLevel::Info, "kernel '" + name + "': ...");
// and the message expression is evaluated only when the level admits it.

#include <cujit/log.hpp>

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

namespace cujit::detail {

/// The process's level (LogLevel as an integer); read through log_enabled.
extern std::atomic<std::uint8_t> g_log_level;

/// True when a message at `level` would be reported. Thread-safe, never throws.
inline bool log_enabled(LogLevel level) noexcept {
  return static_cast<std::uint8_t>(level) <= g_log_level.load(std::memory_order_relaxed) &&
         level != LogLevel::Off;
}

/// Hands `message` to the log sink (by default stderr, "cujit: info: <message>") when `level`
/// is enabled. Warnings go through detail::warn (support/warning.hpp) instead, which counts them.
/// Thread-safe; never throws.
void log_message(LogLevel level, const std::string& message) noexcept;

/// Hands `message` to the log sink whatever the level, unless it is LogLevel::Off: for the
/// diagnostics a user asked for by other means (CUJIT_TRACE_SPECIALIZE, CUJIT_RED_DEBUG) and the
/// one line a process prints when it analyses snippets without the analyser. Thread-safe;
/// never throws.
void log_always(LogLevel level, const std::string& message) noexcept;

/// Parses a CUJIT_LOG value (off, warn, info, debug; also none/0, warning, 1..3; any case);
/// false for anything else, leaving `out` as it was.
bool parse_log_level(std::string_view text, LogLevel& out) noexcept;

}  // namespace cujit::detail

/// Reports the message expression at `level`, evaluating it only when the level is enabled.
#define CUJIT_LOG_AT(level, message)                                                       \
  do {                                                                                     \
    if (::cujit::detail::log_enabled(level)) ::cujit::detail::log_message(level, message); \
  } while (0)
