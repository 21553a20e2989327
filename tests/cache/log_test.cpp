// Levelled logging (cujit/log.hpp, support/log.hpp): the level gates messages before they are
// built, the log sink receives them, set_warning_sink keeps its meaning, and the kernel cache
// says per kernel where it found a program or how long it compiled.

#include "support/log.hpp"

#include "cache/kernel_cache.hpp"
#include "support/warning.hpp"
#include "cache_test_util.hpp"

#include <cujit/cache.hpp>
#include <cujit/log.hpp>

#include <gtest/gtest.h>

#include <mutex>
#include <string>
#include <vector>

namespace cujit {
namespace {

// Sets a level and collects what the log sink receives while alive.
class LogCapture {
 public:
  explicit LogCapture(LogLevel level) : previous_level_(log_level()) {
    set_log_level(level);
    previous_ = set_log_sink([this](LogLevel l, const std::string& m) {
      std::lock_guard lock(mutex_);
      lines_.push_back(std::string(to_string(l)) + ": " + m);
    });
  }
  ~LogCapture() {
    set_log_sink(previous_);
    set_log_level(previous_level_);
  }
  std::string joined() const {
    std::lock_guard lock(mutex_);
    std::string out;
    for (const auto& l : lines_) out += l + "\n";
    return out;
  }
  std::size_t count(const std::string& text) const {
    std::lock_guard lock(mutex_);
    std::size_t n = 0;
    for (const auto& l : lines_) n += l.find(text) != std::string::npos ? 1 : 0;
    return n;
  }

 private:
  LogLevel previous_level_;
  LogSink previous_;
  mutable std::mutex mutex_;
  std::vector<std::string> lines_;
};

TEST(Log, ParsesEveryDocumentedLevelAndRefusesOthers) {
  LogLevel level = LogLevel::Warn;
  const std::pair<const char*, LogLevel> valid[] = {
      {"off", LogLevel::Off},   {"OFF", LogLevel::Off},      {"0", LogLevel::Off},
      {"warn", LogLevel::Warn}, {"warning", LogLevel::Warn}, {"info", LogLevel::Info},
      {"Info", LogLevel::Info}, {"debug", LogLevel::Debug},  {"3", LogLevel::Debug}};
  for (const auto& [text, expected] : valid) {
    EXPECT_TRUE(detail::parse_log_level(text, level)) << text;
    EXPECT_EQ(level, expected) << text;
  }
  level = LogLevel::Info;
  for (const char* text : {"", "verbose", "4", "debug ", "in fo"}) {
    EXPECT_FALSE(detail::parse_log_level(text, level)) << text;
    EXPECT_EQ(level, LogLevel::Info) << "unchanged after '" << text << "'";
  }
  EXPECT_STREQ(to_string(LogLevel::Debug), "debug");
}

TEST(Log, TheLevelGatesMessagesBeforeTheyAreBuilt) {
  LogCapture capture(LogLevel::Info);
  int built = 0;
  auto message = [&](const char* text) {
    ++built;
    return std::string(text);
  };
  CUJIT_LOG_AT(LogLevel::Info, message("shown"));
  CUJIT_LOG_AT(LogLevel::Debug, message("hidden"));
  EXPECT_EQ(built, 1);
  EXPECT_EQ(capture.count("info: shown"), 1u) << capture.joined();
  EXPECT_EQ(capture.count("hidden"), 0u) << capture.joined();
  set_log_level(LogLevel::Off);
  CUJIT_LOG_AT(LogLevel::Warn, message("off"));
  EXPECT_EQ(built, 1);
  EXPECT_FALSE(detail::log_enabled(LogLevel::Off));  // "off" is a level, never a message
}

TEST(Log, WarningsReachTheWarningSinkWhateverTheLevelAndTheLogSinkOtherwise) {
  LogCapture capture(LogLevel::Off);
  const std::uint64_t before = warning_count();
  {
    test::WarningCapture warnings;
    detail::warn("to the warning sink");
    EXPECT_TRUE(warnings.contains("to the warning sink"));
  }
  detail::warn("silenced at off");
  EXPECT_EQ(warning_count(), before + 2);  // counted either way
  EXPECT_EQ(capture.count("silenced"), 0u) << capture.joined();
  set_log_level(LogLevel::Warn);
  detail::warn("to the log sink");
  EXPECT_EQ(capture.count("warn: to the log sink"), 1u) << capture.joined();
}

TEST(Log, TheCacheNamesTheKernelAndWhereItFoundIt) {
  LogCapture capture(LogLevel::Debug);
  auto store = std::make_shared<detail::MemoryStore>();
  test::FakeCompiler compiler;
  test::FakeKernel k = test::fake_kernel("logged_kernel");
  k.request.name = "logged_kernel";
  {
    detail::KernelCache cache(store, {});
    cache.get_or_compile(k.request, k.generator(), compiler.fn(k.request.target));
    cache.get_or_compile(k.request, k.generator(), compiler.fn(k.request.target));
  }
  detail::KernelCache fresh(store, {});
  fresh.get_or_compile(k.request, k.generator(), compiler.fn(k.request.target));
  const std::string kernel = "kernel 'logged_kernel' (test, sm_80)";
  EXPECT_EQ(capture.count(kernel + ": no entry for request key"), 1u) << capture.joined();
  EXPECT_EQ(capture.count(kernel + ": no entry for content key"), 1u) << capture.joined();
  EXPECT_EQ(capture.count("info: " + kernel + ": compiled in "), 1u) << capture.joined();
  EXPECT_EQ(capture.count("debug: " + kernel + ": memory hit"), 1u) << capture.joined();
  EXPECT_EQ(capture.count("info: " + kernel + ": hit in the writable database"), 1u)
      << capture.joined();

  // At warn, the same lookups say nothing.
  set_log_level(LogLevel::Warn);
  detail::KernelCache quiet(store, {});
  quiet.get_or_compile(k.request, k.generator(), compiler.fn(k.request.target));
  EXPECT_EQ(capture.count("hit in the writable database"), 1u) << capture.joined();
}

}  // namespace
}  // namespace cujit
