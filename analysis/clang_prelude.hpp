#pragma once
// The declarations clang sees before user snippets when it checks them (snippet_analyser.cpp).
// No real header is available on the GPU host besides NVRTC's own, so this prelude stands in
// for what generated CUDA code offers snippets: the CUDA qualifiers, built-in variables and
// vector types, half/bfloat16/complex with their arithmetic, the raw-array and index classes,
// and the common math functions and intrinsics.
//
// It only has to be lenient, never exact: a name it lacks makes clang report an undeclared
// identifier, and the analysis then defers to NVRTC; functions whose exact overloads are not
// modelled return `__cujit_any`, a class type, so clang never claims a type error about their
// results. Declaring more here can only let clang check more snippets fully.

namespace cujit::detail {

inline constexpr const char* kClangPrelude = R"PRELUDE(
#define __device__
#define __host__
#define __global__
#define __forceinline__ inline
#define __noinline__
#define __inline__ inline
#define __shared__
#define __constant__
#define __managed__
#define __grid_constant__
#define __restrict__ __restrict
#define __align__(n) alignas(n)
#define __launch_bounds__(...)
#define __CUDACC__ 1
#define __CUDACC_RTC__ 1
#define __CUDA_ARCH__ 800
#define assert(e) ((void)(e))

template <class T> T __cujit_declval();
typedef decltype(sizeof(0)) size_t;
typedef decltype((char*)0 - (char*)0) ptrdiff_t;
typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
typedef long long intptr_t;
typedef unsigned long long uintptr_t;

// The result of a function whose overloads the prelude does not model: converts to and
// combines with anything, and is a class so no diagnostic about it counts as certain.
struct __cujit_any {
  template <class T> operator T() const;
  template <class T> __cujit_any& operator=(const T&);
  template <class T> __cujit_any operator[](const T&) const;
  template <class... A> __cujit_any operator()(A&&...) const;
  __cujit_any operator-() const;
  __cujit_any operator+() const;
  __cujit_any operator~() const;
  bool operator!() const;
  __cujit_any* operator->();
  __cujit_any& operator*();
  __cujit_any& operator++();
  __cujit_any& operator--();
  __cujit_any operator++(int);
  __cujit_any operator--(int);
  template <class T> __cujit_any& operator+=(const T&);
  template <class T> __cujit_any& operator-=(const T&);
  template <class T> __cujit_any& operator*=(const T&);
  template <class T> __cujit_any& operator/=(const T&);
  template <class T> __cujit_any& operator%=(const T&);
  template <class T> __cujit_any& operator&=(const T&);
  template <class T> __cujit_any& operator|=(const T&);
  template <class T> __cujit_any& operator^=(const T&);
  template <class T> __cujit_any& operator<<=(const T&);
  template <class T> __cujit_any& operator>>=(const T&);
};
#define __CUJIT_ANY_BINARY(op)                                                  \
  __cujit_any operator op(const __cujit_any&, const __cujit_any&);              \
  template <class T> __cujit_any operator op(const __cujit_any&, const T&);     \
  template <class T> __cujit_any operator op(const T&, const __cujit_any&);
__CUJIT_ANY_BINARY(+) __CUJIT_ANY_BINARY(-) __CUJIT_ANY_BINARY(*) __CUJIT_ANY_BINARY(/)
__CUJIT_ANY_BINARY(%) __CUJIT_ANY_BINARY(&) __CUJIT_ANY_BINARY(|) __CUJIT_ANY_BINARY(^)
__CUJIT_ANY_BINARY(<<) __CUJIT_ANY_BINARY(>>) __CUJIT_ANY_BINARY(<) __CUJIT_ANY_BINARY(>)
__CUJIT_ANY_BINARY(<=) __CUJIT_ANY_BINARY(>=) __CUJIT_ANY_BINARY(==) __CUJIT_ANY_BINARY(!=)
__CUJIT_ANY_BINARY(&&) __CUJIT_ANY_BINARY(||)
#undef __CUJIT_ANY_BINARY

// Functions with an unmodelled result. Names user code commonly overloads are function
// templates (a preamble may add overloads); the many others are callable objects, which
// clang declares far faster than function templates.
#define __CUJIT_FN(name) extern __cujit_any name;
#define __CUJIT_OVERLOADABLE_FN(name) template <class... A> __cujit_any name(A&&...);
// Math functions (CUDA math API, float and double forms).
__CUJIT_OVERLOADABLE_FN(abs) __CUJIT_OVERLOADABLE_FN(fabs) __CUJIT_FN(fabsf) __CUJIT_FN(labs)
__CUJIT_FN(llabs)
__CUJIT_OVERLOADABLE_FN(min) __CUJIT_OVERLOADABLE_FN(max) __CUJIT_OVERLOADABLE_FN(fmin)
__CUJIT_OVERLOADABLE_FN(fmax) __CUJIT_FN(fminf)
__CUJIT_FN(fmaxf) __CUJIT_FN(umin) __CUJIT_FN(umax) __CUJIT_FN(llmin) __CUJIT_FN(llmax)
__CUJIT_FN(ullmin) __CUJIT_FN(ullmax)
__CUJIT_OVERLOADABLE_FN(exp) __CUJIT_FN(expf) __CUJIT_OVERLOADABLE_FN(exp2) __CUJIT_FN(exp2f)
__CUJIT_FN(exp10)
__CUJIT_FN(exp10f) __CUJIT_OVERLOADABLE_FN(expm1) __CUJIT_FN(expm1f) __CUJIT_OVERLOADABLE_FN(log)
__CUJIT_FN(logf)
__CUJIT_OVERLOADABLE_FN(log2) __CUJIT_FN(log2f) __CUJIT_OVERLOADABLE_FN(log10) __CUJIT_FN(log10f)
__CUJIT_OVERLOADABLE_FN(log1p)
__CUJIT_FN(log1pf) __CUJIT_FN(logb) __CUJIT_FN(logbf) __CUJIT_FN(ilogb) __CUJIT_FN(ilogbf)
__CUJIT_OVERLOADABLE_FN(pow) __CUJIT_FN(powf) __CUJIT_FN(powi) __CUJIT_FN(powif)
__CUJIT_OVERLOADABLE_FN(sqrt)
__CUJIT_FN(sqrtf) __CUJIT_OVERLOADABLE_FN(rsqrt) __CUJIT_FN(rsqrtf) __CUJIT_OVERLOADABLE_FN(cbrt)
__CUJIT_FN(cbrtf)
__CUJIT_FN(rcbrt) __CUJIT_FN(rcbrtf) __CUJIT_OVERLOADABLE_FN(hypot) __CUJIT_FN(hypotf)
__CUJIT_FN(rhypot)
__CUJIT_FN(rhypotf) __CUJIT_FN(norm3d) __CUJIT_FN(norm3df) __CUJIT_FN(norm4d)
__CUJIT_FN(norm4df)
__CUJIT_OVERLOADABLE_FN(sin) __CUJIT_FN(sinf) __CUJIT_OVERLOADABLE_FN(cos) __CUJIT_FN(cosf)
__CUJIT_OVERLOADABLE_FN(tan)
__CUJIT_FN(tanf) __CUJIT_FN(sincos) __CUJIT_FN(sincosf) __CUJIT_FN(sinpi) __CUJIT_FN(sinpif)
__CUJIT_FN(cospi) __CUJIT_FN(cospif) __CUJIT_FN(sincospi) __CUJIT_FN(sincospif)
__CUJIT_OVERLOADABLE_FN(asin) __CUJIT_FN(asinf) __CUJIT_OVERLOADABLE_FN(acos) __CUJIT_FN(acosf)
__CUJIT_OVERLOADABLE_FN(atan)
__CUJIT_FN(atanf) __CUJIT_OVERLOADABLE_FN(atan2) __CUJIT_FN(atan2f) __CUJIT_OVERLOADABLE_FN(sinh)
__CUJIT_FN(sinhf)
__CUJIT_OVERLOADABLE_FN(cosh) __CUJIT_FN(coshf) __CUJIT_OVERLOADABLE_FN(tanh) __CUJIT_FN(tanhf)
__CUJIT_FN(asinh)
__CUJIT_FN(asinhf) __CUJIT_FN(acosh) __CUJIT_FN(acoshf) __CUJIT_FN(atanh) __CUJIT_FN(atanhf)
__CUJIT_OVERLOADABLE_FN(erf) __CUJIT_FN(erff) __CUJIT_OVERLOADABLE_FN(erfc) __CUJIT_FN(erfcf)
__CUJIT_FN(erfinv)
__CUJIT_FN(erfinvf) __CUJIT_FN(erfcinv) __CUJIT_FN(erfcinvf) __CUJIT_FN(erfcx)
__CUJIT_FN(erfcxf) __CUJIT_FN(normcdf) __CUJIT_FN(normcdff) __CUJIT_FN(normcdfinv)
__CUJIT_FN(normcdfinvf) __CUJIT_OVERLOADABLE_FN(lgamma) __CUJIT_FN(lgammaf)
__CUJIT_OVERLOADABLE_FN(tgamma)
__CUJIT_FN(tgammaf) __CUJIT_FN(j0) __CUJIT_FN(j0f) __CUJIT_FN(j1) __CUJIT_FN(j1f)
__CUJIT_FN(y0) __CUJIT_FN(y0f) __CUJIT_FN(y1) __CUJIT_FN(y1f) __CUJIT_FN(cyl_bessel_i0)
__CUJIT_FN(cyl_bessel_i0f) __CUJIT_FN(cyl_bessel_i1) __CUJIT_FN(cyl_bessel_i1f)
__CUJIT_OVERLOADABLE_FN(floor) __CUJIT_FN(floorf) __CUJIT_OVERLOADABLE_FN(ceil) __CUJIT_FN(ceilf)
__CUJIT_OVERLOADABLE_FN(round)
__CUJIT_FN(roundf) __CUJIT_FN(lround) __CUJIT_FN(lroundf) __CUJIT_FN(llround)
__CUJIT_FN(llroundf) __CUJIT_FN(rint) __CUJIT_FN(rintf) __CUJIT_FN(lrint) __CUJIT_FN(lrintf)
__CUJIT_FN(llrint) __CUJIT_FN(llrintf) __CUJIT_FN(nearbyint) __CUJIT_FN(nearbyintf)
__CUJIT_OVERLOADABLE_FN(trunc) __CUJIT_FN(truncf) __CUJIT_OVERLOADABLE_FN(fmod) __CUJIT_FN(fmodf)
__CUJIT_FN(remainder)
__CUJIT_FN(remainderf) __CUJIT_FN(remquo) __CUJIT_FN(remquof) __CUJIT_FN(modf)
__CUJIT_FN(modff) __CUJIT_FN(frexp) __CUJIT_FN(frexpf) __CUJIT_FN(ldexp) __CUJIT_FN(ldexpf)
__CUJIT_FN(scalbn) __CUJIT_FN(scalbnf) __CUJIT_OVERLOADABLE_FN(fma) __CUJIT_FN(fmaf)
__CUJIT_FN(fdim)
__CUJIT_FN(fdimf) __CUJIT_OVERLOADABLE_FN(copysign) __CUJIT_FN(copysignf) __CUJIT_FN(nextafter)
__CUJIT_FN(nextafterf) __CUJIT_FN(nan) __CUJIT_FN(nanf) __CUJIT_OVERLOADABLE_FN(isnan)
__CUJIT_OVERLOADABLE_FN(isinf)
__CUJIT_OVERLOADABLE_FN(isfinite) __CUJIT_OVERLOADABLE_FN(signbit) __CUJIT_FN(fdividef)
__CUJIT_FN(saturate)
// Complex helpers.
__CUJIT_OVERLOADABLE_FN(real) __CUJIT_OVERLOADABLE_FN(imag) __CUJIT_OVERLOADABLE_FN(conj)
__CUJIT_OVERLOADABLE_FN(arg) __CUJIT_OVERLOADABLE_FN(norm)
__CUJIT_OVERLOADABLE_FN(polar) __CUJIT_OVERLOADABLE_FN(proj)
// Intrinsics.
__CUJIT_FN(__expf) __CUJIT_FN(__exp10f) __CUJIT_FN(__logf) __CUJIT_FN(__log2f)
__CUJIT_FN(__log10f) __CUJIT_FN(__powf) __CUJIT_FN(__sinf) __CUJIT_FN(__cosf)
__CUJIT_FN(__tanf) __CUJIT_FN(__sincosf) __CUJIT_FN(__fdividef) __CUJIT_FN(__saturatef)
__CUJIT_FN(__frcp_rn) __CUJIT_FN(__fsqrt_rn) __CUJIT_FN(__frsqrt_rn) __CUJIT_FN(__fmaf_rn)
__CUJIT_FN(__fmaf_rz) __CUJIT_FN(__fmul_rn) __CUJIT_FN(__fmul_rz) __CUJIT_FN(__fadd_rn)
__CUJIT_FN(__fadd_rz) __CUJIT_FN(__fsub_rn) __CUJIT_FN(__fdiv_rn) __CUJIT_FN(__dmul_rn)
__CUJIT_FN(__dadd_rn) __CUJIT_FN(__fma_rn) __CUJIT_FN(__ddiv_rn) __CUJIT_FN(__dsqrt_rn)
__CUJIT_FN(__float2int_rn) __CUJIT_FN(__float2int_rz) __CUJIT_FN(__float2int_rd)
__CUJIT_FN(__float2int_ru) __CUJIT_FN(__float2uint_rn) __CUJIT_FN(__float2uint_rz)
__CUJIT_FN(__float2ll_rn) __CUJIT_FN(__float2ll_rz) __CUJIT_FN(__int2float_rn)
__CUJIT_FN(__uint2float_rn) __CUJIT_FN(__ll2float_rn) __CUJIT_FN(__double2float_rn)
__CUJIT_FN(__double2int_rn) __CUJIT_FN(__float_as_int) __CUJIT_FN(__int_as_float)
__CUJIT_FN(__float_as_uint) __CUJIT_FN(__uint_as_float) __CUJIT_FN(__double_as_longlong)
__CUJIT_FN(__longlong_as_double) __CUJIT_FN(__double2hiint) __CUJIT_FN(__double2loint)
__CUJIT_FN(__hiloint2double)
__CUJIT_FN(__float2half) __CUJIT_FN(__float2half_rn) __CUJIT_FN(__float2half_rz)
__CUJIT_FN(__half2float) __CUJIT_FN(__double2half) __CUJIT_FN(__int2half_rn)
__CUJIT_FN(__half2int_rn) __CUJIT_FN(__half2int_rz) __CUJIT_FN(__float2half2_rn)
__CUJIT_FN(__floats2half2_rn) __CUJIT_FN(__half22float2) __CUJIT_FN(__low2float)
__CUJIT_FN(__high2float) __CUJIT_FN(__low2half) __CUJIT_FN(__high2half)
__CUJIT_FN(__halves2half2) __CUJIT_FN(__half2half2) __CUJIT_FN(__half_as_short)
__CUJIT_FN(__half_as_ushort) __CUJIT_FN(__short_as_half) __CUJIT_FN(__ushort_as_half)
__CUJIT_FN(__float2bfloat16) __CUJIT_FN(__float2bfloat16_rn) __CUJIT_FN(__bfloat162float)
__CUJIT_FN(__double2bfloat16) __CUJIT_FN(__floats2bfloat162_rn) __CUJIT_FN(__bfloat1622float2)
__CUJIT_FN(__hadd) __CUJIT_FN(__hsub) __CUJIT_FN(__hmul) __CUJIT_FN(__hdiv) __CUJIT_FN(__hfma)
__CUJIT_FN(__hneg) __CUJIT_FN(__habs) __CUJIT_FN(__hmax) __CUJIT_FN(__hmin) __CUJIT_FN(__heq)
__CUJIT_FN(__hne) __CUJIT_FN(__hlt) __CUJIT_FN(__hle) __CUJIT_FN(__hgt) __CUJIT_FN(__hge)
__CUJIT_FN(__hisnan) __CUJIT_FN(__hisinf) __CUJIT_FN(__hadd2) __CUJIT_FN(__hsub2)
__CUJIT_FN(__hmul2) __CUJIT_FN(__h2div) __CUJIT_FN(__hfma2) __CUJIT_FN(__hneg2)
__CUJIT_FN(__habs2) __CUJIT_FN(__hmax2) __CUJIT_FN(__hmin2) __CUJIT_FN(hexp) __CUJIT_FN(hexp2)
__CUJIT_FN(hexp10) __CUJIT_FN(hlog) __CUJIT_FN(hlog2) __CUJIT_FN(hlog10) __CUJIT_FN(hsqrt)
__CUJIT_FN(hrsqrt) __CUJIT_FN(hrcp) __CUJIT_FN(hsin) __CUJIT_FN(hcos) __CUJIT_FN(hfloor)
__CUJIT_FN(hceil) __CUJIT_FN(htrunc) __CUJIT_FN(hrint) __CUJIT_FN(h2exp) __CUJIT_FN(h2log)
__CUJIT_FN(h2sqrt) __CUJIT_FN(h2sin) __CUJIT_FN(h2cos)
__CUJIT_FN(__shfl_sync) __CUJIT_FN(__shfl_up_sync) __CUJIT_FN(__shfl_down_sync)
__CUJIT_FN(__shfl_xor_sync) __CUJIT_FN(__ballot_sync) __CUJIT_FN(__any_sync)
__CUJIT_FN(__all_sync) __CUJIT_FN(__uni_sync) __CUJIT_FN(__match_any_sync)
__CUJIT_FN(__match_all_sync) __CUJIT_FN(__activemask) __CUJIT_FN(__reduce_add_sync)
__CUJIT_FN(__reduce_min_sync) __CUJIT_FN(__reduce_max_sync) __CUJIT_FN(__reduce_and_sync)
__CUJIT_FN(__reduce_or_sync) __CUJIT_FN(__reduce_xor_sync)
__CUJIT_FN(__syncthreads) __CUJIT_FN(__syncthreads_count) __CUJIT_FN(__syncthreads_and)
__CUJIT_FN(__syncthreads_or) __CUJIT_FN(__syncwarp) __CUJIT_FN(__threadfence)
__CUJIT_FN(__threadfence_block) __CUJIT_FN(__threadfence_system) __CUJIT_FN(__nanosleep)
__CUJIT_FN(__trap) __CUJIT_FN(__brkpt) __CUJIT_FN(__prof_trigger) __CUJIT_FN(clock)
__CUJIT_FN(clock64) __CUJIT_FN(__globaltimer)
__CUJIT_FN(__ldg) __CUJIT_FN(__ldcg) __CUJIT_FN(__ldca) __CUJIT_FN(__ldcs) __CUJIT_FN(__ldlu)
__CUJIT_FN(__ldcv) __CUJIT_FN(__stwb) __CUJIT_FN(__stcg) __CUJIT_FN(__stcs) __CUJIT_FN(__stwt)
__CUJIT_FN(__popc) __CUJIT_FN(__popcll) __CUJIT_FN(__clz) __CUJIT_FN(__clzll)
__CUJIT_FN(__ffs) __CUJIT_FN(__ffsll) __CUJIT_FN(__brev) __CUJIT_FN(__brevll)
__CUJIT_FN(__byte_perm) __CUJIT_FN(__funnelshift_l) __CUJIT_FN(__funnelshift_r)
__CUJIT_FN(__mul24) __CUJIT_FN(__umul24) __CUJIT_FN(__mulhi) __CUJIT_FN(__umulhi)
__CUJIT_FN(__mul64hi) __CUJIT_FN(__umul64hi) __CUJIT_FN(__sad) __CUJIT_FN(__usad)
__CUJIT_FN(__hadd_sat) __CUJIT_FN(__rhadd) __CUJIT_FN(__urhadd) __CUJIT_FN(__uhadd)
__CUJIT_FN(__isGlobal) __CUJIT_FN(__isShared) __CUJIT_FN(__isConstant) __CUJIT_FN(__isLocal)
__CUJIT_FN(atomicAdd) __CUJIT_FN(atomicSub) __CUJIT_FN(atomicExch) __CUJIT_FN(atomicMin)
__CUJIT_FN(atomicMax) __CUJIT_FN(atomicInc) __CUJIT_FN(atomicDec) __CUJIT_FN(atomicCAS)
__CUJIT_FN(atomicAnd) __CUJIT_FN(atomicOr) __CUJIT_FN(atomicXor) __CUJIT_FN(atomicAdd_block)
__CUJIT_FN(atomicAdd_system)
#undef __CUJIT_FN
#undef __CUJIT_OVERLOADABLE_FN
extern "C" int printf(const char*, ...);
extern "C" void* malloc(size_t);
extern "C" void free(void*);
extern "C" void* memcpy(void*, const void*, size_t);
extern "C" void* memset(void*, int, size_t);

// Built-in variables and vector types.
#define __CUJIT_VEC(T, name)                                                      \
  struct name##1 { T x; };                                                       \
  struct name##2 { T x, y; };                                                    \
  struct name##3 { T x, y, z; };                                                 \
  struct name##4 { T x, y, z, w; };                                               \
  name##1 make_##name##1(T x);                                                   \
  name##2 make_##name##2(T x, T y);                                              \
  name##3 make_##name##3(T x, T y, T z);                                         \
  name##4 make_##name##4(T x, T y, T z, T w);
__CUJIT_VEC(signed char, char) __CUJIT_VEC(unsigned char, uchar) __CUJIT_VEC(short, short)
__CUJIT_VEC(unsigned short, ushort) __CUJIT_VEC(int, int) __CUJIT_VEC(unsigned int, uint)
__CUJIT_VEC(long, long) __CUJIT_VEC(unsigned long, ulong) __CUJIT_VEC(long long, longlong)
__CUJIT_VEC(unsigned long long, ulonglong) __CUJIT_VEC(float, float)
__CUJIT_VEC(double, double)
#undef __CUJIT_VEC
struct dim3 {
  unsigned int x, y, z;
  dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1);
  dim3(uint3 v);
  operator uint3() const;
};
extern const uint3 threadIdx;
extern const uint3 blockIdx;
extern const dim3 blockDim;
extern const dim3 gridDim;
extern const int warpSize;

