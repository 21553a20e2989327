// NVRTC: CUDA C++ source to cubin or PTX. Needs no GPU and no driver.
#include <cujit/program.hpp>

#include "cache/compiler_identity.hpp"

#include "support/log.hpp"

#include <cujit/error.hpp>

#include "codegen/device_support.hpp"
#include "codegen/large_stack.hpp"
#include "codegen/validation.hpp"
#include "core/nvtx.hpp"
#include "runtime/device_link.hpp"
#include "runtime/nvrtc_library.hpp"
#include "runtime/nvrtc_pch.hpp"
#include "runtime/source_dump.hpp"
#include "support/unique_handle.hpp"

#include <cuda.h>
#include <dlfcn.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <sstream>

namespace cujit {
namespace {

std::atomic<std::uint64_t> g_compile_count{0};

void check(nvrtcResult result, const char* what) {
  if (result != NVRTC_SUCCESS) {
    throw Error(std::string("cujit: NVRTC ") + what +
                " failed: " + detail::nvrtc().nvrtcGetErrorString(result));
  }
}

struct ProgramRelease {
  void operator()(nvrtcProgram program) const noexcept {
    detail::nvrtc().nvrtcDestroyProgram(&program);
  }
};
using ProgramHandle = detail::UniqueHandle<nvrtcProgram, ProgramRelease>;

std::string numbered(const std::string& source) {
  std::ostringstream out;
  std::istringstream in(source);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    out.width(4);
    out << n << " | " << line << '\n';
  }
  return out.str();
}

std::string program_log(nvrtcProgram program) {
  std::size_t size = 0;
  if (detail::nvrtc().nvrtcGetProgramLogSize(program, &size) != NVRTC_SUCCESS || size <= 1)
    return {};
  std::string log(size, '\0');
  if (detail::nvrtc().nvrtcGetProgramLog(program, log.data()) != NVRTC_SUCCESS) return {};
  // The size counts the terminating NUL, and a log may carry more of them: none is text.
  while (!log.empty() && log.back() == '\0') log.pop_back();
  return log;
}

std::string binary_of(nvrtcProgram program, BinaryFormat format) {
  std::size_t size = 0;
  std::string binary;
  if (format == BinaryFormat::Cubin) {
    check(detail::nvrtc().nvrtcGetCUBINSize(program, &size), "nvrtcGetCUBINSize");
    binary.resize(size);
    check(detail::nvrtc().nvrtcGetCUBIN(program, binary.data()), "nvrtcGetCUBIN");
  } else {
    check(detail::nvrtc().nvrtcGetPTXSize(program, &size), "nvrtcGetPTXSize");
    binary.resize(size);
    check(detail::nvrtc().nvrtcGetPTX(program, binary.data()), "nvrtcGetPTX");
    if (!binary.empty() && binary.back() == '\0') binary.pop_back();
  }
  return binary;
}

std::string lto_ir_of(nvrtcProgram program) {
  std::size_t size = 0;
  check(detail::nvrtc().nvrtcGetLTOIRSize(program, &size), "nvrtcGetLTOIRSize");
  std::string ir(size, '\0');
  check(detail::nvrtc().nvrtcGetLTOIR(program, ir.data()), "nvrtcGetLTOIR");
  return ir;
}

// Deepest bracket nesting NVRTC is given. It recurses once per level: on the 256 MiB compiler
// stack 100,000 nested parentheses compiled and 200,000 overflowed (build machine, CUDA 13.0).
constexpr int kMaxNesting = 50000;

// Throws CompileError at the first '(' '[' '{' that opens level kMaxNesting + 1 of `text`
// (comments and literals are counted too: such a text has no business being that deep).
void check_nesting(const std::string& text, const std::string& file,
                   const std::vector<std::string>& options, const std::string& source) {
  int depth = 0, line = 1, column = 0;
  for (char c : text) {
    ++column;
    if (c == '\n') {
      ++line;
      column = 0;
    } else if (c == '(' || c == '[' || c == '{') {
      if (++depth > kMaxNesting) {
        throw CompileError("cujit: " + file + ":" + std::to_string(line) + ":" +
                               std::to_string(column) + ": brackets nested more than " +
                               std::to_string(kMaxNesting) +
                               " deep; refused before NVRTC (its parser recurses per level)",
                           "", options, source, line, column);
      }
    } else if (c == ')' || c == ']' || c == '}') {
      depth = depth > 0 ? depth - 1 : 0;
    }
  }
}

// Most parameters one __global__ function may declare: NVRTC's time grows with the square of
// the count (build machine, CUDA 13.0: 4,000 took 2 s, 8,000 took 9 s, 100,000 would take half
// an hour), and 4,096 eight-byte parameters already fill the 32 KiB a kernel's parameters may
// take.
constexpr int kMaxKernelParameters = 4096;

// Throws CompileError at a __global__ function whose parameter list (from the first '(' after
// the keyword to its matching ')') has more than kMaxKernelParameters top-level entries.
void check_kernel_parameters(const std::string& text, const std::string& file,
                             const std::vector<std::string>& options, const std::string& source) {
  for (std::size_t at = text.find("__global__"); at != std::string::npos;
       at = text.find("__global__", at + 1)) {
    std::size_t open = text.find('(', at);
    if (open == std::string::npos) return;
    int depth = 0, entries = 1;
    std::size_t k = open;
    for (; k < text.size(); ++k) {
      const char c = text[k];
      if (c == '(' || c == '[' || c == '{' || c == '<') ++depth;
      if (c == ')' || c == ']' || c == '}' || c == '>') --depth;
      if (depth == 0) break;
      if (c == ',' && depth == 1 && ++entries > kMaxKernelParameters) {
        const int line = 1 + static_cast<int>(std::count(text.begin(), text.begin() + at, '\n'));
        throw CompileError("cujit: " + file + ":" + std::to_string(line) +
                               ": a __global__ function declares more than " +
                               std::to_string(kMaxKernelParameters) +
                               " parameters; refused before NVRTC (its time grows with the square "
                               "of the count)",
                           "", options, source, line, 0);
      }
    }
    if (k >= text.size()) return;  // unclosed: nothing after it is a parameter list either
    at = std::max(at, k);          // one pass over the text, however many __global__ it holds
  }
}

// Everything compile() refuses without asking NVRTC (not even loading it).
void check_before_nvrtc(const SourceProgram& program) {
  for (std::size_t k = 0; k < program.options.size(); ++k) {
    detail::check_no_target_option(program.options[k], k, "cujit: compile " + program.name,
                                   "options");
  }
  // NVRTC takes C strings: a NUL would silently cut the text short.
  if (program.source.find('\0') != std::string::npos) {
    throw ArgumentError("cujit: compile " + program.name + ": the source contains a NUL byte");
  }
  for (const auto& [name, text] : program.headers) {
    if (name.find('\0') != std::string::npos || text.find('\0') != std::string::npos) {
      throw ArgumentError("cujit: compile " + program.name + ": header '" + name +
                          "' contains a NUL byte");
    }
  }
  check_nesting(program.source, program.name, program.options, program.source);
  check_kernel_parameters(program.source, program.name, program.options, program.source);
  for (const auto& [name, text] : program.headers) {
    check_nesting(text, name, program.options, program.source);
  }
}

}  // namespace

