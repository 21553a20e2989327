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

// What a call like an earlier one needs again, kept by the call's key (elementwise_call_key):
// such a call skips resolving, checking, planning and specialising.
struct PlannedCall {
  Shape out_shape;               ///< the broadcast shape
  std::vector<DType> out_types;  ///< every output's dtype
  std::vector<int> out_align;    ///< the 16-byte alignment of each output cujit allocated
  bool runs = false;             ///< a non-empty shape: a launch
  EwPlan plan;  ///< the call's own, or its generic plan when `specialized` is generic
  std::shared_ptr<const Specialized> specialized;
  std::vector<unsigned char> layout;  ///< the layout struct's bytes (plan.has_layout_struct())
};

// Planned calls kept per kernel object before the memo starts over.
constexpr std::size_t kMaxPlannedCalls = 1024;

// Writes into `key` everything that resolving, checking, planning and specialising read of a
// call's given arguments (put_argument_look), how many were given and the size and block
// options. Never addresses or scalar values. Returns the first array's device, or -1.
int elementwise_call_key(std::string& key, const Arg* args, std::size_t count,
                         const LaunchOptions& options) {
  key.clear();
  int device = -1;
  put_bytes(key, static_cast<std::uint32_t>(count));
  put_bytes(key, options.size);
  put_bytes(key, options.block_size);
  for (std::size_t k = 0; k < count; ++k) {
    const int on = put_argument_look(key, args[k]);
    if (device < 0) device = on;
  }
  return device;
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
  /// Planned calls by elementwise_call_key.
  detail::SharedCache<std::string, detail::PlannedCall> calls{detail::kMaxPlannedCalls};

  std::shared_ptr<const detail::ResolvedTypes> resolve(const Arg* args,
                                                       const detail::ArgDesc* descs,
                                                       std::size_t count);
  void run(const detail::PlannedCall& call, const Arg* args, const Array* const* arrays,
           const LaunchOptions& options, int device) const;
  void plan_launch(detail::PlannedCall& call, std::size_t count, const detail::ResolvedTypes& types,
                   const Family::Geometry& geometry, const detail::CallDescs& descs,
                   const LaunchOptions& options, int device);
  std::shared_ptr<const detail::PlannedCall> plan_call(
      const Arg* args, std::size_t count, const LaunchOptions& options, int& device,
      std::optional<detail::ScopedContext>& context, std::vector<Array>& allocated);
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
  def.manifest_prefix = detail::elementwise_manifest_prefix(def);  // the definition is final
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
  launch(args, count, options, &outputs, false);
  return outputs;
}

void ElementwiseKernel::call_into(const Arg* args, std::size_t count,
                                  const LaunchOptions& options) const {
  const detail::ElementwiseDefinition& def = *impl_->def;
  if (count != def.in.size() + def.out.size()) {
    throw ArgumentError("cujit: kernel '" + def.name + "': call_into takes its " +
                        std::to_string(def.in.size()) + " input(s) and all " +
                        std::to_string(def.out.size()) + " output(s), but " +
                        std::to_string(count) + " argument(s) were given");
  }
  launch(args, count, options, nullptr, false);
}

Array ElementwiseKernel::launch(const Arg* args, std::size_t count, const LaunchOptions& options,
                                std::vector<Array>* all_outputs, bool first) const {
  Impl& im = *impl_;
  const detail::ElementwiseDefinition& def = *im.def;
  const detail::ParamList params(def.in, def.out);
  const detail::Who who{Impl::Family::kWho, def.name};
  detail::check_argument_count(who, params, count);
  std::string own_key;
  std::string& key = detail::PerThread<std::string, detail::CallKeyBuffer>::get(own_key);
  int device = detail::call_device(who, detail::elementwise_call_key(key, args, count, options),
                                   options.stream_device);
  // The whole call (outputs, specialisation, launch) in the device's context; the caller's
  // current context is restored after it (the device rule, runtime/context.hpp). A call without
  // arrays or a stream's device is checked first (no GPU needed), then runs on the current one.
  std::optional<detail::ScopedContext> context;
  std::shared_ptr<const detail::PlannedCall> call;
  if (device >= 0) {
    detail::put_bytes(key, device);
    context.emplace(device);
    call = im.calls.find(key);
  }
  std::vector<Array> allocated;
  std::chrono::steady_clock::time_point started, planned;  // set when this call plans
  if (call && count < params.size()) {
    const Device dev = Device::get(device);
    const Stream stream = Stream::wrap(options.stream, dev);
    bool aligned_alike = true;
    for (std::size_t k = count; k < params.size(); ++k) {
      allocated.push_back(
          Array::empty(call->out_shape, call->out_types[k - params.n_in()], dev, stream));
      aligned_alike &= static_cast<int>(allocated.back().data() & 15) == call->out_align[k - count];
    }
    // An allocator may align differently from the one the plan saw: plan this call afresh.
    if (!aligned_alike) call = im.plan_call(args, count, options, device, context, allocated);
  } else if (!call) {
    const bool keep = device >= 0;
    const std::string planned_key = keep ? key : std::string();  // compiling may launch kernels
    started = std::chrono::steady_clock::now();
    call = im.plan_call(args, count, options, device, context, allocated);
    if (keep) call = im.calls.insert(planned_key, call);
    planned = std::chrono::steady_clock::now();
  }
  const Array* arrays[detail::kMaxCallArgs];
  for (std::size_t k = 0; k < params.size(); ++k) {
    arrays[k] = k >= count           ? &allocated[k - count]
                : args[k].is_array() ? &args[k].array()
                                     : nullptr;
  }
  if (call->runs) im.run(*call, args, arrays, options, device);
  if (planned != std::chrono::steady_clock::time_point()) {
    detail::trace_planned_call(def.name, started, planned);
  }
  if (im.no_return || def.out.empty() || (!first && all_outputs == nullptr)) return Array();
  if (all_outputs != nullptr) {
    // Given outputs copied, allocated ones moved (unless the first is returned as well).
    all_outputs->reserve(params.n_out());
    for (std::size_t k = params.n_in(); k < params.size(); ++k) {
      if (k < count || (first && k == count)) {
        all_outputs->push_back(*arrays[k]);
      } else {
        all_outputs->push_back(std::move(allocated[k - count]));
      }
    }
  }
  if (!first) return Array();
  return count == params.size() ? args[params.n_in()].array() : std::move(allocated.front());
}

