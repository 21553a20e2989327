#include <cujit/reduction.hpp>

#include <cujit/error.hpp>

#include "codegen/reduction_codegen.hpp"
#include "codegen/reduction_manifest.hpp"
#include "codegen/reduction_plan.hpp"
#include "runtime/context.hpp"
#include "runtime/driver.hpp"
#include "runtime/family.hpp"
#include "runtime/kernel_params.hpp"
#include "runtime/launcher.hpp"
#include "runtime/memory.hpp"
#include "runtime/offline_specialize.hpp"
#include "runtime/reduction_family.hpp"
#include "support/log.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

namespace cujit {
namespace detail {
namespace {

// Programmatic dependent launch of the second pass on sm_90+ (CUJIT_RED_PDL=0 turns it off,
// to measure what it buys).
bool dependent_launch(int device) {
  static const bool enabled = [] {
    const char* value = std::getenv("CUJIT_RED_PDL");
    return value == nullptr || std::string(value) != "0";
  }();
  return enabled && device_properties(device).compute_capability >= 90;
}

using Resolved = ReductionFamily::Resolved;

// A loaded specialisation: both passes' kernels, their parameter list and the first pass's
// occupancy.
struct Specialized {
  std::shared_ptr<const LoadedModule> module;
  std::vector<AbiParam> parameters;
  CUfunction pass1 = nullptr;
  CUfunction pass2 = nullptr;
  int blocks_per_sm = 0;
  /// The call's own specialisation could not be had (no compiler, and not shipped): the
  /// kernels are its generic one's, launched with the call's generic plan.
  bool generic = false;
};

// What a call signature needs besides addresses and scalar values.
struct KnownCall {
  std::shared_ptr<const Specialized> specialized;
  RedPlan plan;
  Shape out_shape;
  std::vector<unsigned char> layout;  ///< the layout struct's bytes
};

// Plans kept per kernel object before the cache starts over.
constexpr std::size_t kMaxPlans = 1024;

// CUJIT_RED_DEBUG=1 reports each new plan (strategy, vector width, grids) to the log sink.
void debug_plan(const std::string& kernel, const RedPlan& plan, int blocks_per_sm) {
  static const bool enabled = std::getenv("CUJIT_RED_DEBUG") != nullptr;
  if (!enabled) return;
  static const char* const names[] = {"segments", "rows", "columns"};
  const RedSpecialization& spec = plan.spec;
  const std::string fold = spec.fold ? " fold " + std::to_string(plan.fold) : "";
  char text[320];
  std::snprintf(text, sizeof text,
                "n_out %lld n_red %lld -> %s vec %d group %d%s%s%s, grid (%lld, %lld) x %d, nsplit "
                "%lld, chunk %lld, pass 2 grid %lld, occupancy %d blocks/SM",
                static_cast<long long>(plan.n_out), static_cast<long long>(plan.n_red),
                names[static_cast<int>(spec.strategy)], spec.vec, spec.group,
                spec.red_contiguous ? " contiguous" : "", spec.staged ? " staged" : "",
                fold.c_str(), static_cast<long long>(plan.grid_x),
                static_cast<long long>(plan.grid_y), plan.block1,
                static_cast<long long>(plan.nsplit), static_cast<long long>(plan.chunk),
                static_cast<long long>(spec.two_pass ? plan.grid2 : 0), blocks_per_sm);
  detail::log_always(LogLevel::Info, "reduction '" + kernel + "': " + text);
}

// A call's segments are arrays on the call's device (a description is for specialize()).
void check_segment_arrays(const Who& who, const Segments& segments, int device) {
  if (!segments.problem().empty()) return;  // reduction_axes reports it
  if (!segments.has_arrays()) {
    throw ArgumentError(who.text() +
                        ": cujit::segments in a call needs offset arrays (Segments(dtype, count) "
                        "describes segments for specialize())");
  }
  for (const Array* a : {&segments.begin(), &segments.end()}) {
    if (a->device_id() != device) {
      throw DeviceError(who.text() + ": the segment offsets are on device " +
                        std::to_string(a->device_id()) + "; the call runs on device " +
                        std::to_string(device));
    }
  }
}

DeviceLimits limits_of(int device) {
  const DeviceProperties& p = device_properties(device);
  return {p.compute_capability, p.sm_count, p.max_threads_per_sm};
}

}  // namespace

// Everything about a call that decides its plan (strategy, grid, layout, output shape):
// each argument's look (put_argument_look), the block size, the axes and keepdims. Returns
// the device of the first array (-1 when there is none).
int reduce_call_signature(std::string& key, const Arg* args, std::size_t count,
                          const LaunchOptions& options, const ReduceOptions& reduce) {
  key.clear();
  int device = -1;
  put_bytes(key, static_cast<std::uint32_t>(count));
  for (std::size_t k = 0; k < count; ++k) {
    const int on = put_argument_look(key, args[k]);
    if (device < 0) device = on;
  }
  put_bytes(key, options.block_size);
  key.push_back(reduce.axes ? 'x' : '-');
  key.push_back(reduce.keepdims ? 'k' : '-');
  if (reduce.axes) {
    for (int a : *reduce.axes) put_bytes(key, a);
  }
  if (reduce.segments) {
    // The offsets' look (their shapes hold the count), so that a plan is per segment count.
    const Segments& seg = *reduce.segments;
    key.push_back(seg.has_arrays() ? 'S' : 's');
    put_bytes(key, seg.count());
    if (seg.has_arrays()) {
      put_argument_look(key, Arg(seg.begin()));
      put_argument_look(key, Arg(seg.end()));
    }
  }
  return device;
}

}  // namespace detail

// CUJIT_HIDDEN: a public class's nested type is exported with it unless marked.
struct CUJIT_HIDDEN ReductionKernel::Impl {
  using Family = detail::ReductionFamily;
  std::shared_ptr<const detail::ReductionDefinition> def;
  detail::SharedCache<std::string, detail::Resolved> resolved;
  /// Loaded specialisations by memo_key (the specialisation's bytes and the device).
  detail::SharedCache<std::string, detail::Specialized> specialized;
  /// Planned calls by call_signature: a call's plan depends on its shapes and strides, so
  /// this memo is of calls, not of specialisations.
  detail::SharedCache<std::string, detail::KnownCall> calls{detail::kMaxPlans};

