# Static dependencies, so that what is built runs on machines that have none of them installed
# (the GPU hosts have no package access): clang/LLVM for the analyser module
# (libcujit-analysis.so), SQLite, zstd and libsodium for libcujit.

find_program(CUJIT_LLVM_CONFIG NAMES llvm-config-14 llvm-config
  PATHS /usr/lib/llvm-14/bin NO_DEFAULT_PATH)
if(NOT CUJIT_LLVM_CONFIG)
  find_program(CUJIT_LLVM_CONFIG NAMES llvm-config-14 llvm-config REQUIRED)
endif()
execute_process(COMMAND ${CUJIT_LLVM_CONFIG} --libdir OUTPUT_VARIABLE llvm_libdir OUTPUT_STRIP_TRAILING_WHITESPACE)
execute_process(COMMAND ${CUJIT_LLVM_CONFIG} --includedir OUTPUT_VARIABLE llvm_includedir OUTPUT_STRIP_TRAILING_WHITESPACE)
execute_process(COMMAND ${CUJIT_LLVM_CONFIG} --link-static --libnames
  support option mc bitreader profiledata core frontendopenmp binaryformat remarks bitstreamreader demangle
  OUTPUT_VARIABLE llvm_libnames OUTPUT_STRIP_TRAILING_WHITESPACE)
execute_process(COMMAND ${CUJIT_LLVM_CONFIG} --link-static --system-libs
  OUTPUT_VARIABLE llvm_system_libs OUTPUT_STRIP_TRAILING_WHITESPACE)
separate_arguments(llvm_libnames)
separate_arguments(llvm_system_libs)

set(clang_libs clangFrontend clangDriver clangParse clangSema clangAnalysis clangEdit clangAST
  clangLex clangBasic clangSerialization clangASTMatchers clangAPINotes clangToolingCore clangRewrite)
set(static_archives "")
foreach(lib ${clang_libs})
  list(APPEND static_archives ${llvm_libdir}/lib${lib}.a)
endforeach()
foreach(lib ${llvm_libnames})
  list(APPEND static_archives ${llvm_libdir}/${lib})
endforeach()
foreach(archive ${static_archives})
  if(NOT EXISTS ${archive})
    message(FATAL_ERROR "cujit needs ${archive}: install libclang-14-dev and llvm-14-dev")
  endif()
endforeach()

add_library(cujit_clang_static INTERFACE)
target_include_directories(cujit_clang_static SYSTEM INTERFACE ${llvm_includedir})
target_link_libraries(cujit_clang_static INTERFACE
  "-Wl,--start-group" ${static_archives} "-Wl,--end-group" ${llvm_system_libs})

find_library(CUJIT_SQLITE_STATIC NAMES libsqlite3.a REQUIRED)
find_path(CUJIT_SQLITE_INCLUDE sqlite3.h REQUIRED)
add_library(cujit_sqlite_static INTERFACE)
target_include_directories(cujit_sqlite_static SYSTEM INTERFACE ${CUJIT_SQLITE_INCLUDE})
target_link_libraries(cujit_sqlite_static INTERFACE ${CUJIT_SQLITE_STATIC} Threads::Threads ${CMAKE_DL_LIBS} m)

find_library(CUJIT_ZSTD_STATIC NAMES libzstd.a REQUIRED)
add_library(cujit_zstd_static INTERFACE)
target_link_libraries(cujit_zstd_static INTERFACE ${CUJIT_ZSTD_STATIC})

# SHA-256 (cache keys, checksums) from libsodium rather than OpenSSL: small, well kept, and the
# fleet cache needs its Ed25519 signatures anyway. crypto_hash_sha256 needs no sodium_init: it
# has one portable implementation, with no CPU dispatch and no random state to set up.
find_library(CUJIT_SODIUM_STATIC NAMES libsodium.a REQUIRED)
find_path(CUJIT_SODIUM_INCLUDE sodium.h REQUIRED)
add_library(cujit_sodium_static INTERFACE)
target_include_directories(cujit_sodium_static SYSTEM INTERFACE ${CUJIT_SODIUM_INCLUDE})
target_link_libraries(cujit_sodium_static INTERFACE ${CUJIT_SODIUM_STATIC})

# The fleet tier's Redis client: hiredis (Debian's libhiredis-dev), linked in statically and
# hidden like the others, so that libcujit names no library a GPU host may lack. It is the
# Redis project's own C client, small (about 60 KB), and speaks RESP over TCP and unix sockets
# with connect and command timeouts, which is all the tier needs.
find_library(CUJIT_HIREDIS_STATIC NAMES libhiredis.a REQUIRED)
find_path(CUJIT_HIREDIS_INCLUDE hiredis/hiredis.h REQUIRED)
add_library(cujit_hiredis_static INTERFACE)
target_include_directories(cujit_hiredis_static SYSTEM INTERFACE ${CUJIT_HIREDIS_INCLUDE})
target_link_libraries(cujit_hiredis_static INTERFACE ${CUJIT_HIREDIS_STATIC})
