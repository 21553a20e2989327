// Issue 19: the fleet tier. A kernel compiled on one host is loaded on another, verified; Redis
// slow, gone, restarted or refusing costs a bounded time and one warning, never an error.
// Every test runs a real redis-server (tests/support/redis_server.hpp).

#include "cache/remote_entry.hpp"
#include "cache/remote_tier.hpp"
#include "fleet_test_util.hpp"

#include <cujit/error.hpp>

#include <gtest/gtest.h>
#include <signal.h>

#include <thread>

namespace cujit::detail {
namespace {

using test::connect_to;
using test::fake_kernel;
using test::FakeCompiler;
using test::host_config;
using test::KeyPairFiles;
using test::RedisServer;
using test::TempDir;
using test::WarningCapture;

std::shared_ptr<const CompiledProgram> get(KernelCache& cache, const test::FakeKernel& k,
                                           FakeCompiler& compiler, CacheOutcome* where) {
  return cache.get_or_compile(k.request, k.generator(), compiler.fn(k.request.target), where);
}

TEST(Fleet, AKernelCompiledOnOneHostIsLoadedOnAnotherThenKeptLocally) {
  RedisServer redis;
  CUJIT_REQUIRE_REDIS(redis);
  KeyPairFiles keys;
  TempDir a, b;
  FakeCompiler compiler;
  const auto k = fake_kernel("shared");
  CacheOutcome where{};
  {
    KernelCache host_a(host_config(a, redis.url(), keys));
    get(host_a, k, compiler, &where);
    EXPECT_EQ(where, CacheOutcome::Compiled);
    host_a.flush();  // publication is in the background
    EXPECT_EQ(host_a.stats().remote_published, 1u);
  }
  KernelCache host_b(host_config(b, redis.url(), keys));
  auto program = get(host_b, k, compiler, &where);
  EXPECT_EQ(where, CacheOutcome::RemoteHit);
  EXPECT_EQ(compiler.calls, 1);
  EXPECT_EQ(host_b.stats().remote_hits, 1u);
  EXPECT_EQ(program->lowered_name("shared"), "_Zshared");
  // Host b keeps it (written by the tier's thread): a new process there finds it locally, even
  // with Redis gone.
  host_b.flush();
  redis.stop(SIGKILL);
  CacheConfig local = host_config(b, redis.url(), keys);
  local.remote_url.clear();
  KernelCache again(local);
  get(again, k, compiler, &where);
  EXPECT_EQ(where, CacheOutcome::DiskHit);
  EXPECT_EQ(compiler.calls, 1);
}

TEST(Fleet, AUnixSocketServesLikeTcp) {
  RedisServer redis;
  CUJIT_REQUIRE_REDIS(redis);
  KeyPairFiles keys;
  TempDir a, b;
  FakeCompiler compiler;
  const auto k = fake_kernel("over_unix");
  KernelCache host_a(host_config(a, redis.unix_url(), keys));
  get(host_a, k, compiler, nullptr);
  host_a.flush();
  KernelCache host_b(host_config(b, redis.unix_url() + "?db=0", keys));
  CacheOutcome where{};
  get(host_b, k, compiler, &where);
  EXPECT_EQ(where, CacheOutcome::RemoteHit);
  EXPECT_EQ(compiler.calls, 1);
}

TEST(Fleet, RedisKilledMidRunCostsOneWarningThenItReconnects) {
  RedisServer redis;
  CUJIT_REQUIRE_REDIS(redis);
  KeyPairFiles keys;
  TempDir a;
  FakeCompiler compiler;
  CacheConfig config = host_config(a, redis.url(), keys);
  config.remote_backoff_ms = 300;
  KernelCache cache(config);
  get(cache, fake_kernel("before"), compiler, nullptr);
  cache.flush();
  EXPECT_EQ(cache.stats().remote_published, 1u);
  WarningCapture warnings;
  redis.stop(SIGKILL);
  // Misses while Redis is gone: compiled here, no error, one warning, one failed operation for
  // the whole back-off period (the later misses do not try Redis at all).
  for (int i = 0; i < 5; ++i) {
    CacheOutcome where{};
    EXPECT_NO_THROW(get(cache, fake_kernel("down" + std::to_string(i)), compiler, &where));
    EXPECT_EQ(where, CacheOutcome::Compiled);
  }
  cache.flush();
  EXPECT_EQ(warnings.count(), 1u) << warnings.joined();
  EXPECT_TRUE(warnings.contains("skipped for 300 ms")) << warnings.joined();
  EXPECT_EQ(cache.stats().remote_errors, 1u);
  // Back: after the back-off the tier reconnects, publishes and serves again.
  ASSERT_TRUE(redis.start());
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  get(cache, fake_kernel("after"), compiler, nullptr);
  cache.flush();
  EXPECT_EQ(cache.stats().remote_published, 2u);
  TempDir other;
  KernelCache host_b(host_config(other, redis.url(), keys));
  CacheOutcome where{};
  get(host_b, fake_kernel("after"), compiler, &where);
  EXPECT_EQ(where, CacheOutcome::RemoteHit);
}

TEST(Fleet, AServerThatNeverAnswersCostsOneTimeoutPerBackOff) {
  test::SilentServer silent;
  KeyPairFiles keys;
  TempDir a;
  FakeCompiler compiler;
  WarningCapture warnings;
  CacheConfig config = host_config(a, silent.url(), keys);
  config.remote_timeout_ms = 100;
  KernelCache cache(config);
  for (int i = 0; i < 10; ++i) {
    CacheOutcome where{};
    EXPECT_NO_THROW(get(cache, fake_kernel("k" + std::to_string(i)), compiler, &where));
    EXPECT_EQ(where, CacheOutcome::Compiled);
  }
  cache.flush();
  EXPECT_EQ(compiler.calls, 10);
  // Ten misses, one operation that timed out: the other nine skipped the tier.
  EXPECT_EQ(cache.stats().remote_errors, 1u);
  EXPECT_EQ(warnings.count(), 1u) << warnings.joined();
  EXPECT_TRUE(warnings.contains("timed out")) << warnings.joined();
}

TEST(Fleet, AWrongPasswordWarnsAndEverythingStillWorksLocally) {
  RedisServer redis({"--requirepass", "right"});
  CUJIT_REQUIRE_REDIS(redis);
  KeyPairFiles keys;
  TempDir a;
  FakeCompiler compiler;
  WarningCapture warnings;
  KernelCache cache(host_config(a, redis.url("default:wrong@"), keys));
  CacheOutcome where{};
  EXPECT_NO_THROW(get(cache, fake_kernel("k"), compiler, &where));
  EXPECT_EQ(where, CacheOutcome::Compiled);
  cache.clear_memory();
  get(cache, fake_kernel("k"), compiler, &where);
  EXPECT_EQ(where, CacheOutcome::DiskHit);
  cache.flush();
  EXPECT_EQ(warnings.count(), 1u) << warnings.joined();
  EXPECT_TRUE(warnings.contains("WRONGPASS")) << warnings.joined();
  EXPECT_FALSE(warnings.contains("wrong@")) << "the password is never printed";
  // The right password works.
  TempDir b;
  KernelCache good(host_config(b, redis.url("default:right@"), keys));
  get(good, fake_kernel("k2"), compiler, nullptr);
  good.flush();
  EXPECT_EQ(good.stats().remote_published, 1u);
}

TEST(Fleet, AReadOnlyUserLoadsButDoesNotPublish) {
  RedisServer redis;
  CUJIT_REQUIRE_REDIS(redis);
  auto admin = connect_to(redis.url());
  // docs/fleet.md's ACL setup: a read-only user for the fleet, a read-write one for builders.
  ASSERT_NO_THROW(admin.set("probe", "1"));
  admin.execute({"ACL", "SETUSER", "fleet", "on", ">fleetpw", "~cujit:*", "+@read", "+ping",
                 "+auth", "+select"});
  admin.execute({"ACL", "SETUSER", "builder", "on", ">builderpw", "~cujit:*", "+@read", "+@write",
                 "+ping", "+auth", "+select"});
  KeyPairFiles keys;
  TempDir a, b;
  FakeCompiler compiler;
  const auto k = fake_kernel("built");
  KernelCache builder(host_config(a, redis.url("builder:builderpw@"), keys));
  get(builder, k, compiler, nullptr);
  builder.flush();
  ASSERT_EQ(builder.stats().remote_published, 1u);
  WarningCapture warnings;
  KernelCache reader(host_config(b, redis.url("fleet:fleetpw@"), keys));
  CacheOutcome where{};
  get(reader, k, compiler, &where);
  EXPECT_EQ(where, CacheOutcome::RemoteHit);
  // Its own compilations stay local, with one warning.
  get(reader, fake_kernel("mine"), compiler, &where);
  EXPECT_EQ(where, CacheOutcome::Compiled);
  get(reader, fake_kernel("mine2"), compiler, &where);
  reader.flush();
  EXPECT_EQ(reader.stats().remote_published, 0u);
  EXPECT_EQ(warnings.count(), 1u) << warnings.joined();
  EXPECT_TRUE(warnings.contains("NOPERM")) << warnings.joined();
}

}  // namespace
}  // namespace cujit::detail
