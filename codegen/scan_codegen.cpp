#include "codegen/scan_codegen.hpp"

#include "codegen/device_support.hpp"
#include "codegen/kernel_call.hpp"
#include "codegen/scan_abi.hpp"
#include "codegen/snippet_use.hpp"
#include "codegen/source_writer.hpp"

#include <algorithm>

namespace cujit::detail {
namespace {

// Shuffles of any trivially copyable value and the warp's inclusive scan in element order.
// Needs _cj_V and _cj_comb.
constexpr const char* kWarpSupport = R"CUJIT(
template <class X> __device__ __forceinline__ X _cj_shfl_up(const X& v, int d) {
  constexpr int W = (sizeof(X) + 3) / 4;
  unsigned w[W] = {};
  memcpy(w, &v, sizeof(X));
#pragma unroll
  for (int i = 0; i < W; ++i) w[i] = __shfl_up_sync(0xffffffffu, w[i], d);
  X r;
  memcpy(&r, w, sizeof(X));
  return r;
}
template <class X> __device__ __forceinline__ X _cj_shfl(const X& v, int lane) {
  constexpr int W = (sizeof(X) + 3) / 4;
  unsigned w[W] = {};
  memcpy(w, &v, sizeof(X));
#pragma unroll
  for (int i = 0; i < W; ++i) w[i] = __shfl_sync(0xffffffffu, w[i], lane);
  X r;
  memcpy(&r, w, sizeof(X));
  return r;
}
// Inclusive scan over the warp's lanes: lane l ends with lanes 0..l combined in order.
__device__ __forceinline__ _cj_V _cj_warp_scan(_cj_V x, int lane) {
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    const _cj_V y = _cj_shfl_up(x, d);
    if (lane >= d) x = _cj_comb(y, x);
  }
  return x;
}
)CUJIT";

// Statuses of values of at most 4 bytes: one 64-bit word each, the flag in the high half and
// the value's bits in the low half, stored and loaded whole (no fence: a reader sees both or
// neither). A head travels in the flag (3: an aggregate that starts a row afresh).
constexpr const char* kPackedStatus = R"CUJIT(
typedef unsigned long long _cj_S;
__device__ __forceinline__ void _cj_publish(unsigned char* scratch, long long values, long long,
                                            _cj_I k, const _cj_V& v, unsigned flag) {
  unsigned bits = 0u;
  memcpy(&bits, &v.v, sizeof(_cj_T));
  reinterpret_cast<volatile unsigned long long*>(scratch + values)[k] =
      (unsigned long long)flag << 32 | bits;
}
__device__ __forceinline__ _cj_S _cj_poll(const unsigned char* scratch, long long flags, _cj_I k) {
  return reinterpret_cast<const volatile unsigned long long*>(scratch + flags)[k];
}
__device__ __forceinline__ unsigned _cj_flag_of(_cj_S s) { return (unsigned)(s >> 32); }
__device__ __forceinline__ void _cj_acquire() {}
__device__ __forceinline__ _cj_V _cj_value_of(_cj_S s, const unsigned char*, long long, _cj_I) {
  const unsigned bits = (unsigned)s;
  _cj_T v;
  memcpy(&v, &bits, sizeof(_cj_T));
  return _cj_make(v, _cj_flag_of(s) == 3u);
}
)CUJIT";

