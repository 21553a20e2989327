// Issue 21: the version macros, cujit::version() and the CMake project version agree.
#include <cujit/version.hpp>

#include <gtest/gtest.h>

#include <string>

namespace cujit {
namespace {

TEST(Version, MacrosLibraryAndProjectAgree) {
  const Version v = version();
  EXPECT_EQ(v.major, CUJIT_VERSION_MAJOR);
  EXPECT_EQ(v.minor, CUJIT_VERSION_MINOR);
  EXPECT_EQ(v.patch, CUJIT_VERSION_PATCH);
  EXPECT_EQ(std::string(v.string), CUJIT_VERSION_STRING);
  EXPECT_EQ(std::string(v.string), std::to_string(v.major) + "." + std::to_string(v.minor) + "." +
                                       std::to_string(v.patch));
  EXPECT_EQ(std::string(v.string), CUJIT_TEST_PROJECT_VERSION);  // CMake's PROJECT_VERSION
  static_assert(CUJIT_VERSION ==
                CUJIT_VERSION_MAJOR * 10000 + CUJIT_VERSION_MINOR * 100 + CUJIT_VERSION_PATCH);
}

}  // namespace
}  // namespace cujit
