// The clang analyser is a module, libcujit-analysis.so, that libcujit loads on the first
// analysis (codegen/analysis_loader.cpp). What a fresh process maps and prints is only visible
// in a fresh process: each test runs AnalysisModuleChild.Phase of this binary in a child.

#include "codegen/snippet_analysis.hpp"

#include "support/child_process.hpp"

#include <cujit/cache.hpp>
#include <cujit/elementwise.hpp>
#include <cujit/error.hpp>
#include <cujit/reduction.hpp>
#include <cujit/specialize.hpp>

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace cujit::detail {
namespace {

constexpr const char* kPhase = "CUJIT_TEST_ANALYSIS_PHASE";
constexpr const char* kInfoLine = "cujit: info: the snippet analyser (";

bool module_mapped() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find("libcujit-analysis") != std::string::npos) return true;
  }
  return false;
}

// An operation the analyser rejects for certain (a syntax error), so that a report without an
// exception shows that nothing was analysed.
SnippetSet rejected_set() {
  Snippet s;
  s.label = "operation";
  s.text = "y = x +;";
  s.variables = {{"x", "float", SnippetVariable::Kind::Element, false},
                 {"y", "float", SnippetVariable::Kind::Element, true}};
  SnippetSet set;
  set.kernel_name = "probe";
  set.snippets.push_back(s);
  return set;
}

// Kernels that compile never load the analyser: NVRTC runs first, and the analyser only to
// point an error NVRTC found at the user's snippet (issue 35), which then loads it.
void compile_then_reject() {
  CacheConfig memory_only;
  memory_only.writable = false;  // every specialisation below is compiled in this process
  configure_cache(memory_only);
  const Target sm90 = Target::parse("sm_90");
  const ElementwiseKernel axpb("T x, T a, T b", "T y", "y = a * x + b", "compiles_axpb");
  axpb.specialize({ArgSpec::array(DType::Float32, {4096}), ArgSpec::scalar(DType::Float32),
                   ArgSpec::scalar(DType::Float32)},
                  sm90);
  const ReductionKernel sum("T x", "T y", "x", "a + b", "y = a", "0", "compiles_sum");
  sum.specialize({ArgSpec::array(DType::Float32, {64, 64})}, ReduceOptions{}, sm90);
  EXPECT_GE(cache_stats().nvrtc_compilations, 2u);
  EXPECT_FALSE(module_mapped()) << "the analyser was loaded for kernels that compile";
  const ElementwiseKernel typo("T x", "T y", "y = x;\ny = x +* 2;", "compiles_typo");
  const std::uint64_t before = cache_stats().nvrtc_compilations;
  try {
    typo.specialize({ArgSpec::array(DType::Float32, {16})}, sm90);
    ADD_FAILURE() << "a snippet with a syntax error compiled";
  } catch (const CompileError& e) {
    EXPECT_EQ(e.line(), 2) << e.what();
    EXPECT_EQ(e.column(), 8) << e.what();
  }
  EXPECT_EQ(cache_stats().nvrtc_compilations - before, 1u);  // one NVRTC run per snippet error
  // Asked again, the same error comes back without NVRTC.
  try {
    typo.specialize({ArgSpec::array(DType::Float32, {16})}, sm90);
    ADD_FAILURE() << "a snippet with a syntax error compiled";
  } catch (const CompileError& e) {
    EXPECT_EQ(e.line(), 2) << e.what();
  }
  EXPECT_EQ(cache_stats().nvrtc_compilations - before, 1u);
  EXPECT_TRUE(module_mapped()) << "the analyser was not asked about NVRTC's error";
}

// Runs only as a child of the AnalysisModule tests (the phase variable is set).
TEST(AnalysisModuleChild, Phase) {
  const char* phase = std::getenv(kPhase);
  if (phase == nullptr) GTEST_SKIP() << "runs as a child of AnalysisModule.* only";
  ASSERT_FALSE(module_mapped()) << "mapped at library load";
  const std::string what = phase;
  if (what == "idle") {
    // Defining kernels parses their signatures; snippets are analysed only when a
    // specialisation is compiled. libcujit's own snippet code needs no analyser either.
    const ElementwiseKernel axpb("T x, T a, T b", "T y", "y = a * x + b", "idle_axpb");
    const ReductionKernel sum("T x", "T y", "x", "a + b", "y = a", "0", "idle_sum");
    EXPECT_NE(format_snippet_error("probe", "operation", "y = x +;", 1, 8, "expected").find("^"),
              std::string::npos);
    EXPECT_EQ(rejected_set().snippets.size(), 1u);
  } else if (what == "absent") {
    for (int k = 0; k < 3; ++k) {  // the info line comes once, however often it is asked
      SnippetReport report;
      EXPECT_NO_THROW(report = analyze_snippets(rejected_set()));
      EXPECT_FALSE(report.fully_checked);
      EXPECT_EQ(report.identifiers.size(), 1u);
    }
    EXPECT_FALSE(analysis_available());
  } else if (what == "compiles") {
    compile_then_reject();
    return;
  } else if (what == "present") {
    EXPECT_THROW(analyze_snippets(rejected_set()), CompileError);
    EXPECT_TRUE(analysis_available());
    EXPECT_TRUE(module_mapped());
    return;
  } else {
    FAIL() << "unknown phase " << what;
  }
  EXPECT_FALSE(module_mapped());
}

