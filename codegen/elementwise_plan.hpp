#pragma once
// The plan of an elementwise call: layout class, vector width, index width, which arrays take
// part in the layout and how, the launch geometry, and the layout struct's bytes. A pure
// function of the argument descriptions and the device limits; code generation reads only the
// plan (through its specialisation), argument packing only the plan and the arrays.

#include "codegen/elementwise_abi.hpp"
#include "codegen/elementwise_spec.hpp"
#include "codegen/kernel_call.hpp"
#include "core/layout.hpp"

#include <cstdint>
#include <optional>
#include <vector>

namespace cujit::detail {

/// The largest layout struct a call may pass (64 dimensions, 48 arrays, 64-bit indices).
inline constexpr std::size_t kMaxLayoutBytes = 8 * (64 + 64 * 49);

/// Run-time tuning knobs (CUJIT_EW_TILE_ROWS, CUJIT_EW_BLOCKS_PER_SM), read by the caller.
struct EwTuning {
  int tile_rows = 64;              ///< rows per Tiled2D tile: 32, 64 or 128
  std::int64_t blocks_per_sm = 0;  ///< grid cap per SM; 0: the planner's default
};

struct EwPlan {
  EwLayout layout = EwLayout::Contiguous;
  int vec = 1;
  int ndim = 1;
  bool index64 = false;
  int block_size = 256;  ///< threads per block as the kernel is compiled
  int tile_rows = 64;
  std::int64_t n = 0;                   ///< elements of the broadcast shape
  CollapsedLayout collapsed;            ///< Strided, Rows2D, Tiled2D
  std::vector<int> layout_arrays;       ///< parameters in the layout struct, in order
  char orientation[kMaxCallArgs] = {};  ///< per layout array: 't' tiled transposed, 'b' row
                                        ///< broadcast, 'n' neither
  unsigned grid = 1, block_x = 256, block_y = 1;

  bool has_layout_struct() const {
    return layout != EwLayout::Vectorized && layout != EwLayout::Contiguous;
  }
};

/// The shape an elementwise call runs over: the broadcast shape of its arrays, or `size`
/// elements when no non-raw array is given (`sized` holds it then). Throws ArgumentError for a
/// negative size, a missing one, or one that differs from the broadcast size.
const Shape& elementwise_shape(const Who& who, const ArrayScan& scan, std::int64_t size,
                               Shape& sized);

/// Plans a call with `args` (all n_in + n_out parameters; outputs the caller did not give are
/// described as the C-contiguous arrays the launcher allocates), over the broadcast `shape`.
/// `block_option` is the caller's block size (0 chooses). Throws ArgumentError for a bad
/// block size or a raw array that is neither C-contiguous nor 1-d.
EwPlan plan_elementwise(const ElementwiseDefinition& def, const ArgDesc* args, const Shape& shape,
                        int block_option, const EwTuning& tuning, const DeviceLimits& device);

/// The generic plan of a call: its arrays in the strided layout padded to kGenericNdim
/// dimensions, 64-bit indices, one element per access, the default block. Slower than the
/// call's own plan, but one kernel serves every layout of the same dtypes: what a target
/// without a compiler runs when the call's own specialisation was not shipped. Nullopt when the
/// arrays collapse to more than kGenericNdim dimensions.
std::optional<EwPlan> plan_elementwise_generic(const ElementwiseDefinition& def,
                                               const ArgDesc* args, const Shape& shape,
                                               const EwTuning& tuning, const DeviceLimits& device);

/// The generic specialisation of a call whose own specialisation is `s`: what the generic plan
/// of that call specialises to (precompile adds it beside every recorded entry).
EwSpecialization generic_elementwise(const EwSpecialization& s);

/// The specialisation (what the generator, the cache and the memo of loaded kernels read) of
/// a plan, into `spec`: a value reused across calls keeps its parameters' storage.
void elementwise_specialization(const ElementwiseDefinition& def, const ResolvedTypes& types,
                                const EwPlan& plan, const ArgDesc* args, std::size_t given,
                                EwSpecialization& spec);
/// The same, as a new value.
EwSpecialization elementwise_specialization(const ElementwiseDefinition& def,
                                            const ResolvedTypes& types, const EwPlan& plan,
                                            const ArgDesc* args, std::size_t given);

/// Writes the layout struct of `plan` (abi.size() bytes at `out`).
void write_elementwise_layout(const AbiStruct& abi, const EwPlan& plan, unsigned char* out);

}  // namespace cujit::detail
