#pragma once
// CUJIT_DUMP_SOURCE=DIR and CUJIT_DUMP_SOURCE_ON_ERROR=DIR: the sources cujit hands NVRTC, with
// their command lines, written to a directory for a person to read or to compile by hand.
//
// Each compilation is named <stem>-<key>, where <stem> is the program's file name without
// ".cu" (the kernel's name for elementwise and reduction kernels) and <key> the first 16 hex
// digits of a SHA-256 of everything NVRTC is given (source, headers, options, name
// expressions). Files: <stem>-<key>.cu (the source), .cmd (the NVRTC invocation: program name,
// options and name expressions, and the files holding the program's headers), .hN (header N),
// and .log (NVRTC's log, when it wrote one). Files are created with mode 0600 under a temporary
// name (O_EXCL) and renamed into place, so a symbolic link planted at a final name is
// replaced, never followed. The directory (or what a link at its name names) must be owned
// by this user and not writable by group or others, the cache directory's rule: another user
// who could write it could replace the dumps. It is opened and checked once per dump, and the
// files are written relative to that descriptor. A dump that cannot be written (or a directory
// refused) costs one warning, never the compilation.

#include <cujit/program.hpp>

#include <string>
#include <vector>

namespace cujit::detail {

/// The dump directory for a compilation about to run (CUJIT_DUMP_SOURCE), or empty.
std::string dump_directory();
/// The dump directory for a compilation that failed (CUJIT_DUMP_SOURCE_ON_ERROR, else
/// CUJIT_DUMP_SOURCE), or empty.
std::string dump_on_error_directory();

/// "<stem>-<key>": the base name of `program` compiled with `options`.
std::string dump_name(const SourceProgram& program, const std::vector<std::string>& options);

/// Writes the source, headers and command of `program` compiled with `options` to `directory`
/// (created, mode 0700, when missing; refused unless owned by this user and not writable by
/// group or others); returns the base path written ("DIR/<stem>-<key>"), or
/// empty after a warning. Never throws.
std::string dump_program(const std::string& directory, const SourceProgram& program,
                         const std::vector<std::string>& options) noexcept;

/// Writes `log` as "<base>.log" beside a dump_program result. Never throws.
void dump_log(const std::string& base, const std::string& log) noexcept;

}  // namespace cujit::detail
