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

#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <future>
#include <memory>
#include <thread>

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

// Issue 29, item 7: link inputs are checked before nvJitLink sees them, and from_file reads only
// regular files of a bounded size. Before the fix an out-of-range kind with ELF bytes crashed
// inside nvJitLink, a FIFO named x.cubin blocked from_file forever and a link to /dev/zero read
// until memory ran out.
TEST(DeviceLink, InputsThatAreNotTheirKindAreArgumentErrorsBeforeTheLinker) {
  SourceProgram lib;
  lib.name = "mathlib.cu";
  lib.source = kLibrary;
  const LinkInput good = compile_to_lto_ir(lib, Target::parse("sm_90"));
  std::string elf =
      "\x7f"
      "ELF";
  elf += std::string("\x02\x01\x01", 3) + std::string(57, '\0');
  elf[18] = static_cast<char>(190);
  std::string far_sections = elf;
  far_sections[47] = 0x10;  // e_shoff far past the end
  far_sections[58] = 64, far_sections[60] = 3;
  const std::vector<LinkInput> bad = {
      {static_cast<LinkInput::Kind>(7), "odd.cubin", elf},
      {static_cast<LinkInput::Kind>(255), "odd.ltoir", good.bytes},
      {LinkInput::Kind::Cubin, "ltoir-as.cubin", good.bytes},
      {LinkInput::Kind::Cubin, "far.cubin", far_sections},
      {LinkInput::Kind::Fatbin, "short.fatbin", std::string("\x50\xed\x55\xba\x01\x00\x10\x00", 8)},
      {LinkInput::Kind::LtoIr, "elf-as.ltoir", elf},
      {LinkInput::Kind::LtoIr, "cut.ltoir", good.bytes.substr(0, 3)},
      {LinkInput::Kind::Ptx, "binary.ptx", std::string("\x00\x01.version 8.0\n.target sm_90", 27)},
      {LinkInput::Kind::Ptx, "prose.ptx", "not ptx at all"},
  };
  for (const LinkInput& input : bad) {
    try {
      RawModule module(kKernel, {}, {}, {input});
      ADD_FAILURE() << input.name << ": accepted";
    } catch (const ArgumentError& e) {
      EXPECT_NE(std::string(e.what()).find(input.name), std::string::npos) << e.what();
    }
    // The same input reaching the linker another way (a manifest, a snippet kernel's options).
    SourceProgram p;
    p.name = "linked.cu";
    p.source = kKernel;
    p.link_inputs = {input};
    EXPECT_THROW(compile(p, Target::parse("sm_90")), ArgumentError) << input.name;
  }
  EXPECT_NO_THROW(RawModule(kKernel, {}, {}, {good}));
}

TEST(DeviceLink, FromFileReadsOnlyRegularFilesWithoutBlocking) {
  char dir[] = "/tmp/cujit-link-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string fifo = std::string(dir) + "/x.cubin";
  const std::string zero = std::string(dir) + "/zero.ltoir";
  const std::string folder = std::string(dir) + "/folder.ptx";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  ASSERT_EQ(::symlink("/dev/zero", zero.c_str()), 0);
  ASSERT_EQ(::mkdir(folder.c_str(), 0700), 0);
  for (const std::string& path : {fifo, zero, folder}) {
    // On a thread, so that a read that blocks fails the test instead of hanging the suite.
    auto done = std::make_shared<std::promise<std::string>>();
    std::future<std::string> result = done->get_future();
    std::thread([done, path] {
      try {
        LinkInput::from_file(path);
        done->set_value("accepted");
      } catch (const ArgumentError& e) {
        done->set_value(e.what());
      } catch (const std::exception& e) {
        done->set_value(std::string("foreign exception: ") + e.what());
      }
    }).detach();
    ASSERT_EQ(result.wait_for(std::chrono::seconds(20)), std::future_status::ready)
        << path << ": from_file blocked";
    const std::string message = result.get();
    EXPECT_NE(message.find("not a regular file"), std::string::npos) << path << ": " << message;
  }
  std::remove(fifo.c_str());
  std::remove(zero.c_str());
  ::rmdir(folder.c_str());
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