// The toolkit's include directories, searched after the program's own: its headers
// (cuda_fp16.h, cooperative_groups.h) and CCCL's (cuda/std/..., cub/, thrust/), so that sources
// include them without -I options. They are the compiler's headers, as NVRTC's builtins are:
// keys name the compiler class and each entry its exact NVRTC version, and no path enters a
// key (`cujit-cache prune --stale` drops what an older toolkit built).
static const std::vector<std::string>& toolkit_include_options() {
  static const std::vector<std::string> options = [] {
    std::vector<std::string> out;
    const std::string& include = detail::cuda_include_option();  // "-I<dir>" or empty
    if (include.empty()) return out;
    out.push_back(include);
    struct stat st {};
    const std::string cccl = include.substr(2) + "/cccl";
    if (::stat((cccl + "/cuda/std/type_traits").c_str(), &st) == 0) out.push_back("-I" + cccl);
    return out;
  }();
  return options;
}

std::vector<std::string> nvrtc_options(const SourceProgram& program, const Target& target) {
  const std::vector<std::string>& toolkit = toolkit_include_options();
  std::vector<std::string> options;
  options.reserve(program.options.size() + 3 + toolkit.size());
  options.push_back("-arch=" + target.name());
  options.push_back("-std=c++17");
  options.push_back("-default-device");
  if (!program.link_inputs.empty()) {  // LTO-IR for nvJitLink, with external device symbols
    options.push_back("-dlto");
    options.push_back("-rdc=true");
  }
  for (const std::string& option : program.options) options.push_back(option);
  for (const std::string& option : toolkit) {
    if (std::find(options.begin(), options.end(), option) == options.end()) {
      options.push_back(option);
    }
  }
  return options;
}

