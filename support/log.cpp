#include "support/log.hpp"

#include "support/warning.hpp"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace cujit {
namespace detail {

std::atomic<std::uint8_t> g_log_level{static_cast<std::uint8_t>(LogLevel::Warn)};

namespace {

std::mutex& sink_mutex() {
  static std::mutex m;
  return m;
}

LogSink& sink() {
  static LogSink s;
  return s;
}

const char* prefix(LogLevel level) {
  return level == LogLevel::Warn ? "warning" : to_string(level);
}

// CUJIT_LOG, read once when the library is loaded (after g_log_level's constant initialisation).
const bool kLevelFromEnvironment = [] {
  const char* text = std::getenv("CUJIT_LOG");
  if (text == nullptr || *text == '\0') return true;
  LogLevel level = LogLevel::Warn;
  if (parse_log_level(text, level)) {
    g_log_level.store(static_cast<std::uint8_t>(level), std::memory_order_relaxed);
  } else {
    warn(std::string("CUJIT_LOG='") + text + "' is not one of off, warn, info, debug; using warn");
  }
  return true;
}();

}  // namespace

void log_message(LogLevel level, const std::string& message) noexcept {
  if (log_enabled(level)) log_always(level, message);
}

void log_always(LogLevel level, const std::string& message) noexcept {
  if (g_log_level.load(std::memory_order_relaxed) == static_cast<std::uint8_t>(LogLevel::Off)) {
    return;  // CUJIT_LOG=off: nothing at all
  }
  try {
    LogSink current;
    {
      std::lock_guard lock(sink_mutex());
      current = sink();
    }
    if (current) {
      current(level, message);
      return;
    }
  } catch (...) {
    // A throwing sink must not turn a message into a failure; fall through to stderr.
  }
  std::fprintf(stderr, "cujit: %s: %s\n", prefix(level), message.c_str());
}

bool parse_log_level(std::string_view text, LogLevel& out) noexcept {
  std::string v;
  for (char c : text) v += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (v == "off" || v == "none" || v == "0") {
    out = LogLevel::Off;
  } else if (v == "warn" || v == "warning" || v == "1") {
    out = LogLevel::Warn;
  } else if (v == "info" || v == "2") {
    out = LogLevel::Info;
  } else if (v == "debug" || v == "3") {
    out = LogLevel::Debug;
  } else {
    return false;
  }
  return true;
}

}  // namespace detail

const char* to_string(LogLevel level) noexcept {
  switch (level) {
    case LogLevel::Off:
      return "off";
    case LogLevel::Warn:
      return "warn";
    case LogLevel::Info:
      return "info";
    case LogLevel::Debug:
      return "debug";
  }
  return "?";
}

LogLevel log_level() noexcept {
  return static_cast<LogLevel>(detail::g_log_level.load(std::memory_order_relaxed));
}

void set_log_level(LogLevel level) noexcept {
  detail::g_log_level.store(static_cast<std::uint8_t>(level), std::memory_order_relaxed);
}

LogSink set_log_sink(LogSink new_sink) {
  std::lock_guard lock(detail::sink_mutex());
  LogSink old = std::move(detail::sink());
  detail::sink() = std::move(new_sink);
  return old;
}

}  // namespace cujit
