// Issue 29 (informational): a fleet lease stored without a TTL (by anyone who can write the
// server) makes every process wait remote_lease_ms for each kernel. The wait stays bounded,
// and it is no longer silent: the first wait that outlives the lease warns, naming the lease.

#include "cache/remote_entry.hpp"
#include "fleet_test_util.hpp"

#include <gtest/gtest.h>

namespace cujit::detail {
namespace {

using test::FakeCompiler;
using test::TempDir;
using test::WarningCapture;

TEST(FleetLease, ALeaseWithoutATtlCostsOneBoundedWaitAndAWarning) {
  test::RedisServer redis;
  CUJIT_REQUIRE_REDIS(redis);
  test::KeyPairFiles keys;
  const auto a = test::fake_kernel("leased_a"), b = test::fake_kernel("leased_b");
  auto admin = test::connect_to(redis.url());
  for (const auto* k : {&a, &b}) {
    admin.set(remote_lease_key(request_key(k->request.kind, k->request.spec, k->request.target)),
              "held");  // no PX: never expires
  }
  TempDir dir;
  CacheConfig config = test::host_config(dir, redis.url(), keys);
  config.remote_lease_ms = 300;
  KernelCache cache(config);
  FakeCompiler compiler;
  WarningCapture warnings;
  for (const auto* k : {&a, &b}) {
    CacheOutcome where{};
    cache.get_or_compile(k->request, k->generator(), compiler.fn(k->request.target), &where);
    EXPECT_EQ(where, CacheOutcome::Compiled);
  }
  EXPECT_EQ(cache.stats().remote_lease_waits, 2u);
  ASSERT_EQ(warnings.count(), 1u) << warnings.joined();
  EXPECT_TRUE(warnings.contains("lease is still there")) << warnings.joined();
  EXPECT_TRUE(warnings.contains("without a TTL")) << warnings.joined();
}

}  // namespace
}  // namespace cujit::detail