namespace {

// "sm_75, sm_80, ... and sm_121".
std::string arch_list(const std::vector<int>& archs) {
  std::string out;
  for (std::size_t k = 0; k < archs.size(); ++k) {
    out += (k == 0                  ? ""
            : k + 1 == archs.size() ? " and "
                                    : ", ") +
           std::string("sm_") + std::to_string(archs[k]);
  }
  return out;
}

// Targets NVRTC can build, and linking only into cubins.
void check_target(const SourceProgram& program, const Target& target) {
  const std::vector<int>& archs = nvrtc_supported_archs();
  if (target.format == BinaryFormat::Cubin &&
      std::find(archs.begin(), archs.end(), target.arch) == archs.end()) {
    throw ArgumentError("cujit: NVRTC " + nvrtc_version() + " cannot build " + target.name() +
                        "; it builds " + arch_list(archs));
  }
  if (!program.link_inputs.empty() && target.format != BinaryFormat::Cubin) {
    throw ArgumentError("cujit: " + program.name + " links device code, which needs a cubin " +
                        "target, not " + target.name());
  }
}

// Debug log: the program, its target and NVRTC's options and name expressions.
void log_command(const SourceProgram& program, const Target& target,
                 const std::vector<std::string>& options) {
  std::string text = "NVRTC compiles " + program.name + " for " + target.name() + ":";
  for (const std::string& option : options) text += " " + option;
  for (const std::string& e : program.name_expressions) text += " (name expression " + e + ")";
  detail::log_message(LogLevel::Debug, text);
}

// CUJIT_DUMP_SOURCE_ON_ERROR (when CUJIT_DUMP_SOURCE has not written it already): the failed
// program, its command and log; returns a line for the error message, or empty.
std::string dump_failure(const SourceProgram& program, const std::vector<std::string>& options,
                         const std::string& dumped, const std::string& log) {
  std::string base = dumped;
  if (base.empty()) {
    const std::string directory = detail::dump_on_error_directory();
    if (directory.empty()) return {};
    base = detail::dump_program(directory, program, options);
    detail::dump_log(base, log);
  }
  return base.empty() ? std::string() : "\nsource written to " + base + ".cu (command: .cmd)";
}

// A -minimal compilation's failure that the full declarations might fix (run_nvrtc's
// tentative runs): the caller compiles again without -minimal.
struct MinimalMayBeTheCause {};

// Whether NVRTC's log of a failed -minimal compilation could be the option's doing. -minimal
// only leaves declarations out (texture and surface functions, the CUDA runtime's device
// functions and types, device-side launches; add_minimal_option passes it only to code that
// names none of them), so only an error about an unknown name can be: any other error is the
// user's code, and a full compilation would report it again (issue 35: one NVRTC run per
// snippet error).
bool missing_declaration(const std::string& log) {
  for (const char* sign : {"is undefined", "is not a template", "no instance of",
                           "not a type name", "has no member"}) {
    if (log.find(sign) != std::string::npos) return true;
  }
  return false;
}

// Runs NVRTC on `program` with `options`; its log in `log`. Throws CompileError with the log,
// the options and the numbered source. A `tentative` run (with -minimal, retried without it
// when missing_declaration) writes no source dumps on success, where the caller dumps the run
// that counts, and throws MinimalMayBeTheCause for a failure the retry might fix.
ProgramHandle run_nvrtc(const SourceProgram& program, const Target& target,
                        const std::vector<std::string>& options, std::string& log,
                        bool tentative = false) {
  std::vector<const char*> header_sources, header_names;
  for (const auto& header : program.headers) {
    header_names.push_back(header.first.c_str());
    header_sources.push_back(header.second.c_str());
  }
  nvrtcProgram raw = nullptr;
  check(detail::nvrtc().nvrtcCreateProgram(&raw, program.source.c_str(), program.name.c_str(),
                                           static_cast<int>(header_sources.size()),
                                           header_sources.data(), header_names.data()),
        "nvrtcCreateProgram");
  ProgramHandle handle(raw);
  for (const std::string& expression : program.name_expressions) {
    check(detail::nvrtc().nvrtcAddNameExpression(raw, expression.c_str()),
          "nvrtcAddNameExpression");
  }
  std::vector<const char*> option_ptrs;
  for (const std::string& option : options) option_ptrs.push_back(option.c_str());
  if (detail::log_enabled(LogLevel::Debug)) log_command(program, target, options);
  const std::string dump_to = tentative ? std::string() : detail::dump_directory();
  const std::string dumped =
      dump_to.empty() ? std::string() : detail::dump_program(dump_to, program, options);
  g_compile_count.fetch_add(1, std::memory_order_relaxed);
  const nvrtcResult result = detail::on_large_stack([&] {
    return detail::nvrtc().nvrtcCompileProgram(raw, static_cast<int>(option_ptrs.size()),
                                               option_ptrs.data());
  });
  log = program_log(raw);
  detail::dump_log(dumped, log);
  if (result != NVRTC_SUCCESS) {
    if (tentative && missing_declaration(log)) throw MinimalMayBeTheCause{};
    std::string dumped_now = dumped;
    if (tentative && !detail::dump_directory().empty()) {  // this run counts after all
      dumped_now = detail::dump_program(detail::dump_directory(), program, options);
      detail::dump_log(dumped_now, log);
    }
    const std::string dump_note = dump_failure(program, options, dumped_now, log);
    std::ostringstream message;
    message << "cujit: NVRTC failed to compile " << program.name << " for " << target.name() << " ("
            << detail::nvrtc().nvrtcGetErrorString(result) << ")\n"
            << log << "\noptions:";
    for (const std::string& option : options) message << ' ' << option;
    message << "\nsource:\n" << numbered(program.source) << dump_note;
    throw CompileError(message.str(), std::move(log), options, program.source);
  }
  return handle;
}

// run_nvrtc, and when a compilation with -minimal (codegen's add_minimal_option) fails with an
// error about an unknown name, again without it: the full declarations may be what the user's
// code needs, and an error that remains is reported from the full compilation. Any other
// error is reported from the -minimal run.
ProgramHandle run_nvrtc_minimal_first(const SourceProgram& program, const Target& target,
                                      std::vector<std::string> options, std::string& log) {
  const auto minimal = std::find(options.begin(), options.end(), "-minimal");
  if (minimal == options.end()) return run_nvrtc(program, target, options, log);
  try {
    ProgramHandle handle = run_nvrtc(program, target, options, log, true);
    const std::string dump_to = detail::dump_directory();
    if (!dump_to.empty()) detail::dump_log(detail::dump_program(dump_to, program, options), log);
    return handle;
  } catch (const MinimalMayBeTheCause&) {
    options.erase(std::find(options.begin(), options.end(), "-minimal"));
    return run_nvrtc(program, target, options, log);
  }
}

}  // namespace

