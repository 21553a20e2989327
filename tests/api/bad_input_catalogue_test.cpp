// The bad-input catalogue: one table of wrong calls across the public API (kernels, raw
// modules, arrays, devices, the cache). Each case asserts the exact exception type and that
// the message names the offending argument (and the kernel where there is one). Cases that
// need no device run everywhere (construction-time checks, call checks that fail before any
// device is touched, NVRTC compiles to cubin, the cache); GPU cases skip without a device and
// also check that a failing call leaks no device memory.
#include <cujit/cache.hpp>
#include <cujit/cujit.hpp>
#include <cujit/elementwise.hpp>
#include <cujit/reduction.hpp>

#include "runtime/module_preload.hpp"

#include <dlpack/dlpack.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <string>
#include <tuple>
#include <typeinfo>
#include <vector>

#include "support/gpu.hpp"

namespace cujit {
namespace {

// What a case needs to run.
enum class Needs { Nothing, Gpu, TwoGpus };

struct Case {
  std::string id;
  Needs needs = Needs::Nothing;
  const std::type_info* type = nullptr;  // the exact exception type expected
  std::string type_name;                 // its name, for messages
  std::vector<std::string> mentions;     // substrings the message must contain
  std::function<void()> run;
};

// The name of a cujit exception type, for messages.
std::string type_name_of(const std::type_info& t) {
#define CUJIT_NAME_OF(T) \
  if (t == typeid(T)) return #T;
  CUJIT_NAME_OF(SignatureError)
  CUJIT_NAME_OF(TypeError)
  CUJIT_NAME_OF(ShapeError)
  CUJIT_NAME_OF(ArgumentError)
  CUJIT_NAME_OF(DeviceError)
  CUJIT_NAME_OF(CompileError)
  CUJIT_NAME_OF(CudaError)
  CUJIT_NAME_OF(CacheError)
  CUJIT_NAME_OF(Error)
#undef CUJIT_NAME_OF
  return t.name();
}

// gtest prints parameters of failing tests; the id is what identifies a case.
void PrintTo(const Case& c, std::ostream* out) { *out << c.id; }

template <class E>
Case expect(std::string id, Needs needs, std::vector<std::string> mentions,
            std::function<void()> run) {
  static_assert(std::is_base_of_v<Error, E>);
  Case c{std::move(id), needs, &typeid(E), {}, std::move(mentions), std::move(run)};
  c.type_name = type_name_of(typeid(E));
  return c;
}

// Runs the case once and checks what it throws. CUJIT_CATALOGUE_PRINT=1 prints each message.
void check_throws(const Case& c) {
  static const bool print = std::getenv("CUJIT_CATALOGUE_PRINT") != nullptr;
  try {
    c.run();
  } catch (const Error& e) {
    const std::string what = e.what();
    if (print)
      std::printf("---- %s: %s\n%s\n", c.id.c_str(), type_name_of(typeid(e)).c_str(), what.c_str());
    EXPECT_TRUE(typeid(e) == *c.type)
        << "threw " << type_name_of(typeid(e)) << " instead of " << c.type_name << "; message:\n"
        << what;
    for (const std::string& m : c.mentions) {
      EXPECT_NE(what.find(m), std::string::npos)
          << "the message does not mention \"" << m << "\":\n"
          << what;
    }
    return;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw " << typeid(e).name() << ", not a cujit::Error: " << e.what();
    return;
  }
  ADD_FAILURE() << "no exception was thrown";
}

// ---- Shared definitions -------------------------------------------------------------------

// Elements of the arrays GPU cases use: 8 MiB of float32, so a leaked input or output shows in
// the leak check below.
constexpr std::int64_t kBig = std::int64_t{1} << 21;

const ElementwiseKernel& add() {
  static const ElementwiseKernel k("T x, T y", "T z", "z = x + y", "cat_add");
  return k;
}
const ReductionKernel& sum() {
  static const ReductionKernel k("T x", "T y", "x", "a + b", "y = a", "0", "cat_sum");
  return k;
}

const char* kAxpySource = R"(
extern "C" __global__ void axpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
})";

const RawModule& axpy_module() {
  static const RawModule module(kAxpySource);
  return module;
}

// The newest architecture this NVRTC builds cubins for: compiles need no device.
Target newest_target() { return Target{nvrtc_supported_archs().back(), BinaryFormat::Cubin}; }

ElementwiseOptions with_options(std::vector<std::string> options) {
  ElementwiseOptions o;
  o.compile_options = std::move(options);
  return o;
}
ReductionOptions reduce_type(std::string type) {
  ReductionOptions o;
  o.reduce_type = std::move(type);
  return o;
}