// Statuses of larger values: a 32-bit flag per status and the value in a slot of _CJ_SW words
// elsewhere, published value first, then (after a fence) the flag.
constexpr const char* kSlotStatus = R"CUJIT(
typedef unsigned _cj_S;
constexpr int _CJ_W = (sizeof(_cj_V) + 3) / 4;
static_assert(_CJ_W <= _CJ_SW, "cujit: the scan type is larger than the tile status slot");
__device__ __forceinline__ void _cj_publish(unsigned char* scratch, long long values,
                                            long long flags, _cj_I k, const _cj_V& v,
                                            unsigned flag) {
  unsigned w[_CJ_W] = {};
  memcpy(w, &v, sizeof(_cj_V));
  unsigned* slot = reinterpret_cast<unsigned*>(scratch + values) + (size_t)k * _CJ_SW;
#pragma unroll
  for (int i = 0; i < _CJ_W; ++i) __stcg(slot + i, w[i]);
  __threadfence();
  reinterpret_cast<volatile unsigned*>(scratch + flags)[k] = flag;
}
__device__ __forceinline__ _cj_S _cj_poll(const unsigned char* scratch, long long flags, _cj_I k) {
  return reinterpret_cast<const volatile unsigned*>(scratch + flags)[k];
}
__device__ __forceinline__ unsigned _cj_flag_of(_cj_S s) { return s; }
__device__ __forceinline__ void _cj_acquire() { __threadfence(); }
__device__ __forceinline__ _cj_V _cj_value_of(_cj_S, const unsigned char* scratch,
                                              long long values, _cj_I k) {
  const unsigned* slot =
      reinterpret_cast<const unsigned*>(scratch + values) + (size_t)k * _CJ_SW;
  unsigned w[_CJ_W];
#pragma unroll
  for (int i = 0; i < _CJ_W; ++i) w[i] = __ldcg(slot + i);
  _cj_V v;
  memcpy(&v, w, sizeof(_cj_V));
  return v;
}
)CUJIT";

// The look-back over statuses (either kind): tiles publish their aggregate (flag 1, or 3 when
// it starts a row afresh); groups of 32 tiles their aggregate (1 or 3), then their inclusive
// prefix (2).
constexpr const char* kLookBack = R"CUJIT(
__device__ __forceinline__ unsigned _cj_agg_flag(const _cj_V& v) {
  return _cj_headed(v) ? 3u : 1u;
}
// The aggregates of tiles first .. first + count - 1 (0 < count < 32) combined, by the whole
// warp, in the warp scan's fixed order: waits for each to be published.
__device__ _cj_V _cj_fold_tiles(const unsigned char* scratch, long long flags, long long values,
                                _cj_I first, int count, int lane) {
  _cj_S st = 0;
  if (lane < count) {
    while (_cj_flag_of(st = _cj_poll(scratch, flags, first + lane)) == 0u) __nanosleep(20);
  }
  __syncwarp();
  _cj_acquire();
  _cj_V x = _cj_make(_cj_identity(), 0);
  if (lane < count) x = _cj_value_of(st, scratch, values, first + lane);
  return _cj_shfl(_cj_warp_scan(x, lane), count - 1);
}
// The aggregate of a group from its 32 tiles' statuses `st` (lane l: tile l), in the order the
// group's last tile combines it: the warp scan of the first 31, then the last one.
__device__ _cj_V _cj_group_of_tiles(_cj_S st, const unsigned char* scratch, long long values,
                                    _cj_I tile, int lane) {
  const _cj_V x = _cj_value_of(st, scratch, values, tile);
  const _cj_V first = _cj_warp_scan(lane < 31 ? x : _cj_make(_cj_identity(), 0), lane);
  return _cj_comb(_cj_shfl(first, 30), _cj_shfl(x, 31));
}
// The exclusive prefix of group g > 0, by the whole warp: lane l watches group g - 32 + l, and
// tile l of group g - 1 (whose aggregate it combines itself while the group's last tile has
// not published it). Waits until some group has its inclusive prefix (2) or an aggregate that
// starts a row (3) and every later one its aggregate, then folds them in order from that one:
// the value of the chain of inclusive prefixes, whichever statuses were there.
__device__ _cj_V _cj_group_look_back(const unsigned char* scratch, long long flags,
                                     long long aggregates, long long prefixes,
                                     long long tile_values, _cj_I g, int lane) {
  const _cj_I p = g - 32 + lane, tp = (g - 1) * 32 + lane;
  _cj_S st = 0, ts = 0;
  unsigned f = 2u;
  int from = 0;
  bool from_tiles = false;
  _cj_V previous = _cj_make(_cj_identity(), 0);
  while (true) {
    if (p >= 0) f = _cj_flag_of(st = _cj_poll(scratch, flags, p));
    const unsigned tf = _cj_flag_of(ts = _cj_poll(scratch, 16, tp));
    from_tiles = __shfl_sync(0xffffffffu, f, 31) == 0u && __all_sync(0xffffffffu, tf != 0u);
    if (from_tiles) {
      _cj_acquire();
      previous = _cj_group_of_tiles(ts, scratch, tile_values, tp, lane);
      if (lane == 31) f = _cj_agg_flag(previous);
    }
    const unsigned ready = __ballot_sync(0xffffffffu, f != 0u);
    const unsigned stop = __ballot_sync(0xffffffffu, f >= 2u);
    if (stop != 0u) {
      from = 31 - __clz(stop);
      const unsigned later = from == 31 ? 0u : 0xffffffffu << (from + 1);
      if ((ready & later) == later) break;
    }
    __nanosleep(32);
  }
  _cj_acquire();
  _cj_V x = _cj_make(_cj_identity(), 0);
  if (lane == 31 && from_tiles) {
    x = previous;
  } else if (p >= 0 && lane >= from) {
    x = _cj_value_of(st, scratch, f == 2u ? prefixes : aggregates, p);
  }
  _cj_V acc = _cj_shfl(x, from);
  for (int l = from + 1; l < 32; ++l) acc = _cj_comb(acc, _cj_shfl(x, l));
  return acc;
}
)CUJIT";

