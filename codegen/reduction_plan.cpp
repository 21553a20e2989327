#include "codegen/reduction_plan.hpp"

#include <cujit/error.hpp>

#include <algorithm>
#include <cstdlib>
#include <numeric>

namespace cujit::detail {
namespace {

// Split segments take at most this many chunks each; their second pass has this many threads
// per block, so its loads of up to kMaxSegmentSplit partials go out in three rounds at most.
constexpr std::int64_t kMaxSegmentSplit = 24576;
constexpr int kSegmentPass2Block = 1024;
// Segmented calls whose segments average at most this many elements take a group of lanes
// (at most a warp) per segment.
constexpr std::int64_t kSegmentGroupMax = 1024;

std::int64_t round_up(std::int64_t value, std::int64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

int next_pow2(std::int64_t value) {
  int p = 1;
  while (p < value && p < (1 << 30)) p <<= 1;
  return p;
}

// Parameters, layout arrays and their strides split into kept and reduced axes.
struct Layouts {
  std::vector<int> in, out;          // layout inputs, layout outputs (parameter indices)
  std::vector<Shape> kept, reduced;  // layout inputs then outputs / inputs only
  std::int64_t max_span = 0;
};

void describe_params(const ReductionDefinition& def, const ResolvedTypes& types,
                     const ArgDesc* args, RedSpecialization& spec) {
  const ParamList params(def.in, def.out);
  spec.params.resize(params.size());
  for (std::size_t k = 0; k < params.size(); ++k) {
    RedParam& e = spec.params[k];
    e.dtype = k < params.n_in() ? types.in[k] : types.out[k - params.n_in()];
    e.scalar = k < params.n_in() && !args[k].is_array;
    e.used = def.use.used[k] != 0;
    e.raw_view_used = def.use.raw_view_used[k] != 0 && !e.scalar;
    if (!e.scalar && params[k].raw) e.raw_contiguous = args[k].c_contiguous;
  }
}

Layouts layouts(const ReductionDefinition& def, const ArgDesc* args, const Shape& shape,
                const RedAxes& axes, bool keepdims, const RedSpecialization& spec) {
  const ParamList params(def.in, def.out);
  const Who who{"reduction kernel", def.name};
  Layouts l;
  l.max_span = axes.segmented ? std::max(axes.n_out, axes.n_red)
                              : axes.n_out * std::max<std::int64_t>(axes.n_red, 1);
  for (std::size_t k = 0; k < params.size(); ++k) {
    const ArgDesc& a = args[k];
    if (spec.params[k].scalar) continue;
    if (params[k].raw) {
      check_raw_array(who, params[k], a);
      l.max_span = std::max(l.max_span, a.size());
      continue;
    }
    for (std::size_t d = 0; d < a.shape->size(); ++d) {
      l.max_span = std::max(l.max_span, std::abs((*a.strides)[d]) * (*a.shape)[d]);
    }
    const bool input = k < params.n_in();
    if (spec.params[k].raw_view_used && (!a.c_contiguous || (input && *a.shape != shape))) {
      throw ArgumentError(who.text() + ": _raw_" + params[k].name + " needs '" + params[k].name +
                          "' to be C-contiguous" + (input ? " and not broadcast" : ""));
    }
    if (!input) {
      l.out.push_back(static_cast<int>(k));
      continue;
    }
    l.in.push_back(static_cast<int>(k));
    const Shape full = broadcast_strides(*a.shape, *a.strides, shape);
    Shape kept, reduced;
    for (int d : axes.kept_axes) kept.push_back(full[d]);
    if (axes.segmented) kept.push_back(0);  // a segment's start comes from its offsets
    for (int d : axes.red_axes) reduced.push_back(full[d]);
    l.kept.push_back(std::move(kept));
    l.reduced.push_back(std::move(reduced));
  }
  for (int k : l.out) {
    const Shape& strides = *args[k].strides;
    Shape kept;
    if (keepdims) {
      for (int d : axes.kept_axes) kept.push_back(strides[d]);
    } else {
      kept = strides;
    }
    l.kept.push_back(std::move(kept));
  }
  return l;
}

// Whether every used input is contiguous along the single reduced dimension, its vector
// width along it, and the primary input (the first used one that varies along both groups).
int choose_vector(const RedPlan& plan, const ArgDesc* args, const std::vector<int>& inputs,
                  std::size_t& max_item, int& primary, bool& red_contiguous) {
  const RedSpecialization& spec = plan.spec;
  primary = -1;
  max_item = 0;
  red_contiguous = spec.red_ndim == 1;
  for (std::size_t a = 0; a < inputs.size(); ++a) {
    const RedParam& e = spec.params[inputs[a]];
    if (!e.used) continue;
    if (primary < 0) primary = static_cast<int>(a);
    const std::size_t item = dtype_size(e.dtype);
    max_item = std::max(max_item, item);
    if (plan.reduced.strides[a][0] != static_cast<std::int64_t>(item)) red_contiguous = false;
  }
  if (primary < 0) primary = 0;
  for (std::size_t a = 0; a < inputs.size(); ++a) {
    if (!spec.params[inputs[a]].used) continue;
    if (plan.kept.strides[a].back() != 0 && plan.reduced.strides[a].back() != 0) {
      primary = static_cast<int>(a);
      break;
    }
  }
  if (!red_contiguous || max_item == 0 || max_item > 8 ||
      plan.n_red < static_cast<std::int64_t>(2 * (16 / max_item))) {
    return 1;
  }
  int vec = static_cast<int>(16 / max_item);
  for (std::size_t a = 0; a < inputs.size() && vec > 1; ++a) {
    const RedParam& e = spec.params[inputs[a]];
    if (!e.used) continue;
    const std::int64_t align = vec * static_cast<std::int64_t>(dtype_size(e.dtype));
    if (args[inputs[a]].address % align != 0) vec = 1;
    for (std::int64_t st : plan.kept.strides[a]) {
      if (st % align != 0) vec = 1;
    }
  }
  return vec;
}

// Rows: a group of lanes per row, or the whole block for long rows.
void plan_rows(RedPlan& plan, bool small_rows, std::int64_t per_row) {
  RedSpecialization& spec = plan.spec;
  const int B = spec.block_size;
  spec.strategy = RedStrategy::Rows;
  // Two loads per lane keep more bytes in flight than one, and lane pairs still fill whole
  // 32-byte sectors.
  spec.group =
      small_rows ? static_cast<int>(std::min<std::int64_t>(32, next_pow2((per_row + 1) / 2))) : B;
  // Rows a group covers in one or two loads per lane: several rows per pass.
  const std::int64_t nv = spec.vec > 1 ? plan.n_red / spec.vec : plan.n_red;
  const std::int64_t loads = (nv + spec.group - 1) / spec.group;
  if (small_rows && spec.group < B && loads >= 1 && loads <= 2) {
    spec.row_loads = static_cast<int>(loads);
    spec.rows_per_pass = loads == 1 ? 4 : 2;
  }
}

// Whether V adjacent outputs can be one vector load in every loaded input: the row a multiple
// of V, the innermost kept axis contiguous, every address and stride aligned to V items.
bool columns_aligned(const RedPlan& plan, const ArgDesc* args, const std::vector<int>& inputs,
                     int v) {
  const CollapsedLayout& co = plan.kept;
  if (co.shape.back() % v != 0) return false;
  for (std::size_t a = 0; a < inputs.size(); ++a) {
    const RedParam& e = plan.spec.params[inputs[a]];
    if (!e.used) continue;
    const auto item = static_cast<std::int64_t>(dtype_size(e.dtype));
    const std::int64_t align = v * item;
    if (co.strides[a].back() != item || args[inputs[a]].address % align != 0) return false;
    for (std::size_t d = 0; d + 1 < co.shape.size(); ++d) {
      if (co.strides[a][d] % align != 0) return false;
    }
    for (std::int64_t st : plan.reduced.strides[a]) {
      if (st % align != 0) return false;
    }
  }
  return true;
}

// Columns: V adjacent outputs per thread when the innermost kept axis is contiguous and
// aligned in every loaded input (one 16-byte load per reduced index); few thread columns
// split the reduced axis inside the block too.
void plan_columns(RedPlan& plan, const ArgDesc* args, const std::vector<int>& inputs,
                  std::size_t max_item) {
  RedSpecialization& spec = plan.spec;
  spec.strategy = RedStrategy::Columns;
  spec.vec = 1;
  // The widest vector that divides the row and that every loaded input is aligned to: two
  // float32 columns load whole 8-byte rows (scalar loads: 0.855 of copy, H100, 2026-11-27).
  for (int v = max_item > 0 && max_item <= 8 ? static_cast<int>(16 / max_item) : 1;
       v > 1 && spec.vec == 1; v /= 2) {
    if (columns_aligned(plan, args, inputs, v)) spec.vec = v;
  }
  const int B = spec.block_size;
  const std::int64_t threads = plan.n_out / spec.vec;
  const std::size_t shared = static_cast<std::size_t>(B / 32) *
                             static_cast<std::size_t>(next_pow2(threads)) *
                             reduction_partial_bytes(spec);
  // Only long columns: an identity that is not neutral would count once per thread.
  if (threads <= 16 && shared <= 16384 && plan.n_red >= std::int64_t{B} * 16) {
    spec.group = next_pow2(threads);
  }
}

// Folded columns (axis 0 of a tall matrix with few columns): rows folded side by side so that
// the threads of a grid row, fold * n_out of them, cover whole 128-byte lines of items of
// `item` bytes (a warp's loads stay aligned from one folded row to the next) and fill whole
// blocks: the smallest such fold with at most 3% of the threads idle, else the best of those
// up to 8192 threads (H200, 2026-11-27: sums over axis 0 of 2^28 float32 with 33 / 100 / 300
// columns at 0.82-0.85 of copy with the folds that only fill blocks).
std::int64_t fold_factor(std::int64_t n_out, int block, std::size_t item) {
  const std::int64_t line = 128 / std::gcd<std::int64_t>(128, static_cast<std::int64_t>(item));
  const std::int64_t unit = line / std::gcd(line, n_out);
  std::int64_t best = unit;
  double best_use = 0;
  for (std::int64_t k = unit; k == unit || k * n_out <= 8192; k += unit) {
    const std::int64_t threads = k * n_out;
    const double use = static_cast<double>(threads) / static_cast<double>(round_up(threads, block));
    if (use >= 0.97) return k;
    if (use > best_use) best_use = use, best = k;
  }
  return best;
}

// Columns whose thread per output would leave most of the device idle or walk narrow rows
// (tall matrices of up to tuning.fold_max_outputs columns, one kept and one reduced dimension,
// at least 64 rows a fold): folded, with scalar loads (H200, 2026-11-27: sums over axis 0 of
// 2^28 float32 with 33 / 100 / 300 columns at 0.33 / 0.34 / 0.57 of copy unfolded).
void maybe_fold(RedPlan& plan, const RedTuning& tuning, std::size_t max_item) {
  RedSpecialization& spec = plan.spec;
  if (spec.group < 32 || spec.segmented || spec.out_ndim != 1 || spec.red_ndim != 1 ||
      plan.n_out > tuning.fold_max_outputs) {
    return;
  }
  const std::int64_t k =
      fold_factor(plan.n_out, spec.block_size, std::max<std::size_t>(max_item, 1));
  if (plan.n_red < 64 * k) return;
  spec.fold = true;
  spec.vec = 1;
  plan.fold = k;
}

// Short rows that are not 16-byte aligned (rows of 17: a 16-lane group loads two elements a
// lane for 17, at 0.59 of copy on an H200), back to back in every loaded input: staged through
// shared memory a tile of whole rows at a time.
void maybe_stage(RedPlan& plan, const ReductionDefinition& def, const std::vector<int>& inputs) {
  RedSpecialization& spec = plan.spec;
  if (spec.strategy != RedStrategy::Rows || spec.segmented || spec.vec != 1 ||
      !spec.red_contiguous || spec.out_ndim != 1 || spec.red_ndim != 1 || plan.n_red < 2 ||
      plan.n_red > kMaxStagedRow || spec.group == spec.block_size ||
      reduction_stage_capacity(def, spec) < kMaxStagedRow) {
    return;
  }
  for (std::size_t a = 0; a < inputs.size(); ++a) {
    const RedParam& e = spec.params[inputs[a]];
    if (!e.used) continue;
    const auto item = static_cast<std::int64_t>(dtype_size(e.dtype));
    if (plan.kept.strides[a][0] != plan.n_red * item || plan.reduced.strides[a][0] != item) return;
  }
  spec.staged = true;
  spec.group = 32;
  spec.row_loads = 0;
  spec.rows_per_pass = 1;
  plan.stage_rows =
      std::min<std::int64_t>(reduction_stage_capacity(def, spec) / plan.n_red, spec.block_size);
}

// Long rows a block each, contiguous along the reduced axis but not 16-byte aligned (rows of
// 50,257 floats): every used input of one item size, naturally aligned, and misaligned by the
// same bytes in every row, so one head of scalars per row aligns them all. Returns the vector
// width of the aligned body, or 1.
int peel_vector(const RedPlan& plan, const ArgDesc* args, const std::vector<int>& inputs) {
  const RedSpecialization& spec = plan.spec;
  std::int64_t item = 0, misalign = -1;
  std::vector<std::int64_t> stride_mods;
  for (std::size_t a = 0; a < inputs.size(); ++a) {
    if (!spec.params[inputs[a]].used) continue;
    const auto size = static_cast<std::int64_t>(dtype_size(spec.params[inputs[a]].dtype));
    const auto offset = static_cast<std::int64_t>(args[inputs[a]].address % 16);
    if ((item != 0 && size != item) || size > 8 || offset % size != 0) return 1;
    if (misalign >= 0 && offset != misalign) return 1;
    item = size;
    misalign = offset;
    std::vector<std::int64_t> mods;
    for (std::int64_t st : plan.kept.strides[a]) {
      if (st % size != 0) return 1;
      mods.push_back(((st % 16) + 16) % 16);
    }
    if (!stride_mods.empty() && mods != stride_mods) return 1;
    stride_mods = std::move(mods);
  }
  return item == 0 ? 1 : static_cast<int>(16 / item);
}

// A block per row of at least four loads per thread: rows of a few hundred vectors (1,023
// floats, misaligned: 256 float4 after peeling) spent more time in the block's reduction than
// in loading with 256 threads (H200: 0.535 of copy with 256 threads, 0.963 with 64).
void fit_block_to_row(RedPlan& plan, std::int64_t row_length) {
  RedSpecialization& spec = plan.spec;
  const std::int64_t vectors = (row_length + spec.vec - 1) / spec.vec;
  int block = spec.block_size;
  while (block > 64 && vectors < std::int64_t{block} * 4) block /= 2;
  spec.block_size = spec.group = block;
}

// A segmented call's mean segment length (the input's length over the segments).
std::int64_t segment_mean(const RedPlan& plan) {
  const std::int64_t n_out = std::max<std::int64_t>(plan.n_out, 1);
  return (plan.n_red + n_out - 1) / n_out;
}

// Segmented calls: the host knows the segments' mean length only (the input's length over
// their count), so that decides. Short segments take a group of lanes each, sized so that a
// lane loads about `lane_loads` elements; long ones a block each (aligned vectors after a
// head of scalars, as peeled rows) when there are enough to fill the GPU, else every segment
// is split over several blocks in two passes.
void choose_segmented(RedPlan& plan, const ArgDesc* args, const std::vector<int>& inputs,
                      const RedTuning& tuning, const DeviceLimits& device) {
  RedSpecialization& spec = plan.spec;
  std::size_t max_item = 0;
  int primary = 0;
  bool red_contiguous = false;
  choose_vector(plan, args, inputs, max_item, primary, red_contiguous);
  spec.red_contiguous = red_contiguous;
  spec.vec = 1;
  const int B = spec.block_size;
  const std::int64_t resident =
      std::int64_t{device.sm_count} * std::max(1, device.max_threads_per_sm / B);
  const std::int64_t mean = segment_mean(plan);
  spec.strategy = RedStrategy::Rows;
  if (mean <= kSegmentGroupMax) {
    const std::int64_t lanes = (mean + tuning.segment_lane_loads - 1) / tuning.segment_lane_loads;
    spec.group = std::min(32, next_pow2(std::max<std::int64_t>(lanes, 1)));
  } else if (plan.n_out * 2 >= resident) {
    spec.group = B;
    if (red_contiguous) spec.vec = peel_vector(plan, args, inputs);
    spec.peel = spec.vec > 1;
    fit_block_to_row(plan, mean);
  } else {
    spec.strategy = RedStrategy::Segments;
  }
}

void choose_strategy(RedPlan& plan, const ArgDesc* args, const std::vector<int>& inputs,
                     const RedTuning& tuning, const DeviceLimits& device) {
  RedSpecialization& spec = plan.spec;
  if (spec.segmented) {
    choose_segmented(plan, args, inputs, tuning, device);
    return;
  }
  std::size_t max_item = 0;
  int primary = 0;
  bool red_contiguous = false;
  spec.vec = choose_vector(plan, args, inputs, max_item, primary, red_contiguous);
  spec.red_contiguous = red_contiguous;
  if (!red_contiguous) spec.vec = 1;
  const int B = spec.block_size;
  const std::int64_t resident =
      std::int64_t{device.sm_count} * std::max(1, device.max_threads_per_sm / B);
  const std::int64_t rs = std::abs(plan.reduced.strides[primary].back());
  const std::int64_t os = std::abs(plan.kept.strides[primary].back());
  const bool red_inner = !(os != 0 && os < rs);
  const std::int64_t per_row = (plan.n_red + spec.vec - 1) / spec.vec;  // loads per segment
  const bool small_rows = per_row <= 32 * 16;
  if (plan.n_out > 1 && red_inner) {
    const std::int64_t enough = small_rows ? std::int64_t{device.sm_count} * 4 : resident;
    if (plan.n_out >= enough || plan.n_red == 0) {
      plan_rows(plan, small_rows, per_row);
      if (spec.group == B && red_contiguous && spec.vec == 1) {
        spec.vec = peel_vector(plan, args, inputs);
        spec.peel = spec.vec > 1;
      }
      if (spec.group == B) fit_block_to_row(plan, plan.n_red);
    } else {
      spec.strategy = RedStrategy::Segments;
    }
  } else if (plan.n_out > 1) {
    plan_columns(plan, args, inputs, max_item);
    maybe_fold(plan, tuning, max_item);
  } else {
    spec.strategy = RedStrategy::Segments;
  }
}

// Blocks per segment: `split` 0 chooses, 1 forces one, 2 at least two (the specialisation is
// one- or two-pass); chunks are multiples of `multiple`.
void settle(RedPlan& plan, int split, std::int64_t wanted, std::int64_t max_split,
            std::int64_t multiple) {
  const std::int64_t red_len = std::max<std::int64_t>(plan.n_red, 1);
  std::int64_t nsplit = std::clamp<std::int64_t>(wanted, 1, std::max<std::int64_t>(1, max_split));
  if (split == 1) nsplit = 1;
  if (split == 2) nsplit = std::max<std::int64_t>(nsplit, 2);
  nsplit = std::min<std::int64_t>(nsplit, 65535);
  plan.chunk = round_up((red_len + nsplit - 1) / nsplit, multiple);
  plan.nsplit = (red_len + plan.chunk - 1) / plan.chunk;
  if (split == 2 && plan.nsplit < 2) plan.nsplit = 2;  // an empty second block keeps two passes
}

// Segmented calls split over several blocks: the blocks per segment from the mean length
// (each block's chunk of its segment is computed on the device from the offsets).
void split_segments(RedPlan& plan, std::int64_t resident, int split, const RedTuning& tuning) {
  const std::int64_t n_out = std::max<std::int64_t>(plan.n_out, 1);
  const std::int64_t most =
      std::min(segment_mean(plan) / reduction_tile(plan.spec), kMaxSegmentSplit);
  std::int64_t nsplit = std::clamp<std::int64_t>(
      (resident * tuning.segment_waves + n_out - 1) / n_out, 1, std::max<std::int64_t>(1, most));
  if (split == 1) nsplit = 1;
  if (split == 2) nsplit = std::max<std::int64_t>(nsplit, 2);
  plan.nsplit = std::min<std::int64_t>(nsplit, 65535);
  plan.chunk = 0;
  plan.grid_x = plan.nsplit;
  plan.grid_y = std::min<std::int64_t>(plan.n_out, 65535);
  plan.grid2 = std::min(plan.n_out, resident * 4);
}

// Folded columns: grid rows of fold * n_out threads, chunks of the reduced axis (whole folds)
// in grid_y, at most `waves` of the device's resident blocks in all (a sliver of a third wave
// idles most of the device: H200, 2026-11-27, 2.06 waves of 33 folded columns at 0.87 of
// copy), and fold partials per chunk and output for the second pass (nsplit), which takes a
// block per output.
void plan_fold_grid(RedPlan& plan, std::int64_t resident, const RedTuning& tuning) {
  const int B = plan.spec.block_size;
  const std::int64_t k = plan.fold, threads = plan.n_out * k;
  plan.block1 = B;
  plan.grid_x = (threads + B - 1) / B;
  const std::int64_t wanted = std::max<std::int64_t>(1, resident * tuning.waves / plan.grid_x);
  settle(plan, 0, wanted, plan.n_red / (k * 32), k);  // two passes whatever the chunks
  plan.grid_y = plan.nsplit;
  plan.nsplit *= k;
  plan.grid2 = std::min(plan.n_out, resident * 4);
}

// Grid sizes for `resident` blocks resident on the whole device.
void plan_grid(RedPlan& plan, std::int64_t resident, int split, const RedTuning& tuning) {
  const RedSpecialization& spec = plan.spec;
  const int B = spec.block_size;
  const std::int64_t n_out = plan.n_out, n_red = plan.n_red;
  plan.nsplit = 1;
  plan.chunk = std::max<std::int64_t>(n_red, 1);
  plan.block1 = B;
  plan.grid_y = 1;
  switch (spec.strategy) {
    case RedStrategy::Rows: {
      const std::int64_t rows_per_block = spec.staged      ? plan.stage_rows
                                          : spec.group < B ? B / spec.group
                                                           : 1;
      if (spec.staged) plan.chunk = plan.stage_rows;  // the kernel's rows per tile
      plan.grid_x = std::min((n_out + rows_per_block - 1) / rows_per_block, resident * 4);
      break;
    }
    case RedStrategy::Columns: {
      if (spec.fold) {
        plan_fold_grid(plan, resident, tuning);
        break;
      }
      const std::int64_t threads = n_out / spec.vec;  // one per V adjacent outputs
      if (spec.group < 32) {
        const std::int64_t lanes = B / spec.group;  // threads along the reduced axis
        plan.grid_x = (threads + spec.group - 1) / spec.group;
        settle(plan, split, (resident * tuning.waves + plan.grid_x - 1) / plan.grid_x,
               n_red / (lanes * 8), 1);
        plan.grid_y = plan.nsplit;
        plan.grid2 = std::min(n_out, resident * 4);  // a block per output
        break;
      }
      const std::int64_t threads_wanted = resident * B * tuning.waves;
      settle(plan, split, (threads_wanted + threads - 1) / threads, n_red / 64, 1);
      // Few outputs: a narrower block, so that threads are not left without a column.
      plan.block1 = static_cast<int>(std::min<std::int64_t>(B, round_up(threads, 32)));
      plan.grid_x = (threads + plan.block1 - 1) / plan.block1;
      plan.grid_y = plan.nsplit;
      const std::int64_t per_block = columns_pass2_sliced(spec) ? 32 : B;  // outputs
      plan.grid2 = std::min((n_out + per_block - 1) / per_block, resident * 4);
      break;
    }
    case RedStrategy::Segments: {
      const std::int64_t tile = reduction_tile(spec);
      if (spec.segmented) {
        split_segments(plan, resident, split, tuning);
        break;
      }
      settle(plan, split, (resident * tuning.segment_waves + n_out - 1) / n_out,
             std::min(n_red / tile, kMaxSegmentSplit), tile);
      plan.grid_x = plan.nsplit;
      plan.grid_y = std::min<std::int64_t>(n_out, 65535);
      plan.grid2 = std::min(n_out, resident * 4);
      break;
    }
  }
}

void size_scratch(RedPlan& plan) {
  plan.block2 = plan.spec.second_pass_block();
  plan.scratch_bytes = plan.spec.two_pass ? static_cast<std::size_t>(plan.nsplit * plan.n_out) *
                                                reduction_partial_bytes(plan.spec)
                                          : 0;
}

}  // namespace

namespace {

// The axes of a segmented call: the 1-d input reduced in segments.
RedAxes segment_axes(const Who& who, const Shape& shape, const ReduceOptions& reduce) {
  const Segments& seg = *reduce.segments;
  if (reduce.axes || reduce.keepdims) {
    throw ArgumentError(who.text() +
                        ": cujit::segments reduces the 1-d input in segments; it "
                        "takes no cujit::axis or cujit::keepdims");
  }
  if (!seg.problem().empty()) {
    const std::string text = who.text() + ": " + seg.problem();
    if (seg.has_arrays() && (!seg.begin().valid() || !seg.end().valid())) throw ArgumentError(text);
    const auto integer = [](DType t) { return t == DType::Int32 || t == DType::Int64; };
    if (!integer(seg.dtype()) || (seg.has_arrays() && seg.begin().dtype() != seg.end().dtype())) {
      throw TypeError(text);
    }
    throw ShapeError(text);
  }
  if (shape.size() != 1) {
    throw ShapeError(who.text() +
                     ": cujit::segments reduces a 1-d input; the inputs broadcast "
                     "to the " +
                     std::to_string(shape.size()) + "-d shape " + shape_text(shape));
  }
  RedAxes axes;
  axes.segmented = true;
  axes.segments64 = seg.dtype() == DType::Int64;
  axes.out_shape = axes.kept_shape = {seg.count()};
  axes.red_shape = shape;
  axes.red_axes = {0};
  axes.n_out = seg.count();
  axes.n_red = shape[0];
  return axes;
}

}  // namespace

RedAxes reduction_axes(const Who& who, const Shape& shape, const ReduceOptions& reduce) {
  if (reduce.segments) return segment_axes(who, shape, reduce);
  const int ndim = static_cast<int>(shape.size());
  if (ndim > 64) {
    throw ShapeError(who.text() + ": arrays with more than 64 dimensions are not supported");
  }
  std::uint64_t mask = 0;
  if (!reduce.axes) {
    mask = ndim == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << ndim) - 1;
  } else {
    for (int a : *reduce.axes) {
      const int axis = a < 0 ? a + ndim : a;
      if (axis < 0 || axis >= ndim) {
        throw ShapeError(who.text() + ": axis " + std::to_string(a) + " is out of range for the " +
                         std::to_string(ndim) + "-d input shape " + shape_text(shape));
      }
      if (mask >> axis & 1) {
        throw ShapeError(who.text() + ": axis " + std::to_string(a) +
                         " is repeated in cujit::axis");
      }
      mask |= std::uint64_t{1} << axis;
    }
  }
  RedAxes axes;
  for (int d = 0; d < ndim; ++d) {
    const bool reduced = mask >> d & 1;
    (reduced ? axes.red_axes : axes.kept_axes).push_back(d);
    (reduced ? axes.red_shape : axes.kept_shape).push_back(shape[d]);
    if (!reduced || reduce.keepdims) axes.out_shape.push_back(reduced ? 1 : shape[d]);
  }
  axes.n_out = shape_product(axes.kept_shape);
  axes.n_red = shape_product(axes.red_shape);
  return axes;
}

namespace {

// The part of a call's plan that no strategy changes: sizes, parameters, the kept and reduced
// layouts collapsed, the index width. `inputs` receives the layout inputs' parameter indices.
RedPlan plan_layouts(const ReductionDefinition& def, const ResolvedTypes& types,
                     const std::string& reduce_ctype, const ArgDesc* args, const Shape& shape,
                     const RedAxes& axes, bool keepdims, int block_size, std::vector<int>& inputs) {
  const Who who{"reduction kernel", def.name};
  if (axes.n_red == 0 && !def.has_identity()) {
    throw ArgumentError(who.text() + ": zero-size reduction (input shape " + shape_text(shape) +
                        ") and the kernel has no identity");
  }
  if (axes.segmented && !def.has_identity()) {
    throw ArgumentError(who.text() +
                        ": a segmented reduction needs an identity (an empty segment gives it)");
  }
  RedPlan plan;
  RedSpecialization& spec = plan.spec;
  spec.reduce_ctype = reduce_ctype;
  spec.block_size = block_size;
  spec.segmented = axes.segmented;
  spec.segments64 = axes.segments64;
  plan.n_out = axes.n_out;
  plan.n_red = axes.n_red;
  describe_params(def, types, args, spec);
  Layouts l = layouts(def, args, shape, axes, keepdims, spec);
  spec.index64 = l.max_span > kInt32IndexLimit;
  plan.kept = collapse_dims(axes.kept_shape, l.kept, def.reduce_dims);
  plan.reduced = collapse_dims(axes.red_shape, l.reduced, def.reduce_dims);
  plan.layout_inputs = l.in.size();
  spec.out_ndim = static_cast<int>(plan.kept.shape.size());
  spec.red_ndim = static_cast<int>(plan.reduced.shape.size());
  inputs = std::move(l.in);
  return plan;
}

std::int64_t resident_blocks(const DeviceLimits& device, int block_size) {
  return std::int64_t{device.sm_count} * std::max(1, device.max_threads_per_sm / block_size);
}

// The facts of the generic specialisation: split segments of any layout in two passes, with
// 64-bit indices, one element per load, the default block.
void make_generic(RedSpecialization& s) {
  s.strategy = RedStrategy::Segments;
  s.out_ndim = s.red_ndim = kGenericNdim;
  s.red_contiguous = s.peel = s.fold = s.staged = false;
  s.vec = 1;
  s.group = 32;
  s.row_loads = 0;
  s.rows_per_pass = 1;
  s.two_pass = s.index64 = true;
  s.block_size = kGenericRedBlock;
  s.pass2_block = kSegmentPass2Block;
}

}  // namespace

RedPlan plan_reduction(const ReductionDefinition& def, const ResolvedTypes& types,
                       const std::string& reduce_ctype, const ArgDesc* args, const Shape& shape,
                       const RedAxes& axes, bool keepdims, int block_option,
                       const RedTuning& tuning, const DeviceLimits& device) {
  const int block_size = block_option > 0 ? block_option : tuning.block_size;
  if (block_option < 0 || block_size > 1024 || block_size % 32 != 0) {
    throw ArgumentError(Who{"reduction kernel", def.name}.text() + ": block size " +
                        std::to_string(block_option) + " is not a multiple of 32 up to 1024");
  }
  std::vector<int> inputs;
  RedPlan plan =
      plan_layouts(def, types, reduce_ctype, args, shape, axes, keepdims, block_size, inputs);
  RedSpecialization& spec = plan.spec;
  choose_strategy(plan, args, inputs, tuning, device);
  maybe_stage(plan, def, inputs);
  plan_grid(plan, resident_blocks(device, spec.block_size), 0, tuning);
  spec.two_pass = plan.nsplit > 1 || spec.fold;
  if (spec.two_pass && spec.strategy == RedStrategy::Segments)
    spec.pass2_block = kSegmentPass2Block;
  size_scratch(plan);
  return plan;
}

std::optional<RedPlan> plan_reduction_generic(const ReductionDefinition& def,
                                              const ResolvedTypes& types,
                                              const std::string& reduce_ctype, const ArgDesc* args,
                                              const Shape& shape, const RedAxes& axes,
                                              bool keepdims, const RedTuning& tuning,
                                              const DeviceLimits& device) {
  if (axes.segmented) return std::nullopt;
  std::vector<int> inputs;
  RedPlan plan =
      plan_layouts(def, types, reduce_ctype, args, shape, axes, keepdims, kGenericRedBlock, inputs);
  if (!pad_dims(plan.kept, kGenericNdim) || !pad_dims(plan.reduced, kGenericNdim)) {
    return std::nullopt;
  }
  make_generic(plan.spec);
  plan_grid(plan, resident_blocks(device, plan.spec.block_size), 2, tuning);
  size_scratch(plan);
  return plan;
}

RedSpecialization generic_reduction(const RedSpecialization& s) {
  RedSpecialization g = s;
  make_generic(g);
  return g;
}

void replan_reduction_grid(RedPlan& plan, int blocks_per_sm, const RedTuning& tuning,
                           const DeviceLimits& device) {
  if (blocks_per_sm <= 0) return;
  const std::int64_t resident = std::int64_t{device.sm_count} * blocks_per_sm;
  if (resident == resident_blocks(device, plan.spec.block_size)) return;
  plan_grid(plan, resident, plan.spec.two_pass ? 2 : 1, tuning);
  size_scratch(plan);
}

std::vector<unsigned char> reduction_layout_bytes(const AbiStruct& abi, const RedPlan& plan) {
  std::vector<unsigned char> bytes(abi.size(), 0);
  AbiWriter w(abi, bytes.data());
  w.set(kRedNOut, 0, plan.n_out);
  w.set(kRedNRed, 0, plan.n_red);
  w.set(kRedChunk, 0, plan.chunk);
  w.set(kRedNSplit, 0, plan.nsplit);
  if (plan.spec.fold) w.set(kRedFold, 0, plan.fold);
  const CollapsedLayout& co = plan.kept;
  const CollapsedLayout& cr = plan.reduced;
  w.fill(kRedOutShape, co.shape);
  w.fill(kRedRedShape, cr.shape);
  const std::size_t no = co.shape.size(), nr = cr.shape.size(), na = plan.layout_inputs;
  for (std::size_t a = 0; a < co.strides.size(); ++a) {
    const bool input = a < na;
    for (std::size_t d = 0; d < no; ++d) {
      w.set(input ? kRedInOut : kRedOutOut, (input ? a : a - na) * no + d, co.strides[a][d]);
    }
  }
  for (std::size_t a = 0; a < cr.strides.size(); ++a) {
    for (std::size_t d = 0; d < nr; ++d) w.set(kRedInRed, a * nr + d, cr.strides[a][d]);
  }
  // Magic numbers for the fast division by every extent (32-bit indices only).
  const std::pair<const Shape*, std::pair<int, int>> groups[] = {
      {&co.shape, {kRedOutMagic, kRedOutShift}}, {&cr.shape, {kRedRedMagic, kRedRedShift}}};
  for (const auto& [extents, fields] : groups) {
    for (std::size_t d = 0; d < extents->size(); ++d) {
      const std::int64_t e = (*extents)[d];
      if (plan.spec.index64 || e < 1) continue;
      const FastDivisor f = fast_divisor(static_cast<unsigned>(e));
      w.set(fields.first, d, f.magic);
      w.set(fields.second, d, f.shift);
    }
  }
  return bytes;
}

}  // namespace cujit::detail