CompiledProgram compile(const SourceProgram& program, const Target& target) {
  detail::NvtxRange range(detail::NvtxKind::Compilation, "compile " + program.name);
  check_before_nvrtc(program);
  check_target(program, target);
  std::string log;
  std::vector<std::string> options = nvrtc_options(program, target);
  detail::add_pch_option(program, options);  // not in the keys: it changes no binary
  ProgramHandle handle = run_nvrtc_minimal_first(program, target, std::move(options), log);
  CompiledProgram compiled;
  compiled.target = target;
  compiled.log = std::move(log);
  compiled.binary = program.link_inputs.empty()
                        ? binary_of(handle.get(), target.format)
                        : detail::link_device_code(lto_ir_of(handle.get()), program, target);
  for (const std::string& expression : program.name_expressions) {
    const char* lowered = nullptr;
    check(detail::nvrtc().nvrtcGetLoweredName(handle.get(), expression.c_str(), &lowered),
          "nvrtcGetLoweredName");
    compiled.lowered_names.emplace_back(expression, lowered);
  }
  return compiled;
}

LinkInput compile_to_lto_ir(const SourceProgram& program, const Target& target) {
  if (target.format != BinaryFormat::Cubin) {
    throw ArgumentError("cujit: LTO-IR is built for a cubin target (sm_XY), not " + target.name());
  }
  check_before_nvrtc(program);
  SourceProgram library = program;
  library.link_inputs.clear();
  check_target(library, target);
  std::vector<std::string> options = nvrtc_options(library, target);
  options.insert(options.begin() + 3, {"-dlto", "-rdc=true"});
  detail::add_pch_option(library, options);
  std::string log;
  ProgramHandle handle = run_nvrtc_minimal_first(library, target, options, log);
  const std::string stem = program.name.substr(0, program.name.rfind('.'));
  return LinkInput{LinkInput::Kind::LtoIr, stem + ".ltoir", lto_ir_of(handle.get())};
}

