# A Debian package with CPack: libcujit.so and its analyser module, the public headers, the
# CMake package configuration, cujit.pc and the cujit-cache tool, under /usr.
#   cpack --config build/CPackConfig.cmake -G DEB -B OUT_DIR   (or: cmake --build build --target package)
# tests/consumer/check_deb.sh builds it, inspects it and builds consumers against it. The CUDA
# driver (libcuda.so.1) and NVRTC are loaded at run time, so they are not dependencies:
# compiling kernels needs the CUDA 13 toolkit's NVRTC, launching them a driver and a GPU.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME cujit)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "cujit")
set(CPACK_PACKAGE_CONTACT "cujit maintainers")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # cujit_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
  "Run-time CUDA kernels from typed C++ snippets.\n\
cujit compiles typed CUDA snippets (elementwise and reduction kernels, raw modules) with\n\
NVRTC, caches the cubins in SQLite and launches them through the CUDA driver API. The\n\
driver and NVRTC (CUDA 13) are loaded at run time, not linked.\n\
This package holds the library, its headers, CMake and pkg-config files and cujit-cache.")
# Dependencies from the ELF files' needs (dpkg-shlibdeps, in dpkg-dev), else the C and C++
# runtimes by name.
find_program(CUJIT_DPKG_SHLIBDEPS dpkg-shlibdeps)
if(CUJIT_DPKG_SHLIBDEPS)
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
else()
  set(CPACK_DEBIAN_PACKAGE_DEPENDS "libc6, libstdc++6, libgcc-s1")
endif()
include(CPack)
