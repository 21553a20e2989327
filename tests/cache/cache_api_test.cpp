// The public API of include/cujit/cache.hpp, on the process-wide cache.

#include <cujit/cache.hpp>

#include "cache/database_admin.hpp"
#include "cache/kernel_cache.hpp"
#include "cache/sqlite_store.hpp"
#include "cache_test_util.hpp"

#include <cujit/error.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <thread>

namespace cujit {
namespace {

using test::fake_kernel;
using test::FakeCompiler;
using test::TempDir;

// Restores the process-wide configuration when a test ends.
struct GlobalCacheGuard {
  CacheConfig saved = cache_config();
  ~GlobalCacheGuard() {
    configure_cache(saved);
    reset_cache_stats();
  }
};

TEST(CacheApi, ConfigureCountAndDisable) {
  GlobalCacheGuard guard;
  TempDir dir;
  CacheConfig config;
  config.directory = dir.path() + "/cache";
  configure_cache(config);
  reset_cache_stats();
  EXPECT_EQ(cache_config().directory, config.directory);

  auto& cache = detail::KernelCache::global();
  FakeCompiler compiler;
  auto k = fake_kernel("api");
  cache.get_or_compile(k.request, k.generator(), compiler.fn(Target{80}));
  cache.get_or_compile(k.request, k.generator(), compiler.fn(Target{80}));
  CacheStats s = cache_stats();
  EXPECT_EQ(s.misses, 1u);
  EXPECT_EQ(s.memory_hits, 1u);
  EXPECT_EQ(s.disk_hits, 0u);
  EXPECT_EQ(s.nvrtc_compilations, nvrtc_compile_count());
  EXPECT_EQ(s.warnings, warning_count());
  EXPECT_TRUE(std::filesystem::exists(config.directory + "/kernels.db"));

  // Reconfiguring empties the memory layer: the kernel now comes from the database.
  configure_cache(config);
  cache.get_or_compile(k.request, k.generator(), compiler.fn(Target{80}));
  EXPECT_EQ(cache_stats().disk_hits, 1u);
  EXPECT_EQ(compiler.calls, 1);

  reset_cache_stats();
  EXPECT_EQ(cache_stats().disk_hits, 0u);

  disable_cache();
  EXPECT_FALSE(cache_config().writable);
  auto other = fake_kernel("api-other");
  cache.get_or_compile(other.request, other.generator(), compiler.fn(Target{80}));
  EXPECT_EQ(compiler.calls, 2);
  auto store = detail::SqliteStore::open_existing(config.directory + "/kernels.db", {});
  EXPECT_EQ(detail::DatabaseAdmin(*store).list().size(), 1u);  // nothing written while disabled
}

TEST(CacheApi, PrefetchOpensTheConfiguredDatabase) {
  GlobalCacheGuard guard;
  TempDir dir;
  CacheConfig config;
  config.database_path = dir.file("prefetched.db");
  configure_cache(config);
  prefetch_cache();
  for (int i = 0; i < 500 && !std::filesystem::exists(config.database_path); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  EXPECT_TRUE(std::filesystem::exists(config.database_path));
  // Waits for the background open to finish before the directory goes away.
  EXPECT_NE(detail::KernelCache::global().writable_store(), nullptr);
}

TEST(CacheApi, AddDeploymentDatabase) {
  GlobalCacheGuard guard;
  TempDir dir;
  FakeCompiler compiler;
  auto k = fake_kernel("deployed");
  {
    CacheConfig build;
    build.database_path = dir.file("app.db");
    detail::KernelCache builder(build);
    builder.get_or_compile(k.request, k.generator(), compiler.fn(Target{80}));
  }
  disable_cache();
  EXPECT_THROW(add_deployment_database(dir.file("missing.db")), CacheError);
  add_deployment_database(dir.file("app.db"));
  EXPECT_EQ(cache_config().deployment_databases, std::vector<std::string>{dir.file("app.db")});
  detail::CacheOutcome where{};
  detail::KernelCache::global().get_or_compile(k.request, k.generator(), compiler.fn(Target{80}),
                                               &where);
  EXPECT_EQ(where, detail::CacheOutcome::DeploymentHit);
  EXPECT_EQ(compiler.calls, 1);
  EXPECT_EQ(cache_stats().deployment_hits, 1u);
}

}  // namespace
}  // namespace cujit
