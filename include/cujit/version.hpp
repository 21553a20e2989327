#pragma once
#include <cujit/export.hpp>
/// \file cujit's version. The macros are the version of the headers a program was compiled
/// with; cujit::version() is the version of the library it runs with. CMakeLists.txt reads the
/// project's version from this file, so the two cannot drift apart in a build.

/// The headers' major version.
#define CUJIT_VERSION_MAJOR 0
/// The headers' minor version.
#define CUJIT_VERSION_MINOR 1
/// The headers' patch level.
#define CUJIT_VERSION_PATCH 0
/// The headers' version as text.
#define CUJIT_VERSION_STRING "0.1.0"
/// One number for preprocessor comparisons: MAJOR * 10000 + MINOR * 100 + PATCH.
#define CUJIT_VERSION \
  (CUJIT_VERSION_MAJOR * 10000 + CUJIT_VERSION_MINOR * 100 + CUJIT_VERSION_PATCH)

namespace cujit {

/// A version: its three numbers and its text ("0.1.0").
struct CUJIT_EXPORT Version {
  int major;           ///< incompatible API changes
  int minor;           ///< compatible additions
  int patch;           ///< fixes
  const char* string;  ///< "major.minor.patch"
};

/// The version of the cujit library loaded (libcujit.so), which may differ from the headers'
/// CUJIT_VERSION_* when a program runs with another build than it was compiled against.
CUJIT_EXPORT Version version() noexcept;

}  // namespace cujit
