#include "codegen/scan_plan.hpp"

#include <cujit/error.hpp>

#include <algorithm>
#include <cstdlib>

namespace cujit::detail {
namespace {

// Each array's byte strides along the kept axes and along the scanned ones (the broadcast
// strides of an input), for the layout parameters.
struct AxisStrides {
  Shape kept_shape, scan_shape;
  std::vector<Shape> kept, scanned;
  std::int64_t max_span = 0;
};

AxisStrides axis_strides(const ScanDefinition& def, const ScanSpecialization& spec,
                         const ArgDesc* args, const ScanAxis& axis) {
  AxisStrides out;
  const int ndim = static_cast<int>(axis.shape.size());
  for (int d = 0; d < ndim; ++d) {
    const bool scanned = axis.axis < 0 || d == axis.axis;
    (scanned ? out.scan_shape : out.kept_shape).push_back(axis.shape[d]);
  }
  for (int k : scan_layout_params(def, spec)) {
    const ArgDesc& a = args[k];
    const Shape full = broadcast_strides(*a.shape, *a.strides, axis.shape);
    Shape kept, scanned;
    for (int d = 0; d < ndim; ++d) {
      const bool along = axis.axis < 0 || d == axis.axis;
      (along ? scanned : kept).push_back(full[d]);
      out.max_span = std::max(out.max_span, std::abs(full[d]) * axis.shape[d]);
    }
    out.kept.push_back(std::move(kept));
    out.scanned.push_back(std::move(scanned));
  }
  return out;
}

// Whether every loaded input and every output holds element e (kept axes, then the scanned
// ones, in C order) at byte e * itemsize.
bool flat_layout(const ScanDefinition& def, const ScanSpecialization& spec, const AxisStrides& st) {
  const std::vector<int> params = scan_layout_params(def, spec);
  Shape shape = st.kept_shape;
  shape.insert(shape.end(), st.scan_shape.begin(), st.scan_shape.end());
  for (std::size_t a = 0; a < params.size(); ++a) {
    const ScanParam& e = spec.params[params[a]];
    const bool input = params[a] < static_cast<int>(def.in.size());
    if (input && !e.used) continue;
    Shape strides = st.kept[a];
    strides.insert(strides.end(), st.scanned[a].begin(), st.scanned[a].end());
    std::int64_t expected = static_cast<std::int64_t>(dtype_size(e.dtype));
    for (std::size_t d = shape.size(); d-- > 0;) {
      if (shape[d] == 1) continue;
      if (strides[d] != expected) return false;
      expected *= shape[d];
    }
  }
  return true;
}

// Consecutive elements per thread: 128 bytes of a dtype value (32 at most), 8 of another type
// (at most 16 bytes). Larger tiles amortise each tile's look-back (H200, 2026-11-27: the sum
// scan of 2^28 float32 at 0.59 of copy with 16 floats per thread, 0.74 with 32).
int items_for(const ScanSpecialization& spec) {
  const std::size_t bytes = scan_value_bytes(spec);
  if (bytes == 0) return 8;
  return static_cast<int>(std::clamp<std::size_t>(128 / bytes, 1, 32));
}

}  // namespace

ScanAxis scan_axis(const Who& who, const Shape& shape, const ReduceOptions& reduce) {
  if (reduce.segments) {
    throw ArgumentError(who.text() +
                        ": cujit::segments applies to reductions; a scan runs over every element "
                        "or along one axis");
  }
  if (reduce.keepdims) {
    throw ArgumentError(who.text() +
                        ": cujit::keepdims does not apply to a scan (its outputs "
                        "have the input's shape)");
  }
  ScanAxis out;
  out.shape = shape;
  out.n = shape_product(shape);
  out.row_len = out.n;
  if (!reduce.axes) return out;
  const int ndim = static_cast<int>(shape.size());
  if (reduce.axes->size() != 1) {
    throw ShapeError(who.text() + ": a scan runs along one axis, got " +
                     std::to_string(reduce.axes->size()) + " in cujit::axis");
  }
  const int a = *reduce.axes->begin();
  const int axis = a < 0 ? a + ndim : a;
  if (axis < 0 || axis >= ndim) {
    throw ShapeError(who.text() + ": axis " + std::to_string(a) + " is out of range for the " +
                     std::to_string(ndim) + "-d input shape " + shape_text(shape));
  }
  out.axis = axis;
  out.row_len = shape[axis];
  return out;
}

ScanPlan plan_scan(const ScanDefinition& def, const ResolvedTypes& types,
                   const std::string& scan_ctype, const ArgDesc* args, const ScanAxis& axis,
                   int block_option, const ScanTuning& tuning) {
  const int block = block_option > 0        ? block_option
                    : tuning.block_size > 0 ? tuning.block_size
                                            : 256;
  if (block_option < 0 || block > 960 || block % 32 != 0) {
    const char* family = def.select == SelectWhat::None ? "scan kernel" : "select kernel";
    throw ArgumentError(Who{family, def.name}.text() + ": block size " +
                        std::to_string(block_option) +
                        " is not a multiple of 32 up to 960 (a scan adds two warps of its own)");
  }
  ScanPlan plan;
  ScanSpecialization& spec = plan.spec;
  const ParamList params(def.in, def.out);
  spec.params.resize(params.size());
  for (std::size_t k = 0; k < params.size(); ++k) {
    ScanParam& e = spec.params[k];
    e.dtype = k < params.n_in() ? types.in[k] : types.out[k - params.n_in()];
    e.scalar = k < params.n_in() && !args[k].is_array;
    e.used = def.use.used[k] != 0;
  }
  spec.scan_ctype = scan_ctype;
  spec.block_size = block;
  spec.items = tuning.items > 0 ? tuning.items : items_for(spec);
  spec.min_blocks = tuning.min_blocks >= 0 ? tuning.min_blocks : 0;
  plan.shape = axis.shape;
  plan.n = axis.n;
  plan.row_len = axis.row_len;
  spec.segmented = axis.row_len < axis.n;
  const AxisStrides st = axis_strides(def, spec, args, axis);
  spec.flat = flat_layout(def, spec, st);
  if (!spec.flat) {
    plan.kept = collapse_dims(st.kept_shape, st.kept, def.reduce_dims);
    plan.scanned = collapse_dims(st.scan_shape, st.scanned, def.reduce_dims);
    spec.kept_ndim = static_cast<int>(plan.kept.shape.size());
    spec.scan_ndim = static_cast<int>(plan.scanned.shape.size());
  }
  const std::int64_t tile = scan_tile(spec);
  plan.n_tiles = (plan.n + tile - 1) / tile;
  plan.scratch = scan_scratch(spec, plan.n_tiles);
  spec.index64 = std::max(plan.n, st.max_span) >= kInt32IndexLimit ||
                 plan.scratch.total >= static_cast<std::size_t>(kInt32IndexLimit);
  return plan;
}

std::vector<unsigned char> scan_layout_bytes(const AbiStruct& abi, const ScanPlan& plan) {
  std::vector<unsigned char> bytes(abi.size(), 0);
  AbiWriter w(abi, bytes.data());
  w.set(kScanN, 0, plan.n);
  w.set(kScanRowLen, 0, std::max<std::int64_t>(plan.row_len, 1));
  const ScanScratch& sc = plan.scratch;
  w.set(kScanGroupFlags, 0, static_cast<std::int64_t>(sc.group_flags));
  w.set(kScanTileValues, 0, static_cast<std::int64_t>(sc.tile_values));
  w.set(kScanGroupAggregates, 0, static_cast<std::int64_t>(sc.group_aggregates));
  w.set(kScanGroupPrefixes, 0, static_cast<std::int64_t>(sc.group_prefixes));
  if (plan.spec.flat) return bytes;
  const std::pair<const CollapsedLayout*, std::pair<int, int>> groups[] = {
      {&plan.kept, {kScanKeptShape, kScanKeptStrides}},
      {&plan.scanned, {kScanScanShape, kScanScanStrides}}};
  for (const auto& [layout, fields] : groups) {
    w.fill(fields.first, layout->shape);
    const std::size_t nd = layout->shape.size();
    for (std::size_t a = 0; a < layout->strides.size(); ++a) {
      for (std::size_t d = 0; d < nd; ++d) w.set(fields.second, a * nd + d, layout->strides[a][d]);
    }
  }
  return bytes;
}

}  // namespace cujit::detail
