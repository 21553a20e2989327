#include <cujit/select.hpp>

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

std::int64_t Selection::size() const {
  if (size_ < 0) {
    std::int64_t n = 0;
    count.to_host(&n, stream);
    size_ = n;
  }
  return size_;
}

Array Selection::compacted() const { return values.slice(0, 0, size()); }

// CUJIT_HIDDEN: a public class's nested type is exported with it unless marked.
struct CUJIT_HIDDEN SelectKernel::Impl {
  using Family = detail::SelectFamily;
  explicit Impl(detail::ScanDefinition def)
      : runner(std::make_shared<const detail::ScanDefinition>(std::move(def))) {}
  detail::ScanRunner runner;

  std::shared_ptr<const detail::ScanCall> plan_call(const Arg* args, std::size_t count,
                                                    const LaunchOptions& options, int& device,
                                                    Shape& shape, DType& kept);
};

SelectKernel::SelectKernel(std::string in_params, std::string predicate, std::string name,
                           SelectOptions options) {
  impl_ = std::make_shared<Impl>(detail::make_select_definition(
      std::move(in_params), std::move(predicate), std::move(name), options.indices,
      std::move(options.preamble), std::move(options.compile_options), options.partition));
}

const std::string& SelectKernel::name() const noexcept { return impl_->runner.def().name; }

Specialization SelectKernel::specialize(const std::vector<ArgSpec>& args, const Target& target,
                                        const SpecializeOptions& options) const {
  return detail::compile_offline(detail::offline_build<detail::SelectFamily>(
      impl_->runner.shared_def(), args, {options.block_size}, target, options));
}

// A call signature not seen before: resolve, check, plan, load. `shape` receives the kept
// values' shape and `kept` their dtype; returns null for inputs without elements.
std::shared_ptr<const detail::ScanCall> SelectKernel::Impl::plan_call(const Arg* args,
                                                                      std::size_t count,
                                                                      const LaunchOptions& options,
                                                                      int& device, Shape& shape,
                                                                      DType& kept) {
  const detail::ScanDefinition& def = runner.def();
  const detail::ParamList params(def.in, def.out);
  const detail::Who who{Family::kWho, def.name};
  detail::CallDescs descs;
  for (std::size_t k = 0; k < count; ++k) descs.describe(k, args[k]);
  const auto resolved = runner.resolve(args, descs.data(), count);
  detail::ArrayScan arrays;
  detail::scan_arrays(arrays, who, params, descs.data(), count, params.n_in());
  const Family::Call family_call{options.block_size};
  Family::Geometry geometry;
  Family::geometry(who, arrays, family_call, geometry);
  device = detail::call_device(who, arrays.device, options.stream_device);
  if (device < 0) device = Device::current().id();
  shape = geometry.out_shape();
  kept = resolved->types.out[0];
  if (geometry.empty()) return nullptr;
  // The outputs are written by position: planning reads the inputs' descriptions only.
  const detail::ScopedContext context(device);
  return runner.make_call(
      who, Family::plan(def, *resolved, descs.data(), count, geometry, family_call, {}), device);
}

Selection SelectKernel::launch(const Arg* args, std::size_t count, const LaunchOptions& options,
                               const ReduceOptions& reduce) const {
  Impl& im = *impl_;
  const detail::ScanDefinition& def = im.runner.def();
  const detail::ParamList params(def.in, def.out);
  const detail::Who who{Impl::Family::kWho, def.name};
  if (reduce.axes || reduce.keepdims || reduce.segments) {
    throw ArgumentError(who.text() +
                        ": a select kernel runs over every element; cujit::axis, "
                        "cujit::keepdims and cujit::segments do not apply");
  }
  if (count != params.n_in()) {
    throw ArgumentError(who.text() + ": takes " + std::to_string(params.n_in()) +
                        " inputs (its outputs are allocated), got " + std::to_string(count) +
                        " arguments");
  }
  std::string own_key;
  std::string& call_key = detail::PerThread<std::string, detail::CallKeyBuffer>::get(own_key);
  int device = detail::call_device(
      who, detail::reduce_call_signature(call_key, args, count, options, reduce),
      options.stream_device);
  std::optional<detail::ScopedContext> context;
  if (device >= 0) context.emplace(device);
  std::shared_ptr<const detail::ScanCall> call = im.runner.calls().find(call_key);
  Shape shape;
  DType kept = DType::Int64;
  if (call) {
    shape = Shape{call->plan.n};
    kept = call->plan.spec.params[params.n_in()].dtype;
  } else {
    const std::string key = call_key;
    call = im.plan_call(args, count, options, device, shape, kept);
    if (!context) context.emplace(device);
    if (call) im.runner.calls().insert(key, call);
  }
  const Device dev = Device::get(device);
  Selection result;
  result.stream = Stream::wrap(options.stream, dev);
  result.values = Array::empty(shape, kept, dev, result.stream);
  result.count = Array::empty({}, DType::Int64, dev, result.stream);
  if (!call) {
    result.count.fill(0, result.stream);
    return result;
  }
  const Array* arrays[detail::kMaxCallArgs];
  for (std::size_t k = 0; k < params.n_in(); ++k) {
    arrays[k] = args[k].is_array() ? &args[k].array() : nullptr;
  }
  arrays[params.n_in()] = &result.values;
  arrays[params.n_in() + 1] = &result.count;
  im.runner.execute(*call, args, arrays, options.stream, device);
  return result;
}

}  // namespace cujit
