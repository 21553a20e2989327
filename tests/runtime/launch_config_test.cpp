// RawKernel launches with a LaunchConfig (issue 20): a cluster kernel using distributed shared
// memory, a cooperative grid synchronisation, a programmatic dependent launch pair, dynamic
// shared memory above 48 KiB and a launch priority, each checked against its results on the GPU
// (the sources are compiled for sm_90 on the CPU too), and refused with ArgumentError where the
// device cannot run them.

#include <cujit/cujit.hpp>

#include <gtest/gtest.h>

#include <numeric>

#include "support/gpu.hpp"

namespace cujit {
namespace {

const char* kSource = R"(
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

// Each block publishes a value in its shared memory and reads its right neighbour's, within
// the cluster, through distributed shared memory.
extern "C" __global__ void cluster_neighbours(int* out) {
  __shared__ int mine;
  cg::cluster_group cluster = cg::this_cluster();
  const unsigned rank = cluster.block_rank();
  if (threadIdx.x == 0) mine = 1000 * blockIdx.x + 7;
  cluster.sync();
  const int* theirs = cluster.map_shared_rank(&mine, (rank + 1) % cluster.num_blocks());
  if (threadIdx.x == 0) {
    out[2 * blockIdx.x] = *theirs;
    out[2 * blockIdx.x + 1] = cluster.num_blocks();
  }
  cluster.sync();  // keeps this block's shared memory alive until its neighbour has read it
}

// Partial sums per block, a grid-wide barrier, then one thread adds the partials.
extern "C" __global__ void grid_sum(const int* x, int* partial, int* total, int n) {
  cg::grid_group grid = cg::this_grid();
  int s = 0;
  for (long long i = grid.thread_rank(); i < n; i += grid.size()) s += x[i];
  atomicAdd(&partial[blockIdx.x], s);
  grid.sync();
  if (grid.thread_rank() == 0) {
    int t = 0;
    for (unsigned b = 0; b < gridDim.x; ++b) t += partial[b];
    *total = t;
  }
}

// A programmatic dependent launch pair: the consumer may start early and waits for the
// producer's results with griddepcontrol.wait.
extern "C" __global__ void producer(int* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = 3 * i + 1;
  asm volatile("griddepcontrol.launch_dependents;");
}
extern "C" __global__ void consumer(const int* x, int* y, int n) {
  asm volatile("griddepcontrol.wait;" ::: "memory");
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] + 1;
}

// Fills `words` ints of dynamic shared memory and sums them back in reverse.
extern "C" __global__ void big_shared(int* out, int words) {
  extern __shared__ int buffer[];
  for (int i = threadIdx.x; i < words; i += blockDim.x) buffer[i] = 2 * i;
  __syncthreads();
  int s = 0;
  for (int i = threadIdx.x; i < words; i += blockDim.x) s += buffer[words - 1 - i];
  atomicAdd(out, s);
}
)";

// cooperative_groups.h is found without -I options (the toolkit's and CCCL's include
// directories are searched after the program's own).
RawModule module() { return RawModule(kSource); }

#define CUJIT_REQUIRE_HOPPER()                                                     \
  do {                                                                             \
    CUJIT_REQUIRE_GPU();                                                           \
    if (Device::current().compute_capability() < 90)                               \
      GTEST_SKIP() << "needs compute capability 9.0 (clusters, dependent launch)"; \
  } while (0)

TEST(LaunchConfigCompile, TheHopperKernelsCompileForSm90WithoutADevice) {
  auto compiled = module().compile_for(Target::parse("sm_90"));
  ASSERT_TRUE(compiled);
  EXPECT_FALSE(compiled->binary.empty());
}

TEST(LaunchConfigGpu, AClusterReadsItsNeighboursSharedMemory) {
  CUJIT_REQUIRE_HOPPER();
  RawKernel k = module().get_function("cluster_neighbours");
  const unsigned blocks = 16, cluster = 4;
  Array out = Array::zeros({2 * blocks}, DType::Int32);
  LaunchConfig c;
  c.grid = Dim3(blocks);
  c.block = Dim3(64);
  c.cluster = Dim3(cluster);
  k(c, {out});
  const std::vector<int> got = out.to_host<int>();
  for (unsigned b = 0; b < blocks; ++b) {
    const unsigned neighbour = b - b % cluster + (b % cluster + 1) % cluster;
    EXPECT_EQ(got[2 * b], static_cast<int>(1000 * neighbour + 7)) << "block " << b;
    EXPECT_EQ(got[2 * b + 1], static_cast<int>(cluster)) << "block " << b;
  }
  c.grid = Dim3(18);  // not a multiple of the cluster
  EXPECT_THROW(k(c, {out}), ArgumentError);
}

