#pragma once
/// \file RawModule and RawKernel, as in CuPy: CUDA C++ source (or a cubin/PTX file) compiled
/// with NVRTC, loaded through the driver, and launched with typed arguments that are checked
/// against the kernel's parameters.

#include <cujit/array.hpp>
#include <cujit/device.hpp>
#include <cujit/dtype.hpp>
#include <cujit/export.hpp>
#include <cujit/launch_config.hpp>
#include <cujit/program.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

struct CUfunc_st;

namespace cujit {

/// One kernel argument: an array passes its device address, a scalar its bytes by value.
class CUJIT_EXPORT KernelArg {
 public:
  /// What the argument holds, as far as the check against a C++ kernel's parameter types goes.
  enum class Kind : std::uint8_t {
    Array,        ///< a cujit::Array (its device address)
    Pointer,      ///< a pointer (T*, nullptr)
    Bool,         ///< bool
    SignedInt,    ///< a signed integer (plain char where it is signed)
    UnsignedInt,  ///< an unsigned integer
    Float,        ///< an IEEE binary float: __half, cujit::float16, _Float16, float, double
    BFloat16,     ///< __nv_bfloat16 or cujit::bfloat16
    Other,        ///< anything else (a struct, an enum, std::complex): checked by size only
  };

  /// An array: its device address (and its device, checked against the kernel's).
  KernelArg(const Array& array) noexcept  // NOLINT: implicit on purpose
      : size_(sizeof(std::uint64_t)), kind_(Kind::Array), device_(array.device_id()) {
    const std::uint64_t address = array.data();
    std::memcpy(storage_, &address, sizeof(address));
  }
  /// Any trivially copyable value up to 64 bytes (numbers, pointers, small structs).
  template <class T, class = std::enable_if_t<std::is_trivially_copyable_v<T> &&
                                              !std::is_same_v<std::decay_t<T>, Array>>>
  KernelArg(const T& value) noexcept  // NOLINT: implicit on purpose
      : size_(sizeof(T)), kind_(kind_of<T>()) {
    static_assert(sizeof(T) <= kMaxSize, "kernel arguments larger than 64 bytes are not supported");
    std::memcpy(storage_, &value, sizeof(T));
  }
  /// The argument's bytes.
  const void* data() const noexcept { return storage_; }
  /// The number of bytes.
  std::size_t size() const noexcept { return size_; }
  /// Whether the argument is an array's address.
  bool is_array() const noexcept { return kind_ == Kind::Array; }
  /// What the value is, for the type checks of mangled kernels.
  Kind kind() const noexcept { return kind_; }
  /// An array's device (-1 for other values).
  int device() const noexcept { return device_; }

  /// The Kind of a value of type T.
  template <class T>
  static constexpr Kind kind_of() noexcept {
    using U = std::remove_cv_t<T>;
    if constexpr (std::is_pointer_v<U> || std::is_null_pointer_v<U>) {
      return Kind::Pointer;
    } else if constexpr (std::is_same_v<U, bool>) {
      return Kind::Bool;
    } else if constexpr (std::is_integral_v<U>) {
      return std::is_signed_v<U> ? Kind::SignedInt : Kind::UnsignedInt;
    } else if constexpr (std::is_floating_point_v<U>) {
      return Kind::Float;
    } else if constexpr (detail::has_dtype_v<U>) {  // float16, bfloat16, __half, complex, ...
      switch (dtype_of<U>()) {
        case DType::Float16:
          return Kind::Float;
        case DType::BFloat16:
          return Kind::BFloat16;
        default:
          return Kind::Other;
      }
    } else {
      return Kind::Other;
    }
  }

