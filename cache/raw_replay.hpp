#pragma once
// The "raw" kernel kind: a whole CUDA program given by the user (RawModule). Its manifest
// entry carries the program itself, so `cujit-cache precompile` can compile it again:
// {"kind":"raw","name":...,"source":...,"options":[...],"name_expressions":[...],
//  "headers":[[include_name, contents], ...]}

#include "cache/kernel_cache.hpp"

#include <cujit/program.hpp>

#include <string>

namespace cujit::detail {

/// The manifest entry of a raw program (canonical JSON).
std::string raw_manifest_entry(const SourceProgram& program);

/// The cache request of a raw program: kind "raw", the manifest entry as spec and as
/// manifest entry. RawModule looks its programs up with it, so precompiled raw programs are
/// found by request key.
KernelRequest raw_kernel_request(const SourceProgram& program, const Target& target);

/// The program a raw manifest entry describes. Throws ArgumentError naming the missing or
/// mistyped field.
SourceProgram raw_program_from_entry(const std::string& entry);

}  // namespace cujit::detail
