// Issue 21: <cujit/cujit.hpp> is everything cujit offers, in one include. This program includes
// nothing else of cujit's, names every public type and function, and runs what needs no GPU.
// tests/one_include/check_complete.cmake checks that cujit.hpp includes every public header.
#include <cujit/cujit.hpp>

#include <cstdio>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

namespace {

template <class... Ts>
constexpr bool all_complete() {
  return ((sizeof(Ts) > 0) && ...);
}

// Every public class, struct, enum and alias, complete through the one include.
static_assert(all_complete<
              // array.hpp, device.hpp, dtype.hpp, half.hpp
              cujit::Array, cujit::Shape, cujit::Device, cujit::Stream, cujit::Event, cujit::DType,
              cujit::DTypeKind, cujit::float16, cujit::bfloat16,
              // kernel_args.hpp, launch_config.hpp
              cujit::Scalar, cujit::LaunchOptions, cujit::SizeOption, cujit::BlockSizeOption,
              cujit::StreamOption, cujit::Axes, cujit::axis, cujit::KeepDims, cujit::ReduceOptions,
              cujit::Arg, cujit::Dim3, cujit::LaunchConfig,
              // elementwise.hpp, reduction.hpp, specialize.hpp
              cujit::ElementwiseOptions, cujit::ElementwiseKernel, cujit::ReductionOptions,
              cujit::ReductionKernel, cujit::ArrayLayout, cujit::ArgSpec, cujit::DeviceDescription,
              cujit::SpecializeOptions, cujit::CacheOrigin, cujit::Specialization,
              // program.hpp, raw_module.hpp
              cujit::BinaryFormat, cujit::Target, cujit::LinkInput, cujit::SourceProgram,
              cujit::CompiledProgram, cujit::KernelArg, cujit::KernelAttributes, cujit::RawKernel,
              cujit::RawModule,
              // cache.hpp, error.hpp, version.hpp
              cujit::CacheConfig, cujit::CacheStats, cujit::WarningSink, cujit::Error,
              cujit::SignatureError, cujit::TypeError, cujit::ShapeError, cujit::ArgumentError,
              cujit::DeviceError, cujit::CompileError, cujit::CompilerUnavailableError,
              cujit::CudaError, cujit::CacheError, cujit::Version>());

// And the free functions and constants.
[[maybe_unused]] const void* const kFunctions[] = {
    reinterpret_cast<const void*>(&cujit::dtype_size),
    reinterpret_cast<const void*>(&cujit::dtype_name),
    reinterpret_cast<const void*>(&cujit::parse_dtype),
    reinterpret_cast<const void*>(&cujit::c_contiguous_strides),
    reinterpret_cast<const void*>(&cujit::broadcast_shapes),
    reinterpret_cast<const void*>(&cujit::compile),
    reinterpret_cast<const void*>(&cujit::compile_to_lto_ir),
    reinterpret_cast<const void*>(&cujit::compatible_targets),
    reinterpret_cast<const void*>(&cujit::target_for_arch),
    reinterpret_cast<const void*>(&cujit::nvrtc_version_string),
    reinterpret_cast<const void*>(&cujit::configure_cache),
    reinterpret_cast<const void*>(&cujit::cache_config),
    reinterpret_cast<const void*>(&cujit::disable_cache),
    reinterpret_cast<const void*>(&cujit::add_deployment_database),
    reinterpret_cast<const void*>(&cujit::prefetch_cache),
    reinterpret_cast<const void*>(&cujit::cache_stats),
    reinterpret_cast<const void*>(&cujit::reset_cache_stats),
    reinterpret_cast<const void*>(&cujit::set_warning_sink),
    reinterpret_cast<const void*>(&cujit::version),
};
static_assert(cujit::kDTypeCount == 15 && cujit::kDefaultCacheMaxSize > 0 &&
              cujit::kArrayAlignment == 256 && CUJIT_VERSION_MAJOR >= 0);

int failures = 0;
void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "one_include: %s\n", what);
    ++failures;
  }
}

}  // namespace

int main() {
  check(std::strcmp(cujit::version().string, CUJIT_VERSION_STRING) == 0, "version()");
  check(cujit::dtype_of<cujit::float16>() == cujit::DType::Float16, "dtype_of<float16>");
  check(cujit::float16(1.0f).bits() == 0x3c00, "float16(1.0f)");
  // Kernels are parsed and checked at construction, with no device.
  const cujit::ElementwiseKernel add("std::int64_t x, unsigned int y", "double z", "z = x + y",
                                     "one_include_add");
  const cujit::ReductionKernel sum("T x", "T y", "x", "a + b", "y = a", "0", "one_include_sum");
  const cujit::RawModule module("extern \"C\" __global__ void k(float* x) {}");
  const cujit::Scalar s = cujit::bfloat16(2.0f);
  check(s.dtype() == cujit::DType::BFloat16, "Scalar(bfloat16)");
  const cujit::Target sm90 = cujit::Target::parse("sm_90");
  check(sm90.name() == "sm_90", "Target::parse");
  try {
    cujit::ElementwiseKernel bad("floot32 x", "float32 y", "y = x", "one_include_bad");
    check(false, "an unknown type was accepted");
  } catch (const cujit::SignatureError& e) {
    check(std::string(e.what()).find("accepted types") != std::string::npos, "the type list");
  }
  (void)add;
  (void)sum;
  (void)module;
  if (failures == 0) std::printf("one_include: every public type through <cujit/cujit.hpp>\n");
  return failures == 0 ? 0 : 1;
}