// The source of one specialisation, section by section.
class ScanSource {
 public:
  ScanSource(const ScanDefinition& def, const ScanSpecialization& s)
      : def(def),
        s(s),
        file(def.name + ".cu"),
        I(s.index64 ? "long long" : "int"),
        n_in(static_cast<int>(def.in.size())),
        total(static_cast<int>(def.in.size() + def.out.size())),
        layout(scan_layout_params(def, s)),
        NA(std::to_string(std::max<std::size_t>(1, layout.size()))),
        uses_j(param_use({"_J"}, {0}, {&def.map_expr}, nullptr).used[0] != 0),
        w(file) {}

  void header();
  void functions();
  void layout_helpers();
  void kernel();
  SourceProgram program() const;

 private:
  const Param& param(int k) const { return k < n_in ? def.in[k] : def.out[k - n_in]; }
  std::string T_of(int k) const { return cuda_type(s.params[k].dtype); }
  static std::string id(int k) { return std::to_string(k); }
  int slot(int k) const {
    for (std::size_t a = 0; a < layout.size(); ++a) {
      if (layout[a] == k) return static_cast<int>(a);
    }
    return -1;
  }
  std::string element(int k) const;
  std::string map_args() const;
  std::string tile_storage() const;
  void select_post(const std::string& ind);
  void offsets(const std::string& ind);
  void load_map(const std::string& ind, bool guarded);
  void block_scan();
  void look_back();
  void results();
  void store_post(const std::string& ind);

  const ScanDefinition& def;
  const ScanSpecialization& s;
  const std::string file;
  const std::string I;
  const int n_in, total;
  const std::vector<int> layout;
  const std::string NA;
  const bool uses_j;
  bool fp16 = false;  // the source includes the half-precision headers
  SourceWriter w;
};

void ScanSource::header() {
  w << "// cujit scan kernel '" + def.name + "': " + s.key() + "\n";
  fp16 = mentions_fp16(s.scan_ctype) || mentions_fp16(def.preamble);
  for (const ScanParam& p : s.params) {
    fp16 = fp16 || p.dtype == DType::Float16 || p.dtype == DType::BFloat16;
  }
  if (fp16) w << std::string(fp16_includes());
  w << std::string(device_support_source());
  w << placeholder_typedefs(ParamList(def.in, def.out), s.params, "");
  if (!def.preamble.empty()) w.snippet("preamble", def.preamble, "");
  w << "typedef " + s.scan_ctype + " _cj_T;\ntypedef " + I + " _cj_I;\n";
  w << "#define _CJ_SW " + std::to_string(scan_slot_words(s)) + "\n";
  if (scan_value_bytes(s) == 0) {
    w << "static_assert(sizeof(_cj_T) <= " + std::to_string(kMaxScanValueBytes) +
             ", \"cujit: a scan type larger than " + std::to_string(kMaxScanValueBytes) +
             " bytes is not supported\");\n";
  }
}