// half and bfloat16 as generated code gets them from cuda_fp16.h / cuda_bf16.h.
#define __CUJIT_HALF(H)                                                               \
  struct H {                                                                          \
    H() = default;                                                                    \
    H(float);                                                                         \
    H(double);                                                                        \
    H(short);                                                                         \
    H(unsigned short);                                                                \
    H(int);                                                                           \
    H(unsigned int);                                                                  \
    H(long long);                                                                     \
    H(unsigned long long);                                                            \
    operator float() const;                                                           \
    H& operator+=(const H&);                                                          \
    H& operator-=(const H&);                                                          \
    H& operator*=(const H&);                                                          \
    H& operator/=(const H&);                                                          \
    H& operator++();                                                                  \
    H& operator--();                                                                  \
    H operator++(int);                                                                \
    H operator--(int);                                                                \
    unsigned short __x;                                                               \
  };                                                                                  \
  H operator+(const H&, const H&);                                                    \
  H operator-(const H&, const H&);                                                    \
  H operator*(const H&, const H&);                                                    \
  H operator/(const H&, const H&);                                                    \
  H operator-(const H&);                                                              \
  H operator+(const H&);                                                              \
  bool operator==(const H&, const H&);                                                \
  bool operator!=(const H&, const H&);                                                \
  bool operator<(const H&, const H&);                                                 \
  bool operator>(const H&, const H&);                                                 \
  bool operator<=(const H&, const H&);                                                \
  bool operator>=(const H&, const H&);                                                \
  struct H##2 {                                                                       \
    H x, y;                                                                           \
  };
