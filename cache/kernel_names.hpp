#pragma once
// The kernel names a cache entry holds, for listings (`cujit-cache ls`): entries are keyed by
// content, and a database of 240 raw modules otherwise reads as 240 rows of "raw sm_80 <hash>".

#include <cujit/program.hpp>

#include <string>

namespace cujit::detail {

/// The names of an entry, from its stored options (CacheRecord::options: the program's file
/// name, "<kernel>.cu" for elementwise and reduction kernels) or, for a raw module (file name
/// raw_module.cu), its name expressions without template arguments. Empty when neither names
/// it; then kernel_names_in_source says. Never throws.
std::string kernel_names_from_options(const std::string& options_json) noexcept;

/// The names of the __global__ functions `source` defines, in order, without duplicates,
/// joined by ','. A scan, not a parse: enough for listings. Never throws.
std::string kernel_names_in_source(const std::string& source) noexcept;

/// What messages call a raw program: its file name unless that is the default (raw_module.cu,
/// cujit_program.cu), else its name expressions, else its __global__ functions ("a,b").
std::string program_kernel_names(const SourceProgram& program);

/// `log` without trailing NUL bytes: how compile logs are stored and shown (entries written
/// before 0.1 may end in one).
std::string log_text(std::string log);

}  // namespace cujit::detail