 private:
  static constexpr std::size_t kMaxSize = 64;
  alignas(16) unsigned char storage_[kMaxSize];
  std::size_t size_;
  Kind kind_;
  int device_ = -1;
};

/// Compile-time attributes of a loaded kernel (cuFuncGetAttribute).
struct CUJIT_EXPORT KernelAttributes {
  int num_registers = 0;          ///< registers per thread
  int shared_size_bytes = 0;      ///< static shared memory per block
  int const_size_bytes = 0;       ///< constant memory
  int local_size_bytes = 0;       ///< local memory per thread
  int max_threads_per_block = 0;  ///< the most threads a block of this kernel may have
  int ptx_version = 0;            ///< PTX ISA version, 10 * major + minor
  int binary_version = 0;         ///< binary architecture, 10 * major + minor
};

namespace detail {
struct LoadedModule;
struct KernelParamTypes;
}  // namespace detail

/// A kernel loaded on one device. Cheap to copy; keeps its module loaded. Launching is
/// thread-safe: copies, or one object, may launch from several threads at once, on one
/// stream or on different streams.
///
/// Arguments are checked against the kernel's parameters: their count and sizes always (the
/// driver reports them), and, for a kernel with a C++ (mangled) name, such as a template
/// instantiation from a name expression or any kernel not declared extern "C", their types as
/// the name spells them: an array or pointer (or a 64-bit unsigned device address) for a
/// pointer parameter, an integer of the parameter's width for an integer (signedness is not
/// checked; an 8-byte integer parameter also takes an array or pointer, as an address), a float of
/// its width for a float, `__half` or `cujit::float16` for __half and
/// `__nv_bfloat16` or `cujit::bfloat16` for __nv_bfloat16. Structs, enums and other types are
/// checked by size only, as are all parameters of extern "C" kernels (their names carry no
/// types).
class CUJIT_EXPORT RawKernel {
 public:
  /// Launches with `args` checked against the kernel's parameters (see above) and the kernel's
  /// device. Throws TypeError when an argument does not fit a parameter's C++ type (naming the
  /// kernel, the parameter, its type and what was given), ArgumentError for a wrong count, a
  /// size mismatch where the type is not known, a null array or a zero/oversized grid or block,
  /// DeviceError for an array on another device, CudaError when the launch fails.
  void operator()(Dim3 grid, Dim3 block, std::initializer_list<KernelArg> args,
                  std::size_t shared_mem = 0, const Stream& stream = Stream()) const;
  /// The same with arguments in a vector.
  void launch(Dim3 grid, Dim3 block, const std::vector<KernelArg>& args, std::size_t shared_mem = 0,
              const Stream& stream = Stream()) const;
  /// Launches with everything `config` asks for (clusters, cooperative launch, programmatic
  /// dependent launch, a priority, dynamic shared memory above 48 KiB) through
  /// cuLaunchKernelEx. Checks the arguments as above and `config` against the device's and the
  /// kernel's limits first: ArgumentError naming the setting and the limit.
  void launch(const LaunchConfig& config, const std::vector<KernelArg>& args,
              const Stream& stream = Stream()) const;
  /// The same with arguments in a list: kernel(config, {x, y, n}).
  void operator()(const LaunchConfig& config, std::initializer_list<KernelArg> args,
                  const Stream& stream = Stream()) const;

  /// The kernel's name, as asked for (e.g. "scale<float>").
  const std::string& name() const noexcept { return name_; }
  /// The device it is loaded on.
  int device_id() const noexcept { return device_; }
  /// Sizes in bytes of the kernel's parameters, in order.
  const std::vector<std::size_t>& param_sizes() const noexcept { return param_sizes_; }
  /// The C++ types of the kernel's parameters as its mangled name spells them
  /// ("float const*", "int"), in order; empty for an extern "C" kernel (or a name that does
  /// not demangle to as many parameters as the kernel has).
  std::vector<std::string> param_types() const;
  /// Registers, memory sizes and limits of the loaded kernel (cuFuncGetAttribute).
  KernelAttributes attributes() const;
  /// Raises the dynamic shared memory limit (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES).
  void set_max_dynamic_shared_memory(int bytes) const;
  /// The driver's CUfunction.
  CUfunc_st* handle() const noexcept { return function_; }

 private:
  friend class RawModule;
  RawKernel(std::shared_ptr<const detail::LoadedModule> module, CUfunc_st* function,
            std::string name, const std::string& lowered_name, int device);
  void launch_raw(Dim3 grid, Dim3 block, const KernelArg* args, std::size_t count,
                  std::size_t shared_mem, const Stream& stream) const;
  void launch_config(const LaunchConfig& config, const KernelArg* args, std::size_t count,
                     const Stream& stream) const;
  // Checks the arguments against the parameters and points `params` at their bytes.
  void pack(const KernelArg* args, std::size_t count, void** params) const;

