// Headers in the cache keys (issue 32): editing a header found through -I makes the next process
// compile again instead of serving the binary built from the old header (it served the old one
// before); what counts as an include, an include directory, and the bounds on what is read.
#include "cache/include_digest.hpp"

#include <cujit/error.hpp>

#include "cache/kernel_cache.hpp"
#include "cache/raw_replay.hpp"
#include "cache/record.hpp"
#include "cache_test_util.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace cujit::detail {
namespace {

using test::FakeCompiler;
using test::TempDir;

void write(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << text;
}

SourceProgram scaled(const std::string& include_dir) {
  SourceProgram p;
  p.source = "#include \"scale.h\"\nextern \"C\" __global__ void k(float* x) { x[0] *= SCALE; }\n";
  p.options = {"-I" + include_dir};
  return p;
}

TEST(IncludeDigest, ReadsTheIncludeLinesOfAText) {
  const auto names = include_names(
      "#include \"a.h\"\n  #  include <b/c.h>\n#include_next <d.h>\n#include MACRO\n"
      "int x; // #include \"no.h\"\n#define include \"e.h\"\n#include \"unterminated\n");
  ASSERT_EQ(names.size(), 3u);
  EXPECT_EQ(names[0], std::make_pair(std::string("a.h"), true));
  EXPECT_EQ(names[1], std::make_pair(std::string("b/c.h"), false));
  EXPECT_EQ(names[2], std::make_pair(std::string("d.h"), false));
}

TEST(IncludeDigest, ReadsEveryFormOfTheIncludeOptions) {
  const IncludeOptions o = include_options({"-Ia", "-I=b/", "-I", "c", "--include-path=d",
                                            "--include-path", "e", "-include=f.h", "-include",
                                            "g.h", "--pre-include=h.h", "-DX", "-use_fast_math"});
  EXPECT_EQ(o.directories, (std::vector<std::string>{"a", "b", "c", "d", "e"}));
  EXPECT_EQ(o.pre_includes, (std::vector<std::string>{"f.h", "g.h", "h.h"}));
}

TEST(IncludeDigest, CoversEveryHeaderFoundAndNothingElse) {
  TempDir dir;
  const std::string inc = dir.file("inc");
  EXPECT_EQ(include_digest({scaled(inc).source}, scaled(inc).options, {}, "t"), "");  // none yet
  write(inc + "/scale.h", "#include \"sub/more.h\"\n#define SCALE 2.0f\n");
  write(inc + "/sub/more.h", "#include \"../scale.h\"\n");  // a cycle, followed once
  const std::string first = include_digest({scaled(inc).source}, scaled(inc).options, {}, "t");
  EXPECT_EQ(first.size(), 64u);
  write(inc + "/unrelated.h", "#define OTHER 1\n");
  EXPECT_EQ(include_digest({scaled(inc).source}, scaled(inc).options, {}, "t"), first);
  write(inc + "/sub/more.h", "#define MORE 1\n");  // a nested header changes
  const std::string second = include_digest({scaled(inc).source}, scaled(inc).options, {}, "t");
  EXPECT_NE(second, first);
  // An in-memory header of that name is taken before the disk.
  EXPECT_EQ(include_digest({scaled(inc).source}, scaled(inc).options,
                           {{"scale.h", "#define SCALE 3.0f\n"}}, "t"),
            "");
  // A pre-included header counts as included.
  EXPECT_NE(include_digest({"int x;"}, {"-I" + inc, "-include=scale.h"}, {}, "t"), "");
}

TEST(IncludeDigest, BoundsWhatItReads) {
  TempDir dir;
  const std::string inc = dir.file("inc");
  write(inc + "/scale.h", "#include \"two.h\"\n");
  write(inc + "/two.h", std::string(100, 'x'));
  IncludeLimits one_file;
  one_file.max_files = 1;
  EXPECT_THROW(include_digest({scaled(inc).source}, scaled(inc).options, {}, "t", ".", one_file),
               ArgumentError);
  IncludeLimits small;
  small.max_file_bytes = 50;
  EXPECT_THROW(include_digest({scaled(inc).source}, scaled(inc).options, {}, "t", ".", small),
               ArgumentError);
}

// The bug: a second process found the first one's binary by request key although scale.h had
// changed in between.
TEST(IncludeDigest, AnEditedHeaderIsCompiledAgainInTheNextProcess) {
  TempDir dir;
  const std::string inc = dir.file("inc");
  write(inc + "/scale.h", "#define SCALE 2.0f\n");
  CacheConfig config;
  config.database_path = dir.file("kernels.db");
  FakeCompiler compiler;
  auto compile_in_new_process = [&] {
    KernelCache cache(config);  // a new process: nothing in memory
    const SourceProgram program = scaled(inc);
    const KernelRequest request = raw_kernel_request(program, Target{80});
    cache.get_or_compile(
        request, [program] { return program; }, compiler.fn(Target{80}));
  };
  compile_in_new_process();
  compile_in_new_process();
  EXPECT_EQ(compiler.calls, 1);  // unchanged header: a disk hit
  write(inc + "/scale.h", "#define SCALE 3.0f\n");
  compile_in_new_process();
  EXPECT_EQ(compiler.calls, 2);
}

TEST(IncludeDigest, ProgramsWithoutHeadersKeepTheirKeys) {
  SourceProgram p;
  p.source = "extern \"C\" __global__ void k() {}\n";
  const KernelRequest r = raw_kernel_request(p, Target{80});
  EXPECT_EQ(r.include_digest, "");
  EXPECT_EQ(request_key(r.kind, r.spec, r.target, compiler_identity(), r.include_digest),
            request_key(r.kind, r.spec, r.target));
}

}  // namespace
}  // namespace cujit::detail
