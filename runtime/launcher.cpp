#include "runtime/launcher.hpp"

#include "cache/include_digest.hpp"
#include "runtime/ptx_jit.hpp"

#include "core/nvtx.hpp"
#include "support/log.hpp"

#include "runtime/context.hpp"
#include "runtime/driver.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>
#include <optional>
#include <regex>
#include <sstream>

namespace cujit::detail {

void CallDescs::describe(std::size_t k, const Arg& arg) {
  if (arg.is_array()) return describe(k, arg.array());
  ArgDesc* d = new (storage_ + k * sizeof(ArgDesc)) ArgDesc();
  d->dtype = arg.dtype();
}

void CallDescs::describe(std::size_t k, const Array& a) {
  ArgDesc* d = new (storage_ + k * sizeof(ArgDesc)) ArgDesc();
  d->is_array = true;
  d->dtype = a.dtype();
  d->null = !a.valid();
  if (d->null) return;
  d->shape = &a.shape();
  d->strides = &a.strides();
  d->address = a.data();
  d->c_contiguous = a.is_c_contiguous();
  d->device = a.device_id();
}

std::string type_key(const Arg* args, std::size_t count) {
  std::string key(2 * count, '\0');
  for (std::size_t k = 0; k < count; ++k) {
    key[2 * k] = static_cast<char>(args[k].dtype());
    key[2 * k + 1] = args[k].is_array() ? 'a' : 's';
  }
  return key;
}

int put_argument_look(std::string& key, const Arg& arg) {
  if (!arg.is_array() || !arg.array().valid()) {
    const char look[2] = {static_cast<char>(arg.dtype()), arg.is_array() ? 'n' : 's'};
    key.append(look, 2);
    return -1;
  }
  // One resize and plain copies: this runs for every argument of every call.
  const Array& a = arg.array();
  const int device = a.device_id();
  const std::size_t ndim = a.shape().size();
  const std::size_t dims = ndim * sizeof(std::int64_t);
  const std::size_t at = key.size();
  key.resize(at + 4 + sizeof device + 2 * dims);
  char* out = key.data() + at;
  out[0] = static_cast<char>(arg.dtype());
  out[1] = 'a';
  std::memcpy(out + 2, &device, sizeof device);
  out[2 + sizeof device] = static_cast<char>(a.data() & 15);
  out[3 + sizeof device] = static_cast<char>(ndim);
  if (ndim > 0) {
    std::memcpy(out + 4 + sizeof device, a.shape().data(), dims);
    std::memcpy(out + 4 + sizeof device + dims, a.strides().data(), dims);
  }
  return device;
}

namespace {

CompiledProgram compile_mapped(const FamilyBuild& build, const SourceProgram& program) {
  try {
    return compile_for_target(program, build.request.target, build.jit_ptx);
  } catch (const CompilerUnavailableError&) {
    throw;  // the cache adds what it searched; nothing in it points at a snippet
  } catch (const CompileError& e) {
    rethrow_snippet_error(e, build.kernel, build.snippet_texts);
  }
}

// NVRTC first. Only when it fails (or cannot be loaded) does the clang analysis of the
// snippets run, whose error, the more precise, wins over NVRTC's: a process whose kernels all
// compile never loads the analyser (issue 35).
CompiledProgram compile_analysed(const FamilyBuild& build, const SourceProgram& program) {
  try {
    return compile_mapped(build, program);
  } catch (const CompileError&) {
    {
      NvtxRange range(NvtxKind::Analysis, "analyse " + build.kernel);
      analyze_snippets(build.snippets());
    }
    throw;
  }
}

// A family's build as the cache's last tier.
class FamilyCompiler final : public Compiler {
 public:
  explicit FamilyCompiler(const FamilyBuild& build) : build_(build) {}
  SourceProgram generate() override {
    NvtxRange range(NvtxKind::Generation, "generate " + build_.kernel);
    return build_.generate();
  }
  CompiledProgram compile(const SourceProgram& program) override {
    return compile_analysed(build_, program);
  }
  bool jits_ptx() const override { return static_cast<bool>(build_.jit_ptx); }
  CompiledProgram jit_ptx(const CompiledProgram& ptx) override { return build_.jit_ptx(ptx); }

