// Issue 29, item 2: a hostile Redis server is bounded. The operation timeout bounds each whole
// operation (a server trickling one byte per read kept a lookup blocked for minutes), and a
// reply is bounded in bytes and array elements (a 2 GB GETRANGE reply after "STRLEN 100" was
// buffered whole).

#include "fleet_test_util.hpp"
#include "support/scripted_redis.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

namespace cujit::detail {
namespace {

using namespace std::chrono_literals;
using test::ScriptedRedis;
using test::ScriptedSession;
using Args = std::vector<std::string>;
using Clock = std::chrono::steady_clock;

RedisConnection connect(const ScriptedRedis& server, std::chrono::milliseconds timeout) {
  return RedisConnection(*parse_remote_url(server.url(), nullptr), 2000ms, timeout);
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Answers every command with a reply that is never whole, one byte every 50 ms for 20 s: each
// read gets a byte well within the timeout.
bool trickle(ScriptedSession& s, const Args&) {
  const std::string reply = "$100000\r\n" + std::string(100000, 'x');
  return s.trickle(std::string_view(reply).substr(0, 400), 50ms);
}

TEST(FleetBounds, ATricklingServerFailsTheOperationWithinItsTimeout) {
  ScriptedRedis server(trickle);
  RedisConnection c = connect(server, 500ms);
  const auto start = Clock::now();
  try {
    c.get_bounded("cujit:1:kernel:k", 4096);
    ADD_FAILURE() << "a reply that never ends was accepted";
  } catch (const RedisError& e) {
    EXPECT_EQ(e.failure(), RedisFailure::Io);
    EXPECT_NE(std::string(e.what()).find("timed out after 500 ms"), std::string::npos) << e.what();
  }
  EXPECT_LT(seconds_since(start), 10.0);  // 0.5 s, generously
}

TEST(FleetBounds, ATricklingServerDoesNotHoldUpACompilation) {
  ScriptedRedis server(trickle);
  test::KeyPairFiles keys;
  test::TempDir dir;
  CacheConfig config = test::host_config(dir, server.url(), keys);
  config.remote_connect_timeout_ms = 2000;
  config.remote_timeout_ms = 200;
  test::WarningCapture warnings;
  const auto start = Clock::now();
  {
    KernelCache cache(config);
    test::FakeCompiler compiler;
    const auto k = test::fake_kernel("k");
    CacheOutcome where{};
    cache.get_or_compile(k.request, k.generator(), compiler.fn(k.request.target), &where);
    EXPECT_EQ(where, CacheOutcome::Compiled);
  }
  EXPECT_LT(seconds_since(start), 10.0);  // a few timeouts of 0.2 s, generously
  EXPECT_TRUE(warnings.contains("timed out after 200 ms")) << warnings.joined();
}

// "STRLEN 100", then a GETRANGE reply announcing 2 GB and streaming it (128 MiB at most here).
bool huge_value(ScriptedSession& s, const Args& command) {
  if (command[0] == "STRLEN") return s.send(":100\r\n");
  if (!s.send("$2000000000\r\n")) return false;
  const std::string chunk(std::size_t{1} << 16, 'x');
  for (int i = 0; i < 2048; ++i) {
    if (!s.send(chunk)) return false;
  }
  return true;
}

TEST(FleetBounds, AValueIsReadOnlyUpToItsLimitWhateverTheServerSends) {
  ScriptedRedis server(huge_value);
  RedisConnection c = connect(server, 5000ms);
  try {
    c.get_bounded("cujit:1:kernel:k", 4096);
    ADD_FAILURE() << "a 2 GB reply was read";
  } catch (const RedisError& e) {
    EXPECT_EQ(e.failure(), RedisFailure::Io);
    EXPECT_NE(std::string(e.what()).find("a reply over 4160 bytes"), std::string::npos) << e.what();
  }
  // The connection is closed at the limit: the server could send only what the sockets hold.
  EXPECT_LT(server.bytes_sent(), std::size_t{32} << 20);
  EXPECT_THROW(c.dbsize(), RedisError);  // unusable now
}

TEST(FleetBounds, OtherRepliesAreBoundedToo) {
  // INFO answered with 64 MiB of text: over the 1 MiB bound of every other command.
  ScriptedRedis server([](ScriptedSession& s, const Args&) {
    if (!s.send("$67108864\r\n")) return false;
    const std::string line(1023, 'a');
    for (int i = 0; i < 65536; ++i) {
      if (!s.send(line + "\n")) return false;
    }
    return s.send("\r\n");
  });
  RedisConnection c = connect(server, 5000ms);
  try {
    c.info("memory");
    ADD_FAILURE() << "a 64 MiB INFO was read";
  } catch (const RedisError& e) {
    EXPECT_EQ(e.failure(), RedisFailure::Io);
    EXPECT_NE(std::string(e.what()).find("a reply over 1048576 bytes"), std::string::npos)
        << e.what();
  }
  EXPECT_LT(server.bytes_sent(), std::size_t{32} << 20);
}

TEST(FleetBounds, ArraysAreBoundedInElementsBeforeTheyAreAllocated) {
  // hiredis allocates an array's element pointers when it reads the count: 800 MB here.
  ScriptedRedis huge_count(
      [](ScriptedSession& s, const Args&) { return s.send("*2\r\n$1\r\n0\r\n*100000000\r\n"); });
  std::vector<std::string> keys;
  RedisConnection c = connect(huge_count, 2000ms);
  try {
    c.scan(0, "*", 10, keys);
    ADD_FAILURE() << "an array of 10^8 elements was accepted";
  } catch (const RedisError& e) {
    EXPECT_EQ(e.failure(), RedisFailure::Io);
    EXPECT_NE(std::string(e.what()).find("an array reply of over 65536 elements"),
              std::string::npos)
        << e.what();
  }
  // Small arrays, many of them: the bound counts the elements of nested arrays together.
  ScriptedRedis nested([](ScriptedSession& s, const Args&) {
    std::string many = "*2\r\n$1\r\n0\r\n*70\r\n";
    for (int i = 0; i < 70; ++i) {
      many += "*1000\r\n";
      for (int j = 0; j < 1000; ++j) many += ":1\r\n";
    }
    return s.send(many);
  });
  RedisConnection d = connect(nested, 2000ms);
  try {
    d.scan(0, "*", 10, keys);
    ADD_FAILURE() << "70,000 nested elements were accepted";
  } catch (const RedisError& e) {
    EXPECT_NE(std::string(e.what()).find("an array reply of over 65536 elements"),
              std::string::npos)
        << e.what();
  }
}

TEST(FleetBounds, ARealServerStillWorksWithinTheBounds) {
  test::RedisServer redis;
  CUJIT_REQUIRE_REDIS(redis);
  auto c = test::connect_to(redis.url());
  const std::string value(std::size_t{3} << 20, 'v');  // larger than the default reply bound
  c.set("big", value);
  const BoundedValue read = c.get_bounded("big", value.size());
  EXPECT_EQ(read.status, BoundedValue::Status::Found);
  EXPECT_EQ(read.value, value);
  std::vector<std::pair<std::string, std::string>> many;
  for (int i = 0; i < 3000; ++i) many.emplace_back("k" + std::to_string(i), "v");
  c.set_many(many);
  std::vector<std::string> keys;
  std::uint64_t cursor = 0;
  do {
    cursor = c.scan(cursor, "k*", 1000, keys);
  } while (cursor != 0);
  EXPECT_GE(keys.size(), 3000u);
  EXPECT_FALSE(c.info("memory").empty());
  EXPECT_TRUE(c.set("lease", "held", 1000, true));
  EXPECT_FALSE(c.set("lease", "held", 1000, true));  // NX: present
}

}  // namespace
}  // namespace cujit::detail
