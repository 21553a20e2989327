#include "core/version.hpp"

#include <cujit/version.hpp>

namespace cujit {

Version version() noexcept {
  return {CUJIT_VERSION_MAJOR, CUJIT_VERSION_MINOR, CUJIT_VERSION_PATCH, CUJIT_VERSION_STRING};
}

}  // namespace cujit

namespace cujit::detail {

const char* library_version() noexcept { return CUJIT_VERSION_STRING; }

}  // namespace cujit::detail
