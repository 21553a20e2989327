#pragma once
// The library's own version (the CMake project version), for tools and messages. One accessor,
// so that it can forward to a public cujit::version() when there is one.

namespace cujit::detail {

/// "major.minor.patch" of the libcujit this process loaded. Never throws.
const char* library_version() noexcept;

}  // namespace cujit::detail
