#include <cujit/cujit.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <numeric>

#include "support/gpu.hpp"

namespace cujit {
namespace {

const char* kSource = R"(
extern "C" __global__ void axpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
template <class T> __global__ void scale(T* x, T s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= s;
}
)";

TEST(NoDevice, OperationsNeedingADeviceThrowClearly) {
  if (Device::count() > 0) GTEST_SKIP() << "a device is present; this checks the no-GPU path";
  try {
    Device::get(0);
    FAIL() << "expected CudaError";
  } catch (const CudaError& e) {
    const std::string what = e.what();
    EXPECT_TRUE(what.find("no CUDA driver found") != std::string::npos ||
                what.find("no CUDA device") != std::string::npos)
        << what;
  }
  EXPECT_THROW(Array::empty({4}, DType::Float32), CudaError);
}

TEST(RawModuleCompile, CompilesWithoutADevice) {
  RawModule module(kSource, {}, {"scale<float>"});
  auto compiled = module.compile_for(Target::parse("sm_90"));
  ASSERT_TRUE(compiled);
  EXPECT_EQ(compiled->target.name(), "sm_90");
  EXPECT_EQ(compiled->lowered_name("scale<float>"), "_Z5scaleIfEvPT_S0_i");
}

// Headers: given in memory, or read through -I (their contents in the cache key: an edited
// header compiles again, in this process as in the next; issue 32).
const char* kScaled = R"(
#include "scale.h"
extern "C" __global__ void scaled(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= SCALE;
}
)";

std::string scale_dir(float scale) {
  const std::string dir = ::testing::TempDir() + "cujit-raw-headers";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/scale.h") << "#define SCALE " << std::fixed << scale << "f\n";
  return dir;
}

TEST(RawModuleCompile, HeadersInMemoryOrEditedOnDiskCompileWhatTheySay) {
  RawModule memory(kScaled, {}, {}, {}, {{"scale.h", "#define SCALE 2.0f\n"}});
  ASSERT_TRUE(memory.compile_for(Target::parse("sm_90")));
  EXPECT_THROW(RawModule(kScaled, {}, {}, {}, {{"", "x"}}), ArgumentError);
  const std::string dir = scale_dir(2.0f);
  const auto two = RawModule(kScaled, {"-I" + dir}).compile_for(Target::parse("sm_90"));
  scale_dir(3.0f);
  const auto three = RawModule(kScaled, {"-I" + dir}).compile_for(Target::parse("sm_90"));
  EXPECT_NE(two->binary, three->binary);  // was the same binary, from the cache
  std::filesystem::remove_all(dir);
}

TEST(RawModuleGpu, AnEditedHeaderChangesWhatTheKernelComputes) {
  CUJIT_REQUIRE_GPU();
  for (float scale : {2.0f, 3.0f}) {
    const std::string dir = scale_dir(scale);
    Array x = Array::from_host(std::vector<float>(256, 1.0f));
    RawModule(kScaled, {"-I" + dir}).get_function("scaled")(Dim3(1), Dim3(256), {x, 256});
    EXPECT_EQ(x.to_host<float>()[255], scale);
    std::filesystem::remove_all(dir);
  }
}

TEST(RawModuleGpu, LaunchesAndChecksResults) {
  CUJIT_REQUIRE_GPU();
  const int n = 1000;
  auto x_host = test::random_vector<float>(n, -1, 1, 1);
  auto y_host = test::random_vector<float>(n, -1, 1, 2);
  Array x = Array::from_host(x_host);
  Array y = Array::from_host(y_host);
  RawModule module(kSource);
  RawKernel axpy = module.get_function("axpy");
  axpy(Dim3((n + 127) / 128), Dim3(128), {2.5f, x, y, n});
  std::vector<float> out = y.to_host<float>();
  for (int i = 0; i < n; ++i) ASSERT_NEAR(out[i], 2.5f * x_host[i] + y_host[i], 1e-6f) << i;
  EXPECT_GT(axpy.attributes().num_registers, 0);
  EXPECT_GE(axpy.attributes().max_threads_per_block, 128);
  EXPECT_EQ(axpy.param_sizes(), (std::vector<std::size_t>{4, 8, 8, 4}));
}

TEST(RawModuleGpu, NameExpressionsForTemplates) {
  CUJIT_REQUIRE_GPU();
  RawModule module(kSource, {}, {"scale<double>"});
  RawKernel scale = module.get_function("scale<double>");
  std::vector<double> host(300);
  std::iota(host.begin(), host.end(), 1.0);
  Array x = Array::from_host(host);
  scale(Dim3(3), Dim3(128), {x, 0.5, 300});
  auto out = x.to_host<double>();
  for (int i = 0; i < 300; ++i) ASSERT_DOUBLE_EQ(out[i], 0.5 * (i + 1));
}

