#include <cujit/elementwise.hpp>

#include <cujit/error.hpp>

#include "codegen/elementwise_codegen.hpp"
#include "codegen/elementwise_manifest.hpp"
#include "codegen/elementwise_plan.hpp"
#include "runtime/context.hpp"
#include "runtime/elementwise_family.hpp"
#include "runtime/family.hpp"
#include "runtime/kernel_params.hpp"
#include "runtime/launcher.hpp"
#include "runtime/offline_specialize.hpp"
#include "support/log.hpp"

#include <cstring>
#include <optional>

namespace cujit {
namespace detail {
namespace {

// Definitions with more parameters are refused, so the fixed buffers below cannot overflow.
static_assert(kMaxCallArgs == CallArgs::kMaxArgs);

// A loaded specialisation: its kernel, its parameter list and the layout struct it takes.
// `generic`: the call's own specialisation could not be had (no compiler, and not shipped), so
// the kernel is its generic one, launched with the call's generic plan.
struct Specialized {
  std::shared_ptr<const LoadedModule> module;
  CUfunction function = nullptr;
  std::vector<AbiParam> parameters;
  AbiStruct layout;
  bool generic = false;
};

// The module of `spec` of `def` loaded on `device`, compiled or found by the kernel cache.
std::shared_ptr<const LoadedModule> load_specialization(
    const std::shared_ptr<const ElementwiseDefinition>& def,
    const std::shared_ptr<const EwSpecialization>& spec, int device) {
  return compile_and_load(def->name, device, [&](const DeviceTarget& on) {
    return compile_family(for_device(ElementwiseFamily::build(def, spec, on.target), on));
  });
}

}  // namespace
}  // namespace detail

// CUJIT_HIDDEN: a public class's nested type is exported with it unless marked.
struct CUJIT_HIDDEN ElementwiseKernel::Impl {
  using Family = detail::ElementwiseFamily;
  std::shared_ptr<const detail::ElementwiseDefinition> def;
  bool no_return = false;
  detail::SharedCache<std::string, detail::ResolvedTypes> resolved;
  /// Loaded specialisations by memo_key (the specialisation's bytes and the device).
  detail::SharedCache<std::string, detail::Specialized> specialized;