// The identity, the scan operator, the status value _cj_V (with a row head flag when
// segmented), the map and the post-map.
void ScanSource::functions() {
  w << "__device__ __forceinline__ _cj_T _cj_identity() {\n  return _cj_T(\n";
  w.snippet("identity", def.identity, "");
  w << "  );\n}\n__device__ __forceinline__ _cj_T _cj_op(const _cj_T& a, const _cj_T& b) {\n"
       "  return (\n";
  w.snippet("scan_expr", def.reduce_expr, "");
  w << "  );\n}\n";
  if (s.segmented) {
    w << "struct _cj_V { _cj_T v; int h; };\n"
         "__device__ __forceinline__ _cj_V _cj_make(const _cj_T& v, int h) {\n"
         "  _cj_V r; r.v = v; r.h = h; return r;\n}\n"
         "__device__ __forceinline__ bool _cj_headed(const _cj_V& x) { return x.h != 0; }\n"
         "__device__ __forceinline__ _cj_V _cj_comb(const _cj_V& x, const _cj_V& y) {\n"
         "  _cj_V r; r.h = x.h | y.h; r.v = y.h ? y.v : _cj_op(x.v, y.v); return r;\n}\n";
  } else {
    w << "struct _cj_V { _cj_T v; };\n"
         "__device__ __forceinline__ _cj_V _cj_make(const _cj_T& v, int) {\n"
         "  _cj_V r; r.v = v; return r;\n}\n"
         "__device__ __forceinline__ bool _cj_headed(const _cj_V&) { return false; }\n"
         "__device__ __forceinline__ _cj_V _cj_comb(const _cj_V& x, const _cj_V& y) {\n"
         "  _cj_V r; r.v = _cj_op(x.v, y.v); return r;\n}\n";
  }
  std::string map_params;
  for (int k = 0; k < n_in; ++k) {
    if (!s.params[k].used) continue;
    map_params += (s.params[k].scalar ? "const " + T_of(k) + " " : "const " + T_of(k) + "& ") +
                  param(k).name + ", ";
  }
  const std::string indexers =
      "const _cj_Indexer<" + I + "> _in_ind, const _cj_Indexer<" + I + "> _out_ind";
  const std::string map_head = "(" + map_params + "const " + I + " _J, " + indexers + ")";
  if (def.select != SelectWhat::None) {
    // The predicate, and the map that counts the elements it keeps.
    std::string forward;
    for (int k = 0; k < n_in; ++k) {
      if (s.params[k].used) forward += param(k).name + ", ";
    }
    w << "__device__ __forceinline__ bool _cj_pred" + map_head + " {\n  return (\n";
    w.snippet("predicate", def.map_expr, "");
    w << "  );\n}\n";
    w << "__device__ __forceinline__ _cj_T _cj_map" + map_head + " {\n  return _cj_pred(" +
             forward + "_J, _in_ind, _out_ind) ? _cj_T(1) : _cj_T(0);\n}\n";
  } else {
    w << "__device__ __forceinline__ _cj_T _cj_map" + map_head + " {\n  return (\n";
    w.snippet("map_expr", def.map_expr, "");
    w << "  );\n}\n";
    std::string post_params = "const _cj_T& a, ";
    for (int k = n_in; k < total; ++k) post_params += T_of(k) + "& " + param(k).name + ", ";
    w << "__device__ __forceinline__ void _cj_post(" + post_params + indexers + ") {\n";
    w.snippet("post_map_expr", def.post_map_expr, ";");
    w << "}\n";
  }
  w << kWarpSupport;
  w << (scan_packed(s) ? kPackedStatus : kSlotStatus);
  w << kLookBack;
}

