#pragma once
// What the fuzz targets share: a check that reports a broken property and aborts, so that
// libFuzzer records the input as a crash (a plain assert would vanish under NDEBUG).

#include <cstdio>
#include <cstdlib>
#include <string_view>

/// Aborts with `what` and the source location when `condition` is false.
#define CUJIT_FUZZ_CHECK(condition, what)                                                  \
  do {                                                                                     \
    if (!(condition)) {                                                                    \
      std::fprintf(stderr, "%s:%d: fuzz property violated: %s (%s)\n", __FILE__, __LINE__, \
                   static_cast<const char*>(what), #condition);                            \
      std::abort();                                                                        \
    }                                                                                      \
  } while (false)

namespace cujit::fuzz {

/// The fuzz input as text.
inline std::string_view as_text(const unsigned char* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

}  // namespace cujit::fuzz
