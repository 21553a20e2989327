// The cache with the real compiler: NVRTC for sm_80, no GPU needed.

#include "cache/kernel_cache.hpp"
#include "cache/raw_replay.hpp"
#include "cache/record.hpp"
#include "cache/sqlite_store.hpp"
#include "cache_test_util.hpp"

#include <gtest/gtest.h>

namespace cujit::detail {
namespace {

using test::TempDir;

SourceProgram saxpy() {
  SourceProgram p;
  p.source = R"(
template <typename T>
__global__ void saxpy(T a, const T* x, T* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
)";
  p.name_expressions = {"saxpy<float>"};
  p.options = {"-std=c++17"};
  return p;
}

TEST(Nvrtc, RealCompileIsCachedAcrossCacheInstances) {
  TempDir dir;
  CacheConfig config;
  config.database_path = dir.file("kernels.db");
  const Target sm80 = Target::parse("sm_80");
  KernelRequest request = raw_kernel_request(saxpy(), sm80);
  std::string binary;
  std::string lowered;
  {
    KernelCache cache(config);
    std::uint64_t before = nvrtc_compile_count();
    CacheOutcome where{};
    auto program = cache.get_or_compile(
        request, [] { return saxpy(); }, [&](const SourceProgram& p) { return compile(p, sm80); },
        &where);
    EXPECT_EQ(where, CacheOutcome::Compiled);
    EXPECT_EQ(nvrtc_compile_count(), before + 1);
    ASSERT_GE(program->binary.size(), 4u);
    EXPECT_EQ(program->binary.substr(0, 4),
              "\x7f"
              "ELF");
    lowered = program->lowered_name("saxpy<float>");
    EXPECT_NE(lowered, "saxpy<float>");  // a mangled name
    binary = program->binary;
  }
  KernelCache fresh(config);
  std::uint64_t before = nvrtc_compile_count();
  CacheOutcome where{};
  auto program = fresh.get_or_compile(
      request, []() -> SourceProgram { throw std::logic_error("must not generate"); },
      [](const SourceProgram&) -> CompiledProgram { throw std::logic_error("must not compile"); },
      &where);
  EXPECT_EQ(where, CacheOutcome::DiskHit);
  EXPECT_EQ(nvrtc_compile_count(), before);
  EXPECT_EQ(program->binary, binary);
  EXPECT_EQ(program->lowered_name("saxpy<float>"), lowered);
  EXPECT_EQ(program->target, sm80);
}

TEST(Nvrtc, RawReplayRebuildsTheSameKernel) {
  SourceProgram p = saxpy();
  p.headers.emplace_back("scale.cuh", "#define SCALE 2");
  p.source = "#include \"scale.cuh\"\n" + p.source;
  const Target sm80 = Target::parse("sm_80");
  ReplayedKernel k = replay(raw_manifest_entry(p), sm80);
  EXPECT_EQ(k.request.kind, "raw");
  EXPECT_EQ(k.request.target, sm80);
  EXPECT_EQ(k.request.spec, raw_kernel_request(p, sm80).spec);
  SourceProgram regenerated = k.generate();
  EXPECT_EQ(content_key(regenerated, sm80, "raw"), content_key(p, sm80, "raw"));
  CompiledProgram c = k.compile(regenerated);
  EXPECT_EQ(c.binary.substr(0, 4),
            "\x7f"
            "ELF");
  const Target ptx = Target::parse("compute_80");
  CompiledProgram text = replay(raw_manifest_entry(p), ptx).compile(regenerated);
  EXPECT_NE(text.binary.find(".target sm_80"), std::string::npos);
}

}  // namespace
}  // namespace cujit::detail
