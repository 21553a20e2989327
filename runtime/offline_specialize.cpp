#include "runtime/offline_specialize.hpp"

#include <cujit/error.hpp>

#include "cache/record.hpp"
#include "codegen/arg_spec.hpp"
#include "core/layout.hpp"
#include "runtime/elementwise_family.hpp"
#include "runtime/family.hpp"
#include "runtime/reduction_family.hpp"
#include "runtime/scan_family.hpp"

#include <utility>

namespace cujit::detail {
namespace {

CacheOrigin origin_of(CacheOutcome outcome) {
  switch (outcome) {
    case CacheOutcome::MemoryHit:
      return CacheOrigin::Memory;
    case CacheOutcome::DiskHit:
      return CacheOrigin::Disk;
    case CacheOutcome::DeploymentHit:
      return CacheOrigin::Deployment;
    case CacheOutcome::RemoteHit:
      return CacheOrigin::Remote;
    case CacheOutcome::Compiled:
      break;
  }
  return CacheOrigin::Compiled;
}

}  // namespace

void nothing_to_launch(const Who& who, const char* what, const Shape& shape) {
  throw ArgumentError(who.text() + ": " + what + " " + shape_text(shape) +
                      " has no elements: such a call launches no kernel, so there is nothing "
                      "to specialise");
}

void no_generic_plan(const Who& who) {
  throw CompilerUnavailableError(who.text() +
                                 ": no compiler here, and this call's arrays have more "
                                 "dimensions than its generic specialisation serves (" +
                                 std::to_string(kGenericNdim) +
                                 "); record and ship the call's specialisation");
}

FamilyBuild offline_elementwise_build(std::shared_ptr<const ElementwiseDefinition> def,
                                      const std::vector<ArgSpec>& args, const Target& target,
                                      const SpecializeOptions& options) {
  return offline_build<ElementwiseFamily>(std::move(def), args, {options.size, options.block_size},
                                          target, options);
}

FamilyBuild offline_reduction_build(std::shared_ptr<const ReductionDefinition> def,
                                    const std::vector<ArgSpec>& args, const ReduceOptions& reduce,
                                    const Target& target, const SpecializeOptions& options) {
  return offline_build<ReductionFamily>(std::move(def), args, {&reduce, options.block_size}, target,
                                        options);
}

FamilyBuild offline_scan_build(std::shared_ptr<const ScanDefinition> def,
                               const std::vector<ArgSpec>& args, const ReduceOptions& scan,
                               const Target& target, const SpecializeOptions& options) {
  return offline_build<ScanFamily>(std::move(def), args, {&scan, options.block_size}, target,
                                   options);
}

Specialization compile_offline(const FamilyBuild& build) {
  CacheOutcome outcome = CacheOutcome::Compiled;
  const std::shared_ptr<const CompiledProgram> program = compile_family(build, &outcome);
  Specialization result;
  result.kernel = build.kernel;
  result.target = build.request.target;
  result.origin = origin_of(outcome);
  result.binary_size = program->binary.size();
  result.request_key = request_key(build.request, build.request.target);
  return result;
}

Specialization specialize_elementwise(std::shared_ptr<const ElementwiseDefinition> def,
                                      const std::vector<ArgSpec>& args, const Target& target,
                                      const SpecializeOptions& options) {
  return compile_offline(offline_elementwise_build(std::move(def), args, target, options));
}

Specialization specialize_reduction(std::shared_ptr<const ReductionDefinition> def,
                                    const std::vector<ArgSpec>& args, const ReduceOptions& reduce,
                                    const Target& target, const SpecializeOptions& options) {
  return compile_offline(offline_reduction_build(std::move(def), args, reduce, target, options));
}

Specialization specialize_scan(std::shared_ptr<const ScanDefinition> def,
                               const std::vector<ArgSpec>& args, const ReduceOptions& scan,
                               const Target& target, const SpecializeOptions& options) {
  return compile_offline(offline_scan_build(std::move(def), args, scan, target, options));
}

}  // namespace cujit::detail
