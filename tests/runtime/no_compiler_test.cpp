// A deployed program on a machine without NVRTC: kernels found in a deployment database load
// and NVRTC is never mapped; a kernel in no database raises CompilerUnavailableError saying how
// to precompile it. Runs in a child process whose CUJIT_NVRTC_PATH points nowhere (an explicit
// path is the only one searched), so the library cannot be found however the machine is set up.
#include "cache/database_transfer.hpp"
#include "cache/kernel_cache.hpp"
#include "cache/raw_replay.hpp"
#include "cache/sqlite_store.hpp"
#include "runtime/nvrtc_library.hpp"
#include "support/child_process.hpp"

#include <cujit/cache.hpp>
#include <cujit/error.hpp>
#include <cujit/raw_module.hpp>

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace cujit {
namespace {

constexpr const char* kDeployedVar = "CUJIT_TEST_DEPLOYED_DB";

const char* kShipped = R"(extern "C" __global__ void shipped(float* x) { x[0] = 1; })";
const char* kNotShipped = R"(extern "C" __global__ void not_shipped(float* x) { x[0] = 2; })";

std::string mapped_files() {
  std::ifstream maps("/proc/self/maps");
  std::stringstream text;
  text << maps.rdbuf();
  return text.str();
}

SourceProgram source_of(const char* text) {
  SourceProgram p;
  p.source = text;
  return p;
}

// In the child: CUJIT_NVRTC_PATH=/nonexistent, CUJIT_CACHE_PATH the database the parent built.
TEST(NoCompiler, Child) {
  if (std::getenv(kDeployedVar) == nullptr) GTEST_SKIP() << "runs only as NoCompiler's child";
  const Target sm90 = Target::parse("sm_90");
  auto found = RawModule(kShipped).compile_for(sm90);
  EXPECT_EQ(found->target, sm90);
  EXPECT_EQ(cache_stats().deployment_hits, 1u);
  try {
    RawModule(kNotShipped).compile_for(sm90);
    ADD_FAILURE() << "compiled without a compiler";
  } catch (const CompilerUnavailableError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("/nonexistent"), std::string::npos) << m;
    EXPECT_NE(m.find(std::getenv(kDeployedVar)), std::string::npos) << m;
    EXPECT_NE(m.find("cujit-cache precompile kernels.jsonl --arch sm_90"), std::string::npos) << m;
  }
  EXPECT_THROW(compile(source_of(kNotShipped), sm90), CompilerUnavailableError);
  EXPECT_FALSE(detail::nvrtc_loaded());
  EXPECT_EQ(mapped_files().find("libnvrtc"), std::string::npos);
  EXPECT_EQ(mapped_files().find("libcujit-analysis"), std::string::npos);
  EXPECT_EQ(cache_stats().nvrtc_compilations, 0u);
}

TEST(NoCompiler, DeploymentDatabaseServesWithoutNvrtcAndAMissSaysHowToCoverIt) {
  const std::string dir = ::testing::TempDir() + "cujit-no-compiler-" + std::to_string(getpid());
  std::filesystem::create_directories(dir + "/cache");
  std::filesystem::permissions(dir + "/cache", std::filesystem::perms::owner_all);
  const std::string db = dir + "/app.db";
  std::filesystem::remove(db);
  {
    CacheConfig build;
    build.database_path = db;
    detail::KernelCache cache(build);
    const SourceProgram shipped = source_of(kShipped);
    const Target sm90 = Target::parse("sm_90");
    cache.get_or_compile(
        detail::raw_kernel_request(shipped, sm90), [&] { return shipped; },
        [&](const SourceProgram& p) { return compile(p, sm90); });
    detail::DatabaseTransfer(
        *std::dynamic_pointer_cast<detail::SqliteStore>(cache.writable_store()))
        .finalize_for_deployment();
  }
  const pid_t child = test::spawn_test(
      "NoCompiler.Child", {std::string(kDeployedVar) + "=" + db, "CUJIT_NVRTC_PATH=/nonexistent",
                           "CUJIT_CACHE_PATH=" + db, "CUJIT_CACHE_DIR=" + dir + "/cache"});
  ASSERT_GT(child, 0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child failed: see its output";
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace cujit
