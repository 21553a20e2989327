#pragma once
// Helpers for tests that need a GPU: they skip with a reason when none is present.

#include <gtest/gtest.h>
#include <cujit/device.hpp>

#include <cstdint>
#include <random>
#include <vector>

// A GPU that runs kernels: not the driver stand-in (tests/driver_standin), whose kernels do
// not compute.
#define CUJIT_REQUIRE_GPU()                                                                 \
  do {                                                                                      \
    if (::cujit::Device::count() == 0) GTEST_SKIP() << "no CUDA device or driver present";  \
    if (::cujit::test::on_standin()) GTEST_SKIP() << "the driver stand-in runs no kernels"; \
  } while (0)

// A device, or the driver stand-in: for tests of the launch path that check no results.
#define CUJIT_REQUIRE_DEVICE()                                                             \
  do {                                                                                     \
    if (::cujit::Device::count() == 0) GTEST_SKIP() << "no CUDA device or driver present"; \
  } while (0)

namespace cujit::test {

/// Whether device 0 is the driver stand-in.
inline bool on_standin() {
  static const bool standin = ::cujit::Device::get(0).name() == "cujit driver stand-in";
  return standin;
}

/// Random values in [lo, hi), never all zero (zeros hide unwritten outputs).
template <class T>
std::vector<T> random_vector(std::size_t n, double lo = -4.0, double hi = 4.0,
                             unsigned seed = 12345) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(dist(rng));
  return v;
}

/// Small integers in [-9, 9]: sums stay exact in int32, so results compare bit for bit.
inline std::vector<std::int32_t> small_ints(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<std::int32_t> v(n);
  for (auto& x : v) x = static_cast<std::int32_t>(rng() % 19) - 9;
  return v;
}

}  // namespace cujit::test
