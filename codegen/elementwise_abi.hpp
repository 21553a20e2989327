#pragma once
// The kernel ABI of an elementwise specialisation, described once (kernel_abi.hpp): the
// generator declares the kernel from it, the planner and the launcher pack arguments by it.

#include "codegen/elementwise_spec.hpp"
#include "codegen/kernel_abi.hpp"

#include <vector>

namespace cujit::detail {

/// The kernel's parameter list: per parameter (in, then out) a raw array, a scalar or an array
/// address; then the element count; then, for Strided, Rows2D and Tiled2D, the layout struct.
std::vector<AbiParam> elementwise_parameters(const ElementwiseDefinition& def,
                                             const EwSpecialization& s);

/// The layout struct `_cj_Layout` of a specialisation: shape[ndim], strides[arrays][ndim],
/// magic[ndim], shift[ndim].
AbiStruct elementwise_layout_abi(const ElementwiseDefinition& def, const EwSpecialization& s);
enum EwLayoutField : int { kEwShape, kEwStrides, kEwMagic, kEwShift };

}  // namespace cujit::detail
