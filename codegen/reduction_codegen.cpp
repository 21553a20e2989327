#include "codegen/reduction_codegen.hpp"

#include "codegen/device_support.hpp"
#include "codegen/kernel_call.hpp"
#include "codegen/reduction_abi.hpp"
#include "codegen/source_writer.hpp"

#include <algorithm>
#include <functional>
#include <set>
#include <sstream>

namespace cujit::detail {
namespace {

bool needs_fp16(const ReductionDefinition& def, const RedSpecialization& s) {
  for (const RedParam& p : s.params) {
    if (p.dtype == DType::Float16 || p.dtype == DType::BFloat16) return true;
  }
  return mentions_fp16(s.reduce_ctype) || mentions_fp16(def.preamble);
}

// Shuffles and the block reduction; the accumulator type is _cj_Acc (init, add, merge).
constexpr const char* kReduceSupport = R"CUJIT(
template <class T> __device__ __forceinline__ T _cj_shfl_xor(const T& v, int mask) {
  constexpr int W = (sizeof(T) + 3) / 4;
  unsigned w[W];
  memcpy(w, &v, sizeof(T));
#pragma unroll
  for (int i = 0; i < W; ++i) w[i] = __shfl_xor_sync(0xffffffffu, w[i], mask);
  T r;
  memcpy(&r, w, sizeof(T));
  return r;
}
// Butterfly over groups of G consecutive lanes; every lane of the warp must take part. The
// combination order is fixed, so results are the same bits on every run.
template <int G> __device__ __forceinline__ void _cj_group_reduce(_cj_Acc& acc) {
#pragma unroll
  for (int m = G / 2; m > 0; m >>= 1) acc.merge(_cj_shfl_xor(acc, m));
}
// The block's combined value, valid in thread 0; blockDim.x is a multiple of 32. Ends with a
// barrier so that it can be called again in a loop.
__device__ __forceinline__ _cj_Acc _cj_block_reduce(_cj_Acc acc) {
  __shared__ __align__(16) unsigned char _cj_smem[32 * sizeof(_cj_Acc)];
  _cj_Acc* sm = reinterpret_cast<_cj_Acc*>(_cj_smem);
  _cj_group_reduce<32>(acc);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) sm[warp] = acc;
  __syncthreads();
  if (warp == 0) {
    _cj_Acc v;
    v.init();
    if (lane < (int)(blockDim.x >> 5)) v = sm[lane];
    _cj_group_reduce<32>(v);
    acc = v;
  }
  __syncthreads();
  return acc;
}
)CUJIT";

}  // namespace

namespace {

// The source of one specialisation, written section by section into `w`: the members are
// what every section shares (the definition, the specialisation and the names derived from
// them), the methods are the sections and the helpers that write kernel code.
class ReductionSource {
 public:
  ReductionSource(const ReductionDefinition& def, const RedSpecialization& s)
      : def(def),
        s(s),
        file(def.name + ".cu"),
        I(s.index64 ? "long long" : "int"),
        IX(s.segmented ? "long long" : I),
        n_in(def.in.size()),
        n_out(def.out.size()),
        total(static_cast<int>(n_in + n_out)),
        lin(reduction_layout_inputs(def, s)),
        lout(reduction_layout_outputs(def)),
        NA(std::max<int>(1, static_cast<int>(lin.size()))),
        NB(std::max<int>(1, static_cast<int>(lout.size()))),
        V(std::to_string(s.vec)),
        len_(s.segmented ? "_cj_sl" : "L.n_red"),
        w(file) {
    for (int k : lin) {
      if (s.params[k].used) loaded.push_back(k);
    }
  }

  // The sections, in the order of the generated file.
  void header();
  void accumulator();
  void map_function();
  void post_function();
  void layout_helpers();
  void first_pass();
  void second_pass();
  SourceProgram program() const;

 private:
  const Param& param(int k) const {
    return k < static_cast<int>(n_in) ? def.in[k] : def.out[k - n_in];
  }
  int in_slot(int k) const {
    for (std::size_t a = 0; a < lin.size(); ++a) {
      if (lin[a] == k) return static_cast<int>(a);
    }
    return -1;
  }
  int out_slot(int j) const {
    for (std::size_t b = 0; b < lout.size(); ++b) {
      if (lout[b] == j) return static_cast<int>(b);
    }
    return -1;
  }
  std::string T_of(int k) const { return cuda_type(s.params[k].dtype); }
  static std::string id(int k) { return std::to_string(k); }
  std::string divide(const std::string& value, const std::string& group,
                     const std::string& d) const {
    if (s.index64) return value + " / L." + group + "_shape[" + d + "]";
    return "(" + I + ")_cj_div((unsigned)" + value + ", L." + group + "_magic[" + d + "], L." +
           group + "_shift[" + d + "])";
  }

  std::string kernel_params() const;
  void prologue();
  void post(const std::string& indent, const std::string& o, const std::string& acc);
  std::string map_call(const std::function<std::string(int)>& element, const std::string& j) const;
  void bases(const std::string& indent, const std::string& o);
  void segment_range(const std::string& indent, const std::string& o);
  void loop(const std::string& indent, const std::string& first, const std::string& end,
            const std::string& step, bool vec, bool unrolled);
  void loop_body(const std::string& ind, int unroll, bool guarded, bool vec);
  void segment(const std::string& indent, const std::string& begin, const std::string& end,
               const std::string& t, const std::string& threads);
  void peeled_row(const std::string& indent, const std::string& t, const std::string& threads);

  void segments_pass();
  void rows_block_pass();
  void rows_loads_pass();
  void rows_loads_fetch(const std::string& G, const std::string& R, const std::string& P,
                        const std::string& row);
  void rows_loads_accumulate(const std::string& G, const std::string& R, const std::string& P,
                             const std::string& row);
  void rows_group_pass();
  void columns_pass();
  void folded_columns_pass();
  void rows_staged_pass();
  void stage_buffers();
  void columns_vector_body(const std::string& ind, int unroll, const std::string& step);
  void columns_combine(bool split, const std::string& G, const std::string& NV);
  void columns_finish(const std::string& ind, const std::string& k, const std::string& a);
  void second_pass_column_slices();
  void second_pass_column_threads();
  void second_pass_blocks();

