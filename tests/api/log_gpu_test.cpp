// CUJIT_LOG on a GPU: a kernel's first call says where its program came from and that its
// module was loaded, and later launches say nothing (nothing is logged per launch).

#include "support/gpu.hpp"

#include <cujit/cache.hpp>
#include <cujit/elementwise.hpp>
#include <cujit/log.hpp>

#include <gtest/gtest.h>

#include <mutex>
#include <string>
#include <vector>

namespace cujit {
namespace {

TEST(LogOnGpu, AFirstCallReportsItsProgramAndModuleAndLaunchesStayQuiet) {
  CUJIT_REQUIRE_GPU();
  std::mutex mutex;
  std::vector<std::string> lines;
  const LogLevel previous_level = log_level();
  set_log_level(LogLevel::Info);
  const LogSink previous = set_log_sink([&](LogLevel, const std::string& m) {
    std::lock_guard lock(mutex);
    lines.push_back(m);
  });
  // A snippet no other test uses, so that this process has not loaded it yet.
  ElementwiseKernel k("T x", "T z", "z = x * 3 + 7", "log_gpu_probe");
  Array x = Array::from_host(std::vector<float>(1000, 1.0f));
  Array z = k(x);
  std::size_t after_first = 0;
  {
    std::lock_guard lock(mutex);
    after_first = lines.size();
  }
  for (int i = 0; i < 100; ++i) Array again = k(x);  // the same specialisation
  set_log_sink(previous);
  set_log_level(previous_level);
  EXPECT_EQ(z.to_host<float>()[0], 10.0f);
  std::string all;
  for (const auto& l : lines) all += l + "\n";
  EXPECT_NE(all.find("kernel 'log_gpu_probe' (elementwise, sm_"), std::string::npos) << all;
  EXPECT_NE(all.find("kernel 'log_gpu_probe': module loaded on device "), std::string::npos) << all;
  EXPECT_EQ(lines.size(), after_first) << "launches logged:\n" << all;
}

}  // namespace
}  // namespace cujit
