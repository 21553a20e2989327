// CUJIT_DUMP_SOURCE and CUJIT_DUMP_SOURCE_ON_ERROR (runtime/source_dump.hpp), with NVRTC and no
// GPU: what is written, when, under which names, and that planted links are never followed.
// Also: compile logs carry no trailing NUL, and the NVTX wrapper runs without a tool attached.

#include "runtime/source_dump.hpp"

#include "codegen/device_support.hpp"
#include "runtime/nvrtc_pch.hpp"

#include "core/nvtx.hpp"

#include <cujit/cache.hpp>
#include <cujit/elementwise.hpp>
#include <cujit/error.hpp>
#include <cujit/log.hpp>
#include <cujit/program.hpp>
#include <cujit/specialize.hpp>

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace cujit {
namespace {

namespace fs = std::filesystem;

const char* kGood = R"(
template <class T> __global__ void scale(T* x, T s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= s;
}
)";

std::string read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// A temporary directory, and the dump variables set to it (or not) while alive.
class DumpDir {
 public:
  DumpDir(const char* variable) : variable_(variable) {
    std::string pattern = (fs::temp_directory_path() / "cujit-dump-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) std::abort();
    root_ = pattern;
    ::setenv(variable_, (root_ / "dumps").c_str(), 1);
  }
  ~DumpDir() {
    ::unsetenv(variable_);
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  fs::path dumps() const { return root_ / "dumps"; }
  fs::path root() const { return root_; }
  std::vector<std::string> files() const {
    std::vector<std::string> out;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dumps(), ec)) out.push_back(e.path().filename());
    std::sort(out.begin(), out.end());
    return out;
  }

 private:
  const char* variable_;
  fs::path root_;
};

SourceProgram good_program() {
  SourceProgram p;
  p.name = "scale_kernel.cu";
  p.source = kGood;
  p.name_expressions = {"scale<float>"};
  p.options = {"-DSCALE=2"};
  return p;
}

TEST(SourceDump, WritesEverySourceWithItsCommandNamedByKernelAndKey) {
  DumpDir dir("CUJIT_DUMP_SOURCE");
  const SourceProgram p = good_program();
  const Target target = Target::parse("sm_80");
  compile(p, target);
  const std::string stem = detail::dump_name(p, nvrtc_options(p, target));
  EXPECT_EQ(stem.rfind("scale_kernel-", 0), 0u) << stem;
  EXPECT_EQ(stem.size(), std::string("scale_kernel-").size() + 16);
  EXPECT_EQ(read(dir.dumps() / (stem + ".cu")), kGood);
  const std::string cmd = read(dir.dumps() / (stem + ".cmd"));
  for (const char* part :
       {"scale_kernel.cu", "-arch=sm_80", "-DSCALE=2", "name expression: scale<float>"}) {
    EXPECT_NE(cmd.find(part), std::string::npos) << part << " in\n" << cmd;
  }
  struct stat st {};
  ASSERT_EQ(::stat((dir.dumps() / (stem + ".cu")).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat(dir.dumps().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  // Another target is another command, so another key; the same compilation, the same files.
  compile(p, Target::parse("sm_90"));
  compile(p, target);
  EXPECT_EQ(dir.files().size(), 4u) << ::testing::PrintToString(dir.files());
}

TEST(SourceDump, OnErrorWritesOnlyFailuresAndTheErrorSaysWhere) {
  DumpDir dir("CUJIT_DUMP_SOURCE_ON_ERROR");
  compile(good_program(), Target::parse("sm_80"));
  EXPECT_TRUE(dir.files().empty()) << ::testing::PrintToString(dir.files());
  SourceProgram bad = good_program();
  bad.name = "broken.cu";
  bad.source = "__global__ void broken(float* x) { x[0] = undeclared; }\n";
  bad.name_expressions.clear();
  try {
    compile(bad, Target::parse("sm_80"));
    FAIL() << "compiled";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("source written to " + dir.dumps().string() + "/broken-"),
              std::string::npos)
        << e.what();
  }
  const std::vector<std::string> files = dir.files();
  ASSERT_EQ(files.size(), 3u) << ::testing::PrintToString(files);
  const std::string stem = files[0].substr(0, files[0].rfind('.'));
  EXPECT_EQ(read(dir.dumps() / (stem + ".cu")), bad.source);
  EXPECT_NE(read(dir.dumps() / (stem + ".log")).find("undeclared"), std::string::npos);
  EXPECT_NE(read(dir.dumps() / (stem + ".cmd")).find("-arch=sm_80"), std::string::npos);
}

TEST(SourceDump, ASnippetErrorKeepsTheNoteAndTheKernelsName) {
  DumpDir dir("CUJIT_DUMP_SOURCE_ON_ERROR");
  const ElementwiseKernel typo("T x, T y", "T z", "z = (x - y) * (x - q)", "dumped_typo");
  const std::vector<ArgSpec> args = {ArgSpec::array(DType::Float32, {64}),
                                     ArgSpec::array(DType::Float32, {64})};
  try {
    typo.specialize(args, Target::parse("sm_80"));
    FAIL() << "compiled";
  } catch (const CompileError& e) {
    EXPECT_NE(
        std::string(e.what()).find("source written to " + dir.dumps().string() + "/dumped_typo-"),
        std::string::npos)
        << e.what();
  }
  const std::vector<std::string> files = dir.files();
  ASSERT_EQ(files.size(), 3u) << ::testing::PrintToString(files);
  EXPECT_EQ(files[0].rfind("dumped_typo-", 0), 0u) << files[0];
}

TEST(SourceDump, PlantedLinksAreReplacedNeverFollowed) {
  DumpDir dir("CUJIT_DUMP_SOURCE");
  const SourceProgram p = good_program();
  const Target target = Target::parse("sm_80");
  const std::string stem = detail::dump_name(p, nvrtc_options(p, target));
  fs::create_directories(dir.dumps());
  const fs::path victim = dir.root() / "victim";
  std::ofstream(victim) << "precious";
  for (const char* ext : {".cu", ".cmd", ".log"}) {
    fs::create_symlink(victim, dir.dumps() / (stem + ext));
  }
  compile(p, target);
  EXPECT_EQ(read(victim), "precious");
  EXPECT_FALSE(fs::is_symlink(dir.dumps() / (stem + ".cu")));
  EXPECT_EQ(read(dir.dumps() / (stem + ".cu")), kGood);
  EXPECT_FALSE(fs::is_symlink(dir.dumps() / (stem + ".cmd")));
}

// Issue 29, item 9: a dump directory is held to the cache directory's rule (owned by this
// user, not writable by group or others). Before the fix (d3d7b1e) the dumps went through the
// planted link into the shared directory without a warning.
TEST(SourceDump, ALinkToASharedDirectoryIsRefusedWithAWarning) {
  for (const char* variable : {"CUJIT_DUMP_SOURCE", "CUJIT_DUMP_SOURCE_ON_ERROR"}) {
    DumpDir dir(variable);
    const fs::path shared = dir.root() / "shared";
    fs::create_directories(shared);
    ASSERT_EQ(::chmod(shared.c_str(), 01777), 0);
    if (::geteuid() == 0) ASSERT_EQ(::chown(shared.c_str(), 65534, 65534), 0);
    fs::create_symlink(shared, dir.dumps());
    std::vector<std::string> warnings;
    const auto previous = set_warning_sink([&](const std::string& m) { warnings.push_back(m); });
    SourceProgram p = good_program();
    if (std::string(variable) == "CUJIT_DUMP_SOURCE_ON_ERROR") p.source += "this is not CUDA";
    try {
      compile(p, Target::parse("sm_80"));
    } catch (const CompileError&) {
    }
    set_warning_sink(previous);
    EXPECT_TRUE(fs::is_empty(shared)) << variable;
    ASSERT_EQ(warnings.size(), 1u) << variable;
    EXPECT_NE(warnings[0].find("dump directory " + dir.dumps().string()), std::string::npos)
        << warnings[0];
  }
}

TEST(SourceDump, AnUnwritableDirectoryCostsAWarningNotTheCompilation) {
  DumpDir dir("CUJIT_DUMP_SOURCE");
  std::ofstream(dir.dumps()) << "a file, not a directory";
  const std::uint64_t before = warning_count();
  const auto previous = set_warning_sink([](const std::string&) {});
  const CompiledProgram compiled = compile(good_program(), Target::parse("sm_80"));
  set_warning_sink(previous);
  EXPECT_FALSE(compiled.binary.empty());
  EXPECT_EQ(warning_count(), before + 1);
}

TEST(SourceDump, CompileLogsHaveNoTrailingNul) {
  SourceProgram p;
  p.source = "__global__ void k(float* x) { int unused; x[0] = 1; }\n";
  const CompiledProgram compiled = compile(p, Target::parse("sm_80"));
  if (compiled.log.empty()) GTEST_SKIP() << "this NVRTC wrote no warning for an unused variable";
  EXPECT_NE(compiled.log.back(), '\0');
  EXPECT_EQ(compiled.log.find('\0'), std::string::npos);
}

// The ranges push and pop without a tool (no NVTX_INJECTION64_PATH): NVTX 3 then costs a null
// check per call. The bound is 140 times what it measures on the build machine (7 ns a pair).
TEST(Nvtx, RangesRunWithoutAToolAndCostNanoseconds) {
  ASSERT_EQ(std::getenv("NVTX_INJECTION64_PATH"), nullptr) << "a tool is attached";
  {
    detail::NvtxRange outer(detail::NvtxKind::CacheLookup, std::string("cache lookup k"));
    detail::NvtxRange inner(detail::NvtxKind::Launch, "k");
  }
  constexpr int kPairs = 200000;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kPairs; ++i) {
    detail::NvtxRange range(detail::NvtxKind::Launch, "k");
  }
  const double ns =
      std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count() /
      kPairs;
  EXPECT_LT(ns, 1000.0) << "a push/pop pair took " << ns << " ns";
  RecordProperty("nvtx_pair_ns", std::to_string(ns));
#if defined(__has_include)
#if __has_include(<nvtx3/nvToolsExt.h>)
  EXPECT_TRUE(detail::nvtx_compiled_in());
#endif
#endif
}

// NVRTC's automatic precompiled headers (runtime/nvrtc_pch.hpp), as the debug log's commands
// show them: a program whose includes this process compiled before gets -pch, the first does
// not, nor does a program without includes.
TEST(NvrtcPch, AskedForAProgramWhoseIncludesWereCompiledBefore) {
  if (std::getenv("CUJIT_NVRTC_PCH") != nullptr) GTEST_SKIP() << "CUJIT_NVRTC_PCH is set";
  SourceProgram first;
  first.name = "pch_first.cu";
  // A spelling no other test uses: the set of includes is new to this process.
  first.source = "#  include <cuda_fp16.h>\nextern \"C\" __global__ void pch_a(__half* x) {}\n";
  SourceProgram second = first;
  second.name = "pch_second.cu";
  second.source = "#  include <cuda_fp16.h>\nextern \"C\" __global__ void pch_b(__half* x) {}\n";
  SourceProgram none;
  none.name = "pch_none.cu";
  none.source = "extern \"C\" __global__ void pch_c(float* x) {}\n";
  EXPECT_EQ(detail::include_set(first), "#  include <cuda_fp16.h>\n");
  EXPECT_EQ(detail::include_set(none), "");
  SourceProgram pre = none;
  pre.options = {"--pre-include=cuda_fp16.h"};
  EXPECT_EQ(detail::include_set(pre), "--pre-include=cuda_fp16.h\n");

  std::vector<std::string> commands;
  const LogLevel level = log_level();
  set_log_level(LogLevel::Debug);
  const LogSink saved = set_log_sink([&](LogLevel, const std::string& message) {
    if (message.rfind("NVRTC compiles pch_", 0) == 0) commands.push_back(message);
  });
  // Headers that could change while the process runs never get it (review of db9ff61): a
  // pre-included file, an absolute or computed include. The toolkit's own -I does not count.
  SourceProgram user = first;
  user.name = "pch_user.cu";
  user.options = {"--pre-include=cuda_fp16.h"};
  SourceProgram absolute = none;
  absolute.name = "pch_absolute.cu";
  absolute.source = "#include </usr/local/cuda/include/cuda_fp16.h>\n" + none.source;
  SourceProgram toolkit = first;
  toolkit.name = "pch_toolkit.cu";
  toolkit.source = "#include  <cuda_fp16.h>\nextern \"C\" __global__ void pch_t(__half* x) {}\n";
  toolkit.options = {detail::cuda_include_option()};
  const Target target = Target::parse("sm_90");
  for (const SourceProgram* p : {&first, &second, &none, &none, &user, &user, &absolute,
                                 &absolute, &toolkit, &toolkit}) {
    compile(*p, target);
  }
  set_log_sink(saved);
  set_log_level(level);
  ASSERT_EQ(commands.size(), 10u);
  EXPECT_EQ(commands[0].find("-pch"), std::string::npos) << commands[0];
  EXPECT_NE(commands[1].find("-pch"), std::string::npos) << commands[1];
  EXPECT_EQ(commands[3].find("-pch"), std::string::npos) << commands[3];
  EXPECT_EQ(commands[5].find("-pch"), std::string::npos) << commands[5];
  EXPECT_EQ(commands[7].find("-pch"), std::string::npos) << commands[7];
  EXPECT_NE(commands[9].find("-pch"), std::string::npos) << commands[9];
}

}  // namespace
}  // namespace cujit
