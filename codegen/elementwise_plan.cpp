#include "codegen/elementwise_plan.hpp"

#include <cujit/error.hpp>

#include <algorithm>
#include <cstdlib>

namespace cujit::detail {
namespace {

constexpr int kDefaultBlock = 256;
// Tiled2D blocks are 32 x 8 threads.
constexpr int kTileBlock = 256;
// Shared memory the tiles of one Tiled2D block may take.
constexpr std::size_t kMaxTileBytes = 40 * 1024;

// What the arrays of a call have in common: the largest item, whether all are C-contiguous
// with the broadcast shape, the largest byte (or element) span.
struct ArrayFacts {
  std::size_t max_item = 1;
  std::size_t loaded = 0;
  bool contiguous = true;
  std::int64_t max_span = 0;
};

bool takes_part(const ElementwiseDefinition& def, const ArgDesc& a, std::size_t k) {
  const ParamList params(def.in, def.out);
  return a.is_array && !params[k].raw && (def.use.used[k] || def.use.raw_view_used[k]);
}

ArrayFacts array_facts(const ElementwiseDefinition& def, const ArgDesc* args, const Shape& shape,
                       std::int64_t n) {
  const ParamList params(def.in, def.out);
  const Who who{"kernel", def.name};
  ArrayFacts facts;
  facts.max_span = n;
  for (std::size_t k = 0; k < params.size(); ++k) {
    const ArgDesc& a = args[k];
    if (!a.is_array) continue;
    if (params[k].raw) {
      check_raw_array(who, params[k], a);
      facts.max_span = std::max(facts.max_span, a.size());
      continue;
    }
    if (!takes_part(def, a, k)) continue;
    facts.max_item = std::max(facts.max_item, a.itemsize());
    ++facts.loaded;
    if (!a.c_contiguous || *a.shape != shape) facts.contiguous = false;
    for (std::size_t d = 0; d < a.shape->size(); ++d) {
      facts.max_span = std::max(facts.max_span, std::abs((*a.strides)[d]) * (*a.shape)[d]);
    }
  }
  return facts;
}

// Every array contiguous: 16-byte vectors when every used array is aligned to them.
void plan_contiguous(const ElementwiseDefinition& def, const ArgDesc* args, const ArrayFacts& facts,
                     EwPlan& plan) {
  int vec = facts.max_item <= 8 && facts.loaded > 0 ? static_cast<int>(16 / facts.max_item) : 1;
  const ParamList params(def.in, def.out);
  for (std::size_t k = 0; k < params.size() && vec > 1; ++k) {
    const ArgDesc& a = args[k];
    if (!a.is_array || params[k].raw || !def.use.used[k]) continue;
    if (a.address % (vec * a.itemsize()) != 0) vec = 1;
  }
  if (vec > 1 && plan.n >= vec) {
    plan.layout = EwLayout::Vectorized;
    plan.vec = vec;
  } else {
    plan.layout = EwLayout::Contiguous;
    plan.vec = 1;
  }
}

// Two dimensions, every array contiguous or broadcast along the rows (a column against a row,
// a matrix against a row): 16-byte accesses along each row.
bool rows_fit(const ElementwiseDefinition& def, const ArgDesc* args, const EwPlan& plan, int vec) {
  const CollapsedLayout& c = plan.collapsed;
  if (c.shape[1] % vec != 0) return false;
  for (std::size_t a = 0; a < plan.layout_arrays.size(); ++a) {
    const auto k = static_cast<std::size_t>(plan.layout_arrays[a]);
    const auto item = static_cast<std::int64_t>(args[k].itemsize());
    const Shape& st = c.strides[a];
    if (st[1] == 0 && k < def.in.size()) continue;
    const std::int64_t width = vec * item;
    if (st[1] != item || st[0] % width != 0 ||
        args[k].address % static_cast<std::uint64_t>(width) != 0) {
      return false;
    }
  }
  return true;
}

// Two dimensions otherwise: tiles, with a shared-memory transpose for column-major arrays.
bool tiles_fit(const ArgDesc* args, const EwPlan& plan) {
  std::size_t bytes = 0;
  for (std::size_t a = 0; a < plan.layout_arrays.size(); ++a) {
    const Shape& st = plan.collapsed.strides[a];
    if (st[0] != 0 && std::abs(st[0]) < std::abs(st[1])) {
      bytes += 32 * static_cast<std::size_t>(plan.tile_rows + 1) *
               args[plan.layout_arrays[a]].itemsize();
    }
  }
  return bytes <= kMaxTileBytes;
}

void plan_strided(const ElementwiseDefinition& def, const ArgDesc* args, const Shape& shape,
                  const ArrayFacts& facts, EwPlan& plan) {
  std::vector<Shape> strides;
  for (std::size_t k = 0; k < def.in.size() + def.out.size(); ++k) {
    if (!takes_part(def, args[k], k)) continue;
    plan.layout_arrays.push_back(static_cast<int>(k));
    strides.push_back(broadcast_strides(*args[k].shape, *args[k].strides, shape));
  }
  plan.collapsed = collapse_dims(shape, strides, def.reduce_dims);
  plan.ndim = static_cast<int>(plan.collapsed.shape.size());
  plan.layout = EwLayout::Strided;
  const bool two_d = plan.ndim == 2 && !plan.index64 && !def.use.any_raw_view;
  if (two_d && facts.max_item <= 8 &&
      rows_fit(def, args, plan, static_cast<int>(16 / facts.max_item))) {
    plan.layout = EwLayout::Rows2D;
    plan.vec = static_cast<int>(16 / facts.max_item);
  } else if (two_d && rows_fit(def, args, plan, 1)) {
    // Rows whose length or start is not a multiple of a vector (vocabulary-sized rows against
    // a column, (4096, 50257) - (4096, 1)): element by element along the rows, coalesced
    // across row ends, where tiles would read 32-column pieces of misaligned rows.
    plan.layout = EwLayout::Rows2D;
    plan.vec = 1;
  } else if (two_d && tiles_fit(args, plan)) {
    plan.layout = EwLayout::Tiled2D;
  }
  for (std::size_t a = 0; a < plan.layout_arrays.size(); ++a) {
    const Shape& st = plan.collapsed.strides[a];
    const bool tile =
        plan.layout == EwLayout::Tiled2D && st[0] != 0 && std::abs(st[0]) < std::abs(st[1]);
    plan.orientation[a] = tile ? 't' : plan.layout == EwLayout::Rows2D && st[1] == 0 ? 'b' : 'n';
  }
}

// A grid-stride loop over at most a few waves of blocks. Contiguous layouts (one vector or
// element per thread and pass) run fastest with one thread per vector, so they are not capped
// (H200: the float4 add at 2^28 reached 4,359 GB/s uncapped against 4,142 capped at 32 blocks
// per SM), and so do tiles, a block per tile (H100, 8192^2 f32 through 64 x 32 tiles: x.T + y
// 1.00 of copy with a block per tile, 0.92-0.93 with 8 or 16 blocks per SM looping; x.T + y.T
// 0.975 against 0.91-0.93); strided layouts, Rows2D among them ((8192,1)+(1,8192): 4,092 GB/s
// capped, 3,531 uncapped), loop over at most 32 blocks per SM.
void plan_grid(const EwTuning& tuning, const DeviceLimits& device, EwPlan& plan) {
  std::int64_t wanted;
  if (plan.layout == EwLayout::Tiled2D) {
    const CollapsedLayout& c = plan.collapsed;
    wanted = ((c.shape[0] + plan.tile_rows - 1) / plan.tile_rows) * ((c.shape[1] + 31) / 32);
    plan.block_x = 32;
    plan.block_y = 8;
  } else {
    const bool vectors = plan.layout == EwLayout::Vectorized || plan.layout == EwLayout::Rows2D;
    // Rows2D element by element: four elements per thread and pass.
    const bool scalar_rows = plan.layout == EwLayout::Rows2D && plan.vec == 1;
    const std::int64_t work = scalar_rows ? (plan.n + 3) / 4 : vectors ? plan.n / plan.vec : plan.n;
    wanted = (work + plan.block_size - 1) / plan.block_size;
    plan.block_x = static_cast<unsigned>(plan.block_size);
    plan.block_y = 1;
  }
  const bool streaming = plan.layout == EwLayout::Vectorized ||
                         plan.layout == EwLayout::Contiguous || plan.layout == EwLayout::Tiled2D;
  const std::int64_t per_sm = tuning.blocks_per_sm > 0 ? tuning.blocks_per_sm
                              : streaming              ? std::int64_t{1} << 24
                                                       : 32;
  const std::int64_t cap = std::min<std::int64_t>(
      std::int64_t{device.sm_count} * per_sm * std::max(1, kDefaultBlock / plan.block_size),
      (std::int64_t{1} << 31) - 1);
  plan.grid = static_cast<unsigned>(std::max<std::int64_t>(1, std::min(wanted, cap)));
}

}  // namespace

const Shape& elementwise_shape(const Who& who, const ArrayScan& scan, std::int64_t size,
                               Shape& sized) {
  if (size < -1) {
    throw ArgumentError(who.text() + ": size " + std::to_string(size) + " is negative");
  }
  if (scan.shape == nullptr) {
    if (size < 0) {
      throw ArgumentError(who.text() + ": pass cujit::size(n) when no non-raw array is given");
    }
    sized = {size};
    return sized;
  }
  const std::int64_t n = shape_product(*scan.shape);
  if (size >= 0 && size != n) {
    throw ArgumentError(who.text() + ": size " + std::to_string(size) +
                        " differs from the broadcast size " + std::to_string(n));
  }
  return *scan.shape;
}

EwPlan plan_elementwise(const ElementwiseDefinition& def, const ArgDesc* args, const Shape& shape,
                        int block_option, const EwTuning& tuning, const DeviceLimits& device) {
  if (block_option < 0 || block_option > 1024) {
    throw ArgumentError("cujit: kernel '" + def.name + "': block size " +
                        std::to_string(block_option) +
                        " is not between 1 and 1024 threads (0 chooses)");
  }
  EwPlan plan;
  plan.n = shape_product(shape);
  plan.tile_rows = tuning.tile_rows;
  const ArrayFacts facts = array_facts(def, args, shape, plan.n);
  plan.index64 = facts.max_span > kInt32IndexLimit;
  if (facts.contiguous) {
    plan_contiguous(def, args, facts, plan);
  } else {
    plan_strided(def, args, shape, facts, plan);
  }
  plan.block_size = plan.layout == EwLayout::Tiled2D ? kTileBlock
                    : block_option > 0               ? block_option
                                                     : kDefaultBlock;
  plan_grid(tuning, device, plan);
  return plan;
}

namespace {

// The facts of a generic plan and of its specialisation, which must agree.
template <class PlanOrSpecialization>
void make_generic(PlanOrSpecialization& x) {
  x.layout = EwLayout::Strided;
  x.ndim = kGenericNdim;
  x.vec = 1;
  x.index64 = true;
  x.tile_rows = 64;
  x.block_size = kDefaultBlock;
}

}  // namespace

std::optional<EwPlan> plan_elementwise_generic(const ElementwiseDefinition& def,
                                               const ArgDesc* args, const Shape& shape,
                                               const EwTuning& tuning, const DeviceLimits& device) {
  EwPlan plan;
  plan.n = shape_product(shape);
  std::vector<Shape> strides;
  for (std::size_t k = 0; k < def.in.size() + def.out.size(); ++k) {
    if (!takes_part(def, args[k], k)) continue;
    plan.layout_arrays.push_back(static_cast<int>(k));
    plan.orientation[plan.layout_arrays.size() - 1] = 'n';
    strides.push_back(broadcast_strides(*args[k].shape, *args[k].strides, shape));
  }
  plan.collapsed = collapse_dims(shape, strides, def.reduce_dims);
  if (!pad_dims(plan.collapsed, kGenericNdim)) return std::nullopt;
  make_generic(plan);
  plan_grid(tuning, device, plan);
  return plan;
}

EwSpecialization generic_elementwise(const EwSpecialization& s) {
  EwSpecialization g = s;
  make_generic(g);
  for (EwParam& p : g.params) p.transposed = p.row_broadcast = false;
  return g;
}

void elementwise_specialization(const ElementwiseDefinition& def, const ResolvedTypes& types,
                                const EwPlan& plan, const ArgDesc* args, std::size_t given,
                                EwSpecialization& spec) {
  const ParamList params(def.in, def.out);
  const std::size_t n_in = def.in.size();
  const bool outputs_given = given == params.size();
  spec.layout = plan.layout;
  spec.vec = plan.vec;
  spec.ndim = plan.ndim;
  spec.index64 = plan.index64;
  spec.block_size = plan.block_size;
  spec.tile_rows = plan.tile_rows;
  spec.params.clear();
  spec.params.resize(params.size());  // within the capacity of a reused value: no allocation
  for (std::size_t k = 0; k < params.size(); ++k) {
    EwParam& e = spec.params[k];
    e.dtype = k < n_in ? types.in[k] : types.out[k - n_in];
    e.scalar = k < n_in && !args[k].is_array;
    if (!e.scalar && params[k].raw) e.raw_contiguous = args[k].c_contiguous;
    e.used = def.use.used[k] != 0;
    e.raw_view_used = def.use.raw_view_used[k] != 0;
    e.load_output = k >= n_in && outputs_given && e.used && !def.use.write_only[k];
  }
  for (std::size_t a = 0; a < plan.layout_arrays.size(); ++a) {
    spec.params[plan.layout_arrays[a]].row_broadcast = plan.orientation[a] == 'b';
    spec.params[plan.layout_arrays[a]].transposed = plan.orientation[a] == 't';
  }
}

EwSpecialization elementwise_specialization(const ElementwiseDefinition& def,
                                            const ResolvedTypes& types, const EwPlan& plan,
                                            const ArgDesc* args, std::size_t given) {
  EwSpecialization spec;
  elementwise_specialization(def, types, plan, args, given, spec);
  return spec;
}

void write_elementwise_layout(const AbiStruct& abi, const EwPlan& plan, unsigned char* out) {
  const CollapsedLayout& c = plan.collapsed;
  const std::size_t nd = c.shape.size();
  AbiWriter w(abi, out);
  w.fill(kEwShape, c.shape);
  for (std::size_t a = 0; a < c.strides.size(); ++a) {
    for (std::size_t d = 0; d < nd; ++d) w.set(kEwStrides, a * nd + d, c.strides[a][d]);
  }
  for (std::size_t d = 0; d < nd && !plan.index64; ++d) {
    // Rows2D walks vectors along a row: its fast division is by the vectors per row.
    const bool vectors = plan.layout == EwLayout::Rows2D && d == 1;
    const FastDivisor f =
        fast_divisor(static_cast<unsigned>(vectors ? c.shape[d] / plan.vec : c.shape[d]));
    w.set(kEwMagic, d, f.magic);
    w.set(kEwShift, d, f.shift);
  }
}

}  // namespace cujit::detail
