#include <cujit/raw_module.hpp>

#include <cujit/error.hpp>

#include "cache/kernel_cache.hpp"
#include "cache/raw_replay.hpp"
#include "codegen/validation.hpp"
#include "core/kernel_param_types.hpp"
#include "core/link_input.hpp"
#include "core/nvtx.hpp"
#include "runtime/context.hpp"
#include "runtime/driver.hpp"
#include "runtime/launcher.hpp"
#include "runtime/module.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace cujit {

// CUJIT_HIDDEN: a public class's nested type is exported with it unless marked.
struct CUJIT_HIDDEN RawModule::State {
  SourceProgram source;                           // when built from source
  std::shared_ptr<const CompiledProgram> binary;  // when built from a binary
  std::mutex mutex;
  std::map<int, std::shared_ptr<const detail::LoadedModule>> loaded;  // by device
};

namespace {

// Rebuilds raw programs from manifest entries for `cujit-cache precompile`.
detail::ReplayedKernel replay_raw(const std::string& entry, const Target& target) {
  SourceProgram program = detail::raw_program_from_entry(entry);
  detail::ReplayedKernel k;
  k.request = detail::raw_kernel_request(program, target);
  k.generate = [program] { return program; };
  k.compile = [target](const SourceProgram& p) { return compile(p, target); };
  return k;
}

const bool registered = [] {
  detail::register_replay("raw", replay_raw);
  return true;
}();

// Largest file from_file reads (a source or a binary); anything bigger is not a kernel.
constexpr std::uint64_t kMaxFileBytes = std::uint64_t{1} << 30;

std::string read_file(const std::string& path) {
  const std::string who = "cujit: RawModule::from_file('" + detail::printable(path) + "')";
  // Opened first, then judged by what was opened: a directory, /dev/zero or a FIFO is no
  // source (O_NONBLOCK: opening a FIFO would wait for a writer).
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw ArgumentError(who + ": cannot read: " + std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    throw ArgumentError(who + ": not a regular file (a directory, device or pipe)");
  }
  if (static_cast<std::uint64_t>(st.st_size) > kMaxFileBytes) {
    throw ArgumentError(who + ": " + std::to_string(st.st_size) + " bytes; at most 1 GiB is read");
  }
  std::string contents;
  char buffer[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw ArgumentError(who + ": read failed: " + std::strerror(errno));
    if (n == 0) break;
    contents.append(buffer, static_cast<std::size_t>(n));
    if (contents.size() > kMaxFileBytes) throw ArgumentError(who + ": grew past 1 GiB");
  }
  return contents;
}

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

RawModule::RawModule(std::string source, std::vector<std::string> options,
                     std::vector<std::string> name_expressions)
    : state_(std::make_shared<State>()) {
  detail::check_compile_options(options, "cujit: RawModule", "options");
  if (auto nul = source.find('\0'); nul != std::string::npos) {
    throw ArgumentError("cujit: RawModule: the source contains a NUL byte at offset " +
                        std::to_string(nul) + "; NVRTC would compile only the text before it");
  }
  for (std::size_t k = 0; k < name_expressions.size(); ++k) {
    detail::check_name_expression(name_expressions[k], k, "cujit: RawModule", "name_expressions");
  }
  state_->source.name = "raw_module.cu";
  state_->source.source = std::move(source);
  state_->source.options = std::move(options);
  state_->source.name_expressions = std::move(name_expressions);
}

RawModule::RawModule(std::string source, std::vector<std::string> options,
                     std::vector<std::string> name_expressions, std::vector<LinkInput> link)
    : RawModule(std::move(source), std::move(options), std::move(name_expressions)) {
  for (const LinkInput& input : link) detail::check_link_input(input, "cujit: RawModule");
  state_->source.link_inputs = std::move(link);
}

RawModule::RawModule(std::string source, std::vector<std::string> options,
                     std::vector<std::string> name_expressions, std::vector<LinkInput> link,
                     std::vector<std::pair<std::string, std::string>> headers)
    : RawModule(std::move(source), std::move(options), std::move(name_expressions),
                std::move(link)) {
  for (std::size_t k = 0; k < headers.size(); ++k) {
    const std::string& name = headers[k].first;
    const bool control = std::any_of(name.begin(), name.end(), [](char c) {
      return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
    });
    if (name.empty() || control) {
      throw ArgumentError("cujit: RawModule: headers[" + std::to_string(k) +
                          "]: a header's name must be a non-empty file name without control "
                          "characters");
    }
  }
  state_->source.headers = std::move(headers);
}

RawModule RawModule::from_binary(CompiledProgram program) {
  RawModule module("");
  module.state_->binary = std::make_shared<const CompiledProgram>(std::move(program));
  return module;
}

RawModule RawModule::from_file(const std::string& path, std::vector<std::string> options,
                               std::vector<std::string> name_expressions) {
  if (ends_with(path, ".cubin") || ends_with(path, ".ptx")) {
    CompiledProgram program;
    program.binary = read_file(path);
    program.target.format = ends_with(path, ".ptx") ? BinaryFormat::Ptx : BinaryFormat::Cubin;
    return from_binary(std::move(program));
  }
  RawModule module(read_file(path), std::move(options), std::move(name_expressions));
  module.state_->source.name = path;
  return module;
}

std::shared_ptr<const CompiledProgram> RawModule::compile_for(const Target& target) const {
  if (state_->binary) return state_->binary;
  const detail::KernelRequest request = detail::raw_kernel_request(state_->source, target);
  const SourceProgram& source = state_->source;
  return detail::KernelCache::global().get_or_compile(
      request, [&] { return source; },
      [&](const SourceProgram& program) { return compile(program, target); });
}

std::shared_ptr<const CompiledProgram> RawModule::compile_on_device(int device) const {
  if (state_->binary) return state_->binary;
  const detail::DeviceTarget on = detail::device_target(device);
  detail::KernelRequest request = detail::raw_kernel_request(state_->source, on.target);
  request.compatible = on.compatible;
  const SourceProgram& source = state_->source;
  detail::FunctionCompiler compiler([&] { return source; },
                                    [&](const SourceProgram& program) {
                                      return detail::compile_for_target(program, on.target,
                                                                        on.jit_ptx);
                                    },
                                    on.jit_ptx);
  return detail::KernelCache::global().get_or_compile(request, compiler);
}

namespace {

// A NUL would truncate the name the driver looks up; no symbol name holds a control byte.
void check_symbol_name(const std::string& name, const char* who) {
  for (char c : name) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      throw ArgumentError(std::string("cujit: ") + who + ": name '" + detail::printable(name) +
                          "' contains a control character");
    }
  }
}

}  // namespace