  std::shared_ptr<const detail::ResolvedTypes> resolve(const Arg* args,
                                                       const detail::ArgDesc* descs,
                                                       std::size_t count);
  void run(const Arg* args, const Array* const* arrays, std::size_t count,
           const detail::ResolvedTypes& types, const Family::Geometry& geometry,
           const detail::CallDescs& descs, const LaunchOptions& options, int device);
  std::shared_ptr<const detail::Specialized> specialize(const detail::EwPlan& plan,
                                                        const detail::ResolvedTypes& types,
                                                        const detail::ArgDesc* descs,
                                                        std::size_t count, int device);
};

ElementwiseKernel::ElementwiseKernel(std::string in_params, std::string out_params,
                                     std::string operation, std::string name,
                                     ElementwiseOptions options)
    : impl_(std::make_shared<Impl>()) {
  detail::ElementwiseDefinition def = detail::make_elementwise_definition(
      std::move(in_params), std::move(out_params), std::move(operation), std::move(name),
      std::move(options.preamble), std::move(options.loop_prep), std::move(options.after_loop),
      std::move(options.compile_options), options.reduce_dims);
  def.link = std::move(options.link);
  impl_->def = std::make_shared<const detail::ElementwiseDefinition>(std::move(def));
  impl_->no_return = options.no_return;
}

const std::string& ElementwiseKernel::name() const noexcept { return impl_->def->name; }

Specialization ElementwiseKernel::specialize(const std::vector<ArgSpec>& args, const Target& target,
                                             const SpecializeOptions& options) const {
  return detail::specialize_elementwise(impl_->def, args, target, options);
}

std::shared_ptr<const detail::ResolvedTypes> ElementwiseKernel::Impl::resolve(
    const Arg* args, const detail::ArgDesc* descs, std::size_t count) {
  const std::string key = detail::type_key(args, count);
  if (auto found = resolved.find(key)) return found;
  return resolved.insert(
      key, std::make_shared<const detail::ResolvedTypes>(Family::resolve(*def, descs, count)));
}

// The specialisation of `plan` (into a per-thread value: no allocation on a hit) and its
// loaded kernel, found by the specialisation's bytes.
std::shared_ptr<const detail::Specialized> ElementwiseKernel::Impl::specialize(
    const detail::EwPlan& plan, const detail::ResolvedTypes& types, const detail::ArgDesc* descs,
    std::size_t count, int device) {
  detail::EwSpecialization own_spec;
  std::string own_key;
  auto& spec = detail::PerThread<detail::EwSpecialization, detail::SpecBuffer>::get(own_spec);
  Family::specialise(*def, types, plan, descs, count, spec);
  std::string& memo = detail::PerThread<std::string, detail::MemoKeyBuffer>::get(own_key);
  detail::memo_key(memo, spec, device);
  if (auto found = specialized.find(memo)) return found;
  const std::string key = memo;  // compiling may launch kernels on this thread
  auto shared_spec = std::make_shared<const detail::EwSpecialization>(spec);
  std::shared_ptr<const detail::EwSpecialization> generic;
  std::shared_ptr<const detail::LoadedModule> module;
  try {
    module = detail::load_specialization(def, shared_spec, device);
  } catch (const CompilerUnavailableError& missing) {
    module = detail::load_generic<Family>(
        *def, *shared_spec, generic, missing,
        [&](const auto& spec) { return detail::load_specialization(def, spec, device); });
  }
  const detail::EwSpecialization& loaded = generic ? *generic : *shared_spec;
  CUfunction function =
      detail::kernel_function(*module, detail::elementwise_symbol(*def), def->name);
  auto made = std::make_shared<detail::Specialized>(
      detail::Specialized{std::move(module), function, detail::elementwise_parameters(*def, loaded),
                          detail::elementwise_layout_abi(*def, loaded), generic != nullptr});
  return specialized.insert(key, std::move(made));
}

std::vector<Array> ElementwiseKernel::call_all(const Arg* args, std::size_t count,
                                               const LaunchOptions& options) const {
  std::vector<Array> outputs;
  launch(args, count, options, &outputs);
  return outputs;
}

Array ElementwiseKernel::launch(const Arg* args, std::size_t count, const LaunchOptions& options,
                                std::vector<Array>* all_outputs) const {
  Impl& im = *impl_;
  const detail::ElementwiseDefinition& def = *im.def;
  const detail::ParamList params(def.in, def.out);
  const detail::Who who{Impl::Family::kWho, def.name};
  detail::check_argument_count(who, params, count);
  detail::CallDescs descs;
  for (std::size_t k = 0; k < count; ++k) descs.describe(k, args[k]);
  const std::shared_ptr<const detail::ResolvedTypes> types = im.resolve(args, descs.data(), count);

  // The broadcast shape, the device, the outputs (checked, or allocated).
  detail::ArrayScan scan;
  detail::scan_arrays(scan, who, params, descs.data(), count, count);
  Impl::Family::Geometry geometry;
  Impl::Family::geometry(who, scan, {options.size, options.block_size}, geometry);
  const Shape& shape = geometry.out_shape();
  int device = detail::call_device(who, scan.device, options.stream_device);
  if (device < 0) device = Device::current().id();
  // The whole call (outputs, specialisation, launch) in the device's context; the caller's
  // current context is restored after it (the device rule, runtime/context.hpp).
  const detail::ScopedContext context(device);
  const bool outputs_given = count == params.size();
  std::vector<Array> allocated;
  if (outputs_given) {
    detail::check_output_shapes(who, params, descs.data(), shape, "the broadcast of the inputs is");
  } else if (!def.out.empty()) {
    const Device dev = Device::get(device);
    const Stream stream = Stream::wrap(options.stream, dev);
    allocated.reserve(def.out.size());
    for (std::size_t j = 0; j < def.out.size(); ++j) {
      allocated.push_back(Array::empty(shape, types->out[j], dev, stream));
      descs.describe(params.n_in() + j, allocated.back());
    }
  }
  const Array* arrays[detail::kMaxCallArgs];
  for (std::size_t k = 0; k < params.size(); ++k) {
    arrays[k] = k >= count           ? &allocated[k - params.n_in()]
                : args[k].is_array() ? &args[k].array()
                                     : nullptr;
  }
  if (detail::shape_product(shape) > 0) {
    im.run(args, arrays, count, *types, geometry, descs, options, device);
  }
  if (im.no_return || def.out.empty()) return Array();
  if (all_outputs != nullptr) {
    for (std::size_t k = params.n_in(); k < params.size(); ++k) all_outputs->push_back(*arrays[k]);
  }
  return outputs_given ? args[params.n_in()].array() : std::move(allocated.front());
}

// Plans the call, finds its specialisation (a hash lookup after the first call), packs the
// kernel arguments by the parameter table the generated signature was written from, launches.
void ElementwiseKernel::Impl::run(const Arg* args, const Array* const* arrays, std::size_t count,
                                  const detail::ResolvedTypes& types,
                                  const Family::Geometry& geometry, const detail::CallDescs& descs,
                                  const LaunchOptions& options, int device) {
  const detail::DeviceProperties& props = detail::device_properties(device);
  const detail::DeviceLimits limits{props.compute_capability, props.sm_count,
                                    props.max_threads_per_sm};
  const detail::EwPlan own = Family::plan(*def, types, descs.data(), count, geometry,
                                          {options.size, options.block_size}, limits);
  const auto specialized = specialize(own, types, descs.data(), count, device);
  std::optional<detail::EwPlan> generic;
  if (specialized->generic) {
    generic = detail::plan_elementwise_generic(*def, descs.data(), geometry.out_shape(),
                                               detail::elementwise_tuning(), limits);
    if (!generic) detail::no_generic_plan({Family::kWho, def->name});
  }
  const detail::EwPlan& plan = generic ? *generic : own;
  alignas(16) unsigned char layout[detail::kMaxLayoutBytes];
  if (plan.has_layout_struct()) {
    if (specialized->layout.size() > sizeof(layout)) {
      throw ArgumentError("cujit: kernel '" + def->name + "': too many dimensions");
    }
    std::memset(layout, 0, specialized->layout.size());
    detail::write_elementwise_layout(specialized->layout, plan, layout);
  }
  detail::KernelParams packed;
  detail::pack_parameters(specialized->parameters, {args, arrays, plan.n, layout, nullptr}, packed);
  detail::launch_function(specialized->function, {plan.grid, 1, plan.block_x, plan.block_y},
                          options.stream, packed.data(), device, false, "elementwise kernel",
                          def->name);
}

}  // namespace cujit
