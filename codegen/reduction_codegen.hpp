#pragma once
// CUDA source for one specialisation of a reduction kernel (map -> reduce -> post-map): the
// strategy chosen from the layout, dtypes, which parameters are scalars, the number of
// output and reduced dimensions after collapsing, vector width and index width. Pure text
// generation; no CUDA headers, testable without a GPU.

#include <cujit/program.hpp>

#include "codegen/reduction_spec.hpp"

namespace cujit::detail {

/// Generates the source. Both kernels take, in order: for each parameter (in, then out) a
/// raw array passes (pointer, int64 size, int64 byte stride); a scalar input its value in its
/// dtype; an array its address. Then one struct by value, with I = int or long long:
///   { I n_out, n_red, chunk, nsplit; I out_shape[out_ndim]; I red_shape[red_ndim];
///     I in_out[NA][out_ndim]; I in_red[NA][red_ndim]; I out_out[NB][out_ndim];
///     unsigned out_magic[out_ndim], out_shift[out_ndim], red_magic[red_ndim],
///     red_shift[red_ndim]; }
/// (byte strides; NA = max(1, layout inputs), NB = max(1, layout outputs)); then a pointer to
/// the partials scratch (kMaxAccumulatorBytes per partial; null for one-pass launches).
SourceProgram generate_reduction(const ReductionDefinition& def, const RedSpecialization& s);

}  // namespace cujit::detail