const std::string& nvrtc_version_string() {
  static const std::string version = [] {
    const detail::Nvrtc& n = detail::nvrtc();
    std::string text = std::to_string(n.major) + "." + std::to_string(n.minor);
    // Two builds of one version differ in their library file; name it by size and time.
    Dl_info info{};
    struct stat st {};
    if (dladdr(reinterpret_cast<void*>(n.nvrtcVersion), &info) != 0 && info.dli_fname &&
        stat(info.dli_fname, &st) == 0) {
      text += " (" + std::to_string(st.st_size) + " bytes, " + std::to_string(st.st_mtime) + ")";
    }
    return text;
  }();
  return version;
}

std::string nvrtc_version() {
  const detail::Nvrtc& n = detail::nvrtc();
  return std::to_string(n.major) + "." + std::to_string(n.minor);
}

const std::vector<int>& nvrtc_supported_archs() {
  static const std::vector<int> archs = [] {
    int count = 0;
    check(detail::nvrtc().nvrtcGetNumSupportedArchs(&count), "nvrtcGetNumSupportedArchs");
    std::vector<int> result(static_cast<std::size_t>(count));
    check(detail::nvrtc().nvrtcGetSupportedArchs(result.data()), "nvrtcGetSupportedArchs");
    std::sort(result.begin(), result.end());
    return result;
  }();
  return archs;
}

Target target_for_arch(int arch) {
  const std::vector<int>& archs = nvrtc_supported_archs();
  if (std::find(archs.begin(), archs.end(), arch) != archs.end()) {
    return Target{arch, BinaryFormat::Cubin};
  }
  if (arch > archs.back()) {
    // A GPU newer than this NVRTC: PTX for the newest architecture it knows, JIT-ed by the driver.
    return Target{archs.back(), BinaryFormat::Ptx};
  }
  throw ArgumentError("cujit: NVRTC " + nvrtc_version() + " cannot build for sm_" +
                      std::to_string(arch) + "; it builds " + arch_list(archs));
}

std::uint64_t nvrtc_compile_count() noexcept {
  return g_compile_count.load(std::memory_order_relaxed);
}

namespace detail {
namespace {

// The cache keys kernels by the compiler that builds them and counts its compilations; it
// asks through these hooks, never NVRTC itself.
const bool kCompilerHooksInstalled = [] {
  install_compiler_hooks(
      {[] { return std::string("NVRTC ") + std::to_string(CUDA_VERSION / 1000); },
       [] { return nvrtc_version_string(); }, [] { return nvrtc_compile_count(); }});
  return true;
}();

}  // namespace
}  // namespace detail
}  // namespace cujit