  std::shared_ptr<const detail::Resolved> resolve(const Arg* args, const detail::ArgDesc* descs,
                                                  std::size_t count);
  std::shared_ptr<const detail::Specialized> specialize(const detail::RedSpecialization& spec,
                                                        int device);
  std::shared_ptr<const detail::KnownCall> plan_call(const Arg* args, std::size_t count,
                                                     const LaunchOptions& options,
                                                     const ReduceOptions& reduce,
                                                     std::vector<Array>& outputs, int& device);
  void execute(const detail::KnownCall& call, const Arg* args, const std::vector<Array>& outputs,
               const ReduceOptions& reduce, CUstream stream, int device) const;
};

ReductionKernel::ReductionKernel(std::string in_params, std::string out_params,
                                 std::string map_expr, std::string reduce_expr,
                                 std::string post_map_expr, std::string identity, std::string name,
                                 ReductionOptions options)
    : impl_(std::make_shared<Impl>()) {
  detail::ReductionDefinition def = detail::make_reduction_definition(
      std::move(in_params), std::move(out_params), std::move(map_expr), std::move(reduce_expr),
      std::move(post_map_expr), std::move(identity), std::move(name),
      std::move(options.reduce_type), std::move(options.preamble),
      std::move(options.compile_options), options.reduce_dims);
  def.link = std::move(options.link);
  impl_->def = std::make_shared<const detail::ReductionDefinition>(std::move(def));
}

const std::string& ReductionKernel::name() const noexcept { return impl_->def->name; }

Specialization ReductionKernel::specialize(const std::vector<ArgSpec>& args,
                                           const ReduceOptions& reduce, const Target& target,
                                           const SpecializeOptions& options) const {
  return detail::specialize_reduction(impl_->def, args, reduce, target, options);
}

std::shared_ptr<const detail::Resolved> ReductionKernel::Impl::resolve(const Arg* args,
                                                                       const detail::ArgDesc* descs,
                                                                       std::size_t count) {
  const std::string key = detail::type_key(args, count);
  if (auto found = resolved.find(key)) return found;
  return resolved.insert(
      key, std::make_shared<const detail::Resolved>(Family::resolve(*def, descs, count)));
}

std::shared_ptr<const detail::Specialized> ReductionKernel::Impl::specialize(
    const detail::RedSpecialization& spec, int device) {
  std::string own_key;
  std::string& memo = detail::PerThread<std::string, detail::MemoKeyBuffer>::get(own_key);
  detail::memo_key(memo, spec, device);
  if (auto found = specialized.find(memo)) return found;
  const std::string key = memo;  // compiling may launch kernels on this thread
  auto load = [&](const std::shared_ptr<const detail::RedSpecialization>& wanted) {
    return detail::compile_and_load(def->name, device, [&](const detail::DeviceTarget& on) {
      return detail::compile_family(detail::for_device(Family::build(def, wanted, on.target), on));
    });
  };
  auto shared_spec = std::make_shared<const detail::RedSpecialization>(spec);
  std::shared_ptr<const detail::RedSpecialization> generic;
  auto made = std::make_shared<detail::Specialized>();
  try {
    made->module = load(shared_spec);
  } catch (const CompilerUnavailableError& missing) {
    made->module = detail::load_generic<Family>(*def, spec, generic, missing, load);
    made->generic = true;
  }
  const detail::RedSpecialization& loaded = generic ? *generic : spec;
  made->parameters = detail::reduction_parameters(*def, loaded);
  made->pass1 = detail::kernel_function(*made->module, detail::reduction_symbol(*def), def->name);
  if (loaded.two_pass) {
    made->pass2 =
        detail::kernel_function(*made->module, detail::reduction_pass2_symbol(*def), def->name);
  }
  int active = 0;
  if (detail::driver().cuOccupancyMaxActiveBlocksPerMultiprocessor(
          &active, made->pass1, loaded.block_size, 0) == CUDA_SUCCESS) {
    made->blocks_per_sm = active;
  }
  return specialized.insert(key, std::move(made));
}

// A call signature not seen before: resolve, check, allocate the outputs, plan, specialise.
std::shared_ptr<const detail::KnownCall> ReductionKernel::Impl::plan_call(
    const Arg* args, std::size_t count, const LaunchOptions& options, const ReduceOptions& reduce,
    std::vector<Array>& outputs, int& device) {
  const detail::ParamList params(def->in, def->out);
  const detail::Who who{Family::kWho, def->name};
  detail::CallDescs descs;
  for (std::size_t k = 0; k < count; ++k) descs.describe(k, args[k]);
  const auto resolved_types = resolve(args, descs.data(), count);
  const detail::ResolvedTypes& types = resolved_types->types;
  detail::ArrayScan scan;
  detail::scan_arrays(scan, who, params, descs.data(), count, Family::shape_args(params, count));
  const Family::Call family_call{&reduce, options.block_size};
  Family::Geometry geometry;
  Family::geometry(who, scan, family_call, geometry);
  const detail::RedAxes& axes = geometry.axes;
  device = detail::call_device(who, scan.device, options.stream_device);
  if (device < 0) device = Device::current().id();
  if (reduce.segments) detail::check_segment_arrays(who, *reduce.segments, device);
  const detail::ScopedContext context(device);  // planning queries the compiled kernel
  auto call = std::make_shared<detail::KnownCall>();
  call->out_shape = axes.out_shape;
  if (count == params.size()) {
    detail::check_output_shapes(who, params, descs.data(), axes.out_shape, "the reduction gives");
    for (std::size_t k = params.n_in(); k < count; ++k) outputs.push_back(args[k].array());
  } else {
    const Device dev = Device::get(device);
    const Stream stream = Stream::wrap(options.stream, dev);
    for (DType t : types.out) outputs.push_back(Array::empty(axes.out_shape, t, dev, stream));
  }
  for (std::size_t j = 0; j < outputs.size(); ++j) descs.describe(params.n_in() + j, outputs[j]);
  if (axes.n_out == 0) return nullptr;
  const detail::DeviceLimits limits = detail::limits_of(device);
  call->plan =
      Family::plan(*def, *resolved_types, descs.data(), count, geometry, family_call, limits);
  call->specialized = specialize(call->plan.spec, device);
  if (call->specialized->generic) {
    std::optional<detail::RedPlan> generic =
        Family::plan_generic(*def, *resolved_types, descs.data(), geometry, family_call, limits);
    if (!generic) detail::no_generic_plan(who);
    call->plan = std::move(*generic);
  }
  // The grid for the occupancy the compiled kernel really has (registers, shared memory).
  detail::replan_reduction_grid(call->plan, call->specialized->blocks_per_sm,
                                detail::reduction_tuning(), limits);
  call->layout = detail::reduction_layout_bytes(detail::reduction_layout_abi(*def, call->plan.spec),
                                                call->plan);
  detail::debug_plan(def->name, call->plan, call->specialized->blocks_per_sm);
  return call;
}

std::vector<Array> ReductionKernel::launch(const Arg* args, std::size_t count,
                                           const LaunchOptions& options,
                                           const ReduceOptions& reduce) const {
  Impl& im = *impl_;
  const detail::ParamList params(im.def->in, im.def->out);
  const detail::Who who{Impl::Family::kWho, im.def->name};
  detail::check_argument_count(who, params, count);
  std::string own_key;
  std::string& call_key = detail::PerThread<std::string, detail::CallKeyBuffer>::get(own_key);
  int device = detail::call_device(
      who, detail::reduce_call_signature(call_key, args, count, options, reduce),
      options.stream_device);
  // The whole call in the arrays' device's context; the caller's current context is restored
  // after it (the device rule, runtime/context.hpp). Without arrays or a stream's device, the
  // current device's, once plan_call has resolved it.
  std::optional<detail::ScopedContext> context;
  if (device >= 0) context.emplace(device);
  std::vector<Array> outputs;
  outputs.reserve(params.n_out());
  std::shared_ptr<const detail::KnownCall> call = im.calls.find(call_key);
  if (call) {
    if (count == params.size()) {
      for (std::size_t k = params.n_in(); k < count; ++k) outputs.push_back(args[k].array());
    } else {
      const Device dev = Device::get(device);
      const Stream stream = Stream::wrap(options.stream, dev);
      for (std::size_t j = 0; j < params.n_out(); ++j) {
        outputs.push_back(Array::empty(
            call->out_shape, call->plan.spec.params[params.n_in() + j].dtype, dev, stream));
      }
    }
  } else {
    const std::string key = call_key;
    call = im.plan_call(args, count, options, reduce, outputs, device);
    if (!context) context.emplace(device);
    if (!call) return outputs;
    im.calls.insert(key, call);
  }
  im.execute(*call, args, outputs, reduce, options.stream, device);
  return outputs;
}

// Packs the kernel arguments of one call by the parameter table the generated signature was
// written from, and launches its plan: one kernel, or two with partials in stream-ordered
// scratch memory. Runs in `device`'s context (launch() holds it).
void ReductionKernel::Impl::execute(const detail::KnownCall& call, const Arg* args,
                                    const std::vector<Array>& outputs, const ReduceOptions& reduce,
                                    CUstream stream, int device) const {
  const detail::RedPlan& plan = call.plan;
  const detail::ParamList params(def->in, def->out);
  const Array* arrays[detail::kMaxCallArgs + 2];
  for (std::size_t k = 0; k < params.size(); ++k) {
    arrays[k] = k >= params.n_in()   ? &outputs[k - params.n_in()]
                : args[k].is_array() ? &args[k].array()
                                     : nullptr;
  }
  if (plan.spec.segmented) {  // the offsets follow the parameters (reduction_parameters)
    arrays[params.size()] = &reduce.segments->begin();
    arrays[params.size() + 1] = &reduce.segments->end();
  }
  std::uint64_t scratch = 0;
  detail::KernelParams packed;
  detail::pack_parameters(
      call.specialized->parameters,
      {args, arrays, 0, const_cast<unsigned char*>(call.layout.data()), &scratch}, packed);
  auto clamp = [](std::int64_t v) { return static_cast<unsigned>(std::max<std::int64_t>(v, 1)); };
  const detail::LaunchShape first{clamp(plan.grid_x), clamp(plan.grid_y),
                                  static_cast<unsigned>(plan.block1), 1};
  if (plan.scratch_bytes == 0) {
    detail::launch_function(call.specialized->pass1, first, stream, packed.data(), device, false,
                            "the launch of reduction kernel", def->name);
    return;
  }
  // Allocated on the call's stream; when `buffer` goes, the block returns to the host-side
  // cache of that stream, so the next call on the stream reuses it without a driver call
  // (stream order makes that safe). A cuMemAllocAsync / cuMemFreeAsync pair per call cost
  // about 1 us of device time (H100, 2026-11-23: full sum of 2^28 float32 352.4 -> 351.2 us).
  const auto buffer = detail::allocate(device, plan.scratch_bytes, stream);
  scratch = buffer->address;
  detail::launch_function(call.specialized->pass1, first, stream, packed.data(), device, false,
                          "the first pass of reduction kernel", def->name);
  detail::launch_function(call.specialized->pass2,
                          {clamp(plan.grid2), 1, static_cast<unsigned>(plan.block2), 1}, stream,
                          packed.data(), device, detail::dependent_launch(device),
                          "the second pass of reduction kernel", def->name);
}

}  // namespace cujit
