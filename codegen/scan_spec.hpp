#pragma once
// One specialisation of a scan kernel as a value: what the user wrote (the definition) and
// the facts that select the generated code (dtypes, rows or one sequence, a flat or strided
// layout, items per thread, index width). Below both the planner, which computes one, and the
// generator, which reads one.

#include "codegen/reduction_spec.hpp"
#include "codegen/spec_serial.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace cujit::detail {

/// What the user wrote. The fields shared with a reduction mean the same, with reduce_expr the
/// scan expression over `a` (earlier elements) and `b` (later ones), reduce_type the scan
/// type and identity the scan's neutral element (required).
/// What a select kernel keeps (SelectKernel): a scan of its predicate's 0/1 counts whose
/// post stage writes each kept element at its count.
enum class SelectWhat : unsigned char {
  None,     ///< a scan
  Values,   ///< the first input's values where the predicate holds
  Indices,  ///< their flat C-order indices (int64)
};

struct ScanDefinition : ReductionDefinition {
  bool exclusive = false;  ///< each output sees the elements before it, not up to it
  /// A select kernel: map_expr is the predicate, the outputs are the kept values or indices
  /// (1-d, written at their position) and the count (0-d int64); there is no post-map.
  SelectWhat select = SelectWhat::None;
  /// A select kernel that also writes the rejected elements (or indices), after the kept ones
  /// from the end backwards: element i rejected after r others goes to n - 1 - r.
  bool partition = false;
};

/// The per-parameter facts are a reduction's (dtype, scalar, used; raw parameters are refused).
using ScanParam = RedParam;

struct ScanSpecialization {
  std::vector<ScanParam> params;  ///< in, then out
  std::string scan_ctype;         ///< C++ type of the scanned value ("float", "Pair", ...)
  /// More than one row (a scan along an axis with other axes kept): each row starts afresh,
  /// rows may share a tile and a row may span tiles.
  bool segmented = false;
  /// Every layout array holds element e (C order over the kept axes, then the scanned one) at
  /// byte e * itemsize: no index arithmetic.
  bool flat = true;
  int kept_ndim = 1;     ///< not flat: kept dimensions after collapsing (>= 1)
  int scan_ndim = 1;     ///< not flat: scanned dimensions after collapsing (>= 1)
  int items = 16;        ///< consecutive elements per thread (1 to 32: heads are a 32-bit mask)
  int block_size = 256;  ///< compute threads per block (a multiple of 32 up to 960)
  int min_blocks = 0;    ///< resident blocks per SM asked of the compiler (0: none)
  bool index64 = false;

  /// The key text of everything above (spec_serial.hpp): the generated source's banner.
  std::string key() const;
};

template <class Spec, class V>
enable_if_same_t<Spec, ScanSpecialization> visit_fields(Spec& s, V& v) {
  v.text({"scan_ctype", "S"}, s.scan_ctype);
  v.flag({"segmented", "seg"}, s.segmented);
  v.flag({"flat", "flat"}, s.flat);
  v.number({"kept_ndim", "knd"}, s.kept_ndim);
  v.number({"scan_ndim", "snd"}, s.scan_ndim);
  v.number({"items", "items"}, s.items);
  v.number({"block_size", "block"}, s.block_size);
  v.flag({"index64", "i64"}, s.index64);
  v.number_or({"min_blocks", "minb"}, s.min_blocks, 0);
  v.params({"params", "params"}, s.params);
}

/// Threads per block: block_size compute threads and two look-back warps.
inline int scan_threads(const ScanSpecialization& s) { return s.block_size + 64; }

/// Elements per tile.
inline std::int64_t scan_tile(const ScanSpecialization& s) {
  return std::int64_t{s.block_size} * s.items;
}

/// Bytes of the scanned value when scan_ctype is a dtype's C++ type; 0 for another type (a
/// struct from the preamble), which the generated code bounds by kMaxScanValueBytes.
std::size_t scan_value_bytes(const ScanSpecialization& s);
inline constexpr std::size_t kMaxScanValueBytes = 16;

/// Whether statuses are packed 64-bit words (a value of at most 4 bytes) rather than a flag and
/// a value slot published after a fence.
bool scan_packed(const ScanSpecialization& s);

/// Bytes of dynamic shared memory a block takes: the tile's values, padded (a type other than
/// a dtype's counts kMaxScanValueBytes per value, its bound).
std::size_t scan_dynamic_shared(const ScanSpecialization& s);

/// 32-bit words of one tile status value (the scanned value, plus a head flag when segmented).
int scan_slot_words(const ScanSpecialization& s);

/// Scratch of a launch over `n_tiles` tiles in groups of 32 (byte offsets): from byte 16 one
/// flag per tile and one per group (the part cleared before each launch), then the tiles'
/// aggregates and the groups' aggregates and inclusive prefixes. Packed statuses are the flag
/// words themselves: the values' offsets are the flags'.
struct ScanScratch {
  std::size_t cleared = 0;      ///< bytes from 0 that are zeroed before the launch
  std::size_t group_flags = 0;  ///< the groups' flags (the tiles' start at byte 16)
  std::size_t tile_values = 0, group_aggregates = 0, group_prefixes = 0;
  std::size_t total = 0;
};
ScanScratch scan_scratch(const ScanSpecialization& s, std::int64_t n_tiles);

/// Kernel symbol: "cujit_scan_<name>", or "cujit_select_<name>" for a select kernel.
std::string scan_symbol(const ScanDefinition& def);

/// Inputs (indices into in) and outputs (indices into out, shifted by in.size()) that take part
/// in the layout: array inputs, and every output of a scan (a select kernel's are written by
/// position).
std::vector<int> scan_layout_params(const ScanDefinition& def, const ScanSpecialization& s);

}  // namespace cujit::detail