std::shared_ptr<const detail::LoadedModule> RawModule::load_on(int device) const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  auto& slot = state_->loaded[device];
  if (!slot) slot = detail::load_module(compile_on_device(device), device);
  return slot;
}

RawKernel RawModule::get_function(const std::string& name, const Device& device) const {
  check_symbol_name(name, "get_function");
  const detail::ScopedContext context(device.id());  // restored after: the device rule
  std::shared_ptr<const detail::LoadedModule> loaded = load_on(device.id());
  CUfunction function = detail::find_function(*loaded, name);
  if (function == nullptr) {
    throw ArgumentError("cujit: the module has no kernel named '" + detail::printable(name) +
                        "' (declare it extern \"C\", or pass it as a name expression)");
  }
  const std::string lowered = loaded->program->lowered_name(name);
  return RawKernel(std::move(loaded), function, name, lowered, device.id());
}

Array RawModule::get_global(const std::string& name, const Device& device) const {
  check_symbol_name(name, "get_global");
  const detail::ScopedContext context(device.id());
  std::shared_ptr<const detail::LoadedModule> loaded = load_on(device.id());
  const auto [address, bytes] = detail::find_global(*loaded, name);
  if (address == 0) {
    throw ArgumentError("cujit: the module has no __device__ or __constant__ variable named '" +
                        detail::printable(name) +
                        "' (in a namespace, pass it as a name expression)");
  }
  return Array::from_pointer(address, {static_cast<std::int64_t>(bytes)}, {}, DType::UInt8, device,
                             std::move(loaded));
}

RawKernel::RawKernel(std::shared_ptr<const detail::LoadedModule> module, CUfunc_st* function,
                     std::string name, const std::string& lowered_name, int device)
    : module_(std::move(module)),
      function_(function),
      name_(std::move(name)),
      device_(device),
      max_threads_(detail::max_threads_per_block(function)),
      param_sizes_(detail::param_sizes(function)) {
  auto types =
      detail::reconcile_param_types(detail::kernel_param_types(lowered_name), param_sizes_);
  if (types) param_types_ = std::make_shared<const detail::KernelParamTypes>(std::move(*types));
}