// The layout struct and, for a strided layout, the byte offsets of element e in every layout
// array (row e / row_len over the kept dimensions, e % row_len over the scanned ones).
void ScanSource::layout_helpers() {
  w << scan_layout_abi(def, s).declaration();
  if (s.flat) return;
  auto walk = [&](const std::string& v, const std::string& group, int ndim) {
    w << "#pragma unroll\n  for (int d = " + std::to_string(ndim - 1) + "; d > 0; --d) {\n";
    w << "    const " + I + " q = " + v + " / L." + group + "_shape[d];\n    const " + I +
             " c = " + v + " - q * L." + group + "_shape[d];\n";
    w << "#pragma unroll\n    for (int a = 0; a < " + NA + "; ++a) o[a] += c * L." + group +
             "_strides[a][d];\n    " + v + " = q;\n  }\n";
    w << "#pragma unroll\n  for (int a = 0; a < " + NA + "; ++a) o[a] += " + v + " * L." + group +
             "_strides[a][0];\n";
  };
  w << "__device__ __forceinline__ void _cj_offsets(const _cj_SL& L, " + I + " e, " + I +
           "* o) {\n";
  w << "  " + I + " r = e / L.row_len, j = e - r * L.row_len;\n";
  w << "#pragma unroll\n  for (int a = 0; a < " + NA + "; ++a) o[a] = 0;\n";
  walk("r", "kept", s.kept_ndim);
  walk("j", "scan", s.scan_ndim);
  w << "}\n";
}

// Parameter k's element at _cj_e (an lvalue of its type).
std::string ScanSource::element(int k) const {
  const std::string T = T_of(k);
  const std::string q = k < n_in ? "const " + T : T;
  if (s.flat) return "reinterpret_cast<" + q + "*>(_cj_p" + id(k) + ")[_cj_e]";
  return "*reinterpret_cast<" + q + "*>(_cj_p" + id(k) + " + _cj_o[" + std::to_string(slot(k)) +
         "])";
}

void ScanSource::offsets(const std::string& ind) {
  if (s.flat) return;
  w << ind + I + " _cj_o[" + NA + "];\n" + ind + "_cj_offsets(L, _cj_e, _cj_o);\n";
}

// The map's (and the predicate's) arguments for element _cj_e.
std::string ScanSource::map_args() const {
  std::string args;
  for (int k = 0; k < n_in; ++k) {
    if (!s.params[k].used) continue;
    args += (s.params[k].scalar ? "_cj_s" + id(k) : element(k)) + ", ";
  }
  std::string j = "0";
  if (uses_j) j = s.segmented || !s.flat ? "_cj_e % L.row_len" : "_cj_e";
  return args + "(" + I + ")(" + j + "), _in_ind, _out_ind";
}

// Striped: element base + i * B + t of the tile, mapped, into shared memory.
void ScanSource::load_map(const std::string& ind, bool guarded) {
  w << ind + "#pragma unroll\n" + ind + "for (int i = 0; i < _CJ_N; ++i) {\n";
  w << ind + "  const int k = i * _CJ_B + _cj_t;\n";
  w << ind + "  const " + I + " _cj_e = _cj_base + k;\n";
  const std::string in = ind + (guarded ? "    " : "  ");
  if (guarded) {
    w << ind + "  if (_cj_e >= L.n) {\n" + ind + "    _cj_sm[k + (k >> 5)] = _cj_identity();\n" +
             ind + "  } else {\n";
  }
  offsets(in);
  w << in + "_cj_sm[k + (k >> 5)] = _cj_map(" + map_args() + ");\n";
  if (guarded) w << ind + "  }\n";
  w << ind + "}\n";
}