__CUJIT_HALF(__half)
__CUJIT_HALF(__nv_bfloat16)
#undef __CUJIT_HALF
typedef __half half;
typedef __half2 half2;
typedef __nv_bfloat16 nv_bfloat16;
typedef __nv_bfloat162 nv_bfloat162;

// complex<T> as the generated code defines it: members re and im, hidden friend operators
// (so a T operand converts, as in complex<float> * 2.0), free real/imag/abs/... functions.
template <class T>
struct complex {
  typedef T value_type;
  T re, im;
  complex();
  complex(T r, T i = T(0));
  template <class U> explicit complex(const complex<U>&);
  T real() const;
  T imag() const;
  complex& operator+=(const complex&);
  complex& operator-=(const complex&);
  complex& operator*=(const complex&);
  complex& operator/=(const complex&);
  friend complex operator+(const complex&, const complex&);
  friend complex operator-(const complex&, const complex&);
  friend complex operator*(const complex&, const complex&);
  friend complex operator/(const complex&, const complex&);
  friend complex operator+(const complex&, T);
  friend complex operator+(T, const complex&);
  friend complex operator-(const complex&, T);
  friend complex operator-(T, const complex&);
  friend complex operator*(const complex&, T);
  friend complex operator*(T, const complex&);
  friend complex operator/(const complex&, T);
  friend complex operator/(T, const complex&);
  friend complex operator-(const complex&);
  friend bool operator==(const complex&, const complex&);
  friend bool operator!=(const complex&, const complex&);
};
namespace thrust { using ::complex; }

// A raw (indexable) parameter, and the index object behind _ind.size().
template <class T>
struct __cujit_raw_array {
  template <class I> T& operator[](const I&) const;
  long long size() const;
  T* data() const;
  const long long* shape() const;
  const long long* strides() const;
  int ndim() const;
};
struct __cujit_indexer {
  long long size() const;
  long long get() const;
  const long long* shape() const;
  int ndim() const;
};
)PRELUDE";

}  // namespace cujit::detail
