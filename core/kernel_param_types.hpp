#pragma once
// The parameter types of a raw kernel, read from its lowered (Itanium-mangled) name, and the
// check of launch arguments against them: pure functions (no driver), so that the CPU tests
// cover every case. RawKernel reads the types once, when it is created, and checks every launch.

#include <cujit/raw_module.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cujit::detail {

/// What a parameter's C++ type tells the argument check.
enum class ParamClass : std::uint8_t {
  Pointer,   ///< T*, a function pointer, std::nullptr_t
  Bool,      ///< bool
  Integer,   ///< char, short, int, long, long long (signed or unsigned), wchar_t, ...
  Float,     ///< IEEE binary floats: __half, _Float16, float, double
  BFloat16,  ///< __nv_bfloat16
  Other,     ///< structs, enums, references, anything else: checked by size only
};

/// One parameter as the mangled name spells it.
struct ParamType {
  std::string spelling;  ///< as demangled: "float const*", "unsigned int", "__half"
  ParamClass cls = ParamClass::Other;
  std::size_t size = 0;  ///< bytes the class implies (0 for Other)
};

/// A kernel's parameters as its mangled name spells them, with the whole demangled name.
struct KernelParamTypes {
  std::string demangled;  ///< "void scale<float>(float*, float, int)"
  std::vector<ParamType> params;
};

/// Classifies one demangled parameter type ("float*", "unsigned long", "__half", "Foo<int>").
ParamType classify_param_type(std::string_view spelling);

/// Splits the parameter list of a demangled function name ("void k<(int)3>(float*, int)") at
/// its top-level commas; nullopt when `demangled` does not end in a parameter list.
std::optional<std::vector<std::string>> split_demangled_params(std::string_view demangled);

/// The parameter types of the kernel whose lowered name is `lowered`: nullopt for a name that
/// is not mangled (extern "C") or does not demangle to a function.
std::optional<KernelParamTypes> kernel_param_types(std::string_view lowered);

/// The types to check against, given what the driver reports: `types` when they describe as
/// many parameters as `sizes` (a type whose implied size differs from the driver's becomes
/// Other), else nullopt (sizes only).
std::optional<KernelParamTypes> reconcile_param_types(std::optional<KernelParamTypes> types,
                                                      const std::vector<std::size_t>& sizes);

/// Checks launch arguments against a kernel's parameters: the count, each argument against the
/// parameter's type where `types` knows it (TypeError) and else against its size
/// (ArgumentError), arrays for null (ArgumentError) and for their device (DeviceError). `kernel`
/// is the name the caller used.
void check_kernel_args(const std::string& kernel, int device, const std::vector<std::size_t>& sizes,
                       const KernelParamTypes* types, const KernelArg* args, std::size_t count);

/// "an array", "a pointer", "a 4-byte floating-point value", ... for messages.
std::string describe_arg(const KernelArg& arg);

}  // namespace cujit::detail
