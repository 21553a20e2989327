#include <cujit/scan.hpp>

#include <cujit/error.hpp>

#include "codegen/scan_abi.hpp"
#include "codegen/scan_manifest.hpp"
#include "codegen/scan_plan.hpp"
#include "runtime/context.hpp"
#include "runtime/driver.hpp"
#include "runtime/family.hpp"
#include "runtime/kernel_params.hpp"
#include "runtime/launcher.hpp"
#include "runtime/memory.hpp"
#include "runtime/offline_specialize.hpp"
#include "runtime/reduction_family.hpp"
#include "runtime/scan_family.hpp"
#include "support/log.hpp"

#include <cstdlib>
#include <limits>
#include <optional>
#include <string>

namespace cujit {
namespace detail {
namespace {

using ScanResolved = ScanFamily::Resolved;

// A loaded specialisation: its kernel and parameter list.
struct ScanLoaded {
  std::shared_ptr<const LoadedModule> module;
  std::vector<AbiParam> parameters;
  CUfunction function = nullptr;
};

// What a call signature needs besides addresses and scalar values.
struct ScanCall {
  std::shared_ptr<const ScanLoaded> loaded;
  ScanPlan plan;
  Shape out_shape;
  std::vector<unsigned char> layout;  ///< the layout struct's bytes
};

// Plans kept per kernel object before the cache starts over.
constexpr std::size_t kMaxScanPlans = 1024;

// CUJIT_SCAN_DEBUG=1 reports each loaded specialisation (tile, registers, occupancy).
void debug_scan(const std::string& kernel, const ScanSpecialization& spec, CUfunction f) {
  static const bool enabled = std::getenv("CUJIT_SCAN_DEBUG") != nullptr;
  if (!enabled) return;
  int regs = 0, active = 0;
  driver().cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, f);
  driver().cuOccupancyMaxActiveBlocksPerMultiprocessor(&active, f, scan_threads(spec), 0);
  log_always(LogLevel::Info, "scan '" + kernel + "': " + spec.key() + "; " + std::to_string(regs) +
                                 " registers, " + std::to_string(active) + " blocks/SM");
}

}  // namespace
}  // namespace detail

// CUJIT_HIDDEN: a public class's nested type is exported with it unless marked.
struct CUJIT_HIDDEN ScanKernel::Impl {
  using Family = detail::ScanFamily;
  std::shared_ptr<const detail::ScanDefinition> def;
  detail::SharedCache<std::string, detail::ScanResolved> resolved;
  /// Loaded specialisations by memo_key (the specialisation's bytes and the device).
  detail::SharedCache<std::string, detail::ScanLoaded> loaded;
  /// Planned calls by call signature (shapes and strides decide the plan).
  detail::SharedCache<std::string, detail::ScanCall> calls{detail::kMaxScanPlans};

  std::shared_ptr<const detail::ScanResolved> resolve(const Arg* args, const detail::ArgDesc* descs,
                                                      std::size_t count);
  std::shared_ptr<const detail::ScanLoaded> load(const detail::ScanSpecialization& spec,
                                                 int device);
  std::shared_ptr<const detail::ScanCall> plan_call(const Arg* args, std::size_t count,
                                                    const LaunchOptions& options,
                                                    const ReduceOptions& scan,
                                                    std::vector<Array>& outputs, int& device);
  void execute(const detail::ScanCall& call, const Arg* args, const std::vector<Array>& outputs,
               CUstream stream, int device) const;
};

ScanKernel::ScanKernel(std::string in_params, std::string out_params, std::string map_expr,
                       std::string scan_expr, std::string post_map_expr, std::string identity,
                       std::string name, ScanOptions options)
    : impl_(std::make_shared<Impl>()) {
  detail::ScanDefinition def = detail::make_scan_definition(
      std::move(in_params), std::move(out_params), std::move(map_expr), std::move(scan_expr),
      std::move(post_map_expr), std::move(identity), std::move(name), std::move(options.scan_type),
      options.exclusive, std::move(options.preamble), std::move(options.compile_options));
  def.link = std::move(options.link);
  impl_->def = std::make_shared<const detail::ScanDefinition>(std::move(def));
}

const std::string& ScanKernel::name() const noexcept { return impl_->def->name; }

Specialization ScanKernel::specialize(const std::vector<ArgSpec>& args, const ReduceOptions& scan,
                                      const Target& target,
                                      const SpecializeOptions& options) const {
  return detail::specialize_scan(impl_->def, args, scan, target, options);
}

std::shared_ptr<const detail::ScanResolved> ScanKernel::Impl::resolve(const Arg* args,
                                                                      const detail::ArgDesc* descs,
                                                                      std::size_t count) {
  const std::string key = detail::type_key(args, count);
  if (auto found = resolved.find(key)) return found;
  return resolved.insert(
      key, std::make_shared<const detail::ScanResolved>(Family::resolve(*def, descs, count)));
}

std::shared_ptr<const detail::ScanLoaded> ScanKernel::Impl::load(
    const detail::ScanSpecialization& spec, int device) {
  std::string own_key;
  std::string& memo = detail::PerThread<std::string, detail::MemoKeyBuffer>::get(own_key);
  detail::memo_key(memo, spec, device);
  if (auto found = loaded.find(memo)) return found;
  const std::string key = memo;  // compiling may launch kernels on this thread
  auto shared_spec = std::make_shared<const detail::ScanSpecialization>(spec);
  auto made = std::make_shared<detail::ScanLoaded>();
  made->module = detail::compile_and_load(def->name, device, [&](const detail::DeviceTarget& on) {
    return detail::compile_family(
        detail::for_device(Family::build(def, shared_spec, on.target), on));
  });
  made->parameters = detail::scan_parameters(*def, spec);
  made->function = detail::kernel_function(*made->module, detail::scan_symbol(*def), def->name);
  detail::debug_scan(def->name, spec, made->function);
  return loaded.insert(key, std::move(made));
}

