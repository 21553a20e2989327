// Issue 21: RawKernel checks arguments against the parameter types its mangled name spells
// (core/kernel_param_types). The names below are what g++ gives host functions of the same
// signatures; NVRTC mangles kernels the same way (Itanium ABI), as the GPU test at the end and
// RawModuleCompile.CompilesWithoutADevice ("_Z5scaleIfEvPT_S0_i") show.
#include "core/kernel_param_types.hpp"

#include <cujit/error.hpp>
#include <cujit/half.hpp>
#include <cujit/raw_module.hpp>

#include <gtest/gtest.h>

#include <complex>
#include <cstdint>
#include <string>
#include <vector>

#include "support/gpu.hpp"

namespace cujit::detail {
namespace {

using C = ParamClass;

struct MangledCase {
  const char* lowered;
  const char* demangled;
  std::vector<std::pair<std::string, ParamClass>> params;
};

TEST(KernelParamTypes, ReadsTheParametersOfMangledNames) {
  const std::vector<MangledCase> cases = {
      {"_Z5scaleIfEvPT_S0_i",
       "void scale<float>(float*, float, int)",
       {{"float*", C::Pointer}, {"float", C::Float}, {"int", C::Integer}}},
      {"_Z5scaleIdEvPT_S0_i",
       "void scale<double>(double*, double, int)",
       {{"double*", C::Pointer}, {"double", C::Float}, {"int", C::Integer}}},
      {"_Z5scaleI6__halfEvPT_S1_i",
       "void scale<__half>(__half*, __half, int)",
       {{"__half*", C::Pointer}, {"__half", C::Float}, {"int", C::Integer}}},
      {"_Z4tileIfLi4EEvPKT_PS0_yb",
       "void tile<float, 4>(float const*, float*, unsigned long long, bool)",
       {{"float const*", C::Pointer},
        {"float*", C::Pointer},
        {"unsigned long long", C::Integer},
        {"bool", C::Bool}}},
      {"_Z5mixedIf13__nv_bfloat16EvT_T0_PKS1_PS2_N2ns7complexIS1_EES1_",
       "void mixed<float, __nv_bfloat16>(float, __nv_bfloat16, float const*, __nv_bfloat16*, "
       "ns::complex<float>, float)",
       {{"float", C::Float},
        {"__nv_bfloat16", C::BFloat16},
        {"float const*", C::Pointer},
        {"__nv_bfloat16*", C::Pointer},
        {"ns::complex<float>", C::Other},
        {"float", C::Float}}},
      {"_Z5plainPflmcahstx1EN2ns3FooEPFvifEDn",
       "plain(float*, long, unsigned long, char, signed char, unsigned char, short, unsigned "
       "short, long long, E, ns::Foo, void (*)(int, float), decltype(nullptr))",
       {{"float*", C::Pointer},
        {"long", C::Integer},
        {"unsigned long", C::Integer},
        {"char", C::Integer},
        {"signed char", C::Integer},
        {"unsigned char", C::Integer},
        {"short", C::Integer},
        {"unsigned short", C::Integer},
        {"long long", C::Integer},
        {"E", C::Other},
        {"ns::Foo", C::Other},
        {"void (*)(int, float)", C::Pointer},
        {"decltype(nullptr)", C::Pointer}}},
      {"_ZN5outer6nestedIiEEvPT_PKS1_S1_",
       "void outer::nested<int>(int*, int const*, int)",
       {{"int*", C::Pointer}, {"int const*", C::Pointer}, {"int", C::Integer}}},
      {"_Z8by_valueILi3EEvPfi",
       "void by_value<3>(float*, int)",
       {{"float*", C::Pointer}, {"int", C::Integer}}},
      {"_Z3cntIdEvPN2ns7complexIT_EES3_",
       "void cnt<double>(ns::complex<double>*, ns::complex<double>)",
       {{"ns::complex<double>*", C::Pointer}, {"ns::complex<double>", C::Other}}},
      {"_Z6noargsv", "noargs()", {}},
  };
  for (const MangledCase& c : cases) {
    const auto types = kernel_param_types(c.lowered);
    ASSERT_TRUE(types.has_value()) << c.lowered;
    EXPECT_EQ(types->demangled, c.demangled);
    ASSERT_EQ(types->params.size(), c.params.size()) << c.demangled;
    for (std::size_t i = 0; i < c.params.size(); ++i) {
      EXPECT_EQ(types->params[i].spelling, c.params[i].first) << c.demangled << " #" << i;
      EXPECT_EQ(types->params[i].cls, c.params[i].second) << c.demangled << " #" << i;
    }
  }
}

TEST(KernelParamTypes, ExternCAndMalformedNamesGiveNoTypes) {
  for (const char* name : {"axpy", "", "_Z", "_Zgarbage", "Z5scaleIfEvPT_S0_i", "_Z5scale",
                           "__global__", "_GLOBAL__sub_I_x"}) {
    EXPECT_FALSE(kernel_param_types(name).has_value()) << name;
  }
}

TEST(KernelParamTypes, SplitsOnlyTopLevelCommas) {
  const auto params = split_demangled_params(
      "void k<(int)3, Foo<int, long> >(Foo<int, (1>2)>, void (*)(int, float), int (&) [4], int)");
  ASSERT_TRUE(params.has_value());
  EXPECT_EQ(*params, (std::vector<std::string>{"Foo<int, (1>2)>", "void (*)(int, float)",
                                               "int (&) [4]", "int"}));
  EXPECT_EQ(split_demangled_params("k()")->size(), 0u);
  EXPECT_EQ(split_demangled_params("k(void)")->size(), 0u);
  EXPECT_FALSE(split_demangled_params("k"));
  EXPECT_FALSE(split_demangled_params("(int)"));
  EXPECT_FALSE(split_demangled_params("k(int, )"));
  EXPECT_FALSE(split_demangled_params("k(Foo<int)"));
  EXPECT_FALSE(split_demangled_params("k(int))"));
}

TEST(KernelParamTypes, ClassifiesBuiltinsPointersAndTheRest) {
  struct Expect {
    const char* spelling;
    ParamClass cls;
    std::size_t size;
  };
  for (const Expect& e : std::vector<Expect>{{"bool", C::Bool, 1},
                                             {"char", C::Integer, 1},
                                             {"unsigned int", C::Integer, 4},
                                             {"long", C::Integer, 8},
                                             {"__int128", C::Integer, 16},
                                             {"__half", C::Float, 2},
                                             {"_Float16", C::Float, 2},
                                             {"float", C::Float, 4},
                                             {"double", C::Float, 8},
                                             {"__nv_bfloat16", C::BFloat16, 2},
                                             {"float const*", C::Pointer, 8},
                                             {"Foo<int>**", C::Pointer, 8},
                                             {"int Foo::*", C::Other, 0},
                                             {"float&", C::Other, 0},
                                             {"float4", C::Other, 0},
                                             {"long double", C::Other, 0},
                                             {"__half2", C::Other, 0},
                                             {"ns::complex<float>", C::Other, 0}}) {
    const ParamType p = classify_param_type(e.spelling);
    EXPECT_EQ(p.cls, e.cls) << e.spelling;
    EXPECT_EQ(p.size, e.size) << e.spelling;
    EXPECT_EQ(p.spelling, e.spelling);
  }
}

TEST(KernelParamTypes, ReconcilesWithTheDriversSizes) {
  auto types = kernel_param_types("_Z5scaleIfEvPT_S0_i");
  EXPECT_TRUE(reconcile_param_types(types, {8, 4, 4}).has_value());
  EXPECT_FALSE(reconcile_param_types(types, {8, 4}).has_value());  // counts differ: sizes only
  EXPECT_FALSE(reconcile_param_types(std::nullopt, {8}).has_value());
  const auto odd = reconcile_param_types(types, {8, 8, 4});  // the driver says 8 bytes
  ASSERT_TRUE(odd.has_value());
  EXPECT_EQ(odd->params[1].cls, C::Other);
  EXPECT_EQ(odd->params[0].cls, C::Pointer);
}

KernelParamTypes types_of(const char* lowered) {
  auto types = kernel_param_types(lowered);
  EXPECT_TRUE(types.has_value()) << lowered;
  return *types;
}

std::vector<std::size_t> sizes_of(const KernelParamTypes& t) {
  std::vector<std::size_t> sizes;
  for (const ParamType& p : t.params) sizes.push_back(p.size == 0 ? 8 : p.size);
  return sizes;
}

// The message of the exception check_kernel_args throws, or "" when it accepts.
template <class E>
std::string rejection(const KernelParamTypes* types, const std::vector<std::size_t>& sizes,
                      std::vector<KernelArg> args) {
  try {
    check_kernel_args("k", 0, sizes, types, args.data(), args.size());
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "unexpected exception: " << e.what();
  }
  return "";
}

TEST(CheckKernelArgs, TypesOfMangledKernels) {
  const KernelParamTypes scale = types_of("_Z5scaleIfEvPT_S0_i");  // (float*, float, int)
  const auto sizes = sizes_of(scale);
  float* device_pointer = nullptr;
  // Accepted: a pointer, a 64-bit address, nullptr for float*; ints of either signedness.
  EXPECT_EQ(rejection<Error>(&scale, sizes, {device_pointer, 2.0f, 3}), "");
  EXPECT_EQ(rejection<Error>(&scale, sizes, {std::uint64_t{0x1000}, 2.0f, 3u}), "");
  EXPECT_EQ(rejection<Error>(&scale, sizes, {nullptr, 2.0f, std::int32_t{3}}), "");

  // An int for the float: the message names the kernel, the parameter, its type and the
  // argument.
  const std::string int_for_float = rejection<TypeError>(&scale, sizes, {device_pointer, 2, 3});
  EXPECT_EQ(int_for_float,
            "cujit: kernel 'k': argument 1 is a 4-byte signed integer but parameter 1 is "
            "'float', which takes a 4-byte float (float) (the kernel is void "
            "scale<float>(float*, float, int))");
  EXPECT_NE(rejection<TypeError>(&scale, sizes, {device_pointer, 2.0f, 3.0f})
                .find("argument 2 is a 4-byte float (float) but parameter 2 is 'int'"),
            std::string::npos);
  // A double for the float: the width is checked too.
  EXPECT_NE(rejection<TypeError>(&scale, sizes, {device_pointer, 2.0, 3})
                .find("argument 1 is an 8-byte float (double) but parameter 1 is 'float'"),
            std::string::npos);
  // A scalar for the pointer, a pointer for a scalar.
  EXPECT_NE(rejection<TypeError>(&scale, sizes, {std::int64_t{5}, 2.0f, 3})
                .find("argument 0 is an 8-byte signed integer but parameter 0 is 'float*', "
                      "which takes a pointer"),
            std::string::npos);
  EXPECT_NE(rejection<TypeError>(&scale, sizes, {device_pointer, 2.0f, device_pointer})
                .find("argument 2 is a pointer but parameter 2 is 'int'"),
            std::string::npos);
  // An address for an 8-byte integer parameter (a size_t or unsigned long long holding a
  // device address, as kernels that do their own pointer arithmetic take it) is accepted.
  const KernelParamTypes tile = types_of("_Z4tileIfLi4EEvPKT_PS0_yb");
  EXPECT_EQ(rejection<Error>(&tile, sizes_of(tile),
                             {device_pointer, device_pointer, device_pointer, true}),
            "");
  // The count comes first.
  EXPECT_NE(rejection<ArgumentError>(&scale, sizes, {device_pointer, 2.0f})
                .find("takes 3 argument(s) but 2 were given"),
            std::string::npos);
}

TEST(CheckKernelArgs, ArraysAndNullArrays) {
  const KernelParamTypes scale = types_of("_Z5scaleIfEvPT_S0_i");
  const auto sizes = sizes_of(scale);
  const Array null_array;
  EXPECT_NE(rejection<ArgumentError>(&scale, sizes, {null_array, 2.0f, 3}).find("null array"),
            std::string::npos);
  EXPECT_NE(rejection<TypeError>(&scale, sizes, {nullptr, null_array, 3})
                .find("argument 1 is an array (an 8-byte pointer) but parameter 1 is 'float'"),
            std::string::npos);
}

TEST(CheckKernelArgs, SixteenBitFloatsAndBool) {
  // (float, __nv_bfloat16, float const*, __nv_bfloat16*, ns::complex<float>, float)
  const KernelParamTypes mixed =
      types_of("_Z5mixedIf13__nv_bfloat16EvT_T0_PKS1_PS2_N2ns7complexIS1_EES1_");
  const auto sizes = sizes_of(mixed);
  float* p = nullptr;
  const std::complex<float> c(1, 2);
  EXPECT_EQ(rejection<Error>(&mixed, sizes, {1.0f, bfloat16(2.0f), p, p, c, 3.0f}), "");
  // A float16 for the bfloat16, a uint16_t for it.
  EXPECT_NE(rejection<TypeError>(&mixed, sizes, {1.0f, float16(2.0f), p, p, c, 3.0f})
                .find("argument 1 is a 2-byte float (float16) but parameter 1 is "
                      "'__nv_bfloat16', which takes a bfloat16"),
            std::string::npos);
  EXPECT_NE(rejection<TypeError>(&mixed, sizes, {1.0f, std::uint16_t{0}, p, p, c, 3.0f})
                .find("parameter 1 is '__nv_bfloat16'"),
            std::string::npos);
  // The struct parameter is checked by size only: any 8-byte value passes, others do not.
  EXPECT_EQ(rejection<Error>(&mixed, sizes, {1.0f, bfloat16(2.0f), p, p, 1.0, 3.0f}), "");
  EXPECT_NE(rejection<ArgumentError>(&mixed, sizes, {1.0f, bfloat16(2.0f), p, p, 1.0f, 3.0f})
                .find("argument 4 is a 4-byte scalar but parameter 4 ('ns::complex<float>') "
                      "takes 8 bytes"),
            std::string::npos);

  const KernelParamTypes half_scale = types_of("_Z5scaleI6__halfEvPT_S1_i");
  const auto half_sizes = sizes_of(half_scale);
  EXPECT_EQ(rejection<Error>(&half_scale, half_sizes, {p, float16(0.5f), 3}), "");
  EXPECT_NE(rejection<TypeError>(&half_scale, half_sizes, {p, bfloat16(0.5f), 3})
                .find("which takes a 2-byte float (cujit::float16 or __half)"),
            std::string::npos);
#if defined(__FLT16_MANT_DIG__)
  const _Float16 h = 0.5f;
  EXPECT_EQ(rejection<Error>(&half_scale, half_sizes, {p, h, 3}), "");
#endif

  // (float const*, float*, unsigned long long, bool): a bool or a 1-byte integer for bool.
  const KernelParamTypes tile = types_of("_Z4tileIfLi4EEvPKT_PS0_yb");
  const auto tile_sizes = sizes_of(tile);
  EXPECT_EQ(rejection<Error>(&tile, tile_sizes, {p, p, std::size_t{7}, true}), "");
  EXPECT_EQ(rejection<Error>(&tile, tile_sizes, {p, p, 7ll, std::uint8_t{1}}), "");
  EXPECT_NE(rejection<TypeError>(&tile, tile_sizes, {p, p, 7.0, true})
                .find("argument 2 is an 8-byte float (double) but parameter 2 is 'unsigned "
                      "long long', which takes an 8-byte integer"),
            std::string::npos);
}

TEST(CheckKernelArgs, StructsAndEnumsAreCheckedBySize) {
  // plain(float*, long, unsigned long, char, signed char, unsigned char, short, unsigned short,
  //       long long, E, ns::Foo, void (*)(int, float), decltype(nullptr))
  const KernelParamTypes plain = types_of("_Z5plainPflmcahstx1EN2ns3FooEPFvifEDn");
  std::vector<std::size_t> sizes = {8, 8, 8, 1, 1, 1, 2, 2, 8, 4, 4, 8, 8};
  struct Foo {
    int a;
  };
  enum class E : int { A };
  float* p = nullptr;
  void (*fp)(int, float) = nullptr;
  const std::vector<KernelArg> good = {
      p,   1l,   2ul,    'c', std::int8_t{1}, std::uint8_t{2}, short{3}, std::uint16_t{4},
      5ll, E::A, Foo{1}, fp,  nullptr};
  EXPECT_EQ(rejection<Error>(&plain, sizes, good), "");
  std::vector<KernelArg> bad = good;
  bad[9] = 1.0f;  // a float for the enum: same size, unknown type: accepted
  EXPECT_EQ(rejection<Error>(&plain, sizes, bad), "");
  bad[9] = 1.0;  // but not another size
  EXPECT_NE(rejection<ArgumentError>(&plain, sizes, bad).find("parameter 9 ('E') takes 4 bytes"),
            std::string::npos);
  bad = good;
  bad[10] = Foo{2};
  bad[1] = Foo{2};  // a 4-byte struct for long: the struct's type is unknown, its size is not
  EXPECT_NE(rejection<ArgumentError>(&plain, sizes, bad)
                .find("argument 1 is a 4-byte scalar but parameter 1 ('long') takes 8 bytes"),
            std::string::npos);
}

TEST(CheckKernelArgs, ExternCKernelsAreCheckedBySize) {
  const std::vector<std::size_t> axpy = {4, 8, 8, 4};  // (float, const float*, float*, int)
  float* p = nullptr;
  EXPECT_EQ(rejection<Error>(nullptr, axpy, {2.0f, p, p, 8}), "");
  EXPECT_EQ(rejection<Error>(nullptr, axpy, {2, p, p, 8.0f}), "");  // sizes agree: accepted
  EXPECT_EQ(rejection<ArgumentError>(nullptr, axpy, {2.0, p, p, 8}),
            "cujit: kernel 'k': argument 0 is a 8-byte scalar but parameter 0 takes 4 bytes");
}

TEST(KernelArgKind, FollowsTheValuesType) {
  using K = KernelArg::Kind;
  EXPECT_EQ(KernelArg(1.0f).kind(), K::Float);
  EXPECT_EQ(KernelArg(1.0).kind(), K::Float);
  EXPECT_EQ(KernelArg(float16(1.0f)).kind(), K::Float);
  EXPECT_EQ(KernelArg(bfloat16(1.0f)).kind(), K::BFloat16);
  EXPECT_EQ(KernelArg(1).kind(), K::SignedInt);
  EXPECT_EQ(KernelArg(1u).kind(), K::UnsignedInt);
  EXPECT_EQ(KernelArg(true).kind(), K::Bool);
  EXPECT_EQ(KernelArg(static_cast<float*>(nullptr)).kind(), K::Pointer);
  EXPECT_EQ(KernelArg(nullptr).kind(), K::Pointer);
  EXPECT_EQ(KernelArg(std::complex<float>(1, 2)).kind(), K::Other);
  EXPECT_EQ(KernelArg(Array()).kind(), K::Array);
  EXPECT_TRUE(KernelArg(Array()).is_array());
  EXPECT_EQ(KernelArg(float16(1.0f)).size(), 2u);
}

// A launch with a wrong type fails before reaching the driver, on a real NVRTC name.
TEST(RawKernelTypesGpu, MangledKernelsRefuseWrongTypes) {
  CUJIT_REQUIRE_GPU();
  RawModule module(R"(
template <class T> __global__ void scale(T* x, T s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= s;
}
__global__ void fill(float* x, float v, unsigned long long n) {
  unsigned long long i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = v;
}
extern "C" __global__ void fill_c(float* x, float v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = v;
})",
                   {}, {"scale<float>", "fill"});
  RawKernel scale = module.get_function("scale<float>");
  EXPECT_EQ(scale.param_types(), (std::vector<std::string>{"float*", "float", "int"}));
  Array x = Array::from_host(std::vector<float>(64, 1.0f));
  try {
    scale(Dim3(1), Dim3(64), {x, 2, 64});  // an int for T = float
    FAIL() << "an int was accepted for a float parameter";
  } catch (const TypeError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("kernel 'scale<float>'"), std::string::npos) << what;
    EXPECT_NE(what.find("argument 1 is a 4-byte signed integer but parameter 1 is 'float'"),
              std::string::npos)
        << what;
  }
  scale(Dim3(1), Dim3(64), {x, 2.0f, 64});
  EXPECT_EQ(x.to_host<float>()[63], 2.0f);

  // A non-template kernel outside extern "C", by name expression: (float*, float, unsigned
  // long long).
  RawKernel fill = module.get_function("fill");
  EXPECT_EQ(fill.param_types(),
            (std::vector<std::string>{"float*", "float", "unsigned long long"}));
  EXPECT_THROW(fill(Dim3(1), Dim3(64), {x, 3.0f, 64.0}), TypeError);
  fill(Dim3(1), Dim3(64), {x, 3.0f, x.size()});
  EXPECT_EQ(x.to_host<float>()[0], 3.0f);

  // extern "C": sizes only, as before.
  RawKernel fill_c = module.get_function("fill_c");
  EXPECT_TRUE(fill_c.param_types().empty());
  fill_c(Dim3(1), Dim3(64), {x, 4.0f, 64});
  EXPECT_THROW(fill_c(Dim3(1), Dim3(64), {x, 4.0, 64}), ArgumentError);
  EXPECT_EQ(x.to_host<float>()[5], 4.0f);
}

}  // namespace
}  // namespace cujit::detail
