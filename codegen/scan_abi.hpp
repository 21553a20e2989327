#pragma once
// The kernel ABI of a scan specialisation, described once (kernel_abi.hpp): the generator
// declares the kernel from it, the planner and the launcher pack arguments by it.

#include "codegen/kernel_abi.hpp"
#include "codegen/scan_spec.hpp"

#include <vector>

namespace cujit::detail {

/// The kernel's parameters: per parameter (in, then out) a scalar input or an array address;
/// then the layout struct; then the scratch (tile counter, flags, aggregates, prefixes).
std::vector<AbiParam> scan_parameters(const ScanDefinition& def, const ScanSpecialization& s);

/// The layout struct `_cj_SL`: the element count, the row length, the scratch's offsets
/// (ScanScratch), and for a strided layout the kept and scanned extents and each layout array's
/// byte strides along them.
AbiStruct scan_layout_abi(const ScanDefinition& def, const ScanSpecialization& s);
enum ScanLayoutField : int {
  kScanN,
  kScanRowLen,
  kScanGroupFlags,
  kScanTileValues,
  kScanGroupAggregates,
  kScanGroupPrefixes,
  kScanKeptShape,
  kScanScanShape,
  kScanKeptStrides,
  kScanScanStrides
};

}  // namespace cujit::detail
