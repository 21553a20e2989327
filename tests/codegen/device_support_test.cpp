// add_minimal_option: which user text lets generated kernels compile with NVRTC's -minimal.
#include "codegen/device_support.hpp"

#include <gtest/gtest.h>

namespace cujit::detail {
namespace {

std::vector<std::string> options_for(const std::string& user_text,
                                     std::vector<std::string> options = {}) {
  add_minimal_option(options, user_text);
  return options;
}

TEST(MinimalOption, PlainSnippetsCompileMinimal) {
  EXPECT_EQ(options_for("z = (x - y) * (x - y)"), std::vector<std::string>{"-minimal"});
  EXPECT_EQ(
      options_for("__device__ float sq(float v) { return v * v; }\nz = sq(x)", {"-use_fast_math"}),
      (std::vector<std::string>{"-use_fast_math", "-minimal"}));
}

TEST(MinimalOption, HeadersRuntimeTexturesAndLaunchesKeepTheFullDeclarations) {
  for (const char* text :
       {"#include <cub/cub.cuh>", "cudaError_t e = cudaSuccess;", "tex1Dfetch<float>(t, i)",
        "surf2Dwrite(v, s, x, y)", "child<<<1, 1>>>()"}) {
    EXPECT_TRUE(options_for(text).empty()) << text;
  }
}

TEST(MinimalOption, NotAddedTwice) {
  EXPECT_EQ(options_for("z = x", {"-minimal"}), std::vector<std::string>{"-minimal"});
  EXPECT_EQ(options_for("z = x", {"--minimal"}), std::vector<std::string>{"--minimal"});
}

}  // namespace
}  // namespace cujit::detail
