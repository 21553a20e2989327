// A writable store's WAL is checkpointed off the committing caller's path (issue 35: the
// checkpoint's two fdatasyncs were 0.9 ms of a cold call's 2.3 ms of cache work).

#include "cache/background_work.hpp"
#include "cache/record.hpp"
#include "cache/sqlite_store.hpp"
#include "cache_test_util.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <random>

namespace cujit::detail {
namespace {

using test::FakeCompiler;
using test::fake_kernel;
using test::TempDir;

// Stores a kernel whose record spans about 50 pages (past kCheckpointPages): its binary is
// 200 KB of random bytes (the source is stored compressed; the binary as it is).
void put_large(SqliteStore& store, const std::string& name) {
  auto k = fake_kernel(name);
  CompiledProgram c = FakeCompiler().fn(Target{80})(k.source);
  std::mt19937_64 random(std::hash<std::string>()(name));
  for (int i = 0; i < 200000 / 8; ++i) {
    const std::uint64_t word = random();
    c.binary.append(reinterpret_cast<const char*>(&word), sizeof word);
  }
  store.put(make_record(content_key(k.source, Target{80}, "test"), "test", k.source, c, now_ms()),
            request_key("test", k.request.spec, Target{80}));
}

std::uintmax_t size_of(const std::string& path) { return std::filesystem::file_size(path); }

TEST(Checkpoint, AStoreCheckpointsOnABackgroundThread) {
  TempDir dir;
  const std::string db = dir.file("kernels.db");
  auto store = SqliteStore::open_writable(db, {});
  for (int k = 0; k < 3; ++k) {
    const std::uint64_t before = SqliteStore::background_checkpoints();
    put_large(*store, "big" + std::to_string(k));
    ASSERT_TRUE(wait_for_background_work(std::chrono::seconds(10)));
    EXPECT_GE(SqliteStore::background_checkpoints(), before + 1) << "round " << k;
    // The records' pages are in the database file now, not only in the WAL.
    EXPECT_GT(size_of(db), (k + 1) * 200000u) << "round " << k;
  }
  auto again = SqliteStore::open_writable(db, {});
  EXPECT_EQ(again->integrity_check(), "ok");
}

// Destroying the store closes its connection at once, whatever its checkpoint's thread does:
// the last connection's close removes the WAL (a process that then forks or exits leaves no
// WAL for the next one to write through).
TEST(Checkpoint, ADestroyedStoreIsClosedAtOnce) {
  TempDir dir;
  const std::string db = dir.file("kernels.db");
  for (int k = 0; k < 20; ++k) {
    std::shared_ptr<SqliteStore> store = SqliteStore::open_writable(db, {});
    put_large(*store, "big" + std::to_string(k));
    store.reset();
    EXPECT_FALSE(std::filesystem::exists(db + "-wal")) << "round " << k;
  }
  ASSERT_TRUE(wait_for_background_work(std::chrono::seconds(10)));
}

TEST(Checkpoint, AStoreDroppedBeforeItsCheckpointRunsIsClosedCleanly) {
  TempDir dir;
  const std::string db = dir.file("kernels.db");
  for (int k = 0; k < 5; ++k) {
    std::shared_ptr<SqliteStore> store = SqliteStore::open_writable(db, {});
    put_large(*store, "big" + std::to_string(k));
  }  // destroyed before, while or after its checkpoint runs
  ASSERT_TRUE(wait_for_background_work(std::chrono::seconds(10)));
  auto store = SqliteStore::open_writable(db, {});
  EXPECT_EQ(store->integrity_check(), "ok");
  for (int k = 0; k < 5; ++k) {
    auto kernel = fake_kernel("big" + std::to_string(k));
    EXPECT_EQ(store->find_by_request(request_key("test", kernel.request.spec, Target{80})).status,
              Lookup::Status::Hit);
  }
}

}  // namespace
}  // namespace cujit::detail
