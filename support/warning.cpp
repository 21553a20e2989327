#include "support/warning.hpp"

#include "support/log.hpp"

#include <cujit/cache.hpp>

#include <atomic>
#include <cstdio>
#include <mutex>

namespace cujit {
namespace {

std::atomic<std::uint64_t> g_warnings{0};

std::mutex& sink_mutex() {
  static std::mutex m;
  return m;
}

WarningSink& sink() {
  static WarningSink s;
  return s;
}

}  // namespace

WarningSink set_warning_sink(WarningSink new_sink) {
  std::lock_guard lock(sink_mutex());
  WarningSink old = std::move(sink());
  sink() = std::move(new_sink);
  return old;
}

std::uint64_t warning_count() noexcept { return g_warnings.load(std::memory_order_relaxed); }

namespace detail {

void warn(const std::string& message) noexcept {
  g_warnings.fetch_add(1, std::memory_order_relaxed);
  try {
    WarningSink current;
    {
      std::lock_guard lock(sink_mutex());
      current = sink();
    }
    if (current) {
      current(message);
      return;
    }
  } catch (...) {
    // A throwing sink must not turn a warning into a failure; fall through to stderr.
    std::fprintf(stderr, "cujit: warning: %s\n", message.c_str());
    return;
  }
  log_message(LogLevel::Warn, message);  // the log sink, or stderr; nothing with CUJIT_LOG=off
}

std::string without_cujit_prefix(std::string_view message) {
  if (message.substr(0, 7) == "cujit: ") message.remove_prefix(7);
  return std::string(message);
}

}  // namespace detail
}  // namespace cujit
