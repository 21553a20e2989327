// Issue 16, finding 1: a record is valid only for the request that finds it. Swapped binaries,
// relabelled targets and records of another target are never served, and architecture options
// can no longer store one architecture's binary under another's key. Each test failed on the
// code before the fix (eb933fb).

#include "cache/database_admin.hpp"
#include "cache/kernel_cache.hpp"
#include "cache/sqlite_store.hpp"
#include "cache_test_util.hpp"

#include <cujit/elementwise.hpp>
#include <cujit/error.hpp>
#include <cujit/raw_module.hpp>

#include <gtest/gtest.h>

namespace cujit::detail {
namespace {

using test::FakeCompiler;
using test::swap_columns;
using test::TempDir;
using test::WarningCapture;

CacheRecord sealed(const std::string& name, const Target& target = Target{80}) {
  SourceProgram p;
  p.source = "__global__ void " + name + "() {}";
  CompiledProgram c;
  c.target = target;
  c.binary = "binary of " + name + std::string(200, 'b');
  c.metadata = "{}";
  return make_record(content_key(p, target, "test"), "test", p, c, now_ms());
}

std::string rkey(const std::string& name, const Target& target = Target{80}) {
  return request_key("test", name, target);
}

CacheConfig config_in(const TempDir& dir) {
  CacheConfig c;
  c.directory = dir.path();
  c.preload_records = 0;
  return c;
}

TEST(Integrity, SwappedBinaryAndChecksumAreDamagedAndVerifyFindsThem) {
  TempDir dir;
  auto store = SqliteStore::open_writable(dir.file("kernels.db"), {});
  CacheRecord a = sealed("a"), b = sealed("b");
  store->put(a, rkey("a"));
  store->put(b, rkey("b"));
  swap_columns(*store, a.content_key, b.content_key, "binary,checksum,binary_size");
  // Before: a's request was a hit carrying b's binary.
  EXPECT_EQ(store->find_by_request(rkey("a")).status, Lookup::Status::Damaged);
  EXPECT_EQ(store->find_by_content(b.content_key).status, Lookup::Status::Damaged);
  EXPECT_EQ(DatabaseAdmin(*store).verify(false).damaged.size(), 2u);
}

TEST(Integrity, RelabelledTargetOrKindIsDamaged) {
  TempDir dir;
  auto store = SqliteStore::open_writable(dir.file("kernels.db"), {});
  CacheRecord a = sealed("a"), b = sealed("b");
  store->put(a, rkey("a"));
  store->put(b, rkey("b"));
  store->exec("UPDATE kernels SET target = 'sm_90' WHERE content_key = '" + a.content_key + "'");
  store->exec("UPDATE kernels SET kind = 'raw' WHERE content_key = '" + b.content_key + "'");
  EXPECT_EQ(store->find_by_request(rkey("a")).status, Lookup::Status::Damaged);
  EXPECT_EQ(store->find_by_request(rkey("b")).status, Lookup::Status::Damaged);
  EXPECT_EQ(DatabaseAdmin(*store).verify(false).damaged.size(), 2u);
}

// A request of one target mapped to a sealed record of another target: a miss, compiled for
// the right target, and the mapping is rewritten so the next process finds the right one.
TEST(Integrity, ARecordOfAnotherTargetIsNeverServed) {
  TempDir dir;
  FakeCompiler compiler;
  auto k80 = test::fake_kernel("k", Target{80});
  auto k90 = test::fake_kernel("k", Target{90});
  {
    KernelCache cache(config_in(dir));
    cache.get_or_compile(k80.request, k80.generator(), compiler.fn(Target{80}));
    auto store = std::dynamic_pointer_cast<SqliteStore>(cache.writable_store());
    ASSERT_TRUE(store);
    std::string ckey80 = content_key(k80.source, Target{80}, "test");
    store->link(request_key(k90.request.kind, k90.request.spec, Target{90}), ckey80);
  }
  for (int process = 0; process < 2; ++process) {
    KernelCache cache(config_in(dir));
    CacheOutcome where{};
    auto p = cache.get_or_compile(k90.request, k90.generator(), compiler.fn(Target{90}), &where);
    EXPECT_EQ(p->target, Target{90}) << "process " << process;
    EXPECT_EQ(p->binary.substr(0, 14), "FAKEBIN:sm_90:") << "process " << process;
    EXPECT_EQ(where, process == 0 ? CacheOutcome::Compiled : CacheOutcome::DiskHit);
  }
  EXPECT_EQ(compiler.calls, 2);  // sm_80 once, sm_90 once
}

// A record whose content key names one target but whose (sealed) target is another, as
// `-arch=sm_90` with compile_for(sm_80) used to store: found by content key, it is removed.
TEST(Integrity, AMislabelledRecordFoundByContentIsReplaced) {
  TempDir dir;
  FakeCompiler compiler;
  auto k = test::fake_kernel("k", Target{80});
  {
    KernelCache cache(config_in(dir));
    auto store = cache.writable_store();
    ASSERT_TRUE(store);
    CompiledProgram wrong;
    wrong.target = Target{90};
    wrong.binary = "FAKEBIN:sm_90:wrong";
    store->put(
        make_record(content_key(k.source, Target{80}, "test"), "test", k.source, wrong, now_ms()),
        "");
  }
  WarningCapture warnings;
  KernelCache cache(config_in(dir));
  CacheOutcome where{};
  auto p = cache.get_or_compile(k.request, k.generator(), compiler.fn(Target{80}), &where);
  EXPECT_EQ(where, CacheOutcome::Compiled);
  EXPECT_EQ(p->target, Target{80});
  KernelCache again(config_in(dir));
  EXPECT_EQ(again.get_or_compile(k.request, k.generator(), compiler.fn(Target{80}), &where)->target,
            Target{80});
  EXPECT_EQ(where, CacheOutcome::DiskHit);
  EXPECT_EQ(compiler.calls, 1);
}

TEST(Integrity, ArchitectureOptionsAreRefusedWithATypedError) {
  const std::string source = "extern \"C\" __global__ void k(float* x) { x[0] = 1; }";
  for (const std::string option :
       {"-arch=sm_90", "-arch", "--gpu-architecture=compute_90", "-code=sm_90", "--gpu-code",
        "-gencode=arch=compute_90,code=sm_90", "--generate-code=arch=compute_90"}) {
    try {
      RawModule m(source, {option});
      m.compile_for(Target{80});
      ADD_FAILURE() << option << " was accepted";
    } catch (const ArgumentError& e) {
      EXPECT_NE(std::string(e.what()).find("Target"), std::string::npos) << e.what();
    }
    ElementwiseOptions eo;
    eo.compile_options = {option};
    EXPECT_THROW(ElementwiseKernel("T x", "T y", "y = x", "copy_k", eo), ArgumentError) << option;
    SourceProgram p;
    p.source = source;
    p.options = {option};
    EXPECT_THROW(compile(p, Target{80}), ArgumentError) << option;
  }
  // Options that merely start alike are still allowed.
  RawModule ok(source, {"-use_fast_math", "--std=c++17", "-archive-is-not-an-option-name"});
  (void)ok;
}

// Issue 16, finding 5: "one warning" means one per cause and database, not one per damaged
// entry (before: a warning for each of the three).
TEST(Integrity, ManyDamagedEntriesGiveOneWarning) {
  TempDir dir;
  FakeCompiler compiler;
  std::vector<test::FakeKernel> kernels;
  for (const char* name : {"a", "b", "c"}) kernels.push_back(test::fake_kernel(name));
  {
    KernelCache cache(config_in(dir));
    for (auto& k : kernels) cache.get_or_compile(k.request, k.generator(), compiler.fn(Target{80}));
    auto store = std::dynamic_pointer_cast<SqliteStore>(cache.writable_store());
    ASSERT_TRUE(store);
    store->exec("UPDATE kernels SET binary = CAST(upper(binary) AS BLOB)");
  }
  WarningCapture warnings;
  KernelCache cache(config_in(dir));
  CacheOutcome where{};
  for (auto& k : kernels) {
    cache.get_or_compile(k.request, k.generator(), compiler.fn(Target{80}), &where);
    EXPECT_EQ(where, CacheOutcome::Compiled);
  }
  EXPECT_EQ(warnings.count(), 1u) << warnings.joined();
}

}  // namespace
}  // namespace cujit::detail
