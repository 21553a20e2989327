// Issue 29, item 8: cujit-cache against a hostile Redis server. A SCAN whose cursor never comes
// back to 0 made `ls --remote`, `info --remote` and `pull` loop forever; the server's bytes
// (a policy, an error reply, a key) reached the terminal raw; `push` reported success when SET
// was not answered +OK.

#include "cache/remote_entry.hpp"
#include "fleet_test_util.hpp"
#include "support/scripted_redis.hpp"
#include "tool_test_util.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <vector>

namespace cujit::detail {
namespace {

using namespace std::chrono_literals;
using test::resp_array;
using test::resp_bulk;
using test::ScriptedRedis;
using test::ScriptedSession;
using test::tool;
using test::ToolRun;
using Args = std::vector<std::string>;

const std::string kCleanEnv =
    "env -u CUJIT_CACHE_REMOTE -u CUJIT_CACHE_SIGNING_KEY -u CUJIT_CACHE_TRUSTED_KEYS";
// Sets a window title, clears the screen, turns text red: none of it may reach a terminal.
const std::string kEscapes = "\x1b]0;owned\x07\x1b[2J\x1b[31m";

std::string kernel_key(const std::string& suffix) {
  std::string pattern = remote_kernel_pattern();
  pattern.pop_back();  // the '*'
  return pattern + suffix;
}

// What a command other than SCAN gets from the scripted servers below: harmless answers.
bool harmless(ScriptedSession& s, const Args& command) {
  if (command[0] == "DBSIZE") return s.send(":0\r\n");
  if (command[0] == "INFO") return s.send(resp_bulk("maxmemory:0\r\n"));
  return s.send("$-1\r\n");
}

std::string scan_reply(const std::string& cursor, const std::vector<std::string>& keys) {
  return "*2\r\n" + resp_bulk(cursor) + resp_array(keys);
}

void expect_unfinished_scan(const ToolRun& run) {
  EXPECT_EQ(run.status, 2) << run.out;
  EXPECT_NE(run.out.find("did not finish"), std::string::npos) << run.out;
}

TEST(FleetToolHostile, AScanThatNeverEndsIsBounded) {
  CUJIT_SKIP_WITHOUT_TOOL();
  // New cursors, 1000 new keys each time. (Here the server gives up after 1500 steps, 1.5M
  // keys, so that the test ends either way.)
  ScriptedRedis growing([](ScriptedSession& s, const Args& command) {
    if (command[0] != "SCAN") return harmless(s, command);
    const unsigned long cursor = std::stoul(command[1]) + 1;
    if (cursor > 1500) return false;
    std::vector<std::string> keys;
    for (int i = 0; i < 1000; ++i)
      keys.push_back(kernel_key(std::to_string(cursor) + "-" + std::to_string(i)));
    return s.send(scan_reply(std::to_string(cursor), keys));
  });
  expect_unfinished_scan(tool("ls --remote " + growing.url(), kCleanEnv, true));
  // Cursors that come back: 1, 2, 1, 2, ... (the server gives up after 3000 steps).
  std::atomic<int> steps{0};
  ScriptedRedis cycling([&steps](ScriptedSession& s, const Args& command) {
    if (command[0] != "SCAN") return harmless(s, command);
    if (++steps > 3000) return false;
    return s.send(scan_reply(command[1] == "1" ? "2" : "1", {kernel_key("a")}));
  });
  expect_unfinished_scan(tool("info --remote " + cycling.url(), kCleanEnv, true));
  steps = 0;
  test::TempDir dir;
  expect_unfinished_scan(tool(
      "pull --trust-any --remote " + cycling.url() + " -o " + dir.file("out.db"), kCleanEnv, true));
}

TEST(FleetToolHostile, TheServersBytesAreEscapedBeforeTheyArePrinted) {
  CUJIT_SKIP_WITHOUT_TOOL();
  // info --remote: the policy is the server's text.
  ScriptedRedis policy([](ScriptedSession& s, const Args& command) {
    if (command[0] == "SCAN") return s.send(scan_reply("0", {}));
    if (command[0] == "INFO") {
      return s.send(resp_bulk("# Memory\r\nused_memory:1\r\nmaxmemory:1\r\nmaxmemory_policy:" +
                              kEscapes + "noeviction\r\n"));
    }
    return harmless(s, command);
  });
  ToolRun run = tool("info --remote " + policy.url(), kCleanEnv, true);
  EXPECT_EQ(run.status, 0) << run.out;
  EXPECT_EQ(run.out.find('\x1b'), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("\\x1b]0;owned\\x07\\x1b[2J"), std::string::npos) << run.out;
  // An error reply.
  ScriptedRedis error(
      [](ScriptedSession& s, const Args&) { return s.send("-ERR " + kEscapes + "denied\r\n"); });
  run = tool("ls --remote " + error.url(), kCleanEnv, true);
  EXPECT_EQ(run.status, 2) << run.out;
  EXPECT_EQ(run.out.find('\x1b'), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("ERR \\x1b]0;owned"), std::string::npos) << run.out;
  // A key's name, listed as it is when it is no kernel key.
  ScriptedRedis key([](ScriptedSession& s, const Args& command) {
    if (command[0] == "SCAN") return s.send(scan_reply("0", {kernel_key(kEscapes)}));
    return harmless(s, command);
  });
  run = tool("ls --remote " + key.url(), kCleanEnv, true);
  EXPECT_EQ(run.status, 0) << run.out;
  EXPECT_EQ(run.out.find('\x1b'), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("\\x1b[2J"), std::string::npos) << run.out;
}

TEST(FleetToolHostile, ErrorRepliesAreEscapedInTheLibrarysMessagesToo) {
  ScriptedRedis error(
      [](ScriptedSession& s, const Args&) { return s.send("-ERR " + kEscapes + "\xff\r\n"); });
  RedisConnection c(*parse_remote_url(error.url(), nullptr), 2000ms, 2000ms);
  try {
    c.del("k");
    ADD_FAILURE() << "an error reply was taken for success";
  } catch (const RedisError& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.find('\x1b'), std::string::npos) << m;
    EXPECT_EQ(m.find('\xff'), std::string::npos) << m;
    EXPECT_NE(m.find("ERR \\x1b]0;owned\\x07\\x1b[2J\\x1b[31m\\xff"), std::string::npos) << m;
  }
}

// A database holding `n` kernels, compiled by the fake compiler.
std::string local_database(const test::TempDir& dir, int n) {
  CacheConfig config;
  config.database_path = dir.file("local.db");
  config.preload_records = 0;
  KernelCache cache(config);
  test::FakeCompiler compiler;
  for (int i = 0; i < n; ++i) {
    const auto k = test::fake_kernel("k" + std::to_string(i));
    cache.get_or_compile(k.request, k.generator(), compiler.fn(k.request.target), nullptr);
  }
  return config.database_path;
}

TEST(FleetToolHostile, PushFailsWhenASetIsNotAnsweredOk) {
  CUJIT_SKIP_WITHOUT_TOOL();
  test::TempDir dir;
  const std::string db = local_database(dir, 3);
  for (const std::string reply : {"*1\r\n$2\r\nOK\r\n", ":1\r\n", "+QUEUED\r\n", "$2\r\nOK\r\n"}) {
    ScriptedRedis server([reply](ScriptedSession& s, const Args& command) {
      return command[0] == "SET" ? s.send(reply) : harmless(s, command);
    });
    const ToolRun run = tool("push --remote " + server.url() + " --db " + db, kCleanEnv, true);
    EXPECT_NE(run.status, 0) << run.out;
    EXPECT_EQ(run.out.find("pushed 3 entries"), std::string::npos) << run.out;
    EXPECT_NE(run.out.find("not +OK"), std::string::npos) << run.out;
  }
  // The library's single SET, as the fleet tier publishes, is held to the same rule.
  ScriptedRedis arrays([](ScriptedSession& s, const Args&) { return s.send("*0\r\n"); });
  RedisConnection c(*parse_remote_url(arrays.url(), nullptr), 2000ms, 2000ms);
  EXPECT_THROW(c.set("k", "v"), RedisError);
}

}  // namespace
}  // namespace cujit::detail
