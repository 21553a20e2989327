// Issue 20: RawModule sources link device code compiled elsewhere (LTO-IR here, made with NVRTC
// -dlto as nvcc -dlto -dc would), through nvJitLink loaded at run time, with link-time
// optimisation; every input's bytes are keyed; failures are CompileErrors with the linker's log.

#include <cujit/cujit.hpp>
#include <cujit/elementwise.hpp>
#include <cujit/reduction.hpp>
#include <cujit/specialize.hpp>

#include "cache/raw_replay.hpp"
#include "cache/record.hpp"
#include "runtime/nvrtc_library.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "support/gpu.hpp"

namespace cujit {
namespace {

// LTO-IR of `source` for sm_90, as a library's build would produce it.
std::string lto_ir(const std::string& source) {
  const detail::Nvrtc& n = detail::nvrtc();
  nvrtcProgram p = nullptr;
  EXPECT_EQ(n.nvrtcCreateProgram(&p, source.c_str(), "library.cu", 0, nullptr, nullptr),
            NVRTC_SUCCESS);
  const char* options[] = {"-arch=sm_90", "-dlto", "-rdc=true"};
  EXPECT_EQ(n.nvrtcCompileProgram(p, 3, options), NVRTC_SUCCESS);
  std::size_t size = 0;
  n.nvrtcGetLTOIRSize(p, &size);
  std::string ir(size, '\0');
  n.nvrtcGetLTOIR(p, ir.data());
  n.nvrtcDestroyProgram(&p);
  return ir;
}

const char* kLibrary =
    R"(extern "C" __device__ float user_scale(float x) { return 3.0f * x + 1.0f; })";

const char* kKernel = R"(
extern "C" __device__ float user_scale(float x);
extern "C" __global__ void apply(const float* x, float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = user_scale(x[i]);
}
)";

LinkInput library() { return {LinkInput::Kind::LtoIr, "scale.ltoir", lto_ir(kLibrary)}; }

TEST(DeviceLink, ASourceLinksAUsersLtoIrIntoOneCubin) {
  RawModule module(kKernel, {}, {}, {library()});
  auto compiled = module.compile_for(Target::parse("sm_90"));
  ASSERT_TRUE(compiled);
  ASSERT_GE(compiled->binary.size(), 4u);
  EXPECT_EQ(compiled->binary.substr(0, 4),
            "\x7f"
            "ELF");
}

TEST(DeviceLink, EveryInputsBytesAreKeyedAndProgramsWithoutInputsKeepTheirKeys) {
  SourceProgram p;
  p.source = kKernel;
  const std::string plain = detail::content_key(p, Target{90}, "raw");
  p.link_inputs = {library()};
  SourceProgram other = p;
  other.link_inputs[0].bytes =
      lto_ir(R"(extern "C" __device__ float user_scale(float x) { return x; })");
  EXPECT_NE(detail::content_key(p, Target{90}, "raw"),
            detail::content_key(other, Target{90}, "raw"));
  EXPECT_NE(detail::content_key(p, Target{90}, "raw"), plain);
  EXPECT_NE(detail::raw_kernel_request(p, Target{90}).spec,
            detail::raw_kernel_request(other, Target{90}).spec);
  p.link_inputs.clear();
  EXPECT_EQ(detail::content_key(p, Target{90}, "raw"), plain);
  // The manifest entry carries the bytes, so a precompile replays the same link.
  p.link_inputs = {library()};
  const SourceProgram back = detail::raw_program_from_entry(detail::raw_manifest_entry(p));
  ASSERT_EQ(back.link_inputs.size(), 1u);
  EXPECT_EQ(back.link_inputs[0].bytes, p.link_inputs[0].bytes);
  EXPECT_EQ(back.link_inputs[0].kind, LinkInput::Kind::LtoIr);
  EXPECT_EQ(back.link_inputs[0].name, "scale.ltoir");
}

TEST(DeviceLink, AnUndefinedSymbolIsACompileErrorWithTheLinkersLog) {
  const std::string other = lto_ir(R"(extern "C" __device__ float not_it(float x) { return x; })");
  RawModule module(kKernel, {}, {}, {{LinkInput::Kind::LtoIr, "other.ltoir", other}});
  try {
    module.compile_for(Target::parse("sm_90"));
    FAIL() << "expected CompileError";
  } catch (const CompileError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("nvJitLink failed to link"), std::string::npos) << what;
    EXPECT_NE(what.find("user_scale"), std::string::npos) << what;
    EXPECT_NE(what.find("other.ltoir"), std::string::npos) << what;
  }
  RawModule ptx(kKernel, {}, {}, {library()});
  EXPECT_THROW(ptx.compile_for(Target::parse("compute_90")), ArgumentError);
  EXPECT_THROW(RawModule(kKernel, {}, {}, {{LinkInput::Kind::LtoIr, "empty", ""}}), ArgumentError);
}

TEST(DeviceLink, InputsAreReadFromFilesByExtension) {
  char dir[] = "/tmp/cujit-link-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/scale.ltoir";
  const std::string ir = lto_ir(kLibrary);
  std::ofstream(path, std::ios::binary) << ir;
  const LinkInput input = LinkInput::from_file(path);
  EXPECT_EQ(input.kind, LinkInput::Kind::LtoIr);
  EXPECT_EQ(input.name, "scale.ltoir");
  EXPECT_EQ(input.bytes, ir);
  EXPECT_THROW(LinkInput::from_file(std::string(dir) + "/scale.o"), ArgumentError);
  EXPECT_THROW(LinkInput::from_file(std::string(dir) + "/missing.cubin"), ArgumentError);
  std::remove(path.c_str());
  ::rmdir(dir);
}

