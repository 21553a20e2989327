#pragma once
// The plan of a scan call: the scanned axis (or every element in C order), the rows it makes,
// the layout (flat, or the kept and scanned dimensions collapsed with each array's strides),
// the tile, the grid and the scratch, and the layout struct's bytes. A pure function of the
// argument descriptions.

#include <cujit/kernel_args.hpp>

#include "codegen/kernel_call.hpp"
#include "codegen/scan_abi.hpp"
#include "codegen/scan_spec.hpp"
#include "core/layout.hpp"

#include <cstdint>
#include <vector>

namespace cujit::detail {

/// The scanned axis of the broadcast input shape: one axis, or every element in C order.
struct ScanAxis {
  Shape shape;    ///< the broadcast input shape, which is also the outputs' shape
  int axis = -1;  ///< -1: every element in C order, one sequence
  std::int64_t n = 0, row_len = 0;
};

/// Checks `reduce` for a scan of `shape`: no axis (every element) or exactly one, no keepdims.
/// Throws ShapeError (an axis out of range, more than one axis) or ArgumentError (keepdims)
/// naming `who`.
ScanAxis scan_axis(const Who& who, const Shape& shape, const ReduceOptions& reduce);

struct ScanPlan {
  ScanSpecialization spec;
  Shape shape;  ///< the broadcast input shape
  std::int64_t n = 0, row_len = 0, n_tiles = 0;
  ScanScratch scratch;
  CollapsedLayout kept, scanned;  ///< strided layouts: strides of the layout parameters
};

/// Run-time tuning knobs (CUJIT_SCAN_BLOCK, CUJIT_SCAN_ITEMS); 0 chooses.
struct ScanTuning {
  int block_size = 0;
  int items = 0;
  int min_blocks = -1;  ///< -1 chooses
};

/// Plans a call over `args` (all parameters; outputs not given described as the arrays the
/// launcher allocates). `scan_ctype` is the scanned value's C++ type; `block_option` the
/// call's block size (0: the tuning's or the default). Throws ArgumentError for a bad block
/// size.
ScanPlan plan_scan(const ScanDefinition& def, const ResolvedTypes& types,
                   const std::string& scan_ctype, const ArgDesc* args, const ScanAxis& axis,
                   int block_option, const ScanTuning& tuning = {});

/// The layout struct's bytes for `plan`.
std::vector<unsigned char> scan_layout_bytes(const AbiStruct& abi, const ScanPlan& plan);

}  // namespace cujit::detail
