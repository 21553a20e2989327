#pragma once
// One specialisation of a reduction kernel as a value: what the user wrote (the definition)
// and the facts that select the generated code (strategy, dtypes, dimensions, vector and index
// width). Below both the planner, which computes a specialisation, and the generator, which
// reads one; neither includes the other.

#include <cujit/dtype.hpp>
#include <cujit/program.hpp>

#include "codegen/signature.hpp"
#include "codegen/snippet_use.hpp"
#include "codegen/spec_serial.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace cujit::detail {

/// Loads in flight per thread and loop iteration (memory-level parallelism): 16-byte vectors,
/// or single elements.
inline constexpr int kUnrollVector = 4;
inline constexpr int kUnrollScalar = 8;

/// What the user wrote (constructor arguments), after parsing.
struct ReductionDefinition {
  std::string name;
  std::string in_signature, out_signature;  // as written, for the cache spec
  std::vector<Param> in, out;
  std::string map_expr, reduce_expr, post_map_expr, identity, preamble;
  std::string reduce_type;  ///< as written; empty: the first output's type
  std::vector<std::string> compile_options;
  std::vector<LinkInput> link;  ///< device code the expressions call, linked with nvJitLink
  bool reduce_dims = true;
  ParamUse use;  ///< what the snippets use, computed once by make_*_definition

  /// Whether the identity is given (not blank): without one an accumulator starts empty.
  bool has_identity() const { return identity.find_first_not_of(" \t\r\n") != std::string::npos; }
};

/// How threads are mapped onto (output, reduced index) pairs.
enum class RedStrategy : unsigned char {
  /// Few outputs with long segments (a full reduction among them): each segment is split
  /// over `nsplit` blocks that accumulate grid-stride, reduce in the block and write a
  /// partial; a second kernel reduces the partials of each output in a fixed order.
  Segments,
  /// Many outputs whose reduced axis is the fastest-moving one (rows): a group of `group`
  /// lanes (1..32) of a warp per row, or the whole block per row (group == block_size).
  Rows,
  /// The reduced axis is strided and the outputs are the fastest-moving axis (axis 0 of a C
  /// matrix): each thread owns an output and walks the reduced axis, coalesced across
  /// threads; the reduced axis may be split over `nsplit` blocks with a second kernel.
  /// With group < 32 (few outputs) a block has `group` thread columns and block_size / group
  /// threads along the reduced axis, combined in a fixed order through shared memory.
  Columns,
};

/// Per parameter (inputs, then outputs) facts that select the generated code.
struct RedParam {
  DType dtype = DType::Float32;
  bool scalar = false;         ///< an input passed by value (a host scalar)
  bool used = true;            ///< referenced by a snippet; unused arrays are never loaded
  bool raw_view_used = false;  ///< `_raw_<name>` referenced (needs a C-contiguous array)
  bool raw_contiguous = true;  ///< raw parameters: C-contiguous (else 1-d with a byte stride)
};

struct RedSpecialization {
  std::vector<RedParam> params;  ///< in, then out
  std::string reduce_ctype;      ///< C++ type of the accumulator ("float", "ArgMax", ...)
  RedStrategy strategy = RedStrategy::Segments;
  int out_ndim = 1;  ///< output dimensions after collapsing (>= 1)
  int red_ndim = 1;  ///< reduced dimensions after collapsing (>= 1)
  /// Every used input is contiguous along a single reduced dimension (direct indexing).
  bool red_contiguous = false;
  int vec = 1;     ///< elements per 16-byte load along the reduced axis (red_contiguous)
  int group = 32;  ///< Rows: lanes per row (power of two <= 32) or block_size (block per row);
                   ///< Columns: thread columns per block when < 32 (a power of two)
  /// Rows with group < 32: 0 walks each row in a loop; 1 or 2 means every lane loads at most
  /// that many vectors (elements) of a row, and a group takes rows_per_pass rows at once.
  int row_loads = 0;
  int rows_per_pass = 1;
  /// Rows, a block per row, with vec > 1 although rows are not 16-byte aligned: each row is a
  /// head of scalars up to the first input's 16-byte boundary (every loaded input is
  /// misaligned alike), aligned vectors, and a tail of scalars.
  bool peel = false;
  /// A segmented call (cujit::segments): output o reduces the reduced elements from the
  /// begin to the end offset of segment o, read on the device from two extra raw int
  /// parameters (int64 with segments64); Rows or Segments with one kept and one reduced
  /// dimension, the inputs' kept strides 0.
  bool segmented = false;
  bool segments64 = false;
  /// Columns, one kept and one reduced dimension, few outputs (axis 0 of a tall matrix): the
  /// block's threads cover L.fold rows side by side, thread v taking output v % n_out and
  /// rows v / n_out, v / n_out + L.fold, ... of its chunk, so that a warp reads contiguous
  /// memory with every lane busy; the L.fold partials of every chunk and output are combined
  /// by the second pass (always two passes).
  bool fold = false;
  /// Rows of at most kMaxStagedRow elements that are not 16-byte aligned (rows of 17), back
  /// to back in every loaded input: the block copies whole rows into shared memory with
  /// coalesced loads, then each thread reduces one row (reduction_stage_capacity elements
  /// per loaded input).
  bool staged = false;
  bool two_pass = false;  ///< Segments/Columns: partials in scratch plus a second kernel
  bool index64 = false;   ///< 64-bit index arithmetic
  int block_size = 256;   ///< multiple of 32, <= 1024
  int pass2_block = 0;    ///< threads per block of the second pass (0: block_size)

