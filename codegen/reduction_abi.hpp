#pragma once
// The kernel ABI of a reduction specialisation, described once (kernel_abi.hpp): the generator
// declares both passes from it, the planner and the launcher pack arguments by it.

#include "codegen/kernel_abi.hpp"
#include "codegen/reduction_spec.hpp"

#include <vector>

namespace cujit::detail {

/// The parameter list both passes take: per parameter (in, then out) a raw array, a scalar
/// input or an array address; for a segmented specialisation the segments' begin and end
/// offsets as raw arrays (parameters n and n + 1 of n); then the layout struct; then the
/// partials' scratch pointer.
std::vector<AbiParam> reduction_parameters(const ReductionDefinition& def,
                                           const RedSpecialization& s);

/// The layout struct `_cj_RL` of a specialisation.
AbiStruct reduction_layout_abi(const ReductionDefinition& def, const RedSpecialization& s);
enum RedLayoutField : int {
  kRedNOut,
  kRedNRed,
  kRedChunk,
  kRedNSplit,
  kRedOutShape,
  kRedRedShape,
  kRedInOut,
  kRedInRed,
  kRedOutOut,
  kRedOutMagic,
  kRedOutShift,
  kRedRedMagic,
  kRedRedShift,
  kRedFold  ///< only with RedSpecialization::fold
};

}  // namespace cujit::detail
