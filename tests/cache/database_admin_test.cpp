// The cujit-cache tool's maintenance operations on a cache database (DatabaseAdmin): pruning,
// clearing, statistics, lookup by key prefix, and copying entries between databases.
#include "cache/database_admin.hpp"
#include "cache/database_transfer.hpp"

#include "cache/database_schema.hpp"
#include "cache/sqlite_store.hpp"
#include "cache_test_util.hpp"

#include <cujit/error.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace cujit::detail {
namespace {

using test::TempDir;

CacheRecord record_for(const std::string& name, const Target& target = Target{80}) {
  SourceProgram p;
  p.source = "__global__ void " + name + "() {}";
  p.name_expressions = {name};
  CompiledProgram c;
  c.target = target;
  c.binary = std::string(1000, 'b') + name;
  c.lowered_names = {{name, "_Z" + name}};
  c.metadata = "{}";
  return make_record(content_key(p, target, "test"), "test", p, c, now_ms());
}

std::string rkey(const std::string& name) { return request_key("test", name, Target{80}); }

TEST(DatabaseAdmin, PruneByAgeArchAndClear) {
  TempDir dir;
  std::int64_t clock = 1'000'000;
  StoreOptions o;
  o.clock = [&] { return clock; };
  auto store = SqliteStore::open_writable(dir.file("kernels.db"), o);
  DatabaseAdmin admin(*store);
  store->put(record_for("old"), rkey("old"));
  clock += 10'000;
  store->put(record_for("new"), rkey("new"));
  store->put(record_for("hopper", Target{90}), "");
  PruneOptions age;
  age.older_than_ms = 5'000;
  EXPECT_EQ(admin.prune(age), 1u);
  EXPECT_EQ(store->find_by_request(rkey("old")).status, Lookup::Status::Miss);
  PruneOptions arch;
  arch.targets = {"sm_90"};
  EXPECT_EQ(admin.prune(arch), 1u);
  EXPECT_EQ(admin.list().size(), 1u);
  EXPECT_EQ(admin.clear(), 1u);
  EXPECT_TRUE(admin.list().empty());
  EXPECT_EQ(store->find_by_request(rkey("new")).status, Lookup::Status::Miss);
}

TEST(DatabaseAdmin, PruneStaleEntries) {
  TempDir dir;
  auto store = SqliteStore::open_writable(dir.file("kernels.db"), {});
  DatabaseAdmin admin(*store);
  store->put(record_for("current"), rkey("current"));
  CacheRecord old_nvrtc = record_for("old-nvrtc");
  old_nvrtc.nvrtc_version = "12.0 (older)";
  store->put(old_nvrtc, rkey("old-nvrtc"));
  CacheRecord old_codegen = record_for("old-codegen");
  old_codegen.codegen_version = kCodegenVersion - 1;
  store->put(old_codegen, rkey("old-codegen"));
  EXPECT_EQ(admin.info().stale, 2u);
  PruneOptions stale;
  stale.stale = true;
  EXPECT_EQ(admin.prune(stale), 2u);
  EXPECT_EQ(store->find_by_request(rkey("current")).status, Lookup::Status::Hit);
  EXPECT_EQ(admin.info().stale, 0u);
  EXPECT_EQ(admin.info().entries, 1u);
}

TEST(DatabaseAdmin, InfoListAndLoadByPrefix) {
  TempDir dir;
  auto store = SqliteStore::open_writable(dir.file("kernels.db"), {});
  DatabaseAdmin admin(*store);
  CacheRecord a = record_for("a");
  store->put(a, rkey("a"));
  store->put(record_for("b", Target{90}), rkey("b"));
  ASSERT_EQ(store->find_by_request(rkey("a")).status, Lookup::Status::Hit);
  DatabaseInfo info = admin.info();
  EXPECT_EQ(info.entries, 2u);
  EXPECT_EQ(info.per_target["sm_80"], 1u);
  EXPECT_EQ(info.per_target["sm_90"], 1u);
  EXPECT_EQ(info.per_kind["test"], 2u);
  EXPECT_EQ(info.hits, 1u);
  EXPECT_EQ(info.misses, 2u);
  EXPECT_EQ(info.schema_version, kSchemaVersion);
  auto loaded = admin.load(a.content_key.substr(0, 12), true);
  ASSERT_TRUE(loaded);
  EXPECT_EQ(loaded->content_key, a.content_key);
  EXPECT_EQ(DatabaseAdmin::source_of(*loaded).value(), "__global__ void a() {}");
  auto by_request = admin.load(rkey("a"), false);
  ASSERT_TRUE(by_request);
  EXPECT_EQ(by_request->content_key, a.content_key);
  EXPECT_FALSE(admin.load("ffffffff", false));
  EXPECT_THROW(admin.load("xyz!", false), ArgumentError);
}

TEST(DatabaseAdmin, ExportImportCopiesRecordsAndRequests) {
  TempDir dir;
  auto from = SqliteStore::open_writable(dir.file("from.db"), {});
  from->put(record_for("a"), rkey("a"));
  from->put(record_for("b"), rkey("b"));
  auto to = SqliteStore::open_writable(dir.file("to.db"), {});
  DatabaseTransfer source(*from);
  DatabaseTransfer destination(*to);
  int copied = 0;
  source.for_each_record([&](const CacheRecord& r, const std::vector<std::string>& keys) {
    copied += destination.import_record(r, keys).inserted ? 1 : 0;
  });
  EXPECT_EQ(copied, 2);
  EXPECT_EQ(to->find_by_request(rkey("a")).status, Lookup::Status::Hit);
  auto b = DatabaseAdmin(*to).load(rkey("b"), true);
  ASSERT_TRUE(b);
  EXPECT_EQ(DatabaseAdmin::source_of(*b).value(), "__global__ void b() {}");
  source.for_each_record([&](const CacheRecord& r, const std::vector<std::string>& keys) {
    EXPECT_FALSE(destination.import_record(r, keys).inserted);
  });
}

}  // namespace
}  // namespace cujit::detail
