#pragma once
// What compiling a reduction specialisation takes: the tuning the planner reads, the
// accumulator's type, the input shape a call reduces, and the one function that turns a
// planned specialisation into the kernel cache's request, its generator and its snippets.
// The launch path (runtime/reduction.cpp) and ReductionKernel::specialize
// (runtime/reduction_offline.cpp) both build through it, so a kernel specialised without a
// GPU is the one a first call looks up.

#include <cujit/program.hpp>

#include "codegen/kernel_call.hpp"
#include "codegen/reduction_codegen.hpp"
#include "codegen/reduction_plan.hpp"
#include "runtime/launcher.hpp"

#include <memory>
#include <string>

namespace cujit::detail {

/// CUJIT_RED_BLOCK, CUJIT_RED_WAVES and CUJIT_RED_SEG_WAVES, read once.
const RedTuning& reduction_tuning();

/// The accumulator's C++ type for resolved `types`: the definition's reduce_type (a dtype
/// name, a placeholder or a C++ type), else the first output's type.
std::string resolve_reduce_ctype(const ReductionDefinition& def, const ResolvedTypes& types);

/// The broadcast shape of the non-raw inputs `scan` found; throws ArgumentError naming `who`
/// when no non-raw input is an array.
const Shape& reduction_input_shape(const Who& who, const ArrayScan& scan);

/// What compiling `spec` (a plan's specialisation) of `def` for `target` takes; `def` and
/// `spec` are shared with its closures.
FamilyBuild reduction_build(std::shared_ptr<const ReductionDefinition> def,
                            std::shared_ptr<const RedSpecialization> spec, const Target& target);

}  // namespace cujit::detail
