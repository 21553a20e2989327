#include "core/version.hpp"

#ifndef CUJIT_VERSION_STRING
#error "CUJIT_VERSION_STRING must be defined by the build (CMakeLists.txt)"
#endif

namespace cujit::detail {

const char* library_version() noexcept { return CUJIT_VERSION_STRING; }

}  // namespace cujit::detail