// Blocked: each compute thread scans its items in order, then the compute warps scan the
// threads' totals (barrier 1 holds the compute threads only); thread 0 publishes the tile's
// aggregate.
void ScanSource::block_scan() {
  w << "    _cj_bar(1, _CJ_B);\n";
  if (s.segmented) {
    w << "    " + I + " _cj_pos = (_cj_base + (" + I + ")_cj_t * _CJ_N) % L.row_len;\n";
  }
  w << "#pragma unroll\n    for (int i = 0; i < _CJ_N; ++i) {\n"
       "      const int k = _cj_t * _CJ_N + i;\n";
  if (s.segmented) {
    w << "      const int h = _cj_pos == 0;\n      _cj_hm |= (unsigned)h << i;\n"
         "      if (++_cj_pos == L.row_len) _cj_pos = 0;\n";
  } else {
    w << "      const int h = 0;\n";
  }
  w << "      const _cj_V v = _cj_make(_cj_sm[k + (k >> 5)], h);\n"
       "      _cj_run = i == 0 ? v : _cj_comb(_cj_run, v);\n"
       "      _cj_sm[k + (k >> 5)] = _cj_run.v;\n    }\n";
  w << "    const _cj_V _cj_inc = _cj_warp_scan(_cj_run, _cj_lane);\n"
       "    const _cj_V _cj_wex = _cj_shfl_up(_cj_inc, 1);\n"
       "    if (_cj_lane == 31) _cj_wsum[_cj_warp] = _cj_inc;\n    _cj_bar(1, _CJ_B);\n"
       "    if (_cj_warp == 0) {\n"
       "      _cj_V v = _cj_make(_cj_identity(), 0);\n"
       "      if (_cj_lane < _CJ_B / 32) v = _cj_wsum[_cj_lane];\n"
       "      v = _cj_warp_scan(v, _cj_lane);\n"
       "      if (_cj_lane < _CJ_B / 32) _cj_wsum[_cj_lane] = v;\n"
       "      if (_cj_lane == _CJ_B / 32 - 1) {\n"
       "        _cj_publish(_cj_scratch, L.tile_values, 16, _cj_tile, v, _cj_agg_flag(v));\n"
       "      }\n    }\n    _cj_bar(1, _CJ_B);\n"
       "    if (_cj_warp > 0) _cj_tex = _cj_wsum[_cj_warp - 1];\n"
       "    if (_cj_lane > 0) _cj_tex = _cj_warp > 0 ? _cj_comb(_cj_tex, _cj_wex) : _cj_wex;\n";
}

// The two look-back warps, after the compute warps, run while the tile loads: the first
// combines the aggregates of the group's earlier tiles and, once the tile's aggregate is known
// (barrier 2, with the compute threads), publishes the group's aggregate from the group's last
// tile; the second looks back over groups of 32 tiles for the group's prefix (needed unless a
// row starts in the group before the tile). Both reach the block through shared memory.
void ScanSource::look_back() {
  std::string need = "g > 0";
  if (s.segmented) {
    // The row of the tile's first element, or of the group's last, starts before the group.
    need =
        "(_cj_base / L.row_len) * L.row_len < gbase ||\n"
        "          (last && ((_cj_base + _CJ_TILE - 1) / L.row_len) * L.row_len < gbase)";
  }
  w << "    if (_cj_warp == _CJ_B / 32) {\n"
       "      _cj_V inpre = _cj_make(_cj_identity(), 0);\n"
       "      if (q > 0) {\n"
       "        inpre = _cj_fold_tiles(_cj_scratch, 16, L.tile_values, _cj_tile - q, q, "
       "_cj_lane);\n"
       "      }\n"
       "      if (_cj_lane == 0) _cj_halves[0] = inpre;\n"
       "      _cj_bar(2, _CJ_B + 32);\n"
       "      if (last && _cj_lane == 0) {\n"
       "        const _cj_V gagg = _cj_comb(inpre, _cj_wsum[_CJ_B / 32 - 1]);\n"
       "        _cj_publish(_cj_scratch, L.group_aggregates, L.group_flags, g, gagg, "
       "_cj_agg_flag(gagg));\n      }\n"
       "    } else {\n"
       "      const " +
           I +
           " gbase = (_cj_tile - q) * _CJ_TILE;\n"
           "      (void)gbase;\n"
           "      _cj_V G = _cj_make(_cj_identity(), 0);\n"
           "      if (" +
           need +
           ") {\n"
           "        G = _cj_group_look_back(_cj_scratch, L.group_flags, L.group_aggregates, "
           "L.group_prefixes, L.tile_values, g, _cj_lane);\n      }\n"
           "      if (_cj_lane == 0) _cj_halves[1] = G;\n    }\n";
}