 private:
  const FamilyBuild& build_;
};

}  // namespace

FamilyBuild family_build(const char* kind, const std::string& name, std::string spec,
                         const Target& target,
                         std::vector<std::pair<std::string, std::string>> snippet_texts,
                         const std::vector<std::string>& options) {
  FamilyBuild build;
  build.request.kind = kind;
  build.request.spec = std::move(spec);
  build.request.target = target;
  build.request.manifest_entry = build.request.spec;
  build.request.name = name;
  build.kernel = name;
  build.snippet_texts = std::move(snippet_texts);
  std::vector<std::string> texts;
  for (const auto& [label, text] : build.snippet_texts) texts.push_back(text);
  build.request.include_digest = include_digest(texts, options, {}, "cujit: kernel '" + name + "'");
  return build;
}

std::shared_ptr<const CompiledProgram> compile_family(const FamilyBuild& build,
                                                      CacheOutcome* outcome) {
  FamilyCompiler compiler(build);
  return KernelCache::global().get_or_compile(build.request, compiler, outcome);
}

void register_family_replay(
    const std::string& kind,
    std::function<FamilyBuild(const std::string& entry, const Target&)> parse) {
  register_replay(kind, [parse](const std::string& entry, const Target& target) {
    auto build = std::make_shared<FamilyBuild>(parse(entry, target));
    ReplayedKernel replayed;
    replayed.request = build->request;
    replayed.generate = [build] { return build->generate(); };
    replayed.compile = [build](const SourceProgram& program) {
      return compile_analysed(*build, program);
    };
    return replayed;
  });
}

namespace {

using Clock = std::chrono::steady_clock;

bool tracing_specialisations() {
  static const bool trace = std::getenv("CUJIT_TRACE_SPECIALIZE") != nullptr;
  return trace;
}

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// CUJIT_TRACE_SPECIALIZE=1: where a kernel's first call with a new specialisation spent its
// time: choosing the target (t0 to t1), the cache lookup or compilation (t1 to t2), loading.
void trace_specialize(const std::string& kernel, Clock::time_point t0, Clock::time_point t1,
                      Clock::time_point t2) {
  if (!tracing_specialisations()) return;
  char text[160];
  std::snprintf(text, sizeof text, "target %.3f ms, cache/compile %.3f ms, load %.3f ms",
                ms_between(t0, t1), ms_between(t1, t2), ms_between(t2, Clock::now()));
  log_always(LogLevel::Info, "specialised '" + kernel + "': " + text);
}

}  // namespace

void trace_planned_call(const std::string& kernel, Clock::time_point start,
                        Clock::time_point planned) {
  if (!tracing_specialisations()) return;
  char text[160];
  std::snprintf(text, sizeof text,
                "planned in %.3f ms (specialisation included), launched in %.3f ms",
                ms_between(start, planned), ms_between(planned, Clock::now()));
  log_always(LogLevel::Info, "call of '" + kernel + "' with a new look: " + text);
}

DeviceTarget device_target(int device) {
  DeviceTarget out;
  const int arch = device_properties(device).compute_capability;
  out.target = Target{arch, BinaryFormat::Cubin};
  out.compatible = compatible_targets(arch);
  out.jit_ptx = [target = out.target, device](const CompiledProgram& ptx) {
    return jit_ptx_to_cubin(ptx, target, device);
  };
  return out;
}

FamilyBuild for_device(FamilyBuild build, const DeviceTarget& device) {
  build.request.compatible = device.compatible;
  build.jit_ptx = device.jit_ptx;
  return build;
}

CompiledProgram compile_for_target(
    const SourceProgram& program, const Target& target,
    const std::function<CompiledProgram(const CompiledProgram& ptx)>& jit) {
  if (jit && target.format == BinaryFormat::Cubin && !target.arch_specific) {
    const std::vector<int>& archs = nvrtc_supported_archs();
    if (target.arch > archs.back()) {
      return jit(compile(program, Target{archs.back(), BinaryFormat::Ptx}));
    }
  }
  return compile(program, target);
}

std::shared_ptr<const LoadedModule> compile_and_load(
    const std::string& kernel, int device,
    const std::function<std::shared_ptr<const CompiledProgram>(const DeviceTarget&)>& build_for) {
  const Clock::time_point t0 = Clock::now();
  const DeviceTarget target = device_target(device);
  const Clock::time_point t1 = Clock::now();
  auto program = build_for(target);
  const Clock::time_point t2 = Clock::now();
  std::shared_ptr<const LoadedModule> module;
  {
    NvtxRange range(NvtxKind::ModuleLoad, "load module " + kernel);
    module = load_module(std::move(program), device);
  }
  trace_specialize(kernel, t0, t1, t2);
  if (log_enabled(LogLevel::Info)) {
    char ms[32];
    std::snprintf(ms, sizeof ms, "%.3f", ms_between(t2, Clock::now()));
    log_message(LogLevel::Info, "kernel '" + kernel + "': module loaded on device " +
                                    std::to_string(device) + " in " + ms + " ms");
  }
  return module;
}

CUfunction kernel_function(const LoadedModule& module, const std::string& symbol,
                           const std::string& kernel) {
  CUfunction f = find_function(module, symbol);
  if (f == nullptr) {
    throw ArgumentError("cujit: kernel '" + kernel + "': compiled code has no kernel '" + symbol +
                        "'");
  }
  return f;
}

void launch_function(CUfunction function, const LaunchShape& shape, CUstream stream, void** params,
                     int device, bool dependent, const char* what, const std::string& kernel) {
  NvtxRange range(NvtxKind::Launch, kernel.c_str());
  const ScopedContext context(device);
  const Driver& drv = driver();
  CUresult result;
  if (dependent) {
    CUlaunchAttribute attribute{};
    attribute.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attribute.value.programmaticStreamSerializationAllowed = 1;
    CUlaunchConfig config{};
    config.gridDimX = shape.grid_x;
    config.gridDimY = shape.grid_y;
    config.gridDimZ = 1;
    config.blockDimX = shape.block_x;
    config.blockDimY = shape.block_y;
    config.blockDimZ = 1;
    config.sharedMemBytes = shape.shared_bytes;
    config.hStream = stream;
    config.attrs = &attribute;
    config.numAttrs = 1;
    result = drv.cuLaunchKernelEx(&config, function, params, nullptr);
  } else {
    result = drv.cuLaunchKernel(function, shape.grid_x, shape.grid_y, 1, shape.block_x,
                                shape.block_y, 1, shape.shared_bytes, stream, params, nullptr);
  }
  if (result != CUDA_SUCCESS) {
    throw_cuda_error(result, dependent ? "cuLaunchKernelEx" : "cuLaunchKernel",
                     std::string(what) + " '" + kernel + "' on device " + std::to_string(device));
  }
}

namespace {

// The "source written to ..." line CUJIT_DUMP_SOURCE[_ON_ERROR] added to NVRTC's error, or empty.
std::string dump_note(const CompileError& error) {
  const std::string what = error.what();
  const std::size_t at = what.rfind("\nsource written to ");
  return at == std::string::npos ? std::string() : what.substr(at, what.find('\n', at + 1) - at);
}

// NVRTC's log as the user should read it: a snippet compiled in several places of the kernel
// (the vectorised body and its tail) is reported once, the echoed line is the user's own (not
// the generated one, which ends in the ';' cujit adds), and the closing count agrees.
std::string user_log(const std::string& log,
                     const std::vector<std::pair<std::string, std::string>>& snippets) {
  static const std::regex header(R"(^([A-Za-z_]+)\((\d+)\): (error|catastrophic error|warning).*)");
  static const std::regex count(R"(^\d+ errors? detected in the compilation of (.*)$)");
  std::vector<std::string> blocks;
  std::string tail, current;
  int errors = 0;
  std::istringstream in(log);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  auto close = [&] {
    if (current.empty()) return;
    if (std::find(blocks.begin(), blocks.end(), current) == blocks.end()) {
      blocks.push_back(current);
      if (current.find("error") < current.find('\n')) ++errors;
    }
    current.clear();
  };
  for (std::size_t n = 0; n < lines.size(); ++n) {
    std::smatch m;
    if (std::regex_match(lines[n], m, count)) {
      close();
      tail = std::to_string(errors) + (errors == 1 ? " error" : " errors") +
             " detected in the compilation of " + m[1].str();
      continue;
    }
    if (std::regex_match(lines[n], m, header)) {
      close();
      current = lines[n] + "\n";
      for (const auto& [label, text] : snippets) {
        if (label != m[1].str() || n + 1 >= lines.size()) continue;
        const auto own = snippet_line(text, std::stoi(m[2].str()));
        if (own && !own->empty() && lines[n + 1].rfind("  " + *own, 0) == 0) {
          current += "  " + *own + "\n";
          ++n;
        }
      }
      continue;
    }
    if (lines[n].empty()) {
      close();
      continue;
    }
    (current.empty() ? tail : current) += lines[n] + "\n";
  }
  close();
  std::string out;
  for (const std::string& b : blocks) out += b + "\n";
  return out + tail;
}

}  // namespace

void rethrow_snippet_error(const CompileError& error, const std::string& kernel,
                           const std::vector<std::pair<std::string, std::string>>& snippets) {
  // NVRTC writes "label(line): error: message" for code under a #line directive.
  static const std::regex pattern(R"(([A-Za-z_]+)\((\d+)\): (error|catastrophic error): (.*))");
  std::vector<std::string> lines;
  {
    std::istringstream log(error.log());
    std::string line;
    while (std::getline(log, line)) lines.push_back(line);
  }
  for (std::size_t n = 0; n < lines.size(); ++n) {
    std::smatch m;
    if (!std::regex_search(lines[n], m, pattern)) continue;
    for (const auto& [label, text] : snippets) {
      if (label != m[1].str()) continue;
      const int snippet_line = std::stoi(m[2].str());
      // NVRTC echoes the line indented by two spaces and puts a caret under the column.
      int column = 0;
      if (n + 2 < lines.size()) {
        const std::size_t caret = lines[n + 2].find('^');
        if (caret != std::string::npos && caret >= 2 &&
            lines[n + 2].find_first_not_of(' ') == caret) {
          column = static_cast<int>(caret - 2 + 1);
        }
      }
      std::string message = "cujit: kernel '" + kernel + "': " + m[4].str() + "\n" +
                            format_snippet_location(label, text, snippet_line, column) +
                            "\n\nNVRTC log:\n" + user_log(error.log(), snippets) + dump_note(error);
      throw CompileError(message, error.log(), error.options(), error.source(), snippet_line,
                         column);
    }
  }
  throw CompileError("cujit: kernel '" + kernel + "': " + error.what(), error.log(),
                     error.options(), error.source());
}

}  // namespace cujit::detail