TEST(DeviceLink, LibrariesAreBuiltToLtoIrNamedAfterTheirSource) {
  SourceProgram lib;
  lib.name = "mathlib.cu";
  lib.source = kLibrary;
  const LinkInput built = compile_to_lto_ir(lib, Target::parse("sm_90"));
  EXPECT_EQ(built.kind, LinkInput::Kind::LtoIr);
  EXPECT_EQ(built.name, "mathlib.ltoir");
  EXPECT_FALSE(built.bytes.empty());
  EXPECT_THROW(compile_to_lto_ir(lib, Target::parse("compute_90")), ArgumentError);
  lib.source = "this is not CUDA";
  EXPECT_THROW(compile_to_lto_ir(lib, Target::parse("sm_90")), CompileError);
}

// A snippet kernel calls the library: analysed, generated, compiled to LTO-IR and linked, with
// no GPU; another library is another kernel.
TEST(DeviceLink, SnippetKernelsLinkLibrariesTooAndKeyThem) {
  SourceProgram lib;
  lib.name = "mathlib.cu";
  lib.source = kLibrary;
  ElementwiseOptions options;
  options.preamble = "extern \"C\" __device__ float user_scale(float x);\n";
  options.link = {compile_to_lto_ir(lib, Target::parse("sm_90"))};
  const ElementwiseKernel k("float32 x", "float32 y", "y = user_scale(x)", "scaled", options);
  const std::vector<ArgSpec> args = {ArgSpec::array(DType::Float32, {4096})};
  const Specialization s = k.specialize(args, Target::parse("sm_90"));
  EXPECT_GT(s.binary_size, 0u);
  lib.source = R"(extern "C" __device__ float user_scale(float x) { return x; })";
  options.link = {compile_to_lto_ir(lib, Target::parse("sm_90"))};
  const ElementwiseKernel other("float32 x", "float32 y", "y = user_scale(x)", "scaled", options);
  EXPECT_NE(other.specialize(args, Target::parse("sm_90")).request_key, s.request_key);
}

// Reductions link libraries as elementwise kernels do: the map calls the user's function; the
// library's bytes key the kernel; the manifest entry carries them for precompile.
ReductionKernel scaled_sum(const LinkInput& library) {
  ReductionOptions options;
  options.preamble = "extern \"C\" __device__ float user_scale(float x);\n";
  options.link = {library};
  return ReductionKernel("float32 x", "float64 y", "(double)user_scale(x)", "a + b", "y = a", "0",
                         "scaled_sum", options);
}

TEST(DeviceLink, ReductionsLinkLibrariesTooAndKeyThem) {
  SourceProgram lib;
  lib.name = "mathlib.cu";
  lib.source = kLibrary;
  const ReductionKernel k = scaled_sum(compile_to_lto_ir(lib, Target::parse("sm_90")));
  const std::vector<ArgSpec> args = {ArgSpec::array(DType::Float32, {1 << 22})};
  const Specialization s = k.specialize(args, ReduceOptions{}, Target::parse("sm_90"));
  EXPECT_GT(s.binary_size, 0u);
  lib.source = R"(extern "C" __device__ float user_scale(float x) { return x; })";
  const ReductionKernel other = scaled_sum(compile_to_lto_ir(lib, Target::parse("sm_90")));
  EXPECT_NE(other.specialize(args, ReduceOptions{}, Target::parse("sm_90")).request_key,
            s.request_key);
}

TEST(DeviceLinkGpu, AReductionCallsTheUsersFunction) {
  CUJIT_REQUIRE_GPU();
  if (Device::current().compute_capability() != 90) {
    GTEST_SKIP() << "the library's LTO-IR here is built for sm_90";
  }
  const ReductionKernel k = scaled_sum(library());
  const int n = 1 << 22;  // two passes
  auto x_host = test::random_vector<float>(n, -2, 2, 5);
  const double got = k(Array::from_host(x_host)).to_host<double>()[0];
  double want = 0;
  for (float v : x_host) want += 3.0 * v + 1.0;
  EXPECT_NEAR(got, want, 1e-6 * n);
}

TEST(DeviceLinkGpu, TheLinkedKernelCallsTheUsersFunction) {
  CUJIT_REQUIRE_GPU();
  if (Device::current().compute_capability() != 90) {
    GTEST_SKIP() << "the library's LTO-IR here is built for sm_90";
  }
  RawModule module(kKernel, {}, {}, {library()});
  RawKernel apply = module.get_function("apply");
  const int n = 4096;
  auto x_host = test::random_vector<float>(n, -2, 2, 3);
  Array x = Array::from_host(x_host);
  Array y = Array::zeros({n}, DType::Float32);
  apply(Dim3(n / 256), Dim3(256), {x, y, n});
  const std::vector<float> got = y.to_host<float>();
  // The linker may fuse the multiply-add: one rounding instead of two (x in [-2, 2)).
  for (int i = 0; i < n; ++i) ASSERT_NEAR(got[i], 3.0f * x_host[i] + 1.0f, 1e-6f) << i;
}

}  // namespace
}  // namespace cujit
