#include <cujit/scan.hpp>

#include <cujit/error.hpp>

#include "codegen/scan_manifest.hpp"
#include "runtime/context.hpp"
#include "runtime/family.hpp"
#include "runtime/offline_specialize.hpp"
#include "runtime/reduction_family.hpp"
#include "runtime/scan_family.hpp"
#include "runtime/scan_runner.hpp"

#include <optional>
#include <string>

namespace cujit {

// CUJIT_HIDDEN: a public class's nested type is exported with it unless marked.
struct CUJIT_HIDDEN ScanKernel::Impl {
  using Family = detail::ScanFamily;
  explicit Impl(detail::ScanDefinition def)
      : runner(std::make_shared<const detail::ScanDefinition>(std::move(def))) {}
  detail::ScanRunner runner;

  std::shared_ptr<const detail::ScanCall> plan_call(const Arg* args, std::size_t count,
                                                    const LaunchOptions& options,
                                                    const ReduceOptions& scan,
                                                    std::vector<Array>& outputs, int& device);
};

ScanKernel::ScanKernel(std::string in_params, std::string out_params, std::string map_expr,
                       std::string scan_expr, std::string post_map_expr, std::string identity,
                       std::string name, ScanOptions options) {
  detail::ScanDefinition def = detail::make_scan_definition(
      std::move(in_params), std::move(out_params), std::move(map_expr), std::move(scan_expr),
      std::move(post_map_expr), std::move(identity), std::move(name), std::move(options.scan_type),
      options.exclusive, std::move(options.preamble), std::move(options.compile_options));
  def.link = std::move(options.link);
  impl_ = std::make_shared<Impl>(std::move(def));
}

const std::string& ScanKernel::name() const noexcept { return impl_->runner.def().name; }

Specialization ScanKernel::specialize(const std::vector<ArgSpec>& args, const ReduceOptions& scan,
                                      const Target& target,
                                      const SpecializeOptions& options) const {
  return detail::specialize_scan(impl_->runner.shared_def(), args, scan, target, options);
}

// A call signature not seen before: resolve, check, allocate the outputs, plan, load.
std::shared_ptr<const detail::ScanCall> ScanKernel::Impl::plan_call(
    const Arg* args, std::size_t count, const LaunchOptions& options, const ReduceOptions& scan,
    std::vector<Array>& outputs, int& device) {
  const detail::ScanDefinition& def = runner.def();
  const detail::ParamList params(def.in, def.out);
  const detail::Who who{Family::kWho, def.name};
  detail::CallDescs descs;
  for (std::size_t k = 0; k < count; ++k) descs.describe(k, args[k]);
  const auto resolved = runner.resolve(args, descs.data(), count);
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
    for (DType t : resolved->types.out) outputs.push_back(Array::empty(shape, t, dev, stream));
  }
  for (std::size_t j = 0; j < outputs.size(); ++j) descs.describe(params.n_in() + j, outputs[j]);
  if (geometry.empty()) return nullptr;
  return runner.make_call(
      who, Family::plan(def, *resolved, descs.data(), count, geometry, family_call, {}), device);
}

std::vector<Array> ScanKernel::launch(const Arg* args, std::size_t count,
                                      const LaunchOptions& options,
                                      const ReduceOptions& scan) const {
  Impl& im = *impl_;
  const detail::ScanDefinition& def = im.runner.def();
  const detail::ParamList params(def.in, def.out);
  const detail::Who who{Impl::Family::kWho, def.name};
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
  std::shared_ptr<const detail::ScanCall> call = im.runner.calls().find(call_key);
  if (call) {
    if (count == params.size()) {
      for (std::size_t k = params.n_in(); k < count; ++k) outputs.push_back(args[k].array());
    } else {
      const Device dev = Device::get(device);
      const Stream stream = Stream::wrap(options.stream, dev);
      for (std::size_t j = 0; j < params.n_out(); ++j) {
        outputs.push_back(Array::empty(
            call->plan.shape, call->plan.spec.params[params.n_in() + j].dtype, dev, stream));
      }
    }
  } else {
    const std::string key = call_key;
    call = im.plan_call(args, count, options, scan, outputs, device);
    if (!context) context.emplace(device);
    if (!call) return outputs;
    im.runner.calls().insert(key, call);
  }
  const Array* arrays[detail::kMaxCallArgs];
  for (std::size_t k = 0; k < params.size(); ++k) {
    arrays[k] = k >= params.n_in()   ? &outputs[k - params.n_in()]
                : args[k].is_array() ? &args[k].array()
                                     : nullptr;
  }
  im.runner.execute(*call, args, arrays, options.stream, device);
  return outputs;
}

}  // namespace cujit
