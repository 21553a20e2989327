// PerThread (runtime/family.hpp): the launch paths' per-thread buffers stay usable from a
// destructor that runs after them at thread exit (a thread_local object, or a static one at
// program exit, whose destructor launches a kernel): such a call gets its fallback value
// instead of the destroyed buffer.
#include "runtime/family.hpp"

#include <gtest/gtest.h>

#include <string>
#include <thread>

namespace cujit::detail {
namespace {

struct TestBuffer;
using Buffer = PerThread<std::string, TestBuffer>;

struct Outcome {
  bool got_fallback = false;
  std::string seen;
};

// Destroyed after PerThread's buffer when constructed before it.
struct LateUser {
  Outcome* outcome = nullptr;
  ~LateUser() {
    std::string fallback = "fallback";
    std::string& value = Buffer::get(fallback);
    outcome->got_fallback = &value == &fallback;
    value += "!";  // writable either way
    outcome->seen = value;
  }
};

TEST(PerThread, ReusesOneValuePerThreadAndFallsBackOnceItIsDestroyed) {
  Outcome outcome;
  std::thread([&outcome] {
    thread_local LateUser user;  // constructed first, so destroyed last
    user.outcome = &outcome;
    std::string unused;
    std::string& value = Buffer::get(unused);
    value = "kept";
    EXPECT_EQ(&Buffer::get(unused), &value);
    EXPECT_NE(&value, &unused);
  }).join();
  EXPECT_TRUE(outcome.got_fallback);
  EXPECT_EQ(outcome.seen, "fallback!");
}

}  // namespace
}  // namespace cujit::detail