  const ReductionDefinition& def;
  const RedSpecialization& s;
  const std::string file;
  const std::string I;   // the index type
  const std::string IX;  // _in_ind's and _out_ind's: segment length x count may pass 2^31
  const std::size_t n_in, n_out;
  const int total;
  const std::vector<int> lin;   // layout inputs
  const std::vector<int> lout;  // layout outputs
  const int NA, NB;             // max(1, layout inputs / outputs): the offset arrays' extents
  const std::string V;          // elements per vector
  std::vector<int> loaded;      // inputs that are loaded: used, non-raw, non-scalar
  std::string head_;            // peeled rows: the head's length, where vectors start (else empty)
  const std::string len_;       // a row's (segment's) length where bases() was written
  SourceWriter w;
};

// The banner, the includes, the support code, the placeholders' typedefs, the preamble and
// the reduce type.
void ReductionSource::header() {
  w << "// cujit reduction kernel '" + def.name + "': " + s.key() + "\n";
  if (needs_fp16(def, s)) w << std::string(fp16_includes());
  w << std::string(device_support_source());
  w << placeholder_typedefs(ParamList(def.in, def.out), s.params, "");
  if (!def.preamble.empty()) w.snippet("preamble", def.preamble, "");
  w << "typedef " + s.reduce_ctype + " _cj_R;\n";
}

// The identity, the reduce function, the accumulator _cj_Acc and the block reduction.
void ReductionSource::accumulator() {
  const bool has_identity = def.has_identity();
  if (has_identity) {
    w << "__device__ __forceinline__ _cj_R _cj_identity() {\n  return _cj_R(\n";
    w.snippet("identity", def.identity, "");
    w << "  );\n}\n";
  }
  w << "__device__ __forceinline__ _cj_R _cj_reduce(const _cj_R& a, const _cj_R& b) {\n"
       "  return (\n";
  w.snippet("reduce_expr", def.reduce_expr, "");
  w << "  );\n}\n";
  if (has_identity) {
    w << "struct _cj_Acc {\n  _cj_R v;\n"
         "  __device__ __forceinline__ void init() { v = _cj_identity(); }\n"
         "  __device__ __forceinline__ void add(const _cj_R& b) { v = _cj_reduce(v, b); }\n"
         "  __device__ __forceinline__ void merge(const _cj_Acc& o) { add(o.v); }\n};\n";
  } else {
    // Without an identity an accumulator starts empty; the first value replaces it.
    w << "struct _cj_Acc {\n  _cj_R v;\n  bool has;\n"
         "  __device__ __forceinline__ void init() { has = false; }\n"
         "  __device__ __forceinline__ void add(const _cj_R& b) {\n"
         "    v = has ? _cj_reduce(v, b) : b;\n    has = true;\n  }\n"
         "  __device__ __forceinline__ void merge(const _cj_Acc& o) { if (o.has) add(o.v); }\n"
         "};\n";
  }
  w << "static_assert(sizeof(_cj_Acc) <= " + std::to_string(reduction_partial_bytes(s)) +
           ", \"cujit: the reduce type is larger than " +
           std::to_string(reduction_partial_bytes(s) - 8) + " bytes\");\n";
  w << kReduceSupport;
}

// The map: inputs as elements (only the used ones), raw arrays, _raw_ views, indices.
void ReductionSource::map_function() {
  std::string map_params;
  for (int k = 0; k < static_cast<int>(n_in); ++k) {
    const Param& p = param(k);
    const RedParam& e = s.params[k];
    const std::string T = T_of(k);
    if (p.raw) {
      map_params += "const _cj_RawArray<" + T + ", " + I + ", " +
                    (e.raw_contiguous ? "true" : "false") + ">& " + p.name + ", ";
    } else if (e.scalar) {
      if (e.used) map_params += "const " + T + " " + p.name + ", ";
    } else {
      if (e.used) map_params += "const " + T + "& " + p.name + ", ";
      if (e.raw_view_used) {
        map_params += "const _cj_RawArray<" + T + ", " + I + ", true>& _raw_" + p.name + ", ";
      }
    }
  }
  map_params += "const " + I + " _J, const _cj_Indexer<" + IX + "> _in_ind, const _cj_Indexer<" +
                IX + "> _out_ind";
  w << "__device__ __forceinline__ _cj_R _cj_map(" + map_params + ") {\n  return (\n";
  w.snippet("map_expr", def.map_expr, "");
  w << "  );\n}\n";
}

// The post-map: the combined value, outputs as elements, raw arrays, _raw_ views.
void ReductionSource::post_function() {
  std::string post_params = "const _cj_R& a, ";
  for (std::size_t j = 0; j < n_out; ++j) {
    const int k = static_cast<int>(n_in + j);
    const Param& p = param(k);
    const std::string T = T_of(k);
    if (p.raw) {
      post_params += "const _cj_RawArray<" + T + ", " + I + ", " +
                     (s.params[k].raw_contiguous ? "true" : "false") + ">& " + p.name + ", ";
    } else {
      post_params += T + "& " + p.name + ", ";
      if (s.params[k].raw_view_used) {
        post_params += "const _cj_RawArray<" + T + ", " + I + ", true>& _raw_" + p.name + ", ";
      }
    }
  }
  post_params += "const _cj_Indexer<" + IX + "> _in_ind, const _cj_Indexer<" + IX + "> _out_ind";
  w << "__device__ __forceinline__ void _cj_post(" + post_params + ") {\n";
  w.snippet("post_map_expr", def.post_map_expr, ";");
  w << "}\n";
}

// The layout and the offset helpers.
void ReductionSource::layout_helpers() {
  w << reduction_layout_abi(def, s).declaration();
  w << "__device__ __forceinline__ void _cj_out_offsets(const _cj_RL& L, " + I + " o, " + I +
           "* io, " + I + "* oo) {\n";
  w << "#pragma unroll\n  for (int a = 0; a < " + std::to_string(NA) +
           "; ++a) io[a] = 0;\n#pragma unroll\n  for (int b = 0; b < " + std::to_string(NB) +
           "; ++b) oo[b] = 0;\n";
  w << "#pragma unroll\n  for (int d = " + std::to_string(s.out_ndim - 1) + "; d > 0; --d) {\n";
  w << "    const " + I + " q = " + divide("o", "out", "d") + ";\n    const " + I +
           " c = o - q * L.out_shape[d];\n";
  w << "#pragma unroll\n    for (int a = 0; a < " + std::to_string(NA) +
           "; ++a) io[a] += c * L.in_out[a][d];\n";
  w << "#pragma unroll\n    for (int b = 0; b < " + std::to_string(NB) +
           "; ++b) oo[b] += c * L.out_out[b][d];\n    o = q;\n  }\n";
  w << "#pragma unroll\n  for (int a = 0; a < " + std::to_string(NA) +
           "; ++a) io[a] += o * L.in_out[a][0];\n";
  w << "#pragma unroll\n  for (int b = 0; b < " + std::to_string(NB) +
           "; ++b) oo[b] += o * L.out_out[b][0];\n}\n";
  w << "__device__ __forceinline__ void _cj_red_offsets(const _cj_RL& L, " + I + " j, " + I +
           "* ro) {\n";
  w << "#pragma unroll\n  for (int a = 0; a < " + std::to_string(NA) + "; ++a) ro[a] = 0;\n";
  w << "#pragma unroll\n  for (int d = " + std::to_string(s.red_ndim - 1) + "; d > 0; --d) {\n";
  w << "    const " + I + " q = " + divide("j", "red", "d") + ";\n    const " + I +
           " c = j - q * L.red_shape[d];\n";
  w << "#pragma unroll\n    for (int a = 0; a < " + std::to_string(NA) +
           "; ++a) ro[a] += c * L.in_red[a][d];\n    j = q;\n  }\n";
  w << "#pragma unroll\n  for (int a = 0; a < " + std::to_string(NA) +
           "; ++a) ro[a] += j * L.in_red[a][0];\n}\n";
  if (s.segmented) {
    // Segment o's begin and length, the offsets clamped to the input [0, n): no offset reads
    // outside it, and an end before its begin gives an empty segment.
    w << "template <class OT> __device__ __forceinline__ void _cj_seg_range(" + I + " o, " + I +
             " n, const OT* b, long long bs, const OT* e, long long es, " + I + "& sb, " + I +
             "& sl) {\n";
    w << "  long long lo = *reinterpret_cast<const OT*>(reinterpret_cast<const char*>(b) + "
         "(long long)o * bs);\n";
    w << "  long long hi = *reinterpret_cast<const OT*>(reinterpret_cast<const char*>(e) + "
         "(long long)o * es);\n";
    w << "  lo = lo < 0 ? 0 : (lo > (long long)n ? (long long)n : lo);\n";
    w << "  hi = hi < lo ? lo : (hi > (long long)n ? (long long)n : hi);\n";
    w << "  sb = (" + I + ")lo;\n  sl = (" + I + ")(hi - lo);\n}\n";
  }
}

// Kernel parameters (both passes take the same list).
std::string ReductionSource::kernel_params() const {
  return abi_signature(reduction_parameters(def, s)) + ")";
}

// Declarations every kernel starts with.
void ReductionSource::prologue() {
  w << "  const _cj_RL& L = _cj_L;\n  (void)L;\n";
  // Segmented: set per segment (segment_range) to its length times the segments, so that
  // CuPy's `_in_ind.size() / _out_ind.size()` is the segment's length.
  if (s.segmented) {
    w << "  _cj_Indexer<long long> _in_ind{(long long)L.n_out * L.n_red};\n  (void)_in_ind;\n";
  } else {
    w << "  const _cj_Indexer<" + I + "> _in_ind{L.n_out * L.n_red};\n";
  }
  w << "  const _cj_Indexer<" + IX + "> _out_ind{L.n_out};\n";
  for (int k = 0; k < total; ++k) {
    const Param& p = param(k);
    const RedParam& e = s.params[k];
    const std::string T = T_of(k);
    if (p.raw) {
      w << "  const _cj_RawArray<" + T + ", " + I + ", " + (e.raw_contiguous ? "true" : "false") +
               "> _cj_raw" + id(k) + "{_cj_p" + id(k) + ", _cj_size" + id(k) + ", _cj_stride" +
               id(k) + "};\n";
    } else if (e.raw_view_used && !e.scalar) {
      const bool input = k < static_cast<int>(n_in);
      w << "  const _cj_RawArray<" + T + ", " + I + ", true> _cj_rv" + id(k) + "{(" + T +
               "*)_cj_p" + id(k) + ", " +
               (input ? (s.segmented ? "L.n_red" : "L.n_out * L.n_red") : "L.n_out") + ", sizeof(" +
               T + ")};\n";
    }
  }
}

// Runs the post-map for output index `o` with the combined accumulator `acc`.
void ReductionSource::post(const std::string& indent, const std::string& o,
                           const std::string& acc) {
  w << indent + "{\n" + indent + "  " + I + " _cj_io[" + std::to_string(NA) + "], _cj_oo[" +
           std::to_string(NB) + "];\n";
  w << indent + "  _cj_out_offsets(L, " + o + ", _cj_io, _cj_oo);\n";
  std::string args = acc + ".v, ";
  for (std::size_t j = 0; j < n_out; ++j) {
    const int k = static_cast<int>(n_in + j);
    const Param& p = param(k);
    if (p.raw) {
      args += "_cj_raw" + id(k) + ", ";
    } else {
      args += "*reinterpret_cast<" + T_of(k) + "*>(_cj_p" + id(k) + " + _cj_oo[" +
              std::to_string(out_slot(static_cast<int>(j))) + "]), ";
      if (s.params[k].raw_view_used) args += "_cj_rv" + id(k) + ", ";
    }
  }
  w << indent + "  _cj_post(" + args + "_in_ind, _out_ind);\n" + indent + "}\n";
}

// The map's arguments for one element: `element(k)` is the expression of loaded input k.
std::string ReductionSource::map_call(const std::function<std::string(int)>& element,
                                      const std::string& j) const {
  std::string args;
  for (int k = 0; k < static_cast<int>(n_in); ++k) {
    const Param& p = param(k);
    const RedParam& e = s.params[k];
    if (p.raw) {
      args += "_cj_raw" + id(k) + ", ";
    } else if (e.scalar) {
      if (e.used) args += "_cj_s" + id(k) + ", ";
    } else {
      if (e.used) args += element(k) + ", ";
      if (e.raw_view_used) args += "_cj_rv" + id(k) + ", ";
    }
  }
  return "_cj_map(" + args + "(" + I + ")(" + j + "), _in_ind, _out_ind)";
}

// Segment bases: byte offsets of output `o` in every input, into _cj_base.
void ReductionSource::bases(const std::string& indent, const std::string& o) {
  w << indent + I + " _cj_base[" + std::to_string(NA) + "], _cj_unused[" + std::to_string(NB) +
           "];\n";
  w << indent + "_cj_out_offsets(L, " + o + ", _cj_base, _cj_unused);\n";
  w << indent + "(void)_cj_base;\n";
  if (s.segmented) {
    segment_range(indent, o);
    w << indent + "#pragma unroll\n" + indent + "for (int a = 0; a < " + std::to_string(NA) +
             "; ++a) _cj_base[a] += _cj_sb * L.in_red[a][0];\n";
  }
}

// Segmented: segment o's begin and length into _cj_sb and _cj_sl, and _in_ind for it.
void ReductionSource::segment_range(const std::string& indent, const std::string& o) {
  const std::string b = std::to_string(total), e = std::to_string(total + 1);
  w << indent + I + " _cj_sb, _cj_sl;\n";
  w << indent + "_cj_seg_range(" + o + ", L.n_red, _cj_p" + b + ", _cj_stride" + b + ", _cj_p" + e +
           ", _cj_stride" + e + ", _cj_sb, _cj_sl);\n";
  w << indent + "_in_ind.n = (long long)_cj_sl * L.n_out;\n";
  w << indent + "(void)_cj_sb;\n";
}

// Accumulates elements first, first + step, ... < end into `acc`; with `vec`, the indices
// count vectors of V elements. Unrolled so that several loads per input are in flight.
void ReductionSource::loop(const std::string& indent, const std::string& first,
                           const std::string& end, const std::string& step, bool vec,
                           bool unrolled) {
  const std::string in = indent + "  ";
  w << indent + "{\n" + in + "const " + I + " _cj_end = " + end + ", _cj_step = " + step + ";\n";
  w << in + I + " _cj_j = " + first + ";\n";
  if (unrolled) {
    const int unroll = vec ? kUnrollVector : kUnrollScalar;
    const std::string UN = std::to_string(unroll);
    w << in + "for (; _cj_j + " + std::to_string(unroll - 1) +
             " * _cj_step < _cj_end; _cj_j += " + UN + " * _cj_step) {\n";
    loop_body(in + "  ", unroll, false, vec);
    w << in + "}\n";
    if (s.strategy == RedStrategy::Rows) {
      // Fewer than `unroll` elements remain for this thread: one guarded pass keeps their
      // loads in flight together (short rows are all remainder).
      w << in + "{\n";
      loop_body(in + "  ", unroll, true, vec);
      w << in + "}\n";
    } else {
      // Long segments: the remainder is a sliver; a plain loop compiles faster.
      w << in + "for (; _cj_j < _cj_end; _cj_j += _cj_step) {\n";
      loop_body(in + "  ", 1, false, vec);
      w << in + "}\n";
    }
  } else {
    w << in + "for (; _cj_j < _cj_end; _cj_j += _cj_step) {\n";
    loop_body(in + "  ", 1, false, vec);
    w << in + "}\n";
  }
  w << indent + "}\n";
}

// One pass of loop() over `unroll` elements: every load first, then the accumulation in
// order; `guarded` checks each index against the end (the remainder pass).
void ReductionSource::loop_body(const std::string& ind, int unroll, bool guarded, bool vec) {
  const std::string UU = std::to_string(unroll);
  const std::string guard = guarded ? "if (_cj_q < _cj_end) " : "";
  for (int k : loaded) {
    const std::string T = T_of(k);
    if (vec) {
      w << ind + "_cj_Vec<" + T + ", " + V + "> _cj_x" + id(k) + "[" + UU + "];\n";
    } else {
      w << ind + T + " _cj_x" + id(k) + "[" + UU + "];\n";
    }
  }
  w << ind + "#pragma unroll\n" + ind + "for (int _cj_u = 0; _cj_u < " + UU + "; ++_cj_u) {\n";
  w << ind + "  const " + I + " _cj_q = _cj_j + _cj_u * _cj_step;\n";
  if (!loaded.empty()) w << ind + "  " + guard + "{\n";
  if (!s.red_contiguous && !loaded.empty()) {
    w << ind + "    " + I + " _cj_ro[" + std::to_string(NA) + "];\n";
    w << ind + "    _cj_red_offsets(L, _cj_q, _cj_ro);\n";
  }
  for (int k : loaded) {
    const std::string T = T_of(k);
    const std::string slot = std::to_string(in_slot(k));
    if (vec) {
      const std::string head =
          head_.empty() ? "" : " + " + head_ + " * (" + I + ")sizeof(" + T + ")";
      w << ind + "    _cj_x" + id(k) + "[_cj_u] = reinterpret_cast<const _cj_Vec<" + T + ", " + V +
               ">*>(_cj_p" + id(k) + " + _cj_base[" + slot + "]" + head + ")[_cj_q];\n";
    } else if (s.red_contiguous) {
      w << ind + "    _cj_x" + id(k) + "[_cj_u] = reinterpret_cast<const " + T + "*>(_cj_p" +
               id(k) + " + _cj_base[" + slot + "])[_cj_q];\n";
    } else {
      w << ind + "    _cj_x" + id(k) + "[_cj_u] = *reinterpret_cast<const " + T + "*>(_cj_p" +
               id(k) + " + _cj_base[" + slot + "] + _cj_ro[" + slot + "]);\n";
    }
  }
  if (!loaded.empty()) w << ind + "  }\n";
  w << ind + "}\n";
  w << ind + "#pragma unroll\n" + ind + "for (int _cj_u = 0; _cj_u < " + UU + "; ++_cj_u) {\n";
  w << ind + "  const " + I + " _cj_q = _cj_j + _cj_u * _cj_step;\n";
  if (vec) {
    w << ind + "  " + guard + "{\n";
    w << ind + "#pragma unroll\n" + ind + "    for (int _cj_k = 0; _cj_k < " + V + "; ++_cj_k)\n";
    w << ind + "      acc.add(" +
             map_call([&](int k) { return "_cj_x" + id(k) + "[_cj_u].v[_cj_k]"; },
                      (head_.empty() ? "" : head_ + " + ") + "_cj_q * " + V + " + _cj_k") +
             ");\n";
    w << ind + "  }\n";
  } else {
    w << ind + "  " + guard + "acc.add(" +
             map_call([&](int k) { return "_cj_x" + id(k) + "[_cj_u]"; }, "_cj_q") + ");\n";
  }
  w << ind + "}\n";
}

// Elements [begin, end) of one segment, thread `t` of `threads`, vectorised when possible
// (begin is then a multiple of V).
void ReductionSource::segment(const std::string& indent, const std::string& begin,
                              const std::string& end, const std::string& t,
                              const std::string& threads) {
  if (s.vec > 1) {
    w << indent + "{\n" + indent + "  const " + I + " _cj_vb = (" + begin + ") / " + V +
             ", _cj_ve = (" + end + ") / " + V + ";\n";
    loop(indent + "  ", "_cj_vb + " + t, "_cj_ve", threads, true, true);
    // Fewer than V elements at the end of the segment.
    loop(indent + "  ", "_cj_ve * " + V + " + " + t, end, threads, false, false);
    w << indent + "}\n";
  } else {
    loop(indent, begin + " + " + t, end, threads, false, true);
  }
}

// A whole row of a peeled specialisation: scalars up to the first loaded input's 16-byte
// boundary (the others are misaligned alike), aligned vectors, then the scalars left over.
void ReductionSource::peeled_row(const std::string& indent, const std::string& t,
                                 const std::string& threads) {
  const int k = loaded.front();
  const std::string in = indent + "  ";
  w << indent + "{\n" + in + "const " + I + " _cj_h = (" + I + ")min((unsigned long long)" + len_ +
           ", ((16ull - (reinterpret_cast<unsigned long "
           "long>(_cj_p" +
           id(k) + " + _cj_base[" + std::to_string(in_slot(k)) + "]) & 15ull)) & 15ull) / sizeof(" +
           T_of(k) + "));\n";
  loop(in, t, "_cj_h", threads, false, false);
  w << in + "const " + I + " _cj_ve = (" + len_ + " - _cj_h) / " + V + ";\n";
  head_ = "_cj_h";
  loop(in, t, "_cj_ve", threads, true, true);
  head_.clear();
  loop(in, "_cj_h + _cj_ve * " + V + " + " + t, len_, threads, false, false);
  w << indent + "}\n";
}

// The first kernel (or the only one): the strategy's walk over (output, reduced index) pairs.
void ReductionSource::first_pass() {
  const std::string launch_bounds = "__launch_bounds__(" + std::to_string(s.block_size) + ") ";
  w << "extern \"C\" __global__ void " + launch_bounds + reduction_symbol(def) + "(" +
           kernel_params() + " {\n";
  if (s.two_pass) {
    // Programmatic dependent launch (sm_90+, when the host launches the second pass with
    // programmatic stream serialisation): the second pass may be scheduled as soon as every
    // block of this one has started, hiding its launch latency; it waits for our results.
    w << "#if __CUDA_ARCH__ >= 900\n  asm volatile(\"griddepcontrol.launch_dependents;\");\n"
         "#endif\n";
  }
  prologue();
  switch (s.strategy) {
    case RedStrategy::Segments:
      segments_pass();
      break;
    case RedStrategy::Rows:
      if (s.staged) {
        rows_staged_pass();
      } else if (s.group >= 32 && s.group == s.block_size) {
        rows_block_pass();
      } else if (s.row_loads > 0) {
        rows_loads_pass();
      } else {
        rows_group_pass();
      }
      break;
    case RedStrategy::Columns:
      columns_pass();
      break;
  }
  w << "}\n";
}

// Segments: blockIdx.x takes a chunk of the segment of output blockIdx.y (and on).
void ReductionSource::segments_pass() {
  w << "  for (" + I + " o = blockIdx.y; o < L.n_out; o += gridDim.y) {\n";
  bases("    ", "o");
  if (s.segmented) {
    // Each segment's chunks: whole tiles, as many as the segment needs over L.nsplit blocks.
    // The last blocks may start past its end (and past the 32-bit index range): clamped in
    // 64 bits.
    const std::string tile = std::to_string(reduction_tile(s));
    w << "    const " + I + " _cj_chunk = ((_cj_sl + L.nsplit - 1) / L.nsplit + " + tile +
             " - 1) / " + tile + " * " + tile + ";\n";
    w << "    const long long _cj_cb64 = (long long)blockIdx.x * _cj_chunk;\n";
    w << "    const " + I + " _cj_cb = _cj_cb64 < _cj_sl ? (" + I + ")_cj_cb64 : _cj_sl;\n";
    w << "    const " + I + " _cj_ce = _cj_cb64 + _cj_chunk < _cj_sl ? (" + I +
             ")(_cj_cb64 + _cj_chunk) : _cj_sl;\n";
  } else {
    w << "    const " + I + " _cj_cb = (" + I + ")blockIdx.x * L.chunk;\n";
    w << "    const " + I + " _cj_ce = _cj_cb + L.chunk < L.n_red ? _cj_cb + L.chunk : L.n_red;\n";
  }
  w << "    _cj_Acc acc;\n    acc.init();\n";
  segment("    ", "_cj_cb", "_cj_ce", "(" + I + ")threadIdx.x", "(" + I + ")blockDim.x");
  w << "    acc = _cj_block_reduce(acc);\n    if (threadIdx.x == 0) {\n";
  if (s.two_pass) {
    w << "      _cj_part[o * L.nsplit + blockIdx.x] = acc;\n";
  } else {
    post("      ", "o", "acc");
  }
  w << "    }\n  }\n";
}

// Rows with a block per row.
void ReductionSource::rows_block_pass() {
  w << "  for (" + I + " o = blockIdx.x; o < L.n_out; o += gridDim.x) {\n";
  bases("    ", "o");
  w << "    _cj_Acc acc;\n    acc.init();\n";
  const std::string t = "(" + I + ")threadIdx.x", threads = "(" + I + ")blockDim.x";
  if (s.peel && !loaded.empty()) {
    peeled_row("    ", t, threads);
  } else {
    segment("    ", "(" + I + ")0", len_, t, threads);
  }
  w << "    acc = _cj_block_reduce(acc);\n    if (threadIdx.x == 0) {\n";
  post("      ", "o", "acc");
  w << "    }\n  }\n";
}

// Short rows: each lane loads at most row_loads vectors (or elements) of a row, and a group
// takes rows_per_pass rows per pass so that their loads are in flight together.
void ReductionSource::rows_loads_pass() {
  const std::string G = std::to_string(s.group);
  const std::string R = std::to_string(s.rows_per_pass);
  const std::string P = std::to_string(s.row_loads);
  const std::string row = "_cj_w0 + _cj_r * _cj_gstep + (threadIdx.x & 31u) / " + G;
  w << "  const int _cj_lane = threadIdx.x & " + std::to_string(s.group - 1) + ";\n";
  w << "  const " + I + " _cj_rpb = blockDim.x / " + G + ";\n";
  w << "  const " + I + " _cj_gstep = (" + I + ")gridDim.x * _cj_rpb;\n";
  w << "  const " + I + " _cj_nv = L.n_red" + (s.vec > 1 ? " / " + V : std::string()) + ";\n";
  // The loop is uniform across each warp so that every lane takes part in shuffles.
  w << "  for (" + I + " _cj_w0 = (" + I + ")blockIdx.x * _cj_rpb + (threadIdx.x & ~31u) / " + G +
           "; _cj_w0 < L.n_out; _cj_w0 += " + R + " * _cj_gstep) {\n";
  w << "    _cj_Acc acc[" + R + "];\n";
  w << "    " + I + " _cj_bases[" + R + "][" + std::to_string(NA) + "];\n";
  for (int k : loaded) {
    const std::string T = T_of(k);
    w << "    " + (s.vec > 1 ? "_cj_Vec<" + T + ", " + V + ">" : T) + " _cj_x" + id(k) + "[" + R +
             "][" + P + "];\n";
  }
  rows_loads_fetch(G, R, P, row);
  rows_loads_accumulate(G, R, P, row);
  w << "#pragma unroll\n    for (int _cj_r = 0; _cj_r < " + R + "; ++_cj_r) {\n";
  w << "      _cj_group_reduce<" + G + ">(acc[_cj_r]);\n";
  w << "      const " + I + " o = " + row + ";\n";
  w << "      if (o < L.n_out && _cj_lane == 0) {\n";
  post("        ", "o", "acc[_cj_r]");
  w << "      }\n    }\n  }\n";
}

// rows_loads_pass: every load of the group's rows, into _cj_x<k>[row][load].
void ReductionSource::rows_loads_fetch(const std::string& G, const std::string& R,
                                       const std::string& P, const std::string& row) {
  w << "#pragma unroll\n    for (int _cj_r = 0; _cj_r < " + R + "; ++_cj_r) {\n";
  w << "      acc[_cj_r].init();\n";
  w << "      const " + I + " o = " + row + ";\n";
  w << "      if (o < L.n_out) {\n";
  w << "        " + I + " _cj_unused[" + std::to_string(NB) + "];\n";
  w << "        _cj_out_offsets(L, o, _cj_bases[_cj_r], _cj_unused);\n";
  w << "#pragma unroll\n        for (int _cj_u = 0; _cj_u < " + P + "; ++_cj_u) {\n";
  w << "          const " + I + " _cj_q = _cj_lane + _cj_u * " + G + ";\n";
  w << "          if (_cj_q < _cj_nv) {\n";
  if (!s.red_contiguous && !loaded.empty()) {
    w << "            " + I + " _cj_ro[" + std::to_string(NA) + "];\n";
    w << "            _cj_red_offsets(L, _cj_q, _cj_ro);\n";
  }
  for (int k : loaded) {
    const std::string T = T_of(k);
    const std::string slot = std::to_string(in_slot(k));
    const std::string at = "_cj_p" + id(k) + " + _cj_bases[_cj_r][" + slot + "]";
    std::string load;
    if (s.vec > 1) {
      load = "reinterpret_cast<const _cj_Vec<" + T + ", " + V + ">*>(" + at + ")[_cj_q]";
    } else if (s.red_contiguous) {
      load = "reinterpret_cast<const " + T + "*>(" + at + ")[_cj_q]";
    } else {
      load = "*reinterpret_cast<const " + T + "*>(" + at + " + _cj_ro[" + slot + "])";
    }
    w << "            _cj_x" + id(k) + "[_cj_r][_cj_u] = " + load + ";\n";
  }
  w << "          }\n        }\n      }\n    }\n";
}

// rows_loads_pass: accumulate in index order: the vectors, then (vectorised rows) the tail
// elements.
void ReductionSource::rows_loads_accumulate(const std::string& G, const std::string& R,
                                            const std::string& P, const std::string& row) {
  w << "#pragma unroll\n    for (int _cj_r = 0; _cj_r < " + R + "; ++_cj_r) {\n";
  w << "      const " + I + " o = " + row + ";\n";
  w << "      if (o < L.n_out) {\n";
  w << "#pragma unroll\n        for (int _cj_u = 0; _cj_u < " + P + "; ++_cj_u) {\n";
  w << "          const " + I + " _cj_q = _cj_lane + _cj_u * " + G + ";\n";
  if (s.vec > 1) {
    w << "          if (_cj_q < _cj_nv) {\n";
    w << "#pragma unroll\n            for (int _cj_k = 0; _cj_k < " + V + "; ++_cj_k)\n";
    w << "              acc[_cj_r].add(" +
             map_call([&](int k) { return "_cj_x" + id(k) + "[_cj_r][_cj_u].v[_cj_k]"; },
                      (head_.empty() ? "" : head_ + " + ") + "_cj_q * " + V + " + _cj_k") +
             ");\n";
    w << "          }\n        }\n";
    w << "        for (" + I + " _cj_j = _cj_nv * " + V +
             " + _cj_lane; _cj_j < L.n_red; _cj_j += " + G + ") {\n";
    for (int k : loaded) {
      const std::string T = T_of(k);
      w << "          const " + T + " _cj_t" + id(k) + " = reinterpret_cast<const " + T +
               "*>(_cj_p" + id(k) + " + _cj_bases[_cj_r][" + std::to_string(in_slot(k)) +
               "])[_cj_j];\n";
    }
    w << "          acc[_cj_r].add(" + map_call([&](int k) { return "_cj_t" + id(k); }, "_cj_j") +
             ");\n";
    w << "        }\n";
  } else {
    w << "          if (_cj_q < _cj_nv) acc[_cj_r].add(" +
             map_call([&](int k) { return "_cj_x" + id(k) + "[_cj_r][_cj_u]"; }, "_cj_q") + ");\n";
    w << "        }\n";
  }
  w << "      }\n    }\n";
}

// Staged rows: a block copies a tile of L.chunk whole rows of every loaded input (back to back)
// into shared memory, eight coalesced loads in flight per thread, then each thread reduces one row
// of the tile from it.
void ReductionSource::rows_staged_pass() {
  stage_buffers();
  w << "  const " + I + " _cj_rpt = L.chunk;  // rows per tile (the plan's stage_rows)\n";
  w << "  for (" + I + " _cj_r0 = (" + I + ")blockIdx.x * _cj_rpt; _cj_r0 < L.n_out; _cj_r0 += (" +
           I + ")gridDim.x * _cj_rpt) {\n";
  w << "    const " + I + " _cj_nr = L.n_out - _cj_r0 < _cj_rpt ? L.n_out - _cj_r0 : _cj_rpt;\n";
  w << "    const " + I + " _cj_span = _cj_nr * L.n_red, _cj_bs = blockDim.x;\n    {\n";
  bases("      ", "_cj_r0");
  w << "      for (" + I + " _cj_i = threadIdx.x; _cj_i < _cj_span; _cj_i += 8 * _cj_bs) {\n";
  for (int k : loaded) {
    const std::string T = T_of(k), slot = std::to_string(in_slot(k));
    w << "        " + T + " _cj_x" + id(k) + "[8];\n";
    w << "#pragma unroll\n        for (int _cj_u = 0; _cj_u < 8; ++_cj_u)\n";
    w << "          if (_cj_i + _cj_u * _cj_bs < _cj_span) _cj_x" + id(k) +
             "[_cj_u] = reinterpret_cast<const " + T + "*>(_cj_p" + id(k) + " + _cj_base[" + slot +
             "])[_cj_i + _cj_u * _cj_bs];\n";
    w << "#pragma unroll\n        for (int _cj_u = 0; _cj_u < 8; ++_cj_u)\n";
    w << "          if (_cj_i + _cj_u * _cj_bs < _cj_span) _cj_st" + id(k) +
             "[_cj_pad(_cj_i + _cj_u * _cj_bs)] = _cj_x" + id(k) + "[_cj_u];\n";
  }
  w << "      }\n    }\n    __syncthreads();\n";
  w << "    if ((" + I + ")threadIdx.x < _cj_nr) {\n";
  w << "      const " + I + " o = _cj_r0 + threadIdx.x;\n";
  w << "      const " + I + " _cj_row = (" + I + ")threadIdx.x * L.n_red;\n";
  w << "      _cj_Acc acc;\n      acc.init();\n";
  w << "      for (" + I + " _cj_j = 0; _cj_j < L.n_red; ++_cj_j)\n";
  w << "        acc.add(" +
           map_call([&](int k) { return "_cj_st" + id(k) + "[_cj_pad(_cj_row + _cj_j)]"; },
                    "_cj_j") +
           ");\n";
  post("      ", "o", "acc");
  w << "    }\n    __syncthreads();\n  }\n";
}

// The staged tile of every loaded input: _cj_st<k>, reduction_stage_capacity elements each,
// element i at _cj_pad(i): a word of padding per 32 elements, so that threads reading rows of
// a length with a large power of two in it (a sliced input's rows of 32) hit different banks.
void ReductionSource::stage_buffers() {
  const std::int64_t capacity = reduction_stage_capacity(def, s);
  const std::string cap = std::to_string(capacity + capacity / 32);
  w << "  auto _cj_pad = [](" + I + " i) { return i + (i >> 5); };\n";
  for (int k : loaded) {
    const std::string T = T_of(k);
    w << "  __shared__ __align__(16) unsigned char _cj_stb" + id(k) + "[" + cap + " * sizeof(" + T +
             ")];\n";
    w << "  " + T + "* const _cj_st" + id(k) + " = reinterpret_cast<" + T + "*>(_cj_stb" + id(k) +
             ");\n";
  }
}

// Rows with a group of lanes per row that walks the row in a loop.
void ReductionSource::rows_group_pass() {
  const std::string G = std::to_string(s.group);
  w << "  const int _cj_lane = threadIdx.x & " + std::to_string(s.group - 1) + ";\n";
  w << "  const " + I + " _cj_rpb = blockDim.x / " + G + ";\n";
  // The loop is uniform across each warp so that every lane takes part in shuffles.
  w << "  for (" + I + " _cj_w0 = (" + I + ")blockIdx.x * _cj_rpb + (threadIdx.x & ~31u) / " + G +
           "; _cj_w0 < L.n_out; _cj_w0 += (" + I + ")gridDim.x * _cj_rpb) {\n";
  w << "    const " + I + " o = _cj_w0 + (threadIdx.x & 31u) / " + G + ";\n";
  w << "    _cj_Acc acc;\n    acc.init();\n    if (o < L.n_out) {\n";
  bases("      ", "o");
  segment("      ", "(" + I + ")0", len_, "(" + I + ")_cj_lane", "(" + I + ")" + G);
  w << "    }\n    _cj_group_reduce<" + G + ">(acc);\n";
  w << "    if (o < L.n_out && _cj_lane == 0) {\n";
  post("      ", "o", "acc");
  w << "    }\n  }\n";
}

// Columns: each thread (a column of threads when split) owns V adjacent outputs and walks
// chunk blockIdx.y of the reduced axis.
void ReductionSource::columns_pass() {
  if (s.fold) {
    folded_columns_pass();
    return;
  }
  // split: G = group (< 32) thread columns per block and blockDim.x / G threads along
  // the reduced axis (few outputs: the reduced axis is split inside the block too);
  // otherwise each thread walks its column alone.
  const bool split = s.group < 32;
  const std::string G = std::to_string(s.group);
  const std::string step = split ? "_cj_rn" : "(" + I + ")1";
  if (split) {
    w << "  const int _cj_col = threadIdx.x & " + std::to_string(s.group - 1) + ";\n";
    w << "  const " + I + " _cj_rn = blockDim.x / " + G + ";\n";
    w << "  const " + I + " o = ((" + I + ")blockIdx.x * " + G + " + _cj_col) * " + V + ";\n";
  } else {
    w << "  const " + I + " o = ((" + I + ")blockIdx.x * blockDim.x + threadIdx.x) * " + V + ";\n";
    w << "  if (o >= L.n_out) return;\n";
  }
  const std::string NV = s.vec > 1 ? V : "1";
  w << "  _cj_Acc _cj_acc[" + NV + "];\n#pragma unroll\n  for (int _cj_k = 0; _cj_k < " + NV +
           "; ++_cj_k) _cj_acc[_cj_k].init();\n";
  w << (split ? "  if (o < L.n_out) {\n" : "  {\n");
  bases("  ", "o");
  w << "  const " + I + " _cj_cb = (" + I + ")blockIdx.y * L.chunk;\n";
  w << "  const " + I + " _cj_ce = _cj_cb + L.chunk < L.n_red ? _cj_cb + L.chunk : L.n_red;\n";
  const std::string first = split ? "_cj_cb + (" + I + ")(threadIdx.x / " + G + ")" : "_cj_cb";
  if (s.vec > 1) {
    w << "  " + I + " _cj_j = " + first + ";\n";
    w << "  for (; _cj_j + " + std::to_string(kUnrollVector - 1) + " * " + step +
             " < _cj_ce; _cj_j += " + std::to_string(kUnrollVector) + " * " + step + ") {\n";
    columns_vector_body("    ", kUnrollVector, step);
    w << "  }\n  for (; _cj_j < _cj_ce; _cj_j += " + step + ") {\n";
    columns_vector_body("    ", 1, step);
    w << "  }\n";
  } else {
    w << "  _cj_Acc& acc = _cj_acc[0];\n";
    loop("  ", first, "_cj_ce", step, false, true);
  }
  w << "  }\n";
  columns_combine(split, G, NV);
}

// Folded columns: thread v of a grid row takes output v % n_out and the rows of chunk
// blockIdx.y congruent to v / n_out modulo L.fold (a warp reads contiguous memory when the
// matrix is); its partial goes to slot blockIdx.y * L.fold + v / n_out of its output.
void ReductionSource::folded_columns_pass() {
  w << "  const " + I + " _cj_v = (" + I + ")blockIdx.x * blockDim.x + threadIdx.x;\n";
  w << "  if (_cj_v >= L.n_out * L.fold) return;\n";
  w << "  const " + I + " _cj_kk = _cj_v / L.n_out;\n";
  w << "  const " + I + " o = _cj_v - _cj_kk * L.n_out;\n";
  w << "  _cj_Acc acc;\n  acc.init();\n  {\n";
  bases("  ", "o");
  w << "  const " + I + " _cj_cb = (" + I + ")blockIdx.y * L.chunk;\n";
  w << "  const " + I + " _cj_ce = _cj_cb + L.chunk < L.n_red ? _cj_cb + L.chunk : L.n_red;\n";
  loop("  ", "_cj_cb + _cj_kk", "_cj_ce", "L.fold", false, true);
  w << "  }\n";
  w << "  _cj_part[((" + I + ")blockIdx.y * L.fold + _cj_kk) * L.n_out + o] = acc;\n";
}

// V adjacent outputs per thread, one V-wide load per reduced index (the innermost output
// axis is contiguous and aligned in every loaded input).
void ReductionSource::columns_vector_body(const std::string& ind, int unroll,
                                          const std::string& step) {
  const std::string UU = std::to_string(unroll);
  for (int k : loaded) {
    w << ind + "_cj_Vec<" + T_of(k) + ", " + V + "> _cj_x" + id(k) + "[" + UU + "];\n";
  }
  w << ind + "#pragma unroll\n" + ind + "for (int _cj_u = 0; _cj_u < " + UU + "; ++_cj_u) {\n";
  if (!loaded.empty()) {
    w << ind + "  " + I + " _cj_ro[" + std::to_string(NA) + "];\n";
    w << ind + "  _cj_red_offsets(L, _cj_j + _cj_u * " + step + ", _cj_ro);\n";
  }
  for (int k : loaded) {
    const std::string slot = std::to_string(in_slot(k));
    w << ind + "  _cj_x" + id(k) + "[_cj_u] = *reinterpret_cast<const _cj_Vec<" + T_of(k) + ", " +
             V + ">*>(_cj_p" + id(k) + " + _cj_base[" + slot + "] + _cj_ro[" + slot + "]);\n";
  }
  w << ind + "}\n";
  w << ind + "#pragma unroll\n" + ind + "for (int _cj_u = 0; _cj_u < " + UU + "; ++_cj_u) {\n";
  w << ind + "#pragma unroll\n" + ind + "  for (int _cj_k = 0; _cj_k < " + V + "; ++_cj_k)\n";
  w << ind + "    _cj_acc[_cj_k].add(" +
           map_call([&](int k) { return "_cj_x" + id(k) + "[_cj_u].v[_cj_k]"; },
                    "_cj_j + _cj_u * " + step) +
           ");\n";
  w << ind + "}\n";
}

// Columns: combines the accumulators of each output and writes them (columns_finish).
void ReductionSource::columns_combine(bool split, const std::string& G, const std::string& NV) {
  if (split) {
    // Lanes of one column combine by butterfly, then warps in order through shared memory:
    // a fixed order, so the same bits on every run.
    const std::string slots = std::to_string(s.block_size / 32 * s.group);
    w << "  __shared__ __align__(16) unsigned char _cj_csm[" + slots + " * sizeof(_cj_Acc)];\n";
    w << "  _cj_Acc* _cj_cs = reinterpret_cast<_cj_Acc*>(_cj_csm);\n";
    w << "#pragma unroll\n  for (int _cj_k = 0; _cj_k < " + NV + "; ++_cj_k) {\n";
    w << "    _cj_Acc a = _cj_acc[_cj_k];\n";
    w << "#pragma unroll\n    for (int m = 16; m >= " + G +
             "; m >>= 1) a.merge(_cj_shfl_xor(a, m));\n";
    w << "    if ((threadIdx.x & 31u) < " + G + ") _cj_cs[(threadIdx.x >> 5) * " + G +
             " + (threadIdx.x & 31u)] = a;\n";
    w << "    __syncthreads();\n";
    w << "    if (threadIdx.x < " + G + " && o < L.n_out) {\n";
    w << "      _cj_Acc v = _cj_cs[threadIdx.x];\n";
    w << "      for (int _cj_w = 1; _cj_w < (int)(blockDim.x >> 5); ++_cj_w)\n";
    w << "        v.merge(_cj_cs[_cj_w * " + G + " + threadIdx.x]);\n";
    columns_finish("      ", "_cj_k", "v");
    w << "    }\n    __syncthreads();\n  }\n";
  } else {
    w << "#pragma unroll\n  for (int _cj_k = 0; _cj_k < " + NV + "; ++_cj_k)\n";
    columns_finish("  ", "_cj_k", "_cj_acc[_cj_k]");
  }
}

// Writes the combined value of output o + k: a partial, or the post-map.
void ReductionSource::columns_finish(const std::string& ind, const std::string& k,
                                     const std::string& a) {
  if (s.two_pass) {
    w << ind + "_cj_part[(" + I + ")blockIdx.y * L.n_out + o + " + k + "] = " + a + ";\n";
  } else {
    post(ind, "o + " + k, a);
  }
}

// The second kernel of a two-pass specialisation: combines the partials of each output.
void ReductionSource::second_pass() {
  w << "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(s.second_pass_block()) +
           ") " + reduction_pass2_symbol(def) + "(" + kernel_params() + " {\n";
  // Waits for the first pass to complete with its writes visible (a no-op when launched
  // without programmatic dependent launch).
  w << "#if __CUDA_ARCH__ >= 900\n  asm volatile(\"griddepcontrol.wait;\" ::: \"memory\");\n"
       "#endif\n";
  prologue();
  if (s.strategy == RedStrategy::Columns && s.group >= 32 && !s.fold) {
    if (columns_pass2_sliced(s)) {
      second_pass_column_slices();
    } else {
      second_pass_column_threads();
    }
  } else {
    second_pass_blocks();
  }
  w << "}\n";
}

// Warps over slices of the partials: a block takes 32 adjacent outputs, each of its warps a
// contiguous slice of their partials (coalesced rows of 32, loads eight at a time); warp 0 then
// merges the slices in order, so the partials combine left to right as in one loop. A thread
// per output walking all of them was a chain of nsplit / 8 round trips on a quarter of the
// SMs (H200, 2026-11-28, axis 0 of 8192 x 8192 float32: 73.4 -> 70.5 us, 16384 x 16384:
// 250.1 -> 245.7 us).
void ReductionSource::second_pass_column_slices() {
  const std::string slots = std::to_string(s.second_pass_block());
  w << "  __shared__ __align__(16) unsigned char _cj_ssm[" + slots + " * sizeof(_cj_Acc)];\n";
  w << "  _cj_Acc* _cj_ss = reinterpret_cast<_cj_Acc*>(_cj_ssm);\n";
  w << "  const " + I + " slices = blockDim.x >> 5, slice = threadIdx.x >> 5;\n";
  w << "  const " + I + " per = (L.nsplit + slices - 1) / slices;\n";
  w << "  const " + I + " cb = slice * per, ce = cb + per < L.nsplit ? cb + per : L.nsplit;\n";
  w << "  for (" + I + " ob = (" + I + ")blockIdx.x * 32; ob < L.n_out; ob += (" + I +
           ")gridDim.x * 32) {\n";
  w << "    const " + I + " o = ob + (threadIdx.x & 31u);\n";
  w << "    _cj_Acc acc;\n    acc.init();\n";
  w << "    if (o < L.n_out) {\n      " + I + " c = cb;\n";
  w << "      for (; c + 8 <= ce; c += 8) {\n        _cj_Acc t[8];\n";
  w << "#pragma unroll\n        for (int u = 0; u < 8; ++u) t[u] = _cj_part[(c + u) * L.n_out + "
       "o];\n";
  w << "#pragma unroll\n        for (int u = 0; u < 8; ++u) acc.merge(t[u]);\n      }\n";
  w << "      for (; c < ce; ++c) acc.merge(_cj_part[c * L.n_out + o]);\n    }\n";
  w << "    _cj_ss[threadIdx.x] = acc;\n    __syncthreads();\n";
  w << "    if (threadIdx.x < 32 && o < L.n_out) {\n";
  w << "      for (" + I + " k = 1; k < slices; ++k) acc.merge(_cj_ss[k * 32 + threadIdx.x]);\n";
  post("      ", "o", "acc");
  w << "    }\n    __syncthreads();\n  }\n";
}

// A thread per output merges its column of partials in order, loads eight at a time (for
// accumulators too large for column_slices' shared memory).
void ReductionSource::second_pass_column_threads() {
  w << "  for (" + I + " o = (" + I +
           ")blockIdx.x * blockDim.x + threadIdx.x; o < L.n_out; o += (" + I +
           ")gridDim.x * blockDim.x) {\n";
  w << "    _cj_Acc acc;\n    acc.init();\n    " + I + " c = 0;\n";
  w << "    for (; c + 8 <= L.nsplit; c += 8) {\n      _cj_Acc t[8];\n";
  w << "#pragma unroll\n      for (int u = 0; u < 8; ++u) t[u] = _cj_part[(c + u) * L.n_out + "
       "o];\n";
  w << "#pragma unroll\n      for (int u = 0; u < 8; ++u) acc.merge(t[u]);\n    }\n";
  w << "    for (; c < L.nsplit; ++c) acc.merge(_cj_part[c * L.n_out + o]);\n";
  post("    ", "o", "acc");
  w << "  }\n";
}

// A block per output (few outputs): strided over the partials, then the block reduction.
void ReductionSource::second_pass_blocks() {
  auto at = [&](const std::string& c) {
    return s.strategy == RedStrategy::Columns ? "(" + c + ") * L.n_out + o" : "o * L.nsplit + " + c;
  };
  // Eight guarded loads in flight per thread (the last pass too: no chain of single
  // loads), merged in the order of the plain loop.
  w << "  for (" + I + " o = blockIdx.x; o < L.n_out; o += gridDim.x) {\n";
  w << "    _cj_Acc acc;\n    acc.init();\n";
  w << "    const " + I + " cs = blockDim.x;\n";
  w << "    for (" + I + " c = threadIdx.x; c < L.nsplit; c += 8 * cs) {\n      _cj_Acc t[8];\n";
  w << "#pragma unroll\n      for (int u = 0; u < 8; ++u)\n"
       "        if (c + u * cs < L.nsplit) t[u] = _cj_part[" +
           at("c + u * cs") + "];\n";
  w << "#pragma unroll\n      for (int u = 0; u < 8; ++u)\n"
       "        if (c + u * cs < L.nsplit) acc.merge(t[u]);\n    }\n";
  w << "    acc = _cj_block_reduce(acc);\n    if (threadIdx.x == 0) {\n";
  if (s.segmented) segment_range("      ", "o");
  post("      ", "o", "acc");
  w << "    }\n  }\n";
}

SourceProgram ReductionSource::program() const {
  SourceProgram program;
  program.name = file;
  program.source = w.str();
  program.options = def.compile_options;
  if (needs_fp16(def, s) && !cuda_include_option().empty()) {
    program.options.push_back(cuda_include_option());
  }
  add_minimal_option(program.options, def.preamble + "\n" + def.map_expr + "\n" + def.reduce_expr +
                                          "\n" + def.post_map_expr + "\n" + def.identity + "\n" +
                                          def.reduce_type + "\n" + s.reduce_ctype);
  program.link_inputs = def.link;
  return program;
}

}  // namespace

SourceProgram generate_reduction(const ReductionDefinition& def, const RedSpecialization& s) {
  ReductionSource source(def, s);
  source.header();
  source.accumulator();
  source.map_function();
  source.post_function();
  source.layout_helpers();
  source.first_pass();
  if (s.two_pass) source.second_pass();
  return source.program();
}

}  // namespace cujit::detail
