// The read-ahead of the writable database's most recent kernels (cache/read_ahead.hpp): at most
// `limit` records, most recently used first, each taken once.
#include "cache/read_ahead.hpp"

#include "cache/record.hpp"
#include "cache/store.hpp"

#include <gtest/gtest.h>

#include <string>

namespace cujit::detail {
namespace {

// Puts kernel `name`, last used at `when`, under request key "r-<name>".
void put(MemoryStore& store, const std::string& name, std::int64_t when) {
  SourceProgram source;
  source.source = "extern \"C\" __global__ void " + name + "() {}";
  CompiledProgram program;
  program.binary = "cubin of " + name;
  store.put(make_record("c-" + name, "raw", source, program, when), "r-" + name);
  store.records()["c-" + name].last_used = when;
}

TEST(ReadAhead, KeepsTheMostRecentUpToItsLimitAndHandsEachOutOnce) {
  MemoryStore store;
  put(store, "old", 100);
  put(store, "newest", 300);
  put(store, "middle", 200);
  ReadAhead ahead;
  ahead.fill(store, 2);
  const auto programs = ahead.programs();
  ASSERT_EQ(programs.size(), 2u);
  EXPECT_EQ(programs[0]->binary, "cubin of newest");  // most recently used first
  EXPECT_EQ(programs[1]->binary, "cubin of middle");
  EXPECT_FALSE(ahead.take("r-old").has_value());  // beyond the limit
  auto taken = ahead.take("r-middle");
  ASSERT_TRUE(taken.has_value());
  EXPECT_EQ(taken->content_key, "c-middle");
  EXPECT_EQ(taken->kind, "raw");
  EXPECT_EQ(taken->rank, 1u);
  EXPECT_FALSE(ahead.take("r-middle").has_value());  // taken once
  ASSERT_EQ(ahead.programs().size(), 1u);
}

}  // namespace
}  // namespace cujit::detail
