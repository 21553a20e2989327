// cujit launches captured into a CUDA graph by the application (stream capture in global mode,
// as PyTorch's graph helper uses it) replay correctly on another stream, and a captured
// reduction's scratch memory is never handed to another call while the graph may still use it.
// (Before cujit asked whether a stream is being captured, the reduction's scratch allocation
// asked for the stream's id, which invalidated the capture on driver 580:
// CUDA_ERROR_STREAM_CAPTURE_INVALIDATED.)
#include <cujit/cujit.hpp>
#include <cujit/elementwise.hpp>
#include <cujit/reduction.hpp>

#include "runtime/context.hpp"
#include "runtime/driver.hpp"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cstdint>
#include <vector>

#include "support/gpu.hpp"

namespace cujit {
namespace {

// The graph entry points, which cujit itself never needs, straight from the driver.
struct GraphApi {
  decltype(&::cuStreamBeginCapture) begin_capture = nullptr;
  decltype(&::cuStreamEndCapture) end_capture = nullptr;
  decltype(&::cuGraphInstantiateWithFlags) instantiate = nullptr;
  decltype(&::cuGraphLaunch) launch = nullptr;
  decltype(&::cuGraphExecDestroy) exec_destroy = nullptr;
  decltype(&::cuGraphDestroy) destroy = nullptr;

  bool load() {
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (lib == nullptr) lib = dlopen("libcuda.so.1", RTLD_NOW);
    if (lib == nullptr) return false;
    begin_capture =
        reinterpret_cast<decltype(begin_capture)>(dlsym(lib, "cuStreamBeginCapture_v2"));
    end_capture = reinterpret_cast<decltype(end_capture)>(dlsym(lib, "cuStreamEndCapture"));
    instantiate =
        reinterpret_cast<decltype(instantiate)>(dlsym(lib, "cuGraphInstantiateWithFlags"));
    launch = reinterpret_cast<decltype(launch)>(dlsym(lib, "cuGraphLaunch"));
    exec_destroy = reinterpret_cast<decltype(exec_destroy)>(dlsym(lib, "cuGraphExecDestroy"));
    destroy = reinterpret_cast<decltype(destroy)>(dlsym(lib, "cuGraphDestroy"));
    return begin_capture && end_capture && instantiate && launch && exec_destroy && destroy;
  }
};

constexpr std::int64_t kN = std::int64_t{1} << 24;  // a two-pass reduction, with scratch

std::vector<float> values(unsigned seed) { return test::random_vector<float>(kN, 0.0, 1.0, seed); }

TEST(GraphCapture, CapturedElementwiseAndReductionCallsReplayOnNewInputs) {
  CUJIT_REQUIRE_GPU();
  GraphApi api;
  ASSERT_TRUE(api.load()) << "the driver has no graph entry points";
  const Device device = Device::get(0);
  ElementwiseKernel affine("T x, T a", "T z", "z = a * x + 1", "graph_affine");
  ReductionKernel sum("T x", "T y", "x", "a + b", "y = a", "0", "graph_sum");

  detail::ensure_context(0);  // the application's stream lives in cujit's context
  CUstream handle = nullptr;
  detail::check(detail::driver().cuStreamCreate(&handle, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  Stream stream = Stream::wrap(handle, device);
  Array x = Array::from_host(values(1));
  Array z = Array::empty({kN}, DType::Float32, device);
  Array total = Array::empty({}, DType::Float32, device);
  // Warm up outside the capture: the first call compiles and loads the kernels.
  affine(x, 2.0f, z, cujit::on(stream));
  sum(z, total, cujit::on(stream));
  stream.synchronize();

  CUgraph graph = nullptr;
  CUresult ended = CUDA_ERROR_UNKNOWN;
  ASSERT_EQ(api.begin_capture(handle, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  {
    // Ends the capture however the calls are left (one that throws included): a stream left
    // capturing in global mode would fail every later test in this process.
    struct EndCapture {
      const GraphApi& api;
      CUstream stream;
      CUgraph* graph;
      CUresult* result;
      ~EndCapture() { *result = api.end_capture(stream, graph); }
    } end{api, handle, &graph, &ended};
    affine(x, 2.0f, z, cujit::on(stream));
    sum(z, total, cujit::on(stream));
  }
  ASSERT_EQ(ended, CUDA_SUCCESS);
  CUgraphExec exec = nullptr;
  ASSERT_EQ(api.instantiate(&exec, graph, 0), CUDA_SUCCESS);

  // The graph replays on a second stream while the capturing stream keeps running the same
  // reduction on other data: had the captured call's scratch block gone back to cujit's cache
  // (kept per stream), these calls would take it while the graph still uses it.
  Stream other(device);
  Array y = Array::from_host(std::vector<float>(kN, 0.25f));
  Array y_total = Array::empty({}, DType::Float32, device);
  for (unsigned round = 2; round < 6; ++round) {
    const std::vector<float> host = values(round);
    // Pageable host memory: the copy has taken the data when the call returns.
    detail::check(detail::driver().cuMemcpyHtoDAsync(x.data(), host.data(), kN * sizeof(float),
                                                     other.handle()),
                  "cuMemcpyHtoDAsync");
    ASSERT_EQ(api.launch(exec, other.handle()), CUDA_SUCCESS);
    for (int k = 0; k < 8; ++k) sum(y, y_total, cujit::on(stream));
    stream.synchronize();
    other.synchronize();
    const std::vector<float> out = z.to_host<float>();
    double expected_total = 0;
    for (std::int64_t i = 0; i < kN; ++i) {
      ASSERT_EQ(out[i], 2.0f * host[i] + 1) << "round " << round << " element " << i;
      expected_total += out[i];
    }
    float got = 0;
    total.to_host(&got);
    EXPECT_NEAR(got, expected_total, expected_total * 1e-5) << "round " << round;
    float y_got = 0;
    y_total.to_host(&y_got);
    EXPECT_EQ(y_got, 0.25f * kN) << "round " << round;
  }
  api.exec_destroy(exec);
  api.destroy(graph);
  stream.synchronize();
  detail::driver().cuStreamDestroy(handle);
}

}  // namespace
}  // namespace cujit
