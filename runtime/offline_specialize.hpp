#pragma once
// Specialising kernels without a device (ElementwiseKernel::specialize,
// ReductionKernel::specialize): described arguments go through the steps of a call
// (offline_build in runtime/family.hpp, over the family types the launch path uses) and the
// result is compiled through the kernel cache. Nothing here talks to the driver.

#include <cujit/kernel_args.hpp>
#include <cujit/program.hpp>
#include <cujit/specialize.hpp>

#include "codegen/elementwise_codegen.hpp"
#include "codegen/reduction_codegen.hpp"
#include "codegen/scan_spec.hpp"
#include "runtime/launcher.hpp"

#include <memory>
#include <vector>

namespace cujit::detail {

/// What ElementwiseKernel::specialize compiles for `args`; throws as it does.
FamilyBuild offline_elementwise_build(std::shared_ptr<const ElementwiseDefinition> def,
                                      const std::vector<ArgSpec>& args, const Target& target,
                                      const SpecializeOptions& options);

/// What ReductionKernel::specialize compiles for `args` and `reduce`; throws as it does.
FamilyBuild offline_reduction_build(std::shared_ptr<const ReductionDefinition> def,
                                    const std::vector<ArgSpec>& args, const ReduceOptions& reduce,
                                    const Target& target, const SpecializeOptions& options);

/// What ScanKernel::specialize compiles for `args` and `scan` (the axis); throws as it does.
FamilyBuild offline_scan_build(std::shared_ptr<const ScanDefinition> def,
                               const std::vector<ArgSpec>& args, const ReduceOptions& scan,
                               const Target& target, const SpecializeOptions& options);

/// Compiles `build` through the process-wide kernel cache and describes the result.
Specialization compile_offline(const FamilyBuild& build);

/// ElementwiseKernel::specialize and ReductionKernel::specialize.
Specialization specialize_elementwise(std::shared_ptr<const ElementwiseDefinition> def,
                                      const std::vector<ArgSpec>& args, const Target& target,
                                      const SpecializeOptions& options);
Specialization specialize_reduction(std::shared_ptr<const ReductionDefinition> def,
                                    const std::vector<ArgSpec>& args, const ReduceOptions& reduce,
                                    const Target& target, const SpecializeOptions& options);

/// ScanKernel::specialize.
Specialization specialize_scan(std::shared_ptr<const ScanDefinition> def,
                               const std::vector<ArgSpec>& args, const ReduceOptions& scan,
                               const Target& target, const SpecializeOptions& options);

}  // namespace cujit::detail