// Each compute thread's results, blocked, back into shared memory.
void ScanSource::results() {
  w << "  const _cj_V _cj_G = _cj_halves[1];\n"
       "  if (last && _cj_t == 0) {\n"
       "    _cj_publish(_cj_scratch, L.group_prefixes, L.group_flags, g,\n"
       "                _cj_comb(_cj_G, _cj_comb(_cj_halves[0], _cj_wsum[_CJ_B / 32 - 1])), 2u);\n"
       "  }\n"
       "  if (_cj_t < _CJ_B) {\n"
       "    const _cj_V _cj_tprefix = q > 0 ? _cj_comb(_cj_G, _cj_halves[0]) : _cj_G;\n"
       "    const _cj_V _cj_pre = _cj_comb(_cj_tprefix, _cj_tex);\n"
       "#pragma unroll\n    for (int i = _CJ_N - 1; i >= 0; --i) {\n"
       "      const int k = _cj_t * _CJ_N + i;\n";
  // The thread's inclusive values wait in shared memory; exclusive results read the previous
  // item's before it is overwritten (items go last to first).
  const std::string heads_to = s.segmented ? "(_cj_hm & ((2u << i) - 1u)) != 0u" : "0";
  if (!def.exclusive) {
    w << "      _cj_sm[k + (k >> 5)] = _cj_comb(_cj_pre, _cj_make(_cj_sm[k + (k >> 5)], " +
             heads_to + ")).v;\n";
  } else {
    const std::string heads_before = s.segmented ? "(_cj_hm & ((1u << i) - 1u)) != 0u" : "0";
    w << "      _cj_T r = _cj_pre.v;\n"
         "      if (i > 0) r = _cj_comb(_cj_pre, _cj_make(_cj_sm[k - 1 + ((k - 1) >> 5)], " +
             heads_before + ")).v;\n";
    if (s.segmented) w << "      if (_cj_hm >> i & 1u) r = _cj_identity();\n";
    w << "      _cj_sm[k + (k >> 5)] = r;\n";
  }
  w << "    }\n  }\n  __syncthreads();\n";
}

// Striped: the post-map of every element of the tile.
void ScanSource::store_post(const std::string& ind) {
  w << ind + "#pragma unroll\n" + ind + "for (int i = 0; i < _CJ_N; ++i) {\n";
  w << ind + "  const int k = i * _CJ_B + _cj_t;\n";
  w << ind + "  const " + I + " _cj_e = _cj_base + k;\n";
  w << ind + "  if (_cj_e < L.n) {\n";
  offsets(ind + "    ");
  if (def.select != SelectWhat::None) {
    select_post(ind + "    ");
    w << ind + "  }\n" + ind + "}\n";
    return;
  }
  std::string args = "_cj_sm[k + (k >> 5)], ";
  for (int k = n_in; k < total; ++k) args += element(k) + ", ";
  w << ind + "    _cj_post(" + args + "_in_ind, _out_ind);\n" + ind + "  }\n" + ind + "}\n";
}

// The tile's values in dynamic shared memory (sized by the launch: scan_dynamic_shared), which
// may pass the 48 KiB of static shared memory.
std::string ScanSource::tile_storage() const {
  return "  extern __shared__ __align__(16) unsigned char _cj_tile_raw[];\n";
}

// The kernel: _CJ_B compute threads and two look-back warps per block, one tile per block.
// A select kernel's post stage for element _cj_e, whose inclusive count is in shared memory:
// a kept element goes to its count - 1 (a rejected one of a partition from the end); the last
// element writes the count.
void ScanSource::select_post(const std::string& ind) {
  const std::string kept = cuda_type(s.params[n_in].dtype);
  const std::string value = def.select == SelectWhat::Indices ? "(long long)_cj_e" : element(0);
  w << ind + "const _cj_T c = _cj_sm[k + (k >> 5)];\n";
  w << ind + "if (_cj_pred(" + map_args() + ")) {\n" + ind + "  reinterpret_cast<" + kept +
           "*>(_cj_p" + id(n_in) + ")[c - 1] = " + value + ";\n" + ind + "}";
  if (def.partition) {
    // Rejected after e - c others: from the end backwards (CUB's DevicePartition order).
    w << " else {\n" + ind + "  reinterpret_cast<" + kept + "*>(_cj_p" + id(n_in) +
             ")[L.n - 1 - (_cj_e - c)] = " + value + ";\n" + ind + "}";
  }
  w << "\n";
  w << ind + "if (_cj_e == L.n - 1) *reinterpret_cast<long long*>(_cj_p" + id(n_in + 1) +
           ") = (long long)c;\n";
}