// A temporary directory removed at the end of the scope.
struct TempDir {
  std::string path;
  TempDir() {
    char pattern[] = "/tmp/cujit_catalogue_XXXXXX";
    path = ::mkdtemp(pattern);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

Array floats(const Shape& shape) { return Array::zeros(shape, DType::Float32); }

// ---- Cases that need no device ------------------------------------------------------------

std::vector<Case> no_gpu_cases() {
  const Needs N = Needs::Nothing;
  std::vector<Case> cases;
  auto ew = [](std::string in, std::string out, std::string op, std::string name,
               ElementwiseOptions options = {}) {
    return [=] { ElementwiseKernel(in, out, op, name, options); };
  };
  auto red = [](std::string in, std::string out, std::string map, std::string reduce,
                std::string post, std::string identity, std::string name,
                ReductionOptions options = {}) {
    return [=] { ReductionKernel(in, out, map, reduce, post, identity, name, options); };
  };

  // ElementwiseKernel construction: signatures.
  cases.push_back(expect<SignatureError>("ew_signature_missing_comma", N,
                                         {"cat_sig", "in_params", "'x'"},
                                         ew("T x T y", "T z", "z = x", "cat_sig")));
  cases.push_back(expect<SignatureError>("ew_unknown_input_dtype", N,
                                         {"cat_sig", "in_params", "'flaot32'"},
                                         ew("flaot32 x", "float32 z", "z = x", "cat_sig")));
  cases.push_back(expect<SignatureError>("ew_unknown_output_dtype", N,
                                         {"cat_sig", "out_params", "'float33'"},
                                         ew("float32 x", "float33 z", "z = x", "cat_sig")));
  cases.push_back(expect<SignatureError>("ew_reserved_name_i", N, {"cat_sig", "'i'", "reserved"},
                                         ew("T i", "T z", "z = i", "cat_sig")));
  cases.push_back(expect<SignatureError>("ew_reserved_underscore_name", N,
                                         {"cat_sig", "'_x'", "reserved"},
                                         ew("T _x", "T z", "z = _x", "cat_sig")));
  cases.push_back(expect<SignatureError>("ew_keyword_as_name", N,
                                         {"cat_sig", "out_params", "'class'"},
                                         ew("T x", "T class", "class = x", "cat_sig")));
  cases.push_back(expect<SignatureError>("ew_duplicate_input_name", N,
                                         {"cat_sig", "duplicate", "'x'"},
                                         ew("T x, T x", "T z", "z = x", "cat_sig")));
  cases.push_back(expect<SignatureError>("ew_input_and_output_share_a_name", N,
                                         {"cat_sig", "out_params", "'x'"},
                                         ew("T x", "T x", "x = x", "cat_sig")));
  cases.push_back(expect<SignatureError>("ew_placeholder_as_name", N, {"cat_sig", "'U'"},
                                         ew("T U", "T z", "z = U", "cat_sig")));
  cases.push_back(expect<SignatureError>("ew_trailing_comma", N, {"cat_sig", "in_params", "','"},
                                         ew("T x,", "T z", "z = x", "cat_sig")));
  cases.push_back(expect<SignatureError>("ew_code_in_signature", N, {"cat_sig", "in_params", "';'"},
                                         ew("T x; int evil", "T z", "z = x", "cat_sig")));
  {
    std::string wide;
    for (int k = 0; k < 49; ++k) wide += (k ? ", T x" : "T x") + std::to_string(k);
    cases.push_back(expect<ArgumentError>("ew_too_many_parameters", N,
                                          {"cat_wide", "in_params", "50 parameters"},
                                          ew(wide, "T z", "z = x0", "cat_wide")));
  }
  // ElementwiseKernel construction: snippets, names, options.
  cases.push_back(expect<ArgumentError>("ew_empty_operation", N, {"cat_empty", "operation"},
                                        ew("T x", "T z", " \n\t", "cat_empty")));
  cases.push_back(expect<ArgumentError>("ew_name_with_space", N, {"kernel name", "'my kernel'"},
                                        ew("T x", "T z", "z = x", "my kernel")));
  cases.push_back(expect<ArgumentError>("ew_name_injects_a_kernel", N,
                                        {"kernel name", "k(){}; __global__ void evil"},
                                        ew("T x", "T z", "z = x", "k(){}; __global__ void evil")));
  cases.push_back(expect<ArgumentError>("ew_name_with_newline", N,
                                        {"kernel name", "'k\\nvoid evil'"},
                                        ew("T x", "T z", "z = x", "k\nvoid evil")));
  cases.push_back(expect<ArgumentError>("ew_name_reserved", N, {"kernel name", "'_cat'"},
                                        ew("T x", "T z", "z = x", "_cat")));
  cases.push_back(expect<ArgumentError>("ew_name_empty", N, {"kernel name", "''"},
                                        ew("T x", "T z", "z = x", "")));
  cases.push_back(expect<ArgumentError>(
      "ew_option_without_dash", N, {"cat_opt", "compile_options[0]", "use_fast_math"},
      ew("T x", "T z", "z = x", "cat_opt", with_options({"use_fast_math"}))));
  cases.push_back(expect<ArgumentError>(
      "ew_option_with_newline", N, {"cat_opt", "compile_options[0]", "control character"},
      ew("T x", "T z", "z = x", "cat_opt", with_options({"-DX=1\nint evil;"}))));
  cases.push_back(
      expect<ArgumentError>("ew_option_with_nul", N, {"cat_opt", "compile_options[1]", "\\0"},
                            ew("T x", "T z", "z = x", "cat_opt",
                               with_options({"-lineinfo", std::string("-DX=1\0-DY=2", 11)}))));
  cases.push_back(expect<ArgumentError>("ew_option_empty", N, {"cat_opt", "compile_options[0]"},
                                        ew("T x", "T z", "z = x", "cat_opt", with_options({""}))));

  // ElementwiseKernel calls that fail before any device is touched.
  cases.push_back(expect<ArgumentError>(
      "ew_too_few_arguments", N, {"cat_add", "2 input(s)", "1 argument(s)"}, [] { add()(1.0f); }));
  cases.push_back(expect<ArgumentError>("ew_too_many_arguments", N,
                                        {"cat_add", "2 input(s)", "4 argument(s)"},
                                        [] { add()(1.0f, 2.0f, 3.0f, 4.0f); }));
  cases.push_back(expect<TypeError>("ew_scalar_output", N, {"cat_add", "output 'z'"},
                                    [] { add()(1.0f, 2.0f, 3.0f); }));
  cases.push_back(expect<TypeError>("ew_scalar_for_raw_input", N, {"cat_raw", "raw input 'r'"}, [] {
    ElementwiseKernel k("raw T r, T x", "T z", "z = r[i] + x", "cat_raw");
    k(1.0f, 2.0f);
  }));
  cases.push_back(
      expect<TypeError>("ew_unresolvable_placeholder", N, {"cat_u", "output 'z'", "U"}, [] {
        ElementwiseKernel k("T x", "U z", "z = x", "cat_u");
        k(1.0f);
      }));
  cases.push_back(expect<ArgumentError>("ew_null_array", N, {"cat_add", "'x'", "null array"},
                                        [] { add()(Array(), Array()); }));
  cases.push_back(
      expect<ArgumentError>("ew_scalars_without_size", N, {"cat_fill", "cujit::size"}, [] {
        ElementwiseKernel k("T a", "T z", "z = a", "cat_fill");
        k(1.0f);
      }));
  cases.push_back(expect<ArgumentError>("ew_negative_size", N, {"cat_fill", "size -5"}, [] {
    ElementwiseKernel k("T a", "T z", "z = a", "cat_fill");
    k(1.0f, cujit::size(-5));
  }));
  cases.push_back(
      expect<ArgumentError>("call_more_than_48_arguments", N, {"cat_add", "49 argument"}, [] {
        std::array<float, 49> many{};
        std::apply([](auto... a) { add()(a...); }, many);
      }));
  cases.push_back(
      expect<ArgumentError>("red_call_more_than_48_arguments", N, {"cat_sum", "49 argument"}, [] {
        ReductionKernel k("T x", "T y", "x", "a + b", "y = a", "0", "cat_sum");
        std::array<float, 49> many{};
        std::apply([&k](auto... a) { k(a...); }, many);
      }));
  cases.push_back(
      expect<ArgumentError>("axis_more_than_32_axes", N, {"cujit::axis", "33 axes"}, [] {
        axis a{0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16,
               17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32};
        (void)a;
      }));

  // ReductionKernel construction.
  cases.push_back(expect<ArgumentError>("red_empty_map_expr", N, {"cat_red", "map_expr"},
                                        red("T x", "T y", "", "a + b", "y = a", "0", "cat_red")));
  cases.push_back(expect<ArgumentError>("red_empty_reduce_expr", N, {"cat_red", "reduce_expr"},
                                        red("T x", "T y", "x", " ", "y = a", "0", "cat_red")));
  cases.push_back(expect<ArgumentError>("red_empty_post_map_expr", N, {"cat_red", "post_map_expr"},
                                        red("T x", "T y", "x", "a + b", "", "0", "cat_red")));
  cases.push_back(expect<ArgumentError>("red_no_output", N, {"cat_red", "out_params"},
                                        red("T x", "", "x", "a + b", "y = a", "0", "cat_red")));
  cases.push_back(
      expect<ArgumentError>("red_only_raw_inputs", N, {"cat_red", "in_params"},
                            red("raw T x", "T y", "x[0]", "a + b", "y = a", "0", "cat_red")));
  cases.push_back(
      expect<SignatureError>("red_output_signature_error", N, {"cat_red", "out_params"},
                             red("T x", "T y,", "x", "a + b", "y = a", "0", "cat_red")));
  cases.push_back(
      expect<SignatureError>("red_duplicate_name", N, {"cat_red", "'y'"},
                             red("T x, T y", "T y", "x", "a + b", "y = a", "0", "cat_red")));
  cases.push_back(
      expect<ArgumentError>("red_reduce_type_injects_code", N, {"cat_red", "reduce_type", "';'"},
                            red("T x", "T y", "x", "a + b", "y = a", "0", "cat_red",
                                reduce_type("float; } __global__ void evil() { float"))));
  cases.push_back(expect<ArgumentError>(
      "red_reduce_type_with_newline", N, {"cat_red", "reduce_type", "\\n"},
      red("T x", "T y", "x", "a + b", "y = a", "0", "cat_red", reduce_type("float\n#define a b"))));
  cases.push_back(expect<ArgumentError>(
      "red_reduce_type_with_comment", N, {"cat_red", "reduce_type", "'/'"},
      red("T x", "T y", "x", "a + b", "y = a", "0", "cat_red", reduce_type("float /* x */"))));
  cases.push_back(expect<ArgumentError>(
      "red_reduce_type_unbalanced_template", N, {"cat_red", "reduce_type", "'<'"},
      red("T x", "T y", "x", "a + b", "y = a", "0", "cat_red", reduce_type("pair<float"))));
  cases.push_back(expect<ArgumentError>(
      "red_name_injects_a_kernel", N, {"kernel name", "r(){}; __global__ void evil"},
      red("T x", "T y", "x", "a + b", "y = a", "0", "r(){}; __global__ void evil")));
  {
    ReductionOptions options;
    options.compile_options = {"-DX=1\r\n#include </etc/passwd>"};
    cases.push_back(expect<ArgumentError>(
        "red_option_with_newline", N, {"cat_red", "compile_options[0]", "control character"},
        red("T x", "T y", "x", "a + b", "y = a", "0", "cat_red", options)));
  }

  // ReductionKernel calls that fail before any device is touched.
  cases.push_back(expect<ArgumentError>("red_wrong_argument_count", N,
                                        {"cat_sum", "1 input(s)", "3 argument(s)"},
                                        [] { sum()(1.0f, 2.0f, 3.0f); }));
  cases.push_back(expect<ArgumentError>("red_scalar_input_only", N,
                                        {"cat_sum", "non-raw input must be an array"},
                                        [] { sum()(1.0f); }));
  cases.push_back(expect<TypeError>("red_scalar_output", N, {"cat_sum", "output 'y'"},
                                    [] { sum()(1.0f, 2.0f); }));
  cases.push_back(expect<ArgumentError>("red_null_array", N, {"cat_sum", "'x'", "null array"},
                                        [] { sum()(Array()); }));

  // RawModule and compiling to cubin (NVRTC needs no device).
  cases.push_back(expect<CompileError>("raw_source_does_not_compile", N,
                                       {"raw_module.cu", "undefined_name"}, [] {
                                         RawModule m(
                                             "extern \"C\" __global__ void k(float* x) { x[0] = "
                                             "undefined_name; }");
                                         m.compile_for(newest_target());
                                       }));
  cases.push_back(expect<CompileError>("raw_option_rejected_by_nvrtc", N, {"-fake-option"}, [] {
    RawModule(kAxpySource, {"-fake-option"}).compile_for(newest_target());
  }));
  cases.push_back(expect<CompileError>("raw_unknown_name_expression", N, {"no_such_kernel"}, [] {
    RawModule(kAxpySource, {}, {"no_such_kernel<float>"}).compile_for(newest_target());
  }));
  cases.push_back(expect<ArgumentError>("raw_option_with_newline", N,
                                        {"RawModule", "options[0]", "control character"},
                                        [] { RawModule(kAxpySource, {"-DX=1\nint evil;"}); }));
  cases.push_back(expect<ArgumentError>("raw_option_without_dash", N,
                                        {"RawModule", "options[1]", "'lineinfo'"}, [] {
                                          RawModule(kAxpySource, {"-lineinfo", "lineinfo"});
                                        }));
  cases.push_back(expect<ArgumentError>(
      "raw_name_expression_injects_code", N, {"RawModule", "name_expressions[0]", "';'"},
      [] { RawModule(kAxpySource, {}, {"axpy; __global__ void evil() {}"}); }));
  cases.push_back(expect<ArgumentError>("raw_name_expression_blank", N,
                                        {"RawModule", "name_expressions[1]", "blank"}, [] {
                                          RawModule(kAxpySource, {}, {"axpy", "  "});
                                        }));
  cases.push_back(expect<ArgumentError>("raw_missing_file", N, {"/nonexistent/cat_module.cu"}, [] {
    RawModule::from_file("/nonexistent/cat_module.cu");
  }));
  cases.push_back(
      expect<ArgumentError>("target_malformed", N, {"'sm_9x'"}, [] { Target::parse("sm_9x"); }));
  cases.push_back(expect<ArgumentError>("target_not_supported_by_nvrtc", N, {"sm_10"}, [] {
    RawModule(kAxpySource).compile_for(Target{10, BinaryFormat::Cubin});
  }));

  // Arrays, without a device.
  cases.push_back(expect<ArgumentError>("array_null_to_host", N, {"to_host", "null array"},
                                        [] { (void)Array().to_host<float>(); }));
  cases.push_back(expect<TypeError>("array_to_host_wrong_type", N, {"to_host", "float64"},
                                    [] { (void)Array().to_host<double>(); }));
  cases.push_back(expect<ArgumentError>("array_null_to_dlpack", N, {"to_dlpack", "null array"},
                                        [] { (void)Array().to_dlpack(); }));
  cases.push_back(expect<ShapeError>("broadcast_shapes_incompatible", N, {"(2, 3)", "(4,)"}, [] {
    (void)broadcast_shapes({{2, 3}, {4}});
  }));
  cases.push_back(expect<ArgumentError>("dlpack_null_tensor", N, {"from_dlpack", "null"},
                                        [] { (void)Array::from_dlpack(nullptr); }));
  // DLPack tensors are taken over even when rejected: their deleter must run.
  auto dlpack_case = [](DLDeviceType device, DLDataType dtype) {
    return [device, dtype] {
      static int deleted;
      deleted = 0;
      std::int64_t shape[1] = {4};
      DLManagedTensor tensor{};
      tensor.dl_tensor.data = reinterpret_cast<void*>(std::uintptr_t{4096});
      tensor.dl_tensor.device = DLDevice{device, 0};
      tensor.dl_tensor.ndim = 1;
      tensor.dl_tensor.dtype = dtype;
      tensor.dl_tensor.shape = shape;
      tensor.deleter = [](DLManagedTensor*) { ++deleted; };
      try {
        (void)Array::from_dlpack(&tensor);
      } catch (...) {
        EXPECT_EQ(deleted, 1) << "a rejected DLPack tensor's deleter must run once";
        throw;
      }
    };
  };
  cases.push_back(expect<ArgumentError>("dlpack_cpu_tensor", N, {"from_dlpack", "device type 1"},
                                        dlpack_case(kDLCPU, DLDataType{kDLFloat, 32, 1})));
  cases.push_back(expect<TypeError>("dlpack_unsupported_dtype", N, {"from_dlpack", "8 bits"},
                                    dlpack_case(kDLCUDA, DLDataType{kDLFloat, 8, 1})));

  // The cache API.
  cases.push_back(
      expect<CacheError>("cache_deployment_database_missing", N, {"/nonexistent/cat_kernels.db"},
                         [] { add_deployment_database("/nonexistent/cat_kernels.db"); }));
  cases.push_back(
      expect<CacheError>("cache_deployment_database_not_sqlite", N, {"cat_not_a_db.db"}, [] {
        TempDir dir;
        const std::string path = dir.path + "/cat_not_a_db.db";
        std::ofstream(path) << "these are not the kernels\n";
        add_deployment_database(path);
      }));
  cases.push_back(
      expect<CacheError>("cache_deployment_database_is_a_directory", N, {"cujit_catalogue_"}, [] {
        TempDir dir;
        add_deployment_database(dir.path);
      }));
  return cases;
}

// ---- Cases that need a GPU ----------------------------------------------------------------

std::vector<Case> gpu_cases() {
  const Needs G = Needs::Gpu;
  const Needs G2 = Needs::TwoGpus;
  std::vector<Case> cases;

  // ElementwiseKernel: types, shapes, launch options, devices, snippets.
  cases.push_back(expect<TypeError>(
      "ew_input_dtype_mismatch", G, {"cat_f32", "input 'x'", "float32", "int32"}, [] {
        ElementwiseKernel k("float32 x", "float32 z", "z = x", "cat_f32");
        k(Array::zeros({kBig}, DType::Int32));
      }));
  cases.push_back(expect<TypeError>(
      "ew_placeholder_bound_twice", G, {"cat_add", "input 'y'", "float32", "float64"},
      [] { add()(floats({kBig}), Array::zeros({kBig}, DType::Float64)); }));
  cases.push_back(expect<TypeError>(
      "ew_output_dtype_mismatch", G, {"cat_to_f32", "output 'z'", "float32", "int32"}, [] {
        ElementwiseKernel k("T x", "float32 z", "z = x", "cat_to_f32");
        k(floats({kBig}), Array::zeros({kBig}, DType::Int32));
      }));
  cases.push_back(expect<ShapeError>("ew_shapes_not_broadcastable", G,
                                     {"cat_add", "input 'y'", "(1024, 2048)", "(1000,)"}, [] {
                                       add()(floats({1024, 2048}), floats({1000}));
                                     }));
  cases.push_back(
      expect<ShapeError>("ew_output_does_not_broadcast", G, {"cat_add", "output 'z'", "(2097153,)"},
                         [] { add()(floats({kBig}), floats({kBig}), floats({kBig + 1})); }));
  cases.push_back(expect<ShapeError>("ew_output_smaller_than_inputs", G,
                                     {"cat_add", "output 'z'", "(1,)", "(2097152,)"},
                                     [] { add()(floats({kBig}), floats({kBig}), floats({1})); }));
  cases.push_back(expect<ArgumentError>(
      "ew_block_size_too_large", G, {"cat_add", "block size 2048"},
      [] { add()(floats({kBig}), floats({kBig}), cujit::block_size(2048)); }));
  cases.push_back(
      expect<ArgumentError>("ew_block_size_negative", G, {"cat_add", "block size -32"},
                            [] { add()(floats({kBig}), floats({kBig}), cujit::block_size(-32)); }));
  cases.push_back(
      expect<ArgumentError>("ew_size_differs_from_arrays", G, {"cat_add", "size 7"},
                            [] { add()(floats({kBig}), floats({kBig}), cujit::size(7)); }));
  cases.push_back(expect<ArgumentError>(
      "ew_raw_argument_not_contiguous", G, {"cat_gather", "raw argument 'r'"}, [] {
        ElementwiseKernel k("raw T r", "T z", "z = r[i]", "cat_gather");
        k(floats({1024, 2048}).transpose(), cujit::size(kBig));
      }));
  cases.push_back(expect<DeviceError>(
      "ew_arrays_on_two_devices", G2, {"cat_add", "argument 'y'", "device 1"},
      [] { add()(floats({kBig}), Array::zeros({kBig}, DType::Float32, Device::get(1))); }));
  cases.push_back(
      expect<CompileError>("ew_operation_syntax_error", G, {"cat_syntax", "operation"}, [] {
        ElementwiseKernel k("T x", "T z", "z = x +* ;", "cat_syntax");
        k(floats({kBig}));
      }));
  cases.push_back(expect<CompileError>(
      "ew_operation_undeclared_name", G, {"cat_undeclared", "operation", "w"}, [] {
        ElementwiseKernel k("T x", "T z", "z = x + w", "cat_undeclared");
        k(floats({kBig}));
      }));
  cases.push_back(expect<CompileError>(
      "ew_option_rejected_by_nvrtc", G, {"cat_nvrtc_option", "-fake-option"}, [] {
        ElementwiseKernel k("T x", "T z", "z = x", "cat_nvrtc_option",
                            with_options({"-fake-option"}));
        k(floats({kBig}));
      }));

  // ReductionKernel: axes, outputs, launch options, devices, snippets.
  cases.push_back(expect<ShapeError>("red_axis_out_of_range", G, {"cat_sum", "axis 2"}, [] {
    sum()(floats({1024, 2048}), axis{2});
  }));
  cases.push_back(
      expect<ShapeError>("red_negative_axis_out_of_range", G, {"cat_sum", "axis -3"}, [] {
        sum()(floats({1024, 2048}), axis{-3});
      }));
  cases.push_back(
      expect<ShapeError>("red_duplicate_axis", G, {"cat_sum", "axis -1", "repeated"}, [] {
        sum()(floats({1024, 2048}), axis{1, -1});
      }));
  cases.push_back(
      expect<ShapeError>("red_wrong_output_shape", G, {"cat_sum", "output 'y'", "(1024,)"}, [] {
        sum()(floats({1024, 2048}), floats({2048}), axis{1});
      }));
  cases.push_back(
      expect<TypeError>("red_wrong_output_dtype", G, {"cat_sum_f32", "output 'y'", "int32"}, [] {
        ReductionKernel k("T x", "float32 y", "x", "a + b", "y = a", "0", "cat_sum_f32");
        k(floats({kBig}), Array::zeros({}, DType::Int32));
      }));
  cases.push_back(expect<ArgumentError>("red_block_size_not_a_multiple_of_32", G,
                                        {"cat_sum", "block size 100"},
                                        [] { sum()(floats({kBig}), cujit::block_size(100)); }));
  cases.push_back(expect<ArgumentError>("red_block_size_negative", G, {"cat_sum", "block size -64"},
                                        [] { sum()(floats({kBig}), cujit::block_size(-64)); }));
  cases.push_back(
      expect<ArgumentError>("red_zero_size_without_identity", G, {"cat_max", "identity"}, [] {
        ReductionKernel k("T x", "T y", "x", "max(a, b)", "y = a", "", "cat_max");
        k(floats({0}));
      }));
  cases.push_back(expect<ShapeError>(
      "red_inputs_not_broadcastable", G, {"cat_dot", "input 'w'", "(1024, 2048)", "(1000,)"}, [] {
        ReductionKernel k("T x, T w", "T y", "x * w", "a + b", "y = a", "0", "cat_dot");
        k(floats({1024, 2048}), floats({1000}));
      }));
  cases.push_back(expect<DeviceError>(
      "red_arrays_on_two_devices", G2, {"cat_dot", "argument 'w'", "device 1"}, [] {
        ReductionKernel k("T x, T w", "T y", "x * w", "a + b", "y = a", "0", "cat_dot");
        k(floats({kBig}), Array::zeros({kBig}, DType::Float32, Device::get(1)));
      }));
  cases.push_back(expect<CompileError>(
      "red_reduce_expr_syntax_error", G, {"cat_bad_reduce", "reduce_expr"}, [] {
        ReductionKernel k("T x", "T y", "x", "a +* b", "y = a", "0", "cat_bad_reduce");
        k(floats({kBig}));
      }));
  cases.push_back(
      expect<CompileError>("red_unknown_reduce_type", G, {"cat_bad_type", "no_such_type"}, [] {
        ReductionKernel k("T x", "T y", "x", "a + b", "y = a", "0", "cat_bad_type",
                          reduce_type("no_such_type"));
        k(floats({kBig}));
      }));

  // RawModule and RawKernel launches.
  auto axpy = [] { return axpy_module().get_function("axpy"); };
  cases.push_back(expect<ArgumentError>("raw_wrong_argument_count", G,
                                        {"'axpy'", "takes 4", "2 were given"}, [axpy] {
                                          Array x = floats({kBig});
                                          axpy()(Dim3(1), Dim3(128), {2.0f, x});
                                        }));
  cases.push_back(expect<ArgumentError>("raw_argument_size_mismatch", G,
                                        {"'axpy'", "argument 0", "8-byte"}, [axpy] {
                                          Array x = floats({kBig}), y = floats({kBig});
                                          axpy()(Dim3(1), Dim3(128), {2.0, x, y, 4});
                                        }));
  cases.push_back(expect<ArgumentError>("raw_null_array_argument", G,
                                        {"'axpy'", "argument 1", "null array"}, [axpy] {
                                          Array y = floats({kBig});
                                          axpy()(Dim3(1), Dim3(128), {2.0f, Array(), y, 4});
                                        }));
  cases.push_back(expect<ArgumentError>("raw_zero_grid", G, {"'axpy'", "grid"}, [axpy] {
    Array x = floats({kBig}), y = floats({kBig});
    axpy()(Dim3(0), Dim3(128), {2.0f, x, y, 4});
  }));
  cases.push_back(expect<ArgumentError>("raw_zero_block", G, {"'axpy'", "block"}, [axpy] {
    Array x = floats({kBig}), y = floats({kBig});
    axpy()(Dim3(1), Dim3(128, 0), {2.0f, x, y, 4});
  }));
  cases.push_back(
      expect<ArgumentError>("raw_too_many_threads", G, {"'axpy'", "2048 threads"}, [axpy] {
        Array x = floats({kBig}), y = floats({kBig});
        axpy()(Dim3(1), Dim3(32, 64), {2.0f, x, y, 4});
      }));
  cases.push_back(expect<DeviceError>(
      "raw_array_on_another_device", G2, {"'axpy'", "argument 1", "device 1"}, [axpy] {
        Array x = Array::zeros({kBig}, DType::Float32, Device::get(1));
        Array y = floats({kBig});
        axpy()(Dim3(1), Dim3(128), {2.0f, x, y, 4});
      }));
  cases.push_back(expect<ArgumentError>("raw_missing_kernel", G, {"'no_such_kernel'"}, [] {
    (void)axpy_module().get_function("no_such_kernel");
  }));
  cases.push_back(expect<ArgumentError>("raw_kernel_name_with_nul", G, {"get_function", "\\0"}, [] {
    (void)axpy_module().get_function(std::string("axpy\0x", 6));
  }));
  cases.push_back(expect<CudaError>("raw_binary_is_garbage", G, {"cuModuleLoadData"}, [] {
    CompiledProgram program;
    program.target = newest_target();
    program.binary = "this is not a cubin";
    (void)RawModule::from_binary(program).get_function("k");
  }));

  // Arrays and devices.
  cases.push_back(expect<ArgumentError>("array_from_null_pointer", G, {"from_pointer", "null"}, [] {
    (void)Array::from_pointer(0, {4}, {}, DType::Float32, Device::get(0));
  }));
  cases.push_back(expect<ArgumentError>(
      "array_from_misaligned_pointer", G, {"from_pointer", "aligned", "float32"}, [] {
        Array base = floats({kBig});
        (void)Array::from_pointer(base.data() + 2, {4}, {}, DType::Float32, Device::get(0));
      }));
  cases.push_back(
      expect<ArgumentError>("array_from_pointer_strides_rank", G, {"from_pointer", "strides"}, [] {
        Array base = floats({kBig});
        (void)Array::from_pointer(base.data(), {2, 2}, {4}, DType::Float32, Device::get(0));
      }));
  cases.push_back(
      expect<ShapeError>("array_negative_extent", G, {"negative extent", "(-1, 4)"}, [] {
        (void)Array::empty({-1, 4}, DType::Float32);
      }));
  cases.push_back(
      expect<ShapeError>("array_from_host_size_mismatch", G, {"from_host", "(2, 3)"}, [] {
        (void)Array::from_host(std::vector<float>(5), {2, 3});
      }));
  cases.push_back(expect<ShapeError>("array_reshape_incompatible", G, {"reshape", "(3, -1)"}, [] {
    (void)floats({kBig}).reshape({3, -1});
  }));
  cases.push_back(expect<ShapeError>("array_transpose_repeated_axis", G,
                                     {"transpose", "axis 0", "repeated"}, [] {
                                       (void)floats({1024, 2048}).transpose({0, 0});
                                     }));
  cases.push_back(expect<ShapeError>("array_slice_step_zero", G, {"slice", "step"},
                                     [] { (void)floats({kBig}).slice(0, 0, 10, 0); }));
  cases.push_back(expect<ShapeError>("array_slice_axis_out_of_range", G, {"slice", "axis 2"}, [] {
    (void)floats({1024, 2048}).slice(2, 0, 1);
  }));
  cases.push_back(expect<ShapeError>("array_broadcast_to_incompatible", G,
                                     {"broadcast_to", "(1024, 2048)", "(4, 2048)"}, [] {
                                       (void)floats({1024, 2048}).broadcast_to({4, 2048});
                                     }));
  cases.push_back(
      expect<ShapeError>("array_index_out_of_range", G, {"index 1024", "size 1024"}, [] {
        (void)floats({1024, 2048})[1024];
      }));
  cases.push_back(expect<TypeError>("array_to_host_wrong_type", G, {"to_host", "float64"},
                                    [] { (void)floats({kBig}).to_host<double>(); }));
  cases.push_back(
      expect<ArgumentError>("array_to_dlpack_odd_stride", G, {"to_dlpack", "byte stride 6"}, [] {
        Array base = floats({kBig});
        Array odd = Array::from_pointer(base.data(), {4}, {6}, DType::Float32, Device::get(0),
                                        base.owner());
        (void)odd.to_dlpack();
      }));
  cases.push_back(expect<CudaError>("device_id_out_of_range", G, {"does not exist"},
                                    [] { Device::get(Device::count()); }));
  cases.push_back(
      expect<CudaError>("device_id_negative", G, {"device -1"}, [] { Device::get(-1); }));
  return cases;
}

// ---- The tests ----------------------------------------------------------------------------

std::string case_name(const testing::TestParamInfo<Case>& info) { return info.param.id; }

class BadInputNoGpu : public testing::TestWithParam<Case> {};

TEST_P(BadInputNoGpu, ThrowsTypedErrorNamingTheArgument) { check_throws(GetParam()); }

INSTANTIATE_TEST_SUITE_P(Catalogue, BadInputNoGpu, testing::ValuesIn(no_gpu_cases()), case_name);

class BadInputGpu : public testing::TestWithParam<Case> {};

// Device memory cujit does not hand back is measured after release_cached_memory(), which
// returns cujit's cached blocks and trims the device's pool. The driver reports free memory in
// pages of 2 MiB; each case allocates 8 MiB arrays, so one leaked array per run exceeds this.
constexpr std::size_t kLeakTolerance = std::size_t{4} << 20;

TEST_P(BadInputGpu, ThrowsTypedErrorNamingTheArgumentAndLeaksNothing) {
  CUJIT_REQUIRE_GPU();
  const Case& c = GetParam();
  const int devices = c.needs == Needs::TwoGpus ? 2 : 1;
  if (Device::count() < devices) {
    GTEST_SKIP() << "needs " << devices << " devices; " << Device::count() << " present";
  }
  // The first run loads modules and fills caches that live as long as the process.
  check_throws(c);
  detail::wait_module_preload();  // modules loaded ahead in the background take memory too
  std::vector<std::size_t> before;
  for (int d = 0; d < devices; ++d) {
    Device::get(d).release_cached_memory();
    before.push_back(Device::get(d).memory_info().first);
  }
  for (int run = 0; run < 3; ++run) check_throws(c);
  for (int d = 0; d < devices; ++d) {
    Device::get(d).release_cached_memory();
    const std::size_t after = Device::get(d).memory_info().first;
    EXPECT_LE(before[d] - std::min(before[d], after), kLeakTolerance)
        << "device " << d << ": free memory fell from " << before[d] << " to " << after
        << " bytes over three failing calls";
  }
}

INSTANTIATE_TEST_SUITE_P(Catalogue, BadInputGpu, testing::ValuesIn(gpu_cases()), case_name);

// A cache path that cannot be used is not an error: the cache degrades to memory with a
// warning naming the path, and compiling goes on.
TEST(BadInputCatalogue, UnusableCachePathDegradesToAWarning) {
  const CacheConfig previous = cache_config();
  std::mutex mutex;
  std::vector<std::string> warnings;
  WarningSink old_sink = set_warning_sink([&](const std::string& message) {
    std::lock_guard<std::mutex> lock(mutex);
    warnings.push_back(message);
  });
  CacheConfig config = previous;
  config.database_path = "/proc/cujit_catalogue/kernels.db";  // no directory can be made there
  configure_cache(config);
  std::shared_ptr<const CompiledProgram> program;
  try {
    // A source no earlier run compiled, so that the cache has to store it.
    const std::string source =
        std::string(kAxpySource) + "\n// " + std::to_string(::getpid()) + " " +
        std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
    program = RawModule(source).compile_for(newest_target());
  } catch (const std::exception& e) {
    ADD_FAILURE() << "an unusable cache path must not fail a compile: " << e.what();
  }
  configure_cache(previous);
  set_warning_sink(old_sink);
  ASSERT_TRUE(program);
  EXPECT_FALSE(program->binary.empty());
  ASSERT_FALSE(warnings.empty()) << "expected a warning about the unusable cache path";
  EXPECT_NE(warnings.front().find("/proc/cujit_catalogue"), std::string::npos) << warnings.front();
}

TEST(BadInputCatalogue, CoversAtLeastFortyCases) {
  const std::size_t total = no_gpu_cases().size() + gpu_cases().size();
  EXPECT_GE(total, 40u);
  EXPECT_GE(no_gpu_cases().size(), 40u);
}

}  // namespace
}  // namespace cujit
