#include "cache/sqlite_store.hpp"

#include "cache/database_admin.hpp"
#include "cache/database_files.hpp"
#include "cache/database_transfer.hpp"
#include "cache_test_util.hpp"

#include <cujit/error.hpp>

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

namespace cujit::detail {
namespace {

using test::TempDir;
using test::WarningCapture;

CacheRecord record_for(const std::string& name, const Target& target = Target{80},
                       std::size_t binary_size = 1000) {
  SourceProgram p;
  p.source = "__global__ void " + name + "() {}";
  p.name_expressions = {name};
  CompiledProgram c;
  c.target = target;
  c.binary = std::string(binary_size, 'b') + name;
  c.lowered_names = {{name, "_Z" + name}};
  c.metadata = "{}";
  return make_record(content_key(p, target, "test"), "test", p, c, now_ms());
}

std::string rkey(const std::string& name) { return request_key("test", name, Target{80}); }

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

std::vector<std::string> corrupt_copies(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().filename().string().find(".corrupt-") != std::string::npos)
      out.push_back(e.path().string());
  }
  return out;
}

TEST(SqliteStore, PutThenFindByRequestAndContent) {
  TempDir dir;
  auto store = SqliteStore::open_writable(dir.file("kernels.db"), {});
  CacheRecord r = record_for("k");
  store->put(r, rkey("k"));
  Lookup a = store->find_by_request(rkey("k"));
  ASSERT_EQ(a.status, Lookup::Status::Hit);
  EXPECT_EQ(a.record.program.binary, r.program.binary);
  EXPECT_EQ(a.record.program.lowered_names, r.program.lowered_names);
  EXPECT_EQ(a.record.program.target, Target{80});
  EXPECT_EQ(a.record.program.log, r.program.log);
  EXPECT_EQ(a.record.program.metadata, "{}");
  EXPECT_EQ(store->find_by_content(r.content_key).status, Lookup::Status::Hit);
  EXPECT_EQ(store->find_by_request(rkey("other")).status, Lookup::Status::Miss);
  EXPECT_EQ(store->find_by_content(std::string(64, '0')).status, Lookup::Status::Miss);
  EXPECT_EQ(store->journal_mode(), "wal");
  EXPECT_EQ(store->integrity_check(), "ok");
}

// A fresh process rebuilds the WAL index from every frame in the WAL, so flushing (done at
// exit) truncates the WAL when nobody else uses the database, and leaves it when someone does.
TEST(SqliteStore, FlushTruncatesTheWalUnlessAnotherConnectionReads) {
  TempDir dir;
  const std::string path = dir.file("kernels.db");
  auto store = SqliteStore::open_writable(path, {});
  for (int i = 0; i < 8; ++i)
    store->put(record_for("k" + std::to_string(i)), rkey("k" + std::to_string(i)));
  ASSERT_GT(std::filesystem::file_size(path + "-wal"), 0u);
  store->flush();
  EXPECT_EQ(std::filesystem::file_size(path + "-wal"), 0u);

  auto other = SqliteStore::open_writable(path, {});
  store->put(record_for("late"), rkey("late"));
  EXPECT_EQ(other->find_by_request(rkey("late")).status, Lookup::Status::Hit);
  // `other` is idle, so the truncation may go ahead; a reader inside a transaction would
  // block it, and flush() must then return at once rather than wait for the busy timeout.
  auto reader = SqliteStore::open_writable(path, {});
  reader->exec("BEGIN; SELECT count(*) FROM kernels;");
  store->put(record_for("later"), rkey("later"));
  const auto start = std::chrono::steady_clock::now();
  store->flush();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  EXPECT_GT(std::filesystem::file_size(path + "-wal"), 0u);
  reader->exec("COMMIT");
  EXPECT_EQ(store->find_by_request(rkey("later")).status, Lookup::Status::Hit);
  EXPECT_EQ(store->integrity_check(), "ok");
}

TEST(SqliteStore, InsertIfAbsentKeepsTheFirstRecord) {
  TempDir dir;
  auto store = SqliteStore::open_writable(dir.file("kernels.db"), {});
  CacheRecord r = record_for("k");
  store->put(r, rkey("k"));
  CacheRecord second = r;
  second.program.log = "second";
  store->put(second, rkey("k2"));
  EXPECT_EQ(store->find_by_request(rkey("k2")).record.program.log, r.program.log);
  EXPECT_EQ(DatabaseAdmin(*store).list().size(), 1u);
  EXPECT_EQ(DatabaseAdmin(*store).info().misses, 1u);
}

