#pragma once
// The plan of a reduction call: which axes are reduced, the layout arrays and their strides
// split into kept and reduced axes, the strategy (segments, rows, columns) with its vector
// width and groups, one or two passes, the grids for the device, and the layout struct's
// bytes. A pure function of the argument descriptions and the device limits.

#include <cujit/kernel_args.hpp>

#include "codegen/kernel_call.hpp"
#include "codegen/reduction_abi.hpp"
#include "codegen/reduction_spec.hpp"
#include "core/layout.hpp"

#include <cstdint>
#include <optional>
#include <vector>

namespace cujit::detail {

/// Run-time tuning knobs (CUJIT_RED_BLOCK, CUJIT_RED_WAVES, CUJIT_RED_SEG_WAVES,
/// CUJIT_RED_SEG_LOADS, CUJIT_RED_FOLD).
struct RedTuning {
  int block_size = 256;    ///< threads per block unless the call asks
  int waves = 2;           ///< waves of resident blocks for split columns
  int segment_waves = 32;  ///< blocks per resident block slot for split segments
  /// Segmented calls with short segments: elements each lane of a segment's group loads, on
  /// the segments' mean (CUJIT_RED_SEG_LOADS).
  int segment_lane_loads = 8;
  /// Columns of tall matrices with at most this many outputs are folded (RedSpecialization::
  /// fold); 0: never (CUJIT_RED_FOLD).
  int fold_max_outputs = 4096;
};

/// The reduced and kept axes of the broadcast input shape.
struct RedAxes {
  Shape out_shape;  ///< the result's shape (keepdims: reduced axes as 1)
  Shape kept_shape, red_shape;
  std::vector<int> kept_axes, red_axes;
  std::int64_t n_out = 1, n_red = 1;
  /// cujit::segments: the 1-d input is reduced in n_out segments (kept_axes empty, red_axes
  /// {0}, n_red the input's length), offsets of int64 with segments64.
  bool segmented = false;
  bool segments64 = false;
};

/// Normalises and checks `reduce`'s axes (or segments) against `shape`; throws ShapeError
/// naming `who` (TypeError for offsets that are not int32 or int64, ArgumentError for
/// segments with axes or keepdims).
RedAxes reduction_axes(const Who& who, const Shape& shape, const ReduceOptions& reduce);

struct RedPlan {
  RedSpecialization spec;
  std::int64_t n_out = 0, n_red = 0;
  std::int64_t chunk = 1, nsplit = 1;  ///< reduced elements per block, blocks per segment
  std::int64_t fold = 1;        ///< RedSpecialization::fold: rows a block covers side by side
  std::int64_t stage_rows = 0;  ///< RedSpecialization::staged: rows per tile of a block
  std::int64_t grid_x = 1, grid_y = 1, grid2 = 1;
  int block1 = 256, block2 = 256;
  std::size_t scratch_bytes = 0;  ///< partials of a two-pass launch; 0: one pass
  CollapsedLayout kept, reduced;  ///< strides: layout inputs (then outputs, kept only)
  std::size_t layout_inputs = 0;
};

/// Plans a call over `args` (all parameters; outputs the caller did not give described as
/// the arrays the launcher allocates) with the broadcast input `shape` and its `axes`.
/// `reduce_ctype` is the accumulator's C++ type; `blocks_per_sm` the first pass's occupancy
/// once the kernel is compiled (0 before: the planner assumes full occupancy). Throws
/// ArgumentError for a bad block size, a raw array neither C-contiguous nor 1-d, a `_raw_`
/// view of an array that is not C-contiguous, or an empty reduction without identity.
RedPlan plan_reduction(const ReductionDefinition& def, const ResolvedTypes& types,
                       const std::string& reduce_ctype, const ArgDesc* args, const Shape& shape,
                       const RedAxes& axes, bool keepdims, int block_option,
                       const RedTuning& tuning, const DeviceLimits& device);

/// Threads per block of the generic specialisation's first pass.
inline constexpr int kGenericRedBlock = 256;

/// The generic plan of a call: split segments over the kept and reduced layouts, each padded
/// to kGenericNdim dimensions, 64-bit indices, one element per load, two passes, the default
/// block. Slower than the call's own plan (much slower for many short rows), but one kernel
/// serves every layout and every axis choice of the same dtypes: what a target without a
/// compiler runs when the call's own specialisation was not shipped. Nullopt when the kept or
/// the reduced layout collapses to more than kGenericNdim dimensions. `axes` must have
/// outputs (n_out > 0: a call without any launches nothing and is not planned). Throws as
/// plan_reduction.
std::optional<RedPlan> plan_reduction_generic(const ReductionDefinition& def,
                                              const ResolvedTypes& types,
                                              const std::string& reduce_ctype, const ArgDesc* args,
                                              const Shape& shape, const RedAxes& axes,
                                              bool keepdims, const RedTuning& tuning,
                                              const DeviceLimits& device);

/// The generic specialisation of a call whose own specialisation is `s`: what the generic plan
/// of that call specialises to (precompile adds it beside every recorded entry).
RedSpecialization generic_reduction(const RedSpecialization& s);

/// Sizes the grids again for `blocks_per_sm` resident first-pass blocks per SM (the compiled
/// kernel's occupancy), keeping the plan one- or two-pass as compiled.
void replan_reduction_grid(RedPlan& plan, int blocks_per_sm, const RedTuning& tuning,
                           const DeviceLimits& device);

/// The layout struct's bytes for `plan`.
std::vector<unsigned char> reduction_layout_bytes(const AbiStruct& abi, const RedPlan& plan);

}  // namespace cujit::detail
