#pragma once
// CUDA source for one specialisation of an elementwise kernel: dtypes, which parameters are
// scalars, the memory layout class (vectorised contiguous, contiguous, strided N-d) and the
// index width. Pure text generation; no CUDA headers, testable without a GPU.

#include <cujit/program.hpp>

#include "codegen/elementwise_spec.hpp"

namespace cujit::detail {

/// Generates the source. Kernel parameters, in order: for each parameter (in, then out):
/// a raw array passes (pointer, int64 size, int64 byte stride); a scalar its value in its
/// dtype; an array its address. Then the element count (int32 or int64), then, for Strided,
/// one struct { I shape[ndim]; I strides[arrays][ndim]; u32 magic[ndim]; u32 shift[ndim]; }
/// with arrays = strided_array_params().size(); Tiled2D passes the same struct (ndim 2) and is
/// launched with 32x8 threads per block.
SourceProgram generate_elementwise(const ElementwiseDefinition& def, const EwSpecialization& s);

}  // namespace cujit::detail