TEST(LaunchConfigGpu, ACooperativeGridSynchronisesAndAnOversizedOneIsRefused) {
  CUJIT_REQUIRE_GPU();
  RawKernel k = module().get_function("grid_sum");
  const int n = 1 << 22;
  std::vector<int> x(n);
  for (int i = 0; i < n; ++i) x[i] = i % 7 - 3;
  const long long expected = std::accumulate(x.begin(), x.end(), 0LL);
  const unsigned blocks = static_cast<unsigned>(Device::current().sm_count());
  Array xs = Array::from_host(x);
  Array partial = Array::zeros({blocks}, DType::Int32);
  Array total = Array::zeros({1}, DType::Int32);
  LaunchConfig c;
  c.grid = Dim3(blocks);
  c.block = Dim3(256);
  c.cooperative = true;
  k(c, {xs, partial, total, n});
  EXPECT_EQ(total.to_host<int>()[0], expected);
  c.grid = Dim3(blocks * 64);  // 64 blocks of 1024 threads per SM: far more than fit
  c.block = Dim3(1024);
  try {
    k(c, {xs, partial, total, n});
    FAIL() << "expected ArgumentError";
  } catch (const ArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("that can be resident at once"), std::string::npos)
        << e.what();
  }
}

TEST(LaunchConfigGpu, ADependentLaunchPairProducesTheProducersResults) {
  CUJIT_REQUIRE_HOPPER();
  RawModule m = module();
  RawKernel producer = m.get_function("producer");
  RawKernel consumer = m.get_function("consumer");
  const int n = 1 << 20;
  Array x = Array::zeros({n}, DType::Int32);
  Array y = Array::zeros({n}, DType::Int32);
  Stream stream(Device::current());
  LaunchConfig first;
  first.grid = Dim3(n / 256);
  first.block = Dim3(256);
  LaunchConfig second = first;
  second.programmatic_dependent_launch = true;
  for (int round = 0; round < 3; ++round) {
    producer(first, {x, n}, stream);
    consumer(second, {x, y, n}, stream);
  }
  stream.synchronize();
  const std::vector<int> got = y.to_host<int>();
  for (int i = 0; i < n; i += 997) ASSERT_EQ(got[i], 3 * i + 2) << i;
}

TEST(LaunchConfigGpu, SharedMemoryAbove48KiBIsRaisedForYou) {
  CUJIT_REQUIRE_GPU();
  RawKernel k = module().get_function("big_shared");
  const int words = 100 * 1024 / 4;
  Array out = Array::zeros({1}, DType::Int32);
  // A plain launch asks for more than the kernel's default limit: the driver refuses it.
  EXPECT_THROW(k(Dim3(1), Dim3(256), {out, words}, words * 4), CudaError);
  LaunchConfig c;
  c.grid = Dim3(1);
  c.block = Dim3(256);
  c.shared_mem = words * 4;
  k(c, {out, words});
  EXPECT_EQ(out.to_host<int>()[0], words * (words - 1));
  c.shared_mem = 1024 * 1024;
  EXPECT_THROW(k(c, {out, words}), ArgumentError);
}

TEST(LaunchConfigGpu, APriorityInTheDevicesRangeLaunchesOneOutsideIsRefused) {
  CUJIT_REQUIRE_GPU();
  RawKernel k = module().get_function("big_shared");
  Array out = Array::zeros({1}, DType::Int32);
  LaunchConfig c;
  c.grid = Dim3(1);
  c.block = Dim3(64);
  c.shared_mem = 64 * 4;
  c.priority = 0;
  k(c, {out, 64});
  EXPECT_EQ(out.to_host<int>()[0], 64 * 63);
  c.priority = 1000;
  EXPECT_THROW(k(c, {out, 64}), ArgumentError);
}

}  // namespace
}  // namespace cujit