void ScanSource::kernel() {
  w << "#define _CJ_B " + std::to_string(s.block_size) + "\n#define _CJ_N " +
           std::to_string(s.items) + "\n";
  w << "__device__ __forceinline__ void _cj_bar(int id, int threads) {\n"
       "  asm volatile(\"bar.sync %0, %1;\" ::\"r\"(id), \"r\"(threads) : \"memory\");\n}\n";
  const std::string bounds =
      "_CJ_B + 64" + (s.min_blocks > 0 ? ", " + std::to_string(s.min_blocks) : std::string());
  w << "extern \"C\" __global__ void __launch_bounds__(" + bounds + ") " + scan_symbol(def) + "(" +
           abi_signature(scan_parameters(def, s)) + ") {\n";
  w << "  const _cj_SL& L = _cj_L;\n"
       "  const _cj_Indexer<" +
           I +
           "> _in_ind{L.n};\n"
           "  const _cj_Indexer<" +
           I +
           "> _out_ind{L.n};\n"
           "  constexpr int _CJ_TILE = _CJ_B * _CJ_N;\n" +
           tile_storage() +
           "  __shared__ __align__(16) unsigned char _cj_ws_raw[_CJ_B / 32 * sizeof(_cj_V)];\n"
           "  __shared__ __align__(16) unsigned char _cj_hv_raw[2 * sizeof(_cj_V)];\n"
           "  _cj_T* const _cj_sm = reinterpret_cast<_cj_T*>(_cj_tile_raw);\n"
           "  _cj_V* const _cj_wsum = reinterpret_cast<_cj_V*>(_cj_ws_raw);\n"
           "  _cj_V* const _cj_halves = reinterpret_cast<_cj_V*>(_cj_hv_raw);\n"
           "  const int _cj_t = threadIdx.x, _cj_lane = _cj_t & 31, _cj_warp = _cj_t >> 5;\n"
           "  const " +
           I + " _cj_tile = (" + I +
           ")blockIdx.x;\n"
           "  const " +
           I +
           " _cj_base = _cj_tile * _CJ_TILE;\n"
           "  const " +
           I +
           " g = _cj_tile >> 5;\n"
           "  const int q = (int)(_cj_tile & 31);\n"
           "  const bool last = q == 31;\n"
           "  _cj_V _cj_run;\n  _cj_V _cj_tex = _cj_make(_cj_identity(), 0);\n"
           "  unsigned _cj_hm = 0u;\n  (void)_cj_hm;\n"
           "  if (_cj_t < _CJ_B) {\n"
           "    if (_cj_base + _CJ_TILE <= L.n) {\n";
  load_map("      ", false);
  w << "    } else {\n";
  load_map("      ", true);
  w << "    }\n";
  block_scan();
  w << "    _cj_bar(2, _CJ_B + 32);\n  } else {\n";
  look_back();
  w << "  }\n  __syncthreads();\n";
  results();
  w << "  if (_cj_t < _CJ_B) {\n";
  store_post("    ");
  w << "  }\n}\n";
}

SourceProgram ScanSource::program() const {
  SourceProgram program;
  program.name = file;
  program.source = w.str();
  program.options = def.compile_options;
  const std::string& include = cuda_include_option();
  if (fp16 && !include.empty()) {
    program.options.push_back(include);
  }
  add_minimal_option(program.options, def.preamble + "\n" + def.map_expr + "\n" + def.reduce_expr +
                                          "\n" + def.post_map_expr + "\n" + def.identity + "\n" +
                                          def.reduce_type + "\n" + s.scan_ctype);
  program.link_inputs = def.link;
  return program;
}

}  // namespace

SourceProgram generate_scan(const ScanDefinition& def, const ScanSpecialization& s) {
  ScanSource source(def, s);
  source.header();
  source.functions();
  source.layout_helpers();
  source.kernel();
  return source.program();
}

}  // namespace cujit::detail
