#pragma once
// NVRTC's automatic precompiled headers (-pch, NVRTC 12.8 and later): NVRTC keeps, in the
// process, the parsed headers of a program it compiled with -pch and reuses them for a later
// program that includes the same ones. Measured on the build machine (2026-11-27, NVRTC 13.0):
// a program including cub/block/block_reduce.cuh compiled in 745-800 ms, with -pch 1,220 ms the
// first time (the headers precompiled) and 210-245 ms after; cuda_fp16.h and cuda_bf16.h:
// 26-29 ms, with -pch 37-43 ms, then 21 ms. PCH files (--create-pch, --use-pch) were slower than
// no PCH (178 MB for CUB, 1.1-1.3 s to use), so cujit keeps PCHs in the process only, and asks
// for one when it pays: for a program whose set of includes this process compiled before.

#include <cujit/program.hpp>

#include <string>
#include <vector>

namespace cujit::detail {

/// The program's includes: its `#include` lines and pre-include options, in order ("" when
/// there are none, and NVRTC has nothing to precompile).
std::string include_set(const SourceProgram& program);

/// Appends "-pch" to the NVRTC `options` of `program` by CUJIT_NVRTC_PCH: `auto` (the default)
/// when this process compiled a program with the same non-empty include set before, `1` for
/// any program that includes something, `0` never. Only for programs whose headers are all
/// the toolkit's: none in memory, no quoted includes, no include directories of their own
/// (NVRTC would reuse a PCH of a header's old text). Options that ask for -pch already are
/// left as they are. Thread-safe.
void add_pch_option(const SourceProgram& program, std::vector<std::string>& options);

}  // namespace cujit::detail
