#include "runtime/offline_specialize.hpp"

#include <cujit/error.hpp>

#include "cache/record.hpp"
#include "codegen/arg_spec.hpp"
#include "core/layout.hpp"
#include "runtime/elementwise_family.hpp"
#include "runtime/reduction_family.hpp"

#include <utility>

namespace cujit::detail {
namespace {

[[noreturn]] void nothing_to_launch(const Who& who, const char* what, const Shape& shape) {
  throw ArgumentError(who.text() + ": " + what + " " + shape_text(shape) +
                      " has no elements: such a call launches no kernel, so there is nothing "
                      "to specialise");
}

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

// The steps of ElementwiseKernel::launch and Impl::run, on descriptions: the outputs a call
// would allocate are described as cujit allocates them.
FamilyBuild offline_elementwise_build(std::shared_ptr<const ElementwiseDefinition> def,
                                      const std::vector<ArgSpec>& args, const Target& target,
                                      const SpecializeOptions& options) {
  const ParamList params(def->in, def->out);
  const Who who{"kernel", def->name};
  const std::size_t count = args.size();
  check_argument_count(who, params, count);
  SpecDescs descs(who, params, args);
  const ResolvedTypes types =
      resolve_call_types(who, params, def->in, def->out, descs.data(), count);
  ArrayScan scan;
  scan_arrays(scan, who, params, descs.data(), count, count);
  Shape sized;
  const Shape& shape = elementwise_shape(who, scan, options.size, sized);
  if (count == params.size()) {
    check_output_shapes(who, params, descs.data(), shape, "the broadcast of the inputs is");
  } else {
    for (std::size_t j = 0; j < params.n_out(); ++j) {
      descs.describe_allocated(params.n_in() + j, shape, types.out[j]);
    }
  }
  if (shape_product(shape) == 0) nothing_to_launch(who, "the broadcast shape", shape);
  const EwPlan plan =
      plan_elementwise(*def, descs.data(), count, shape, options.block_size, elementwise_tuning(),
                       device_limits(who, target, options.device));
  return elementwise_build(std::move(def), types, plan, descs.data(), count, target).family;
}

// The steps of ReductionKernel::launch and Impl::plan_call, on descriptions.
FamilyBuild offline_reduction_build(std::shared_ptr<const ReductionDefinition> def,
                                    const std::vector<ArgSpec>& args, const ReduceOptions& reduce,
                                    const Target& target, const SpecializeOptions& options) {
  const ParamList params(def->in, def->out);
  const Who who{"reduction kernel", def->name};
  const std::size_t count = args.size();
  check_argument_count(who, params, count);
  SpecDescs descs(who, params, args);
  const ResolvedTypes types =
      resolve_call_types(who, params, def->in, def->out, descs.data(), count);
  const std::string reduce_ctype = resolve_reduce_ctype(*def, types);
  ArrayScan scan;
  scan_arrays(scan, who, params, descs.data(), count, params.n_in());
  const Shape& shape = reduction_input_shape(who, scan);
  const RedAxes axes = reduction_axes(who, shape, reduce);
  if (count == params.size()) {
    check_output_shapes(who, params, descs.data(), axes.out_shape, "the reduction gives");
  } else {
    for (std::size_t j = 0; j < params.n_out(); ++j) {
      descs.describe_allocated(params.n_in() + j, axes.out_shape, types.out[j]);
    }
  }
  if (axes.n_out == 0) nothing_to_launch(who, "the output shape", axes.out_shape);
  const RedPlan plan = plan_reduction(*def, types, reduce_ctype, descs.data(), shape, axes,
                                      reduce.keepdims, options.block_size, reduction_tuning(),
                                      device_limits(who, target, options.device));
  return reduction_build(std::move(def), std::make_shared<const RedSpecialization>(plan.spec),
                         target);
}

Specialization compile_offline(const FamilyBuild& build) {
  CacheOutcome outcome = CacheOutcome::Compiled;
  const std::shared_ptr<const CompiledProgram> program = compile_family(build, &outcome);
  Specialization result;
  result.kernel = build.kernel;
  result.target = build.request.target;
  result.origin = origin_of(outcome);
  result.binary_size = program->binary.size();
  result.request_key = request_key(build.request.kind, build.request.spec, build.request.target);
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

}  // namespace cujit::detail