// A variable in a namespace is registered by its address, as NVRTC takes it, and compiles
// without a GPU to a mangled name get_global finds.
TEST(RawModuleCompile, AVariablesNameExpressionIsItsAddress) {
  RawModule module("namespace ns { __device__ double scale; }", {}, {"&ns::scale"});
  const auto program = module.compile_for(Target::parse("sm_90"));
  EXPECT_EQ(program->lowered_name("&ns::scale"), "_ZN2ns5scaleE");
}

// __device__ and __constant__ variables (CuPy's RawModule.get_global): a byte array viewing
// the variable, filled from the host before a launch and read back after it; a variable in a
// namespace through a name expression.
TEST(RawModuleGpu, GlobalVariablesAreByteArraysOfTheModule) {
  CUJIT_REQUIRE_GPU();
  const char* source = R"(
    __constant__ float table[4];
    __device__ int counter;
    namespace ns { __device__ double scale; }
    extern "C" __global__ void use(float* out) {
      out[threadIdx.x] = table[threadIdx.x] * (float)ns::scale;
      if (threadIdx.x == 0) counter = 7;
    })";
  RawModule module(source, {}, {"&ns::scale"});  // NVRTC takes a variable's address
  Array table = module.get_global("table");
  EXPECT_EQ(table.dtype(), DType::UInt8);
  EXPECT_EQ(table.shape(), (Shape{16}));
  const float values[4] = {1, 2, 3, 4};
  const double scale = 2.5;
  const Stream stream(Device::get(0));
  table.copy_from_host_async(values, stream);
  module.get_global("ns::scale").copy_from_host_async(&scale, stream);
  Array out = Array::zeros({4}, DType::Float32);
  module.get_function("use").launch(Dim3(1), Dim3(4), {out}, 0, stream);
  stream.synchronize();
  EXPECT_EQ(out.to_host<float>(), (std::vector<float>{2.5f, 5.0f, 7.5f, 10.0f}));
  int counter = 0;
  module.get_global("counter").to_host(&counter);
  EXPECT_EQ(counter, 7);
  EXPECT_THROW(module.get_global("missing"), ArgumentError);
  EXPECT_THROW(module.get_global(std::string("a\nb")), ArgumentError);
}

TEST(RawModuleGpu, ArgumentsAreCheckedAgainstParameters) {
  CUJIT_REQUIRE_GPU();
  RawModule module(kSource);
  RawKernel axpy = module.get_function("axpy");
  Array x = Array::zeros({8}, DType::Float32);
  try {
    axpy(Dim3(1), Dim3(32), {2.0f, x, x});
    FAIL();
  } catch (const ArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("takes 4 argument(s) but 3 were given"), std::string::npos)
        << e.what();
  }
  try {
    axpy(Dim3(1), Dim3(32), {2.0, x, x, 8});  // a double where a float is expected
    FAIL();
  } catch (const ArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("argument 0 is a 8-byte scalar"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(axpy(Dim3(0), Dim3(32), {2.0f, x, x, 8}), ArgumentError);
  EXPECT_THROW(axpy(Dim3(1), Dim3(4096), {2.0f, x, x, 8}), ArgumentError);
  EXPECT_THROW(module.get_function("no_such_kernel"), ArgumentError);
}

TEST(RawModuleGpu, LoadsCubinFiles) {
  CUJIT_REQUIRE_GPU();
  const Device device = Device::get(0);
  SourceProgram program;
  program.source = kSource;
  CompiledProgram compiled = compile(program, target_for_arch(device.compute_capability()));
  RawModule module = RawModule::from_binary(compiled);
  Array y = Array::zeros({64}, DType::Float32);
  Array x = Array::from_host(std::vector<float>(64, 3.0f));
  module.get_function("axpy")(Dim3(1), Dim3(64), {1.0f, x, y, 64});
  EXPECT_EQ(y.to_host<float>()[63], 3.0f);
}

TEST(RawModuleGpu, StreamsAndEvents) {
  CUJIT_REQUIRE_GPU();
  const Device device = Device::get(0);
  Stream stream(device);
  Event start(device), stop(device);
  RawModule module(kSource);
  RawKernel axpy = module.get_function("axpy");
  const int n = 1 << 20;
  Array x = Array::from_host(std::vector<float>(n, 1.0f));
  Array y = Array::zeros({n}, DType::Float32, device, stream);
  start.record(stream);
  for (int k = 0; k < 10; ++k) axpy(Dim3(n / 256), Dim3(256), {1.0f, x, y, n}, 0, stream);
  stop.record(stream);
  stop.synchronize();
  EXPECT_GT(stop.elapsed_since(start), 0.0f);
  auto out = y.to_host<float>();
  EXPECT_EQ(out[0], 10.0f);
  EXPECT_EQ(out[n - 1], 10.0f);
  // A wrapped application stream is used, not destroyed.
  Stream wrapped = Stream::wrap(stream.handle(), device);
  axpy(Dim3(n / 256), Dim3(256), {1.0f, x, y, n}, 0, wrapped);
  wrapped.synchronize();
  EXPECT_EQ(y.to_host<float>()[5], 11.0f);
}

}  // namespace
}  // namespace cujit
