#pragma once
// Snippets NVRTC accepts, shared by the analysis tests (clang must accept every one) and the
// NVRTC tests (which prove that NVRTC does). Placeholders resolve to float32 (T) and int32 (U).

#include <string>
#include <vector>

namespace cujit::detail::testing {

struct ElementwiseCase {
  std::string name;
  std::string in;
  std::string out;
  std::string operation;
  std::string preamble = "";
  std::string loop_prep = "";
  std::string after_loop = "";
};

struct ReductionCase {
  std::string name;
  std::string in;
  std::string out;
  std::string reduce_type;  ///< C++ type of a, b
  std::string map_expr;
  std::string reduce_expr;
  std::string post_map_expr;
  std::string identity;
  std::string preamble = "";
};

inline const std::vector<ElementwiseCase>& valid_elementwise_corpus() {
  static const std::vector<ElementwiseCase> corpus = {
      {"squared_diff", "float32 x, float32 y", "float32 z", "z = (x - y) * (x - y)"},
      {"if_else", "float32 x, float32 y", "float32 z",
       "if (x - 2 > y) { z = x * y; } else { z = x + y; }"},
      {"gaussian", "float32 x", "float32 y", "y = exp(-0.5f * x * x)"},
      {"generic", "T x, T y", "T z", "z = x + y"},
      {"raw_reverse", "raw T x", "T y", "y = x[_ind.size() - i - 1]"},
      {"fast_math", "float32 x", "float32 y", "y = __expf(x) + rsqrtf(x + 1.0f)"},
      {"max_min", "float32 x", "float32 y", "y = max(x, 0.0f) + min(x, 1.0f)"},
      {"fmaxf", "float32 x", "float32 y", "y = fmaxf(x, 0.f) * fminf(x, 2.f)"},
      {"half_arith", "float16 x, float16 y", "float16 z", "z = x * y + x"},
      {"half_convert", "float16 x", "float16 y", "y = __float2half(__half2float(x) * 2.0f)"},
      {"half_to_float", "float16 x", "float32 y", "y = __half2float(x)"},
      {"static_cast_half", "float32 x", "float16 y", "y = static_cast<half>(x)"},
      {"half_ctor", "float16 x", "float16 y", "y = x * half(2.0f)"},
      {"half_compare", "float16 x, float16 y", "bool z", "z = x < y"},
      {"half2", "float16 x", "float16 y",
       "half2 v = __halves2half2(x, x);\ny = __low2half(__hmul2(v, v));"},
      {"bf16_convert", "bfloat16 x", "bfloat16 y",
       "y = __float2bfloat16(__bfloat162float(x) + 1.0f)"},
      {"bf16_arith", "bfloat16 x, bfloat16 y", "bfloat16 z", "z = x + y"},
      {"complex_mul", "complex64 x, complex64 y", "complex64 z", "z = x * y + x"},
      {"complex_parts", "complex64 x", "float32 y",
       "y = x.real() * x.real() + x.imag() * x.imag()"},
      {"complex_scalar", "complex128 x", "complex128 y", "y = x * 2.0"},
      {"complex_ctor", "float32 x", "complex64 y", "y = complex<float>(x, -x)"},
      {"complex_abs", "complex64 x", "float32 y", "y = abs(x)"},
      {"complex_conj", "complex64 x", "complex64 y", "y = conj(x) * x"},
      {"int_ops", "int32 x", "int32 y", "y = x % 7 + (x << 2) - (x >> 1)"},
      {"int64_bits", "int64 x", "int64 y", "y = (x & 0xff) | (x ^ 3)"},
      {"popc_clz", "uint32 x", "uint32 y", "y = __popc(x) + __clz(x)"},
      {"popcll", "uint64 x", "uint64 y", "y = __popcll(x) + (x >> 32)"},
      {"bool_select", "bool m, float32 x", "float32 y", "y = m ? x : -x"},
      {"for_loop", "float32 x", "float32 y", "y = 0; for (int k = 0; k < 4; ++k) { y += x * k; }"},
      {"while_loop", "float32 x", "float32 y", "float t = x; while (t > 1.0f) t *= 0.5f; y = t;"},
      {"do_while", "int32 x", "int32 y", "int k = x; do { k /= 2; } while (k > 1); y = k;"},
      {"switch", "float32 x", "float32 y",
       "switch ((int)x) { case 0: y = 1; break; case 1: y = 2; break; default: y = 3; }"},
      {"lambda", "float32 x", "float32 y", "auto sq = [](float v) { return v * v; }; y = sq(x);"},
      {"comments", "float32 x", "float32 y",
       "y = x; // a comment\n/* a block\n   comment */ y += 1;"},
      {"multi_line", "float32 x, float32 y", "float32 z",
       "float d = x - y;\nfloat s = d * d;\nz = s;"},
      {"preamble_function", "float32 x", "float32 y", "y = sigmoid(x)",
       "__device__ float sigmoid(float v) { return 1.0f / (1.0f + expf(-v)); }"},
      {"preamble_macro", "float32 x", "float32 y", "y = SQUARE(x)",
       "#define SQUARE(v) ((v) * (v))"},
      {"preamble_macro_names_param", "float32 x", "float32 y", "y = TWICE_X",
       "#define TWICE_X (x * 2.0f)"},
      {"preamble_template", "float32 x", "float32 y", "y = clamp01(x)",
       "template <typename V>\n__device__ V clamp01(V v) {\n  return v < V(0) ? V(0) : (v > V(1) "
       "? V(1) : v);\n}"},
      {"preamble_struct", "float32 x", "float32 y", "Pair p{x, 2.0f}; y = p.sum();",
       "struct Pair {\n  float a, b;\n  __device__ float sum() const { return a + b; }\n};"},
      {"preamble_constant", "float32 x", "float32 y", "y = x * kScale",
       "__constant__ float kScale = 2.0f;"},
      {"preamble_forceinline", "float32 x", "float32 y", "y = twice(x)",
       "__device__ __forceinline__ float twice(float v) { return 2 * v; }"},
      {"preamble_restrict_ldg", "float32 x", "float32 y", "y = load(&x)",
       "__device__ float load(const float* __restrict__ p) { return __ldg(p); }"},
      {"preamble_includes_fp16", "float32 x", "float32 y", "y = __half2float(__float2half(x))",
       "#include <cuda_fp16.h>\n#include <cuda_bf16.h>"},
      {"preamble_aligned_struct", "float32 x", "float32 y", "Vec2 v{x, x}; y = v.a + v.b;",
       "struct __align__(8) Vec2 { float a, b; };"},
      {"printf", "float32 x", "float32 y", "if (i == 0) printf(\"x=%f\\n\", x);\ny = x;"},
      {"assert", "float32 x", "float32 y", "assert(x == x); y = x;"},
      {"syncthreads_shared", "float32 x", "float32 y", "y = x + tile[threadIdx.x % 32]", "",
       "__shared__ float tile[32];\nif (threadIdx.x < 32) tile[threadIdx.x] = 0;\n"
       "__syncthreads();"},
      {"loop_prep_after_loop", "float32 x", "float32 y", "local_sum += x; y = x;", "",
       "float local_sum = 0;", "if (local_sum < 0) printf(\"negative\\n\");"},
      {"shfl_sync", "float32 x", "float32 y", "y = __shfl_sync(0xffffffffu, x, 0)"},
      {"shfl_down", "float32 x", "float32 y", "y = x + __shfl_down_sync(0xffffffffu, x, 1)"},
      {"syncwarp_activemask", "float32 x", "float32 y", "y = x; __syncwarp(__activemask());"},
      {"atomic_add_raw", "float32 x", "raw float32 acc", "atomicAdd(&acc[0], x)"},
      {"ldg_raw", "raw float32 t, int32 k", "float32 y", "y = __ldg(&t[k])"},
      {"builtins", "float32 x", "float32 y",
       "y = x + threadIdx.x + blockIdx.x * blockDim.x + gridDim.x + warpSize"},
      {"raw_view", "float32 x", "float32 y", "y = _raw_x[_ind.size() - 1 - i]"},
      {"casts", "int32 x", "float32 y", "y = static_cast<float>(x) / 3 + (float)x + float(x)"},
      {"reinterpret", "float32 x", "uint32 y", "y = __float_as_uint(x)"},
      {"ternary_chain", "float32 x", "int32 y", "y = x > 0 ? 1 : x < 0 ? -1 : 0"},
      {"compound_outputs", "float32 x", "float32 y", "y = x; y += x; y *= 2; y -= 1; y /= 3;"},
      {"two_outputs", "float32 x", "float32 s, float32 c", "sincosf(x, &s, &c)"},
      {"float64_math", "float64 x", "float64 y", "y = sqrt(x) + log1p(x) + erf(x)"},
      {"int8_uint8", "int8 x", "uint8 y", "y = (unsigned char)(x < 0 ? -x : x)"},
      {"pragma_unroll", "float32 x", "float32 y",
       "float acc = 0;\n#pragma unroll\nfor (int k = 0; k < 8; ++k) acc += x;\ny = acc;"},
      {"local_array", "float32 x", "float32 y",
       "float buf[4] = {x, x, x, x}; y = buf[0] + buf[3];"},
      {"constexpr", "float32 x", "float32 y", "constexpr float kHalf = 0.5f; y = x * kHalf;"},
      {"structured_binding", "float32 x", "float32 y", "P2 p{x, 1.0f}; auto [u, v] = p; y = u + v;",
       "struct P2 { float a; float b; };"},
      {"if_constexpr", "T x", "T y",
       "if constexpr (sizeof(T) == 4) { y = x; } else { y = x * 2; }"},
      {"two_placeholders", "T x, U k", "T y", "y = x * static_cast<T>(k)"},
      {"continue_in_operation", "float32 x", "float32 y",
       "if (x < 0) { y = 0; continue; }\ny = x;"},
      {"nested_block", "float32 x", "float32 y", "{ float t = x; y = t; }"},
      {"empty_statements", "float32 x", "float32 y", "y = x;;"},
      {"literals", "int64 x", "int64 y", "y = x * 1000000007LL + 0x7fffffffLL + 1'000"},
      {"loop_var_named_i", "float32 x", "float32 y", "y = 0;\nfor (int i = 0; i < 2; ++i) y += x;"},
      {"shadowing_in_inner_block", "float32 x", "float32 y", "y = x; { float x = 1; y += x; }"},
      {"vector_types", "float32 x", "float32 y",
       "float4 v = make_float4(x, x, x, x); y = v.x + v.w;"},
      {"preamble_guard_namespace_using", "float32 x", "float32 y", "y = util::scale(x)",
       "#ifndef UTIL_GUARD\n#define UTIL_GUARD\nnamespace util {\nusing real = float;\n"
       "__device__ inline real scale(real v) { return v * 3; }\n}  // namespace util\n#endif"},
      {"preamble_multiline_macro", "float32 x, float32 y", "float32 z", "z = LERP(x, y, 0.25f)",
       "#define LERP(a, b, t) \\\n  ((a) + ((b) - (a)) * (t))"},
      {"preamble_stringize_paste", "int32 x", "int32 y",
       "int CAT(v, 1) = x; y = CAT(v, 1) + N_OF(ab);",
       "#define CAT(a, b) a##b\n#define N_OF(s) (int)sizeof(#s)"},
      {"preamble_if_0", "float32 x", "float32 y", "y = x",
       "#if 0\nthis is not C++ at all {{{\n#endif"},
      {"preamble_variadic_template", "float32 x", "float32 y", "y = sum_all(x, x, 1.0f)",
       "__device__ float sum_all() { return 0; }\n"
       "template <class H, class... R>\n"
       "__device__ float sum_all(H h, R... r) { return h + sum_all(r...); }"},
      {"preamble_enum_union", "int32 x", "int32 y",
       "Bits b; b.f = 1.0f; y = (x > 0 ? Mode::Up : Mode::Down) == Mode::Up ? (int)b.u : kNone;",
       "enum class Mode { Up, Down };\nenum { kNone = -1 };\n"
       "union Bits { float f; unsigned u; };"},
      {"preamble_operator_struct", "float32 x", "float32 y", "V2 a{x, 1}; V2 b = a + a; y = b.p;",
       "struct V2 {\n  float p, q;\n  __device__ V2 operator+(const V2& o) const { return {p + "
       "o.p, "
       "q + o.q}; }\n};"},
      {"preamble_constant_array_static_assert", "int32 x", "int32 y", "y = kTable[x & 3]",
       "__constant__ int kTable[4] = {1, 2, 4, 8};\nstatic_assert(sizeof(int) == 4, \"int\");"},
      {"preamble_dependent_names", "float32 x", "float32 y", "y = Holder<float>::get(x)",
       "template <class V> struct Holder {\n  typedef V type;\n"
       "  __device__ static typename Holder<V>::type get(V v) { return v; }\n};"},
      {"lambda_capture_decltype_auto", "float32 x", "float32 y",
       "auto add = [&](auto v) -> decltype(v + x) { return v + x; };\nauto r = add(1.0f);\ny = r;"},
      {"atomic_cas_loop", "float32 x", "raw int32 flag",
       "int old = flag[0], seen;\ndo {\n  seen = old;\n  old = atomicCAS(&flag[0], seen, seen + "
       "1);\n"
       "} while (old != seen);"},
      {"goto_label", "int32 x", "int32 y", "y = x;\nif (x > 0) goto done;\ny = -x;\ndone:;"},
      {"volatile_and_sizeof", "float32 x", "uint64 y",
       "volatile float v = x; y = sizeof(v) + alignof(double);"},
      {"half_intrinsics", "float16 x, float16 y", "float16 z",
       "z = __hmax(x, y);\nif (__hlt(x, y)) z = __hadd(z, __hneg(x));"},
      {"bf16_math", "bfloat16 x", "float32 y", "y = __bfloat162float(x) * 0.5f"},
      {"complex_accumulate_loop", "complex64 x", "complex64 y",
       "complex<float> acc(0, 0);\nfor (int k = 0; k < 3; ++k) acc = acc + x;\ny = acc;"},
      {"user_underscore_and_n_names", "float32 x", "float32 y",
       "float _tmp = _scale(x); int n = 2; y = _tmp * n;",
       "__device__ float _scale(float v) { return v * 0.5f; }"},
      {"shadow_raw_array", "raw float32 t", "float32 y", "float t = 1; y = t;"},
      {"uint_index_math", "raw float32 t", "float32 y",
       "unsigned int j = (unsigned int)(i % t.size()); y = t[j];"},
  };
  return corpus;
}

inline const std::vector<ReductionCase>& valid_reduction_corpus() {
  static const std::vector<ReductionCase> corpus = {
      {"l2norm", "T x", "T y", "float", "x * x", "a + b", "y = sqrt(a)", "0"},
      {"half_sum_of_squares", "float16 x", "float32 y", "float", "(float)x * (float)x", "a + b",
       "y = a", "0"},
      {"mean", "float32 x", "float32 y", "float", "x", "a + b",
       "y = a / (_in_ind.size() / _out_ind.size())", "0"},
      {"argmax", "float32 x", "int64 y", "ArgMax", "ArgMax{x, _J}", "better(a, b)", "y = a.k",
       "ArgMax{-3.0e38f, -1}",
       "struct ArgMax { float v; long long k; };\n"
       "__device__ ArgMax better(const ArgMax& p, const ArgMax& q) {\n"
       "  return p.v >= q.v ? p : q;\n}"},
      {"dot", "T x, T y", "T z", "float", "x * y", "a + b", "z = a", "0"},
      {"max", "float32 x", "float32 y", "float", "x", "max(a, b)", "y = a", "-3.402823466e38f"},
      {"complex_sum", "complex64 x", "complex64 y", "complex<float>", "x", "a + b", "y = a",
       "complex<float>(0, 0)"},
      {"int_min", "int32 x", "int32 y", "int", "x", "a < b ? a : b", "y = a", "2147483647"},
      {"no_identity", "float32 x", "float32 y", "float", "x", "a + b", "y = a", ""},
  };
  return corpus;
}

}  // namespace cujit::detail::testing