// A call not seen before: its types resolved and its arrays checked (before any device is
// used), then its device's context entered (the current device's when `device` is -1), its
// outputs allocated (unless `allocated` holds them already), its plan and specialisation
// (compiled, or found by the kernel cache). Throws for a bad call, which is then never kept.
std::shared_ptr<const detail::PlannedCall> ElementwiseKernel::Impl::plan_call(
    const Arg* args, std::size_t count, const LaunchOptions& options, int& device,
    std::optional<detail::ScopedContext>& context, std::vector<Array>& allocated) {
  const detail::ParamList params(def->in, def->out);
  const detail::Who who{Family::kWho, def->name};
  detail::CallDescs descs;
  for (std::size_t k = 0; k < count; ++k) descs.describe(k, args[k]);
  const std::shared_ptr<const detail::ResolvedTypes> types = resolve(args, descs.data(), count);
  detail::ArrayScan scan;
  detail::scan_arrays(scan, who, params, descs.data(), count, count);
  Family::Geometry geometry;
  Family::geometry(who, scan, {options.size, options.block_size}, geometry);
  auto call = std::make_shared<detail::PlannedCall>();
  call->out_shape = geometry.out_shape();
  call->out_types = types->out;
  if (count == params.size()) {
    detail::check_output_shapes(who, params, descs.data(), call->out_shape,
                                "the broadcast of the inputs is");
  }
  if (device < 0) device = Device::current().id();
  if (!context) context.emplace(device);
  if (count < params.size() && allocated.empty()) {
    const Device dev = Device::get(device);
    const Stream stream = Stream::wrap(options.stream, dev);
    for (std::size_t j = 0; j < def->out.size(); ++j) {
      allocated.push_back(Array::empty(call->out_shape, types->out[j], dev, stream));
    }
  }
  for (std::size_t k = count; k < params.size(); ++k) {
    descs.describe(k, allocated[k - count]);
    call->out_align.push_back(static_cast<int>(allocated[k - count].data() & 15));
  }
  call->runs = detail::shape_product(call->out_shape) > 0;
  if (call->runs) plan_launch(*call, count, *types, geometry, descs, options, device);
  return call;
}

// The plan of a call, its specialisation and its layout struct.
void ElementwiseKernel::Impl::plan_launch(detail::PlannedCall& call, std::size_t count,
                                          const detail::ResolvedTypes& types,
                                          const Family::Geometry& geometry,
                                          const detail::CallDescs& descs,
                                          const LaunchOptions& options, int device) {
  const detail::DeviceProperties& props = detail::device_properties(device);
  const detail::DeviceLimits limits{props.compute_capability, props.sm_count,
                                    props.max_threads_per_sm};
  call.plan = Family::plan(*def, types, descs.data(), count, geometry,
                           {options.size, options.block_size}, limits);
  call.specialized = specialize(call.plan, types, descs.data(), count, device);
  if (call.specialized->generic) {
    std::optional<detail::EwPlan> generic = detail::plan_elementwise_generic(
        *def, descs.data(), geometry.out_shape(), detail::elementwise_tuning(), limits);
    if (!generic) detail::no_generic_plan({Family::kWho, def->name});
    call.plan = std::move(*generic);
  }
  if (call.plan.has_layout_struct()) {
    const detail::AbiStruct& abi = call.specialized->layout;
    if (abi.size() > detail::kMaxLayoutBytes) {
      throw ArgumentError("cujit: kernel '" + def->name + "': too many dimensions");
    }
    call.layout.assign(abi.size(), 0);
    detail::write_elementwise_layout(abi, call.plan, call.layout.data());
  }
}

// Packs the kernel arguments of a planned call by the parameter table the generated signature
// was written from, and launches it. Runs in `device`'s context (launch() holds it).
void ElementwiseKernel::Impl::run(const detail::PlannedCall& call, const Arg* args,
                                  const Array* const* arrays, const LaunchOptions& options,
                                  int device) const {
  detail::KernelParams packed;
  detail::pack_parameters(
      call.specialized->parameters,
      {args, arrays, call.plan.n, const_cast<unsigned char*>(call.layout.data()), nullptr}, packed);
  detail::launch_function(call.specialized->function,
                          {call.plan.grid, 1, call.plan.block_x, call.plan.block_y}, options.stream,
                          packed.data(), device, false, "elementwise kernel", def->name);
}

}  // namespace cujit