  std::shared_ptr<const detail::LoadedModule> module_;
  CUfunc_st* function_ = nullptr;
  std::string name_;
  int device_ = -1;
  int max_threads_ = 0;
  std::vector<std::size_t> param_sizes_;
  std::shared_ptr<const detail::KernelParamTypes> param_types_;  // null: sizes only
};

/// CUDA source or device code, compiled on first use for each device's exact architecture
/// (through the kernel cache), and loaded once per device. Thread-safe: get_function and
/// compile_for may be called from several threads at once; the first call per device
/// compiles and loads while the others wait, and threads compiling the same source in
/// different modules share one compilation through the kernel cache.
class CUJIT_EXPORT RawModule {
 public:
  /// A module from CUDA C++ source. `options` are extra NVRTC options, one option per entry
  /// ("-use_fast_math", "-DN=4"); `name_expressions` name template instantiations to make
  /// available ("my_kernel<float>"). Nothing is compiled until a kernel is requested or
  /// compile_for() is called. Throws ArgumentError naming the entry for an option that does
  /// not start with '-' or holds a control character (newline, NUL), or a name expression
  /// that is blank or holds a control character or one of ; { } # " ' ` \ (the source
  /// itself is code by design; options and name expressions are not).
  explicit RawModule(std::string source, std::vector<std::string> options = {},
                     std::vector<std::string> name_expressions = {});
  /// A module whose source calls device functions defined in `link` (LTO-IR, cubin, fatbin or
  /// PTX compiled elsewhere, e.g. `nvcc -dlto -dc` or LinkInput::from_file): the source is
  /// compiled to LTO-IR and linked with them by nvJitLink (loaded at run time) with link-time
  /// optimisation, into one cubin per device. The bytes of every input are part of the cache
  /// key. Declare what the inputs define `extern __device__`.
  RawModule(std::string source, std::vector<std::string> options,
            std::vector<std::string> name_expressions, std::vector<LinkInput> link);
  /// A module whose source includes headers given here, by name and text, rather than read
  /// from disk (`#include "scale.h"` finds {"scale.h", "#define SCALE 2.0f\n"}); they are
  /// part of the cache key, and found before any -I directory. Headers read from -I
  /// directories are keyed by their contents too (docs/caching.md). Throws as the constructor
  /// above does, and ArgumentError for a header name that is empty or holds a control
  /// character.
  RawModule(std::string source, std::vector<std::string> options,
            std::vector<std::string> name_expressions, std::vector<LinkInput> link,
            std::vector<std::pair<std::string, std::string>> headers);
  /// A module from compiled code (a cubin or PTX; no compilation happens).
  static RawModule from_binary(CompiledProgram program);
  /// A module from a file: .cu (source), .cubin or .ptx. Throws ArgumentError when the file
  /// cannot be read.
  static RawModule from_file(const std::string& path, std::vector<std::string> options = {},
                             std::vector<std::string> name_expressions = {});

  /// The kernel named `name` (an extern "C" name, or a registered name expression) on
  /// `device`, compiling and loading the module there on first use. Throws ArgumentError when
  /// the module has no such kernel, CompileError when the source does not compile.
  [[nodiscard]] RawKernel get_function(const std::string& name,
                                       const Device& device = Device::current()) const;
  /// The `__device__` or `__constant__` variable `name` (a global-namespace name, or one
  /// registered as a name expression, which NVRTC takes as an address: "&ns::table", found as
  /// "ns::table" too) on `device`, compiling and loading the
  /// module there first as get_function does: a uint8 array of the variable's size in bytes
  /// viewing its memory, which keeps the module loaded. Fill or read it as any array
  /// (copy_from_host_async, to_host), or view it typed with Array::from_pointer(v.data(), ...).
  /// Throws ArgumentError when the module has no such variable, CompileError as get_function.
  [[nodiscard]] Array get_global(const std::string& name,
                                 const Device& device = Device::current()) const;
  /// Compiles the source for `target` (through the kernel cache), with no GPU needed.
  std::shared_ptr<const CompiledProgram> compile_for(const Target& target) const;

 private:
  // The module compiled and loaded on `device` (once per device; the caller holds its context).
  std::shared_ptr<const detail::LoadedModule> load_on(int device) const;
  // The program for `device` through the cache: its own cubin, else compatible code.
  std::shared_ptr<const CompiledProgram> compile_on_device(int device) const;

  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace cujit
