// LaunchConfig checks without a GPU (core/launch_check): every refusal names the kernel, the
// setting and the limit; what a launch must set up (the shared memory limit, non-portable
// clusters, cuLaunchKernelEx) follows from the config.

#include "core/launch_check.hpp"

#include <cujit/error.hpp>

#include <gtest/gtest.h>

#include <functional>
#include <string>

namespace cujit::detail {
namespace {

// An H100 SXM, as the driver reports it, for a kernel of up to 1024 threads.
LaunchLimits h100() {
  LaunchLimits l;
  l.arch = 90;
  l.max_threads_per_block = 1024;
  l.shared_optin = 227 * 1024;
  l.cluster_launch = true;
  l.cooperative_launch = true;
  l.sm_count = 132;
  l.priority_greatest = -5;
  l.priority_least = 0;
  return l;
}

LaunchConfig grid(unsigned blocks, unsigned threads) {
  LaunchConfig c;
  c.grid = Dim3(blocks);
  c.block = Dim3(threads);
  return c;
}

// The ArgumentError message `config` gets, or "" when it is accepted.
std::string refusal(const LaunchConfig& config, const LaunchLimits& limits) {
  try {
    check_launch("k", config, limits);
  } catch (const ArgumentError& e) {
    return e.what();
  }
  return "";
}

void expect_refused(const LaunchConfig& c, const LaunchLimits& l, const std::string& text) {
  const std::string message = refusal(c, l);
  EXPECT_NE(message.find("kernel 'k'"), std::string::npos) << message;
  EXPECT_NE(message.find(text), std::string::npos) << "expected '" << text << "' in: " << message;
}

TEST(LaunchCheck, APlainLaunchNeedsNothingExtended) {
  const LaunchSetup s = check_launch("k", grid(100, 256), h100());
  EXPECT_FALSE(s.extended);
  EXPECT_EQ(s.raise_dynamic_shared, 0u);
  EXPECT_FALSE(s.non_portable_cluster);
}

TEST(LaunchCheck, ExtentsAreCheckedAgainstTheDeviceAndTheKernel) {
  expect_refused(grid(0, 256), h100(), "positive extents");
  LaunchConfig c = grid(1, 256);
  c.block = Dim3(32, 32, 2);
  expect_refused(c, h100(), "2048 threads exceeds the kernel's limit of 1024");
  c.block = Dim3(1, 1, 128);
  expect_refused(c, h100(), "exceeds the device's block extents (1024, 1024, 64)");
  c = grid(1, 32);
  c.grid = Dim3(1, 70000);
  expect_refused(c, h100(), "exceeds the device's grid extents");
}

TEST(LaunchCheck, SharedMemoryAbove48KiBRaisesTheKernelsLimitUpToTheOptIn) {
  LaunchConfig c = grid(10, 256);
  c.shared_mem = 48 * 1024;
  EXPECT_EQ(check_launch("k", c, h100()).raise_dynamic_shared, 0u);
  c.shared_mem = 100 * 1024;
  EXPECT_EQ(check_launch("k", c, h100()).raise_dynamic_shared, 100u * 1024);
  LaunchLimits l = h100();
  l.static_shared = 8 * 1024;  // 44 KiB dynamic + 8 KiB static is over 48 KiB too
  c.shared_mem = 44 * 1024;
  EXPECT_EQ(check_launch("k", c, l).raise_dynamic_shared, 44u * 1024);
  c.shared_mem = 224 * 1024;
  expect_refused(c, l, "exceed the device's maximum of 232448 bytes per block");
}

TEST(LaunchCheck, ClustersNeedHopperADividingGridAndAtMost16Blocks) {
  LaunchConfig c = grid(8, 128);
  c.cluster = Dim3(4);
  const LaunchSetup s = check_launch("k", c, h100());
  EXPECT_TRUE(s.extended);
  EXPECT_FALSE(s.non_portable_cluster);
  c.grid = Dim3(10);
  expect_refused(c, h100(), "grid (10, 1, 1) is not a multiple of cluster (4, 1, 1)");
  LaunchLimits a100 = h100();
  a100.arch = 80;
  a100.cluster_launch = false;
  c.grid = Dim3(8);
  expect_refused(c, a100, "need compute capability 9.0 or newer; this device is 8.0");
  c.grid = Dim3(32);
  c.cluster = Dim3(16);
  EXPECT_TRUE(check_launch("k", c, h100()).non_portable_cluster);
  c.cluster = Dim3(32);
  expect_refused(c, h100(), "a cluster of 32 blocks exceeds the maximum of 16");
  LaunchLimits full = h100();
  full.max_active_clusters = 0;  // what the occupancy calculator said
  c.cluster = Dim3(16);
  expect_refused(c, full, "cannot be resident");
}

TEST(LaunchCheck, ACooperativeGridMustFitOnTheDeviceAtOnce) {
  LaunchLimits l = h100();
  l.max_blocks_per_sm = 2;
  LaunchConfig c = grid(264, 256);
  c.cooperative = true;
  EXPECT_TRUE(check_launch("k", c, l).extended);
  c.grid = Dim3(265);
  expect_refused(c, l, "265 blocks exceeds the 264 that can be resident at once (2 per SM x 132");
  l.cooperative_launch = false;
  expect_refused(c, l, "does not support cooperative launches");
}

TEST(LaunchCheck, DependentLaunchNeedsHopperAndPrioritiesTheDevicesRange) {
  LaunchConfig c = grid(1, 32);
  c.programmatic_dependent_launch = true;
  EXPECT_TRUE(check_launch("k", c, h100()).extended);
  LaunchLimits a100 = h100();
  a100.arch = 80;
  expect_refused(c, a100, "programmatic dependent launch needs compute capability 9.0");
  c = grid(1, 32);
  c.priority = -5;
  EXPECT_TRUE(check_launch("k", c, h100()).extended);
  c.priority = -6;
  expect_refused(c, h100(), "priority -6 is outside the device's range -5 (most urgent) to 0");
  c.priority = 1;
  expect_refused(c, h100(), "priority 1 is outside");
}

}  // namespace
}  // namespace cujit::detail
