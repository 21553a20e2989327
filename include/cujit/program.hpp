#pragma once
/// \file Compiling CUDA C++ source to device code with NVRTC. A SourceProgram is text; a
/// CompiledProgram is plain bytes (cubin or PTX) that can be hashed, stored and shipped; loading
/// it into a device (RawModule) is a separate step. Nothing here needs a GPU or a driver.

#include <cstdint>
#include <cujit/export.hpp>
#include <string>
#include <utility>
#include <vector>

namespace cujit {

/// What NVRTC produces: machine code for one architecture, or PTX for the driver to JIT.
enum class BinaryFormat : std::uint8_t { Cubin, Ptx };

/// A compilation target: sm_XY (cubin) or compute_XY (PTX), and the arch-specific sm_XYa /
/// compute_XYa (Hopper's wgmma and setmaxnreg, Blackwell's tcgen05), whose code runs only on
/// devices of exactly compute capability X.Y.
struct CUJIT_EXPORT Target {
  int arch = 0;  ///< 10 * major + minor, e.g. 90 for sm_90
  /// Cubin (sm_XY) or PTX (compute_XY).
  BinaryFormat format = BinaryFormat::Cubin;
  bool arch_specific = false;  ///< the "a" suffix: sm_90a

  /// "sm_90", "compute_90" or "sm_90a".
  std::string name() const;
  /// Parses "sm_90", "compute_90", "90" (cubin), "sm_90a" or "compute_90a"; throws
  /// ArgumentError.
  static Target parse(const std::string& text);
  /// Same architecture, format and suffix.
  friend bool operator==(const Target& a, const Target& b) {
    return a.arch == b.arch && a.format == b.format && a.arch_specific == b.arch_specific;
  }
  /// Not the same target.
  friend bool operator!=(const Target& a, const Target& b) { return !(a == b); }
};

/// Where code for a device of compute capability `arch` (10 * major + minor) may come from
/// besides a cubin for exactly sm_<arch>, best first: the arch-specific sm_<arch>a cubin (for
/// arch >= 90), cubins of the same major and a lower minor (binary compatible), then PTX for
/// `arch` and every lower architecture (the driver JIT-compiles it); architectures NVRTC has
/// offered since CUDA 11 only. The kernel cache searches
/// these, in this order, before compiling.
CUJIT_EXPORT std::vector<Target> compatible_targets(int arch);

/// Device code compiled elsewhere that a program links with: LTO-IR (nvcc -dlto, or NVRTC with
/// -dlto), cubin, fatbin or PTX. Linked by nvJitLink, which cujit loads at run time like NVRTC.
struct CUJIT_EXPORT LinkInput {
  /// What the bytes are.
  enum class Kind : std::uint8_t { LtoIr, Cubin, Fatbin, Ptx };
  /// What `bytes` are.
  Kind kind = Kind::LtoIr;
  std::string name;   ///< for messages ("mathlib.ltoir")
  std::string bytes;  ///< the code itself: part of every cache key of programs that link it
  /// Reads the regular file `path` (at most 1 GiB; a FIFO, device or directory is refused
  /// without blocking); the kind from its extension (.ltoir, .cubin, .fatbin, .ptx). Throws
  /// ArgumentError naming the file when it cannot be read, its extension is none of those, or
  /// its bytes do not start as that kind's files do (RawModule and every link check the same).
  static LinkInput from_file(const std::string& path);
};

/// "ltoir", "cubin", "fatbin" or "ptx".
CUJIT_EXPORT const char* to_string(LinkInput::Kind kind) noexcept;

/// CUDA C++ source and how to compile it.
struct CUJIT_EXPORT SourceProgram {
  std::string name = "cujit_program.cu";  ///< file name used in diagnostics
  /// The CUDA C++ source.
  std::string source;
  std::vector<std::string> options;           ///< extra NVRTC options, e.g. "-use_fast_math"
  std::vector<std::string> name_expressions;  ///< e.g. "my_kernel<float>"
  /// In-memory headers the source may `#include`: (include name, contents).
  std::vector<std::pair<std::string, std::string>> headers;
  /// Device code to link with (then the source is compiled to LTO-IR with -dlto -rdc=true and
  /// linked by nvJitLink with -lto into a cubin; PTX targets are refused).
  std::vector<LinkInput> link_inputs;
};

/// The result of a compilation: bytes plus what is needed to find kernels in them.
struct CUJIT_EXPORT CompiledProgram {
  /// What it was compiled for.
  Target target;
  std::string binary;  ///< cubin or PTX bytes
  std::string log;     ///< NVRTC's log of a successful compile (warnings); may be empty
  /// Lowered (mangled) name of each requested name expression.
  std::vector<std::pair<std::string, std::string>> lowered_names;
  /// Opaque launch metadata a kernel family stores with the binary (JSON text).
  std::string metadata;

  /// The lowered name of a name expression, or the expression itself when it was not
  /// registered (plain extern "C" kernels).
  const std::string& lowered_name(const std::string& expression) const;
};

/// Compiles with NVRTC for `target`. Adds -arch and -default-device; the remaining options
/// are the program's. Throws CompileError with the log, the options and the numbered source
/// when compilation fails, ArgumentError for an architecture NVRTC does not support.
/// Thread-safe.
CUJIT_EXPORT CompiledProgram compile(const SourceProgram& program, const Target& target);

/// Compiles `program` to LTO-IR for `target` (a cubin target; NVRTC with -dlto -rdc=true): a
/// library of device functions that kernels link with (RawModule's link inputs,
/// ElementwiseOptions::link), as `nvcc -dlto -dc` would build it. Named after the program
/// ("mathlib.cu" gives "mathlib.ltoir"). Throws CompileError, ArgumentError for a PTX target.
CUJIT_EXPORT LinkInput compile_to_lto_ir(const SourceProgram& program, const Target& target);

/// The options compile() passes to NVRTC for this program and target, in order: the target,
/// -std=c++17, -default-device, the program's options, then the CUDA toolkit's include
/// directories (its own and CCCL's), so that sources include cuda_fp16.h, cooperative_groups.h,
/// cuda/std/... or CUB without -I options. Those directories are not part of any cache key.
CUJIT_EXPORT std::vector<std::string> nvrtc_options(const SourceProgram& program,
                                                    const Target& target);

/// NVRTC's version as "major.minor" plus an identity of the library file, so that two builds
/// of one version differ. Recorded in each cache entry (`cujit-cache show`) and named in
/// messages; the cache keys name the major version only ("NVRTC 13"), so that a minor update
/// of the toolkit keeps every cached kernel.
CUJIT_EXPORT const std::string& nvrtc_version_string();

/// NVRTC's version as "major.minor" ("13.0"), for people. Loads NVRTC on first use; throws
/// CompilerUnavailableError when it cannot be loaded. Thread-safe.
CUJIT_EXPORT std::string nvrtc_version();

/// Architectures this NVRTC can compile cubins for, ascending (e.g. 75, 80, ..., 120).
CUJIT_EXPORT const std::vector<int>& nvrtc_supported_archs();

/// The target to build for a device of compute capability `arch`: a cubin for that exact
/// architecture when NVRTC supports it, otherwise PTX for the newest architecture it knows.
CUJIT_EXPORT Target target_for_arch(int arch);

/// Number of NVRTC compilations this process has run (cache hits do not count).
CUJIT_EXPORT std::uint64_t nvrtc_compile_count() noexcept;

}  // namespace cujit
