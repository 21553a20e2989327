// The kernel cache's tiers one by one over in-memory stores, and the chain's order (issue 31):
// each tier answers only for what it holds, the chain asks them top to bottom and compiles last.
#include "cache/memory_layer.hpp"
#include "cache/record.hpp"
#include "cache/store_set.hpp"
#include "cache/store_tiers.hpp"
#include "cache/tier_chain.hpp"
#include "cache_test_util.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace cujit::detail {
namespace {

using test::fake_kernel;
using test::FakeCompiler;
using test::FakeKernel;

struct Stores {
  std::shared_ptr<MemoryStore> writable = std::make_shared<MemoryStore>("writable");
  std::shared_ptr<MemoryStore> deployment = std::make_shared<MemoryStore>("deployment");
  CacheCounters counters;
  StoreSet set{CacheConfig{}, counters.deployment_refused, writable, {deployment}};
};

// `kernel` compiled by `compiler` and put into `store` under its request key.
void store_kernel(Store& store, const FakeKernel& kernel, FakeCompiler& compiler) {
  const CompiledProgram program = compiler.fn(kernel.request.target)(kernel.source);
  const std::string ckey = content_key(kernel.source, kernel.request.target, kernel.request.kind);
  store.put(make_record(ckey, kernel.request.kind, kernel.source, program, now_ms()),
            request_key(kernel.request.kind, kernel.request.spec, kernel.request.target));
}

TEST(WritableTier, AnswersByRequestAndByContentAndKeepsWhatWasCompiled) {
  Stores s;
  FakeCompiler compiler;
  WritableTier tier(s.set);
  FakeKernel k = fake_kernel("kept");
  std::atomic<int> generated{0};
  k.generate_calls = &generated;
  FunctionCompiler generate(k.generator(), compiler.fn(k.request.target));
  {
    Search search(k.request, generate);
    EXPECT_FALSE(tier.by_request(search));
    EXPECT_EQ(generated, 0) << "a lookup by request key generates nothing";
    EXPECT_FALSE(tier.by_content(search));
    const CompiledProgram program = compiler.fn(k.request.target)(search.source());
    const CacheRecord record =
        make_record(search.content_key(), k.request.kind, search.source(), program, now_ms());
    tier.keep(search, &record);
    EXPECT_EQ(generated, 1) << "the source is generated once per search";
  }
  Search again(k.request, generate);
  Found found = tier.by_request(again);
  ASSERT_TRUE(found);
  EXPECT_EQ(found.where, CacheOutcome::DiskHit);
  EXPECT_EQ(found.match, TargetMatch::Exact);

  // Another request with the same source: found by content, and mapped to it from then on.
  FakeKernel alias = k;
  alias.request.spec = "spec:alias";
  Search by_alias(alias.request, generate);
  EXPECT_FALSE(tier.by_request(by_alias));
  ASSERT_TRUE(tier.by_content(by_alias));
  Search alias_again(alias.request, generate);
  EXPECT_TRUE(tier.by_request(alias_again));
}

TEST(DeploymentTier, ServesOnlyWhatWasBuiltForTheRequestsTarget) {
  Stores s;
  FakeCompiler compiler;
  DeploymentTier tier(s.set);
  const FakeKernel k = fake_kernel("deployed", Target{80});
  store_kernel(*s.deployment, k, compiler);
  FunctionCompiler generate(k.generator(), compiler.fn(k.request.target));
  Search search(k.request, generate);
  Found found = tier.by_request(search);
  ASSERT_TRUE(found);
  EXPECT_EQ(found.where, CacheOutcome::DeploymentHit);
  // The same spec for sm_90 has another request key: the sm_80 entry does not answer.
  const FakeKernel other = fake_kernel("deployed", Target{90});
  Search for_90(other.request, generate);
  EXPECT_FALSE(tier.by_request(for_90));
  EXPECT_FALSE(tier.by_content(for_90));
  // Nothing is written into a deployment database.
  EXPECT_FALSE(WritableTier(s.set).by_request(search));
}

TEST(CompatibleTier, ServesACubinOfACompatibleTargetAndCountsItApart) {
  Stores s;
  FakeCompiler compiler;
  const FakeKernel k80 = fake_kernel("older", Target{80});
  store_kernel(*s.writable, k80, compiler);
  FakeKernel k86 = fake_kernel("older", Target{86});
  k86.request.compatible = {Target{80}};
  FunctionCompiler generate(k86.generator(), compiler.fn(k86.request.target));
  Search search(k86.request, generate);
  EXPECT_FALSE(WritableTier(s.set).by_request(search));
  Found found = CompatibleTier(s.set).by_request(search);
  ASSERT_TRUE(found);
  EXPECT_EQ(found.where, CacheOutcome::DiskHit);
  EXPECT_EQ(found.match, TargetMatch::CompatibleCubin);
  EXPECT_EQ(found.program->target, Target{80});
}

TEST(TierChain, AsksTheTiersTopToBottomAndCompilesLast) {
  Stores s;
  FakeCompiler compiler;
  TierChain chain(s.set, nullptr, s.counters);
  // In both databases: the deployment database answers first.
  const FakeKernel both = fake_kernel("both");
  store_kernel(*s.deployment, both, compiler);
  store_kernel(*s.writable, both, compiler);
  FunctionCompiler for_both(both.generator(), compiler.fn(Target{80}));
  EXPECT_EQ(chain.resolve(both.request, for_both).where, CacheOutcome::DeploymentHit);
  // In neither: compiled once, then kept in the writable database.
  const FakeKernel fresh = fake_kernel("fresh");
  const int before = compiler.calls;
  FunctionCompiler for_fresh(fresh.generator(), compiler.fn(Target{80}));
  EXPECT_EQ(chain.resolve(fresh.request, for_fresh).where, CacheOutcome::Compiled);
  EXPECT_EQ(compiler.calls, before + 1);
  EXPECT_EQ(chain.resolve(fresh.request, for_fresh).where, CacheOutcome::DiskHit);
  const CacheStats stats = s.counters.stats();
  EXPECT_EQ(stats.deployment_hits, 1u);
  EXPECT_EQ(stats.misses, 1u);
  EXPECT_EQ(stats.disk_hits, 1u);
}

TEST(TierChain, ACompileErrorKeepsNothing) {
  Stores s;
  TierChain chain(s.set, nullptr, s.counters);
  const FakeKernel bad = fake_kernel("bad");
  const CompileFn fails = [](const SourceProgram&) -> CompiledProgram {
    throw CompileError("cujit: bad snippet", "log", {}, "source");
  };
  FunctionCompiler failing(bad.generator(), fails);
  EXPECT_THROW(chain.resolve(bad.request, failing), CompileError);
  EXPECT_TRUE(s.writable->recent(10).empty());
  EXPECT_EQ(s.counters.stats().misses, 0u);
}

TEST(MemoryLayer, ConcurrentLookupsOfOneMissingKernelProduceItOnce) {
  MemoryLayer memory;
  const FakeKernel k = fake_kernel("once");
  std::atomic<int> produced{0}, hits{0};
  auto produce = [&] {
    ++produced;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return std::make_shared<const CompiledProgram>();
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      bool hit = false;
      EXPECT_NE(memory.get(k.request, produce, &hit), nullptr);
      if (hit) ++hits;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(produced, 1);
  EXPECT_EQ(hits, 7);
  EXPECT_EQ(memory.size(), 1u);
}

TEST(MemoryLayer, AFailureIsEveryWaitersAndNothingIsKept) {
  MemoryLayer memory;
  const FakeKernel k = fake_kernel("fails");
  bool hit = true;
  EXPECT_THROW(
      memory.get(
          k.request,
          []() -> std::shared_ptr<const CompiledProgram> { throw CacheError("cujit: no"); }, &hit),
      CacheError);
  EXPECT_EQ(memory.size(), 0u);
  EXPECT_NE(memory.get(
                k.request, [] { return std::make_shared<const CompiledProgram>(); }, &hit),
            nullptr);
  EXPECT_FALSE(hit);
}

}  // namespace
}  // namespace cujit::detail