TEST(SqliteStore, CreatesDirectoriesPrivately) {
  TempDir dir;
  std::string nested = dir.file("a/b/c");
  auto store = SqliteStore::open_writable(nested + "/kernels.db", {});
  struct stat st {};
  ASSERT_EQ(::stat(nested.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(::stat(dir.file("a").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
}

TEST(SqliteStore, DamagedBinaryIsReportedNotReturned) {
  TempDir dir;
  auto store = SqliteStore::open_writable(dir.file("kernels.db"), {});
  CacheRecord r = record_for("k");
  r.program.binary[3] ^= 0x20;  // stored checksum no longer matches
  store->put(r, rkey("k"));
  Lookup l = store->find_by_request(rkey("k"));
  EXPECT_EQ(l.status, Lookup::Status::Damaged);
  EXPECT_EQ(l.record.content_key, r.content_key);
  VerifyReport report = DatabaseAdmin(*store).verify(true);
  EXPECT_TRUE(report.integrity_ok);
  EXPECT_EQ(report.damaged, std::vector<std::string>{r.content_key});
  EXPECT_EQ(store->find_by_request(rkey("k")).status, Lookup::Status::Miss);
}

TEST(SqliteStore, DamagedLengthFieldsAreReportedNotTrusted) {
  TempDir dir;
  auto store = SqliteStore::open_writable(dir.file("kernels.db"), {});
  CacheRecord r = record_for("k");
  store->put(r, rkey("k"));
  store->exec("UPDATE kernels SET binary_size = binary_size + 100");
  EXPECT_EQ(store->find_by_request(rkey("k")).status, Lookup::Status::Damaged);
  store->exec("UPDATE kernels SET binary_size = length(binary), lowered_names = x'ffffff7f'");
  EXPECT_EQ(store->find_by_request(rkey("k")).status, Lookup::Status::Damaged);
  store->exec("UPDATE kernels SET lowered_names = x'00000000', target = 'sm_banana'");
  EXPECT_EQ(store->find_by_request(rkey("k")).status, Lookup::Status::Damaged);
  store->exec("UPDATE kernels SET target = 'sm_80', source_size = 1 << 40");
  EXPECT_EQ(store->find_by_request(rkey("k")).status, Lookup::Status::Damaged);
  store->exec("UPDATE kernels SET source_size = 3");
  EXPECT_EQ(DatabaseAdmin(*store).verify(false).damaged.size(),
            1u);  // source no longer decompresses
}

TEST(SqliteStore, NonDatabaseFileIsMovedAsideAndRecreated) {
  TempDir dir;
  WarningCapture warnings;
  std::string path = dir.file("kernels.db");
  write_file(path, std::string(8192, 'x'));
  auto store = SqliteStore::open_writable(path, {});
  store->put(record_for("k"), rkey("k"));
  EXPECT_EQ(store->find_by_request(rkey("k")).status, Lookup::Status::Hit);
  ASSERT_EQ(corrupt_copies(dir.path()).size(), 1u);
  EXPECT_EQ(warnings.count(), 1u) << warnings.joined();
  EXPECT_TRUE(warnings.contains(path)) << warnings.joined();
  EXPECT_TRUE(warnings.contains("moved it to")) << warnings.joined();
}

TEST(SqliteStore, TruncatedDatabaseIsDetectedAndRecreated) {
  TempDir dir;
  std::string path = dir.file("kernels.db");
  {
    auto store = SqliteStore::open_writable(path, {});
    for (int i = 0; i < 50; ++i) {
      std::string name = "k" + std::to_string(i);
      store->put(record_for(name, Target{80}, 20000), rkey(name));
    }
  }
  ASSERT_FALSE(std::filesystem::exists(path + "-wal"));  // checkpointed on close
  auto size = std::filesystem::file_size(path);
  std::filesystem::resize_file(path, size / 3);
  WarningCapture warnings;
  // SQLite notices the damage when opening (then the file is moved aside at once) or on the
  // first read of a missing page (then the caller recreates it).
  auto store = SqliteStore::open_writable(path, {});
  if (corrupt_copies(dir.path()).empty()) {
    bool detected = false;
    try {
      for (int i = 0; i < 50; ++i) store->find_by_request(rkey("k" + std::to_string(i)));
      detected = store->integrity_check() != "ok";
    } catch (const SqliteError& e) {
      detected = e.corrupt();
    }
    ASSERT_TRUE(detected);
    store->recreate_after_corruption("test", store->generation());
  }
  EXPECT_EQ(corrupt_copies(dir.path()).size(), 1u);
  // A second report of the same damage (another thread's) does not move the new file.
  store->recreate_after_corruption("late report", store->generation() - 1);
  EXPECT_EQ(corrupt_copies(dir.path()).size(), 1u);
  EXPECT_EQ(store->find_by_request(rkey("k1")).status, Lookup::Status::Miss);
  store->put(record_for("k1"), rkey("k1"));
  EXPECT_EQ(store->find_by_request(rkey("k1")).status, Lookup::Status::Hit);
  EXPECT_EQ(store->integrity_check(), "ok");
  EXPECT_EQ(warnings.count(), 1u);
}

TEST(SqliteStore, NewerSchemaIsRefusedAndLeftUntouched) {
  TempDir dir;
  std::string path = dir.file("kernels.db");
  {
    auto store = SqliteStore::open_writable(path, {});
    store->exec("PRAGMA user_version = 99");
  }
  auto before = std::filesystem::file_size(path);
  try {
    SqliteStore::open_writable(path, {});
    FAIL() << "a newer schema was accepted";
  } catch (const CacheError& e) {
    EXPECT_NE(std::string(e.what()).find("schema version 99"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos);
  }
  EXPECT_EQ(std::filesystem::file_size(path), before);
  EXPECT_TRUE(corrupt_copies(dir.path()).empty());
  EXPECT_THROW(SqliteStore::open_read_only(path, {}), CacheError);
}

TEST(SqliteStore, ForeignSqliteDatabaseIsNotOverwritten) {
  TempDir dir;
  std::string path = dir.file("kernels.db");
  {
    auto store = SqliteStore::open_writable(path, {});
    store->exec(
        "DROP TABLE kernels; DROP TABLE requests; DROP TABLE counters; "
        "PRAGMA user_version = 0; CREATE TABLE mine(x); INSERT INTO mine VALUES(42);");
  }
  EXPECT_THROW(SqliteStore::open_writable(path, {}), CacheError);
  EXPECT_TRUE(corrupt_copies(dir.path()).empty());
  EXPECT_THROW(SqliteStore::open_read_only(path, {}), CacheError);
}

TEST(SqliteStore, GroupWritableDatabaseIsRefusedUnlessAllowed) {
  TempDir dir;
  std::string path = dir.file("kernels.db");
  SqliteStore::open_writable(path, {})->put(record_for("k"), rkey("k"));
  ::chmod(path.c_str(), 0664);
  try {
    SqliteStore::open_writable(path, {});
    FAIL() << "a group-writable database was loaded";
  } catch (const CacheError& e) {
    EXPECT_NE(std::string(e.what()).find("writable by group or others"), std::string::npos);
  }
  EXPECT_THROW(SqliteStore::open_read_only(path, {}), CacheError);
  StoreOptions allow;
  allow.allow_foreign_owner = true;
  EXPECT_EQ(SqliteStore::open_writable(path, allow)->find_by_request(rkey("k")).status,
            Lookup::Status::Hit);
}

TEST(SqliteStore, DatabaseOwnedByAnotherUserIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "changing a file's owner needs root";
  TempDir dir;
  std::string path = dir.file("kernels.db");
  SqliteStore::open_writable(path, {})->put(record_for("k"), rkey("k"));
  ASSERT_EQ(::chown(path.c_str(), 12345, 12345), 0);
  try {
    SqliteStore::open_writable(path, {});
    FAIL() << "a foreign database was loaded";
  } catch (const CacheError& e) {
    EXPECT_NE(std::string(e.what()).find("owned by uid 12345"), std::string::npos) << e.what();
  }
  EXPECT_THROW(SqliteStore::open_read_only(path, {}), CacheError);
  StoreOptions allow;
  allow.allow_foreign_owner = true;
  EXPECT_NO_THROW(SqliteStore::open_read_only(path, allow));
}

TEST(SqliteStore, ReadOnlyDeploymentDatabase) {
  TempDir dir;
  std::string path = dir.file("app.db");
  {
    auto store = SqliteStore::open_writable(path, {});
    store->put(record_for("k"), rkey("k"));
    DatabaseTransfer(*store).finalize_for_deployment();
  }
  EXPECT_FALSE(std::filesystem::exists(path + "-wal"));
  ::chmod(path.c_str(), 0444);
  auto ro = SqliteStore::open_read_only(path, {});
  EXPECT_TRUE(ro->read_only());
  EXPECT_EQ(ro->find_by_request(rkey("k")).status, Lookup::Status::Hit);
  EXPECT_THROW(ro->put(record_for("x"), rkey("x")), CacheError);
  EXPECT_THROW(DatabaseAdmin(*ro).clear(), CacheError);
  EXPECT_FALSE(std::filesystem::exists(path + "-wal"));
  EXPECT_FALSE(std::filesystem::exists(path + "-shm"));
  EXPECT_THROW(SqliteStore::open_read_only(dir.file("missing.db"), {}), CacheError);
  write_file(dir.file("junk.db"), "junk junk junk junk junk junk junk junk junk junk junk");
  EXPECT_THROW(SqliteStore::open_read_only(dir.file("junk.db"), {}), CacheError);
  EXPECT_TRUE(corrupt_copies(dir.path()).empty());  // deployment files are never moved
}

TEST(SqliteStore, NetworkFilesystemUsesRollbackJournal) {
  TempDir dir;
  StoreOptions o;
  o.network_fs = StoreOptions::NetworkFs::Yes;
  auto store = SqliteStore::open_writable(dir.file("kernels.db"), o);
  EXPECT_TRUE(store->network_filesystem());
  EXPECT_EQ(store->journal_mode(), "delete");
  store->put(record_for("k"), rkey("k"));
  EXPECT_EQ(store->find_by_request(rkey("k")).status, Lookup::Status::Hit);
  EXPECT_FALSE(is_network_filesystem(dir.path()));  // the test's tmpfs or local disk
}

TEST(SqliteStore, LeastRecentlyUsedEntriesAreEvicted) {
  TempDir dir;
  std::int64_t clock = 1000;
  StoreOptions o;
  o.clock = [&] { return clock; };
  auto store = SqliteStore::open_writable(dir.file("kernels.db"), o);
  std::vector<CacheRecord> records;
  for (int i = 0; i < 4; ++i) {
    records.push_back(record_for("k" + std::to_string(i), Target{80}, 10000));
    ++clock;
    store->put(records.back(), rkey("k" + std::to_string(i)));
  }
  ++clock;
  ASSERT_EQ(store->find_by_request(rkey("k0")).status, Lookup::Status::Hit);  // k0 is now recent
  std::uint64_t one = records[0].size();
  std::uint64_t removed = store->evict_to(2 * one + one / 2);
  EXPECT_EQ(removed, 2u);
  EXPECT_EQ(store->find_by_request(rkey("k0")).status, Lookup::Status::Hit);
  EXPECT_EQ(store->find_by_request(rkey("k1")).status, Lookup::Status::Miss);
  EXPECT_EQ(store->find_by_request(rkey("k2")).status, Lookup::Status::Miss);
  EXPECT_EQ(store->find_by_request(rkey("k3")).status, Lookup::Status::Hit);
  EXPECT_EQ(DatabaseAdmin(*store).info().evictions, 2u);
}

TEST(SqliteStore, SizeLimitEvictsOnInsert) {
  TempDir dir;
  std::int64_t clock = 1;
  StoreOptions o;
  o.clock = [&] { return clock; };
  o.max_size = 3 * record_for("x", Target{80}, 10000).size() + 100;
  auto store = SqliteStore::open_writable(dir.file("kernels.db"), o);
  for (int i = 0; i < 10; ++i) {
    ++clock;
    store->put(record_for("k" + std::to_string(i), Target{80}, 10000),
               rkey("k" + std::to_string(i)));
  }
  DatabaseInfo info = DatabaseAdmin(*store).info();
  EXPECT_LE(info.stored_bytes, o.max_size);
  EXPECT_EQ(info.entries, 3u);
  EXPECT_EQ(store->find_by_request(rkey("k9")).status, Lookup::Status::Hit);
  EXPECT_EQ(store->find_by_request(rkey("k0")).status, Lookup::Status::Miss);
}

// Issue 16, finding 5: a process that only read from the cache does not wait at exit for
// another process's lock (its last-used times are a hint); before the fix it waited for the
// whole 5 s busy timeout.
TEST(SqliteStore, FlushDoesNotWaitForAnotherConnectionsLock) {
  TempDir dir;
  auto store = SqliteStore::open_writable(dir.file("kernels.db"), {});
  store->put(record_for("k"), rkey("k"));
  ASSERT_EQ(store->find_by_request(rkey("k")).status, Lookup::Status::Hit);  // a pending touch
  auto other = SqliteStore::open_writable(dir.file("kernels.db"), {});
  other->exec("BEGIN EXCLUSIVE");
  const auto start = std::chrono::steady_clock::now();
  EXPECT_NO_THROW(store->flush());
  const auto waited = std::chrono::steady_clock::now() - start;
  // A verdict, not a benchmark: 100 ms of waiting at most, against 5 s before.
  EXPECT_LT(waited, std::chrono::seconds(2));
  // The short wait was the flush's alone: a write still waits out a lock held for a while.
  std::thread holder([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    other->exec("COMMIT");
  });
  EXPECT_NO_THROW(store->put(record_for("j"), rkey("j")));
  holder.join();
}

}  // namespace
}  // namespace cujit::detail