// A call signature not seen before: resolve, check, allocate the outputs, plan, load.
std::shared_ptr<const detail::ScanCall> ScanKernel::Impl::plan_call(
    const Arg* args, std::size_t count, const LaunchOptions& options, const ReduceOptions& scan,
    std::vector<Array>& outputs, int& device) {
  const detail::ParamList params(def->in, def->out);
  const detail::Who who{Family::kWho, def->name};
  detail::CallDescs descs;
  for (std::size_t k = 0; k < count; ++k) descs.describe(k, args[k]);
  const auto resolved_types = resolve(args, descs.data(), count);
  detail::ArrayScan arrays;
  detail::scan_arrays(arrays, who, params, descs.data(), count, Family::shape_args(params, count));
  const Family::Call family_call{&scan, options.block_size};
  Family::Geometry geometry;
  Family::geometry(who, arrays, family_call, geometry);
  device = detail::call_device(who, arrays.device, options.stream_device);
  if (device < 0) device = Device::current().id();
  const detail::ScopedContext context(device);
  const Shape& shape = geometry.out_shape();
  if (count == params.size()) {
    detail::check_output_shapes(who, params, descs.data(), shape, Family::Geometry::kOutputs);
    for (std::size_t k = params.n_in(); k < count; ++k) outputs.push_back(args[k].array());
  } else {
    const Device dev = Device::get(device);
    const Stream stream = Stream::wrap(options.stream, dev);
    for (DType t : resolved_types->types.out) {
      outputs.push_back(Array::empty(shape, t, dev, stream));
    }
  }
  for (std::size_t j = 0; j < outputs.size(); ++j) descs.describe(params.n_in() + j, outputs[j]);
  if (geometry.empty()) return nullptr;
  auto call = std::make_shared<detail::ScanCall>();
  call->out_shape = shape;
  call->plan = Family::plan(*def, *resolved_types, descs.data(), count, geometry, family_call, {});
  if (call->plan.n_tiles > std::numeric_limits<int>::max()) {
    throw ArgumentError(who.text() + ": " + std::to_string(call->plan.n) +
                        " elements make more tiles than one launch can take");
  }
  call->loaded = load(call->plan.spec, device);
  call->layout =
      detail::scan_layout_bytes(detail::scan_layout_abi(*def, call->plan.spec), call->plan);
  return call;
}

std::vector<Array> ScanKernel::launch(const Arg* args, std::size_t count,
                                      const LaunchOptions& options,
                                      const ReduceOptions& scan) const {
  Impl& im = *impl_;
  const detail::ParamList params(im.def->in, im.def->out);
  const detail::Who who{Impl::Family::kWho, im.def->name};
  detail::check_argument_count(who, params, count);
  std::string own_key;
  std::string& call_key = detail::PerThread<std::string, detail::CallKeyBuffer>::get(own_key);
  int device =
      detail::call_device(who, detail::reduce_call_signature(call_key, args, count, options, scan),
                          options.stream_device);
  // The whole call in the arrays' device's context (the device rule, runtime/context.hpp).
  std::optional<detail::ScopedContext> context;
  if (device >= 0) context.emplace(device);
  std::vector<Array> outputs;
  outputs.reserve(params.n_out());
  std::shared_ptr<const detail::ScanCall> call = im.calls.find(call_key);
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
    call = im.plan_call(args, count, options, scan, outputs, device);
    if (!context) context.emplace(device);
    if (!call) return outputs;
    im.calls.insert(key, call);
  }
  im.execute(*call, args, outputs, options.stream, device);
  return outputs;
}

// Clears the tile counter and flags in stream-ordered scratch, packs the arguments by the
// parameter table the generated signature was written from, and launches one block per tile.
void ScanKernel::Impl::execute(const detail::ScanCall& call, const Arg* args,
                               const std::vector<Array>& outputs, CUstream stream,
                               int device) const {
  const detail::ScanPlan& plan = call.plan;
  const detail::ParamList params(def->in, def->out);
  const Array* arrays[detail::kMaxCallArgs];
  for (std::size_t k = 0; k < params.size(); ++k) {
    arrays[k] = k >= params.n_in()   ? &outputs[k - params.n_in()]
                : args[k].is_array() ? &args[k].array()
                                     : nullptr;
  }
  const auto buffer = detail::allocate(device, plan.scratch.total, stream);
  std::uint64_t scratch = buffer->address;
  detail::check(detail::driver().cuMemsetD8Async(scratch, 0, plan.scratch.cleared, stream),
                "cuMemsetD8Async");
  detail::KernelParams packed;
  detail::pack_parameters(
      call.loaded->parameters,
      {args, arrays, 0, const_cast<unsigned char*>(call.layout.data()), &scratch}, packed);
  const detail::LaunchShape shape{static_cast<unsigned>(plan.n_tiles), 1,
                                  static_cast<unsigned>(detail::scan_threads(plan.spec)), 1};
  detail::launch_function(call.loaded->function, shape, stream, packed.data(), device, false,
                          "the launch of scan kernel", def->name);
}

}  // namespace cujit