std::vector<std::string> RawKernel::param_types() const {
  std::vector<std::string> out;
  if (param_types_) {
    for (const detail::ParamType& p : param_types_->params) out.push_back(p.spelling);
  }
  return out;
}

void RawKernel::operator()(Dim3 grid, Dim3 block, std::initializer_list<KernelArg> args,
                           std::size_t shared_mem, const Stream& stream) const {
  launch_raw(grid, block, args.begin(), args.size(), shared_mem, stream);
}

void RawKernel::launch(Dim3 grid, Dim3 block, const std::vector<KernelArg>& args,
                       std::size_t shared_mem, const Stream& stream) const {
  launch_raw(grid, block, args.data(), args.size(), shared_mem, stream);
}

void RawKernel::pack(const KernelArg* args, std::size_t count, void** params) const {
  detail::check_kernel_args(name_, device_, param_sizes_, param_types_.get(), args, count);
  for (std::size_t i = 0; i < count; ++i) params[i] = const_cast<void*>(args[i].data());
}

void RawKernel::launch_raw(Dim3 grid, Dim3 block, const KernelArg* args, std::size_t count,
                           std::size_t shared_mem, const Stream& stream) const {
  detail::check_stream_device("kernel '" + name_ + "'", stream.device_id(), device_);
  void* pointers[64];
  std::vector<void*> many;
  void** params = pointers;
  if (count > 64) {
    many.resize(count);
    params = many.data();
  }
  pack(args, count, params);
  if (grid.x == 0 || grid.y == 0 || grid.z == 0 || block.x == 0 || block.y == 0 || block.z == 0) {
    throw ArgumentError("cujit: kernel '" + name_ + "': grid and block extents must be positive");
  }
  const unsigned long long threads = 1ull * block.x * block.y * block.z;
  const int limit = max_threads_;
  if (threads > static_cast<unsigned long long>(limit)) {
    throw ArgumentError("cujit: kernel '" + name_ + "': a block of " + std::to_string(threads) +
                        " threads exceeds the kernel's limit of " + std::to_string(limit));
  }
  detail::NvtxRange range(detail::NvtxKind::Launch, name_.c_str());
  const detail::ScopedContext context(device_);
  detail::check(detail::driver().cuLaunchKernel(function_, grid.x, grid.y, grid.z, block.x, block.y,
                                                block.z, static_cast<unsigned>(shared_mem),
                                                stream.handle(), params, nullptr),
                "cuLaunchKernel", "kernel '" + name_ + "' on device " + std::to_string(device_));
}

void RawKernel::launch(const LaunchConfig& config, const std::vector<KernelArg>& args,
                       const Stream& stream) const {
  launch_config(config, args.data(), args.size(), stream);
}

void RawKernel::operator()(const LaunchConfig& config, std::initializer_list<KernelArg> args,
                           const Stream& stream) const {
  launch_config(config, args.begin(), args.size(), stream);
}

KernelAttributes RawKernel::attributes() const {
  const detail::ScopedContext context(device_);
  KernelAttributes a;
  auto get = [&](CUfunction_attribute attribute) {
    int value = 0;
    detail::check(detail::driver().cuFuncGetAttribute(&value, attribute, function_),
                  "cuFuncGetAttribute", "kernel '" + name_ + "'");
    return value;
  };
  a.num_registers = get(CU_FUNC_ATTRIBUTE_NUM_REGS);
  a.shared_size_bytes = get(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES);
  a.const_size_bytes = get(CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES);
  a.local_size_bytes = get(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES);
  a.max_threads_per_block = get(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  a.ptx_version = get(CU_FUNC_ATTRIBUTE_PTX_VERSION);
  a.binary_version = get(CU_FUNC_ATTRIBUTE_BINARY_VERSION);
  return a;
}

void RawKernel::set_max_dynamic_shared_memory(int bytes) const {
  const detail::ScopedContext context(device_);
  detail::check(detail::driver().cuFuncSetAttribute(
                    function_, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes),
                "cuFuncSetAttribute", "kernel '" + name_ + "'");
}

}  // namespace cujit