  /// Threads per block of the second pass.
  int second_pass_block() const { return pass2_block > 0 ? pass2_block : block_size; }

  /// The key text of everything above (spec_serial.hpp): the generated source's banner.
  std::string key() const;
};

/// The fields of a reduction specialisation, once, in key order (spec_serial.hpp): the key
/// text, the memo bytes and the manifest entry are rendered from this list.
template <class Param, class V>
enable_if_same_t<Param, RedParam> visit_fields(Param& p, V& v) {
  v.dtype("dtype", p.dtype);
  v.kind("scalar", p.scalar);
  v.flag("used", p.used);
  v.flag("raw_view_used", p.raw_view_used);
  v.flag("raw_contiguous", p.raw_contiguous);
}
template <class Spec, class V>
enable_if_same_t<Spec, RedSpecialization> visit_fields(Spec& s, V& v) {
  v.choice({"strategy", "strategy"}, s.strategy, RedStrategy::Columns, "reduction strategy");
  v.text({"reduce_ctype", "R"}, s.reduce_ctype);
  v.number({"out_ndim", "ond"}, s.out_ndim);
  v.number({"red_ndim", "rnd"}, s.red_ndim);
  v.flag({"red_contiguous", "rc"}, s.red_contiguous);
  v.number({"vec", "vec"}, s.vec);
  v.number({"group", "group"}, s.group);
  v.number({"row_loads", "rl"}, s.row_loads);
  v.number({"rows_per_pass", "rpp"}, s.rows_per_pass);
  v.flag({"two_pass", "2p"}, s.two_pass);
  v.flag({"index64", "i64"}, s.index64);
  v.number({"block_size", "block"}, s.block_size);
  v.number_or({"pass2_block", "b2"}, s.pass2_block, 0);  // older entries lack it
  v.marker({"peel", "peel"}, s.peel);  // absent when false: earlier keys are unchanged
  v.marker({"segmented", "seg"}, s.segmented);
  v.marker({"segments64", "seg64"}, s.segments64);
  v.marker({"fold", "fold"}, s.fold);
  v.marker({"staged", "stage"}, s.staged);
  v.params({"params", "params"}, s.params);
}

/// Elements one unrolled pass of a block covers when it walks a contiguous segment: chunks of
/// a split segment are whole tiles, so every thread runs full unrolled passes.
std::int64_t reduction_tile(const RedSpecialization& s);

/// Kernel symbols: "cujit_red_<name>" (the first pass, or the only one) and
/// "cujit_red2_<name>" (the second pass of a two-pass specialisation).
std::string reduction_symbol(const ReductionDefinition& def);
std::string reduction_pass2_symbol(const ReductionDefinition& def);

/// Parameters (indices into in) that take part in the layout: non-raw, non-scalar inputs.
std::vector<int> reduction_layout_inputs(const ReductionDefinition& def,
                                         const RedSpecialization& s);
/// Outputs (indices into out) that take part in the layout: non-raw outputs.
std::vector<int> reduction_layout_outputs(const ReductionDefinition& def);

/// The size of a reduce type defined in the preamble is not known on the host, so scratch is
/// sized from this bound per partial (the generated code asserts it at compile time).
inline constexpr int kMaxAccumulatorBytes = 256;

/// Bytes of scratch per partial result: a bound on the accumulator's size (exact-ish for
/// dtype reduce types, kMaxAccumulatorBytes otherwise).
std::size_t reduction_partial_bytes(const RedSpecialization& s);

/// Whether the second pass of a (two-pass, unfolded, ungrouped) Columns specialisation gives a
/// block to 32 adjacent outputs and its warps to slices of their partials: when a block's
/// accumulators fit 16 KiB of shared memory. Otherwise a thread takes each output.
bool columns_pass2_sliced(const RedSpecialization& s);

/// Staged rows (RedSpecialization::staged): at most this many elements per row.
inline constexpr std::int64_t kMaxStagedRow = 64;
/// Staged rows: elements of every loaded input (used, not raw, not scalar) a block holds in
/// shared memory, 16 KiB in all (plus a word of padding per 32); a tile is min(this / row
/// length, block_size) rows.
std::int64_t reduction_stage_capacity(const ReductionDefinition& def, const RedSpecialization& s);

}  // namespace cujit::detail
