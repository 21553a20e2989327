#pragma once
// What compiling an elementwise specialisation takes: the tuning the planner reads, and the
// one function that turns a planned call into the kernel cache's request, its generator and
// its snippets. The launch path (runtime/elementwise.cpp) and ElementwiseKernel::specialize
// (runtime/elementwise_offline.cpp) both build through it, so a kernel specialised without a
// GPU is the one a first call looks up.

#include <cujit/program.hpp>

#include "codegen/elementwise_codegen.hpp"
#include "codegen/elementwise_plan.hpp"
#include "codegen/kernel_call.hpp"
#include "runtime/launcher.hpp"

#include <cstddef>
#include <memory>

namespace cujit::detail {

/// CUJIT_EW_TILE_ROWS (32, 64 or 128) and CUJIT_EW_BLOCKS_PER_SM, read once.
const EwTuning& elementwise_tuning();

/// A planned call's specialisation (what the generator, the cache and the packer read) and
/// what compiling it for one target takes.
struct EwBuild {
  std::shared_ptr<const EwSpecialization> spec;
  FamilyBuild family;
};

/// The build of `plan`, a plan of `def` for arguments `args` (all parameters; the first
/// `given` from the caller) of resolved `types`, for `target`.
EwBuild elementwise_build(std::shared_ptr<const ElementwiseDefinition> def,
                          const ResolvedTypes& types, const EwPlan& plan, const ArgDesc* args,
                          std::size_t given, const Target& target);

}  // namespace cujit::detail
