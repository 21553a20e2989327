# Installs the built cujit into a scratch prefix (or, with PREFIX, uses a tree installed
# already: an unpacked .deb, tests/consumer/check_deb.sh), then builds and runs the consumer
# twice: with find_package(cujit CONFIG), and with `pkg-config --cflags --libs cujit` alone;
# with SAMPLES_SOURCE_DIR, also builds the samples as a project of their own against the install
# and runs two of them (without a GPU they specialise their kernels).
#   cmake -DCUJIT_BINARY_DIR=... | -DPREFIX=... -DCONSUMER_SOURCE_DIR=... -DWORK_DIR=...
#         -DCXX_COMPILER=... [-DPKG_CONFIG_LIBDIR=...] -P run_check.cmake
file(REMOVE_RECURSE ${WORK_DIR})
if(NOT PREFIX)
  set(PREFIX ${WORK_DIR}/prefix)
  execute_process(COMMAND ${CMAKE_COMMAND} --install ${CUJIT_BINARY_DIR} --prefix ${PREFIX}
    RESULT_VARIABLE rc)
  if(rc)
    message(FATAL_ERROR "install failed")
  endif()
endif()

function(run step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(rc)
    message(FATAL_ERROR "${step} failed (${rc}): ${ARGN}")
  endif()
endfunction()

run("configuring the consumer" ${CMAKE_COMMAND} -S ${CONSUMER_SOURCE_DIR} -B ${WORK_DIR}/build
  -DCMAKE_PREFIX_PATH=${PREFIX} -DCMAKE_CXX_COMPILER=${CXX_COMPILER})
run("building the consumer" ${CMAKE_COMMAND} --build ${WORK_DIR}/build)
run("the consumer" ${WORK_DIR}/build/consumer)

# pkg-config: only this prefix's cujit.pc is visible (PKG_CONFIG_LIBDIR replaces the default
# search path), so the flags cannot come from a cujit installed elsewhere.
find_program(PKG_CONFIG NAMES pkg-config pkgconf REQUIRED)
file(GLOB pc_file ${PREFIX}/lib*/pkgconfig/cujit.pc ${PREFIX}/lib/*/pkgconfig/cujit.pc)
if(NOT pc_file)
  message(FATAL_ERROR "no cujit.pc installed under ${PREFIX}/lib*/pkgconfig")
endif()
get_filename_component(pc_dir ${pc_file} DIRECTORY)
set(ENV{PKG_CONFIG_LIBDIR} ${pc_dir})
unset(ENV{PKG_CONFIG_PATH})
execute_process(COMMAND ${PKG_CONFIG} --cflags --libs cujit OUTPUT_VARIABLE flags
  RESULT_VARIABLE rc OUTPUT_STRIP_TRAILING_WHITESPACE)
execute_process(COMMAND ${PKG_CONFIG} --variable=libdir cujit OUTPUT_VARIABLE libdir
  OUTPUT_STRIP_TRAILING_WHITESPACE)
if(rc OR NOT flags MATCHES "-lcujit")
  message(FATAL_ERROR "pkg-config --cflags --libs cujit failed or lacks -lcujit: '${flags}'")
endif()
message(STATUS "pkg-config --cflags --libs cujit: ${flags}")
separate_arguments(flags UNIX_COMMAND "${flags}")
run("building the consumer with pkg-config" ${CXX_COMPILER} -std=c++17
  ${CONSUMER_SOURCE_DIR}/main.cpp ${flags} -Wl,-rpath,${libdir} -o ${WORK_DIR}/consumer_pkgconfig)
run("the pkg-config consumer" ${WORK_DIR}/consumer_pkgconfig)

if(SAMPLES_SOURCE_DIR)
  run("configuring the samples" ${CMAKE_COMMAND} -S ${SAMPLES_SOURCE_DIR} -B ${WORK_DIR}/samples
    -DCMAKE_PREFIX_PATH=${PREFIX} -DCMAKE_CXX_COMPILER=${CXX_COMPILER})
  run("building the samples" ${CMAKE_COMMAND} --build ${WORK_DIR}/samples -j 2)
  foreach(sample quickstart elementwise_kernels)
    run("the ${sample} sample" ${CMAKE_COMMAND} -E env CUJIT_CACHE_DIR=${WORK_DIR}/sample-cache
      ${WORK_DIR}/samples/${sample})
  endforeach()
endif()