struct ChildResult {
  int status = -1;
  std::string err;  ///< its standard error
  int info_lines = 0;
};

ChildResult run_child(const std::string& phase, const std::string& analysis_path) {
  char path[] = "/tmp/cujit-analysis-test-XXXXXX";
  const int fd = ::mkstemp(path);
  ChildResult r;
  if (fd < 0) return r;
  ::close(fd);
  // An empty CUJIT_ANALYSIS_PATH counts as unset: the module beside cujit's code (here the test
  // program, which links it statically).
  const pid_t pid = test::spawn_test(
      "AnalysisModuleChild.Phase",
      {std::string(kPhase) + "=" + phase, "CUJIT_ANALYSIS_PATH=" + analysis_path}, path);
  int status = 0;
  if (pid > 0 && ::waitpid(pid, &status, 0) == pid && WIFEXITED(status)) {
    r.status = WEXITSTATUS(status);
  }
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  r.err = text.str();
  ::unlink(path);
  std::istringstream lines(r.err);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("cujit: info:", 0) == 0) ++r.info_lines;
  }
  return r;
}

TEST(AnalysisModule, LoadedBesideLibcujitOnFirstAnalysis) {
  ChildResult r = run_child("present", "");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.info_lines, 0) << r.err;
}

// The module beside this test program, which links cujit statically: the build tree's link to
// it, or the staged one on a GPU host (scripts/gpu_run.sh), where CUJIT_ANALYSIS_MODULE's build
// path does not exist.
std::string module_beside_libcujit() {
  char self[4096];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return CUJIT_ANALYSIS_MODULE;
  const std::string program(self, static_cast<std::size_t>(n));
  return program.substr(0, program.rfind('/') + 1) + "libcujit-analysis.so";
}

TEST(AnalysisModule, ExplicitPathIsLoaded) {
  ChildResult r = run_child("present", module_beside_libcujit());
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.info_lines, 0) << r.err;
}

TEST(AnalysisModule, MappedOnlyWhenNvrtcRejectsAProgram) {
  ChildResult r = run_child("compiles", "");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.info_lines, 0) << r.err;
}

TEST(AnalysisModule, NeverMappedWithoutAnAnalysis) {
  ChildResult r = run_child("idle", "");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.info_lines, 0) << r.err;
}

TEST(AnalysisModule, AbsentModuleDefersToNvrtcWithOneInfoLine) {
  ChildResult r = run_child("absent", "/nonexistent/libcujit-analysis.so");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.info_lines, 1) << r.err;
  EXPECT_NE(r.err.find(std::string(kInfoLine) + "/nonexistent/libcujit-analysis.so) is not "
                                                "installed; snippet errors come from NVRTC's log"),
            std::string::npos)
      << r.err;
}

TEST(AnalysisModule, UnloadableFileDefersToNvrtc) {
  char path[] = "/tmp/cujit-not-a-module-XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, "not an ELF file\n", 16), 16);
  ::close(fd);
  ChildResult r = run_child("absent", path);
  ::unlink(path);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.info_lines, 1) << r.err;
  EXPECT_NE(r.err.find("could not be loaded"), std::string::npos) << r.err;
}

TEST(AnalysisModule, StaleModuleIsRefused) {
  if (::access(CUJIT_STALE_ANALYSIS_MODULE, R_OK) != 0) {
    GTEST_SKIP() << "the stale test module is built in the build tree only (not staged here)";
  }
  ChildResult r = run_child("absent", CUJIT_STALE_ANALYSIS_MODULE);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.info_lines, 1) << r.err;
  EXPECT_NE(r.err.find("does not match this libcujit"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace cujit::detail
