#include <cujit/elementwise.hpp>

#include <cujit/error.hpp>

#include "cache/kernel_cache.hpp"
#include "codegen/elementwise_codegen.hpp"
#include "codegen/elementwise_manifest.hpp"
#include "codegen/snippet_analysis.hpp"
#include "runtime/context.hpp"
#include "runtime/driver.hpp"
#include "runtime/kernel_loader.hpp"
#include "runtime/layout.hpp"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <unordered_map>

namespace cujit {
namespace detail {
namespace {

constexpr int kDefaultBlock = 256;
constexpr std::int64_t kInt32Limit = (std::int64_t{1} << 31) - 1;

// Blocks per SM the grid-stride loop is sized to (enough resident warps to hide latency).
int max_blocks_per_sm() {
  static const int value = [] {
    const char* env = std::getenv("CUJIT_EW_BLOCKS_PER_SM");
    return env ? std::max(1, std::atoi(env)) : 32;
  }();
  return value;
}

// The snippets as analysis and NVRTC error mapping see them.
SnippetSet snippet_set(const ElementwiseDefinition& def, const EwSpecialization& s) {
  SnippetSet set;
  set.kernel_name = def.name;
  if (!def.preamble.empty()) {
    set.snippets.push_back({"preamble", def.preamble, Snippet::Form::TopLevel, {}});
  }
  std::vector<SnippetVariable> thread_vars;  // visible in loop_prep and after_loop
  std::vector<SnippetVariable> element_vars;
  thread_vars.push_back({"_ind", "", SnippetVariable::Kind::Size, false});
  const std::size_t n_in = def.in.size();
  for (std::size_t k = 0; k < n_in + def.out.size(); ++k) {
    const Param& p = k < n_in ? def.in[k] : def.out[k - n_in];
    const std::string type(dtype_cuda_type(s.params[k].dtype));
    if (p.raw) {
      thread_vars.push_back({p.name, type, SnippetVariable::Kind::RawArray, true});
    } else {
      element_vars.push_back({p.name, type, SnippetVariable::Kind::Element, k >= n_in});
      if (!s.params[k].scalar) {
        thread_vars.push_back({"_raw_" + p.name, type, SnippetVariable::Kind::RawArray, true});
      }
    }
  }
  element_vars.insert(element_vars.end(), thread_vars.begin(), thread_vars.end());
  element_vars.push_back({"i", "", SnippetVariable::Kind::Index, false});
  if (!def.loop_prep.empty()) {
    set.snippets.push_back({"loop_prep", def.loop_prep, Snippet::Form::Statements, thread_vars});
  }
  set.snippets.push_back({"operation", def.operation, Snippet::Form::Statements, element_vars});
  if (!def.after_loop.empty()) {
    set.snippets.push_back({"after_loop", def.after_loop, Snippet::Form::Statements, thread_vars});
  }
  return set;
}

std::vector<std::pair<std::string, std::string>> snippet_texts(const ElementwiseDefinition& def) {
  return {{"preamble", def.preamble},
          {"loop_prep", def.loop_prep},
          {"operation", def.operation},
          {"after_loop", def.after_loop}};
}

// Compiles a specialisation through the cache: no source is generated on a request-level hit.
std::shared_ptr<const CompiledProgram> compile_elementwise(const ElementwiseDefinition& def,
                                                           const EwSpecialization& s,
                                                           const Target& target) {
  KernelRequest request;
  request.kind = "elementwise";
  request.spec = elementwise_manifest_entry(def, s);
  request.target = target;
  request.manifest_entry = request.spec;
  return KernelCache::global().get_or_compile(
      request,
      [&] {
        analyze_snippets(snippet_set(def, s));
        return generate_elementwise(def, s);
      },
      [&](const SourceProgram& program) {
        try {
          return compile(program, target);
        } catch (const CompileError& e) {
          rethrow_snippet_error(e, def.name, snippet_texts(def));
        }
      });
}

// Rebuilds elementwise kernels from manifest entries for `cujit-cache precompile`.
const bool kReplayRegistered = [] {
  register_replay("elementwise", [](const std::string& entry, const Target& target) {
    auto parsed = std::make_shared<std::pair<ElementwiseDefinition, EwSpecialization>>(
        elementwise_from_manifest(entry));
    ReplayedKernel replayed;
    replayed.request.kind = "elementwise";
    replayed.request.spec = elementwise_manifest_entry(parsed->first, parsed->second);
    replayed.request.target = target;
    replayed.request.manifest_entry = replayed.request.spec;
    replayed.generate = [parsed] {
      analyze_snippets(snippet_set(parsed->first, parsed->second));
      return generate_elementwise(parsed->first, parsed->second);
    };
    replayed.compile = [parsed, target](const SourceProgram& program) {
      try {
        return compile(program, target);
      } catch (const CompileError& e) {
        rethrow_snippet_error(e, parsed->first.name, snippet_texts(parsed->first));
      }
    };
    return replayed;
  });
  return true;
}();

struct Specialized {
  EwSpecialization spec;
  LoadedKernel kernel;
};

}  // namespace
}  // namespace detail

struct ElementwiseKernel::Impl {
  detail::ElementwiseDefinition def;
  bool no_return = false;
  // Type-independent facts from a lexer scan of the snippets (computed once).
  std::vector<char> used, raw_view_used, write_only;
  std::mutex mutex;
  std::unordered_map<std::string, std::shared_ptr<const detail::Specialized>> specialized;
  std::unordered_map<std::string, std::shared_ptr<const detail::ResolvedTypes>> resolved;

  std::size_t n_in() const { return def.in.size(); }
  std::size_t n_params() const { return def.in.size() + def.out.size(); }
  const detail::Param& param(std::size_t k) const {
    return k < def.in.size() ? def.in[k] : def.out[k - def.in.size()];
  }
};

ElementwiseKernel::ElementwiseKernel(std::string in_params, std::string out_params,
                                     std::string operation, std::string name,
                                     ElementwiseOptions options)
    : impl_(std::make_shared<Impl>()) {
  impl_->def = detail::make_elementwise_definition(
      std::move(in_params), std::move(out_params), std::move(operation), std::move(name),
      std::move(options.preamble), std::move(options.loop_prep), std::move(options.after_loop),
      std::move(options.compile_options), options.reduce_dims);
  impl_->no_return = options.no_return;
  const detail::ElementwiseDefinition& def = impl_->def;
  const std::set<std::string> ids = detail::referenced_identifiers(
      def.operation + "\n" + def.loop_prep + "\n" + def.after_loop + "\n" + def.preamble);
  for (std::size_t k = 0; k < impl_->n_params(); ++k) {
    const std::string& param_name = impl_->param(k).name;
    impl_->used.push_back(ids.count(param_name) != 0);
    impl_->raw_view_used.push_back(ids.count("_raw_" + param_name) != 0);
    impl_->write_only.push_back(detail::output_is_write_only(def.operation, param_name));
  }
}

const std::string& ElementwiseKernel::name() const noexcept { return impl_->def.name; }

Array ElementwiseKernel::first_output(std::vector<Array> outputs) const {
  if (outputs.empty()) return Array();
  return std::move(outputs.front());
}

std::vector<Array> ElementwiseKernel::launch(const Arg* args, std::size_t count,
                                             const LaunchOptions& options) const {
  Impl& im = *impl_;
  const detail::ElementwiseDefinition& def = im.def;
  const std::size_t n_in = im.n_in(), n_params = im.n_params();
  if (count != n_in && count != n_params) {
    throw ArgumentError(
        "cujit: kernel '" + def.name + "' takes " + std::to_string(n_in) + " input(s)" +
        (def.out.empty()
             ? std::string()
             : " optionally followed by " + std::to_string(def.out.size()) + " output(s)") +
        ", but " + std::to_string(count) + " argument(s) were given");
  }
  const bool outputs_given = count == n_params;

  // 1. Types: resolved once per combination of argument dtypes.
  std::string type_key;
  type_key.reserve(count * 2 + 1);
  for (std::size_t k = 0; k < count; ++k) {
    type_key.push_back(static_cast<char>(args[k].dtype()));
    type_key.push_back(args[k].is_array() ? 'a' : 's');
  }
  std::shared_ptr<const detail::ResolvedTypes> types;
  {
    std::lock_guard<std::mutex> lock(im.mutex);
    auto it = im.resolved.find(type_key);
    if (it != im.resolved.end()) types = it->second;
  }
  if (!types) {
    std::vector<detail::ArgType> in_args, out_args;
    for (std::size_t k = 0; k < n_params; ++k) {
      detail::ArgType a;
      a.present = k < count;
      if (a.present) {
        a.is_array = args[k].is_array();
        a.dtype = args[k].dtype();
      }
      (k < n_in ? in_args : out_args).push_back(a);
    }
    for (std::size_t k = n_in; k < count; ++k) {
      if (!args[k].is_array()) {
        throw TypeError("cujit: kernel '" + def.name + "': output '" + im.param(k).name +
                        "' must be an array, not a scalar");
      }
    }
    types = std::make_shared<const detail::ResolvedTypes>(
        detail::resolve_types(def.in, def.out, in_args, out_args, def.name));
    std::lock_guard<std::mutex> lock(im.mutex);
    im.resolved.emplace(type_key, types);
  }
  auto dtype_of_param = [&](std::size_t k) {
    return k < n_in ? types->in[k] : types->out[k - n_in];
  };

  // 2. Device, broadcast shape, size.
  int device = -1;
  const Shape* first_shape = nullptr;
  bool same_shapes = true;
  for (std::size_t k = 0; k < count; ++k) {
    if (!args[k].is_array()) continue;
    const Array& a = args[k].array();
    if (!a.valid()) {
      throw ArgumentError("cujit: kernel '" + def.name + "': argument '" + im.param(k).name +
                          "' is a null array");
    }
    if (device < 0) {
      device = a.device_id();
    } else if (a.device_id() != device) {
      throw DeviceError("cujit: kernel '" + def.name + "': argument '" + im.param(k).name +
                        "' is on device " + std::to_string(a.device_id()) +
                        " but earlier arrays are on device " + std::to_string(device));
    }
    if (im.param(k).raw) continue;
    if (first_shape == nullptr) {
      first_shape = &a.shape();
    } else if (a.shape() != *first_shape) {
      same_shapes = false;
    }
  }
  Shape shape;
  if (first_shape == nullptr) {
    if (options.size < 0) {
      throw ArgumentError("cujit: kernel '" + def.name +
                          "': pass cujit::size(n) when no non-raw array is given");
    }
    shape = {options.size};
  } else if (same_shapes) {
    shape = *first_shape;
  } else {
    std::vector<Shape> shapes;
    for (std::size_t k = 0; k < count; ++k) {
      if (args[k].is_array() && !im.param(k).raw) shapes.push_back(args[k].array().shape());
    }
    shape = broadcast_shapes(shapes);
  }
  std::int64_t n = 1;
  for (std::int64_t e : shape) n *= e;
  if (first_shape != nullptr && options.size >= 0 && options.size != n) {
    throw ArgumentError("cujit: kernel '" + def.name + "': size " + std::to_string(options.size) +
                        " differs from the broadcast size " + std::to_string(n));
  }
  if (device < 0) device = Device::current().id();

  // 3. Outputs: check the given ones, allocate the missing ones.
  std::vector<Array> outputs;
  outputs.reserve(def.out.size());
  const Stream stream = Stream::wrap(options.stream, Device::get(device));
  for (std::size_t j = 0; j < def.out.size(); ++j) {
    const std::size_t k = n_in + j;
    if (outputs_given) {
      const Array& out = args[k].array();
      if (!im.param(k).raw && out.shape() != shape) {
        throw ShapeError("cujit: kernel '" + def.name + "': output '" + def.out[j].name +
                         "' has the wrong shape for the broadcast of the inputs");
      }
      outputs.push_back(out);
    } else {
      outputs.push_back(Array::empty(shape, types->out[j], Device::get(device), stream));
    }
  }
  auto array_of = [&](std::size_t k) -> const Array& {
    return k < n_in ? args[k].array() : outputs[k - n_in];
  };
  if (n == 0) return im.no_return ? std::vector<Array>() : outputs;

  // 4. Layout class and index width.
  detail::EwSpecialization spec;
  spec.params.resize(n_params);
  spec.block_size = options.block_size > 0 ? options.block_size : detail::kDefaultBlock;
  if (spec.block_size > 1024) {
    throw ArgumentError("cujit: kernel '" + def.name + "': block size " +
                        std::to_string(spec.block_size) + " exceeds 1024 threads");
  }
  std::size_t max_item = 1, layout_count = 0;
  bool contiguous = true, aligned = true;
  std::int64_t max_span = n;
  for (std::size_t k = 0; k < n_params; ++k) {
    detail::EwParam& e = spec.params[k];
    e.dtype = dtype_of_param(k);
    e.scalar = k < n_in && !args[k].is_array();
    e.used = im.used[k];
    e.raw_view_used = im.raw_view_used[k];
    const bool given_output = k >= n_in && outputs_given;
    e.load_output = given_output && e.used && !im.write_only[k];
    if (e.scalar) continue;
    const Array& a = array_of(k);
    if (im.param(k).raw) {
      e.raw_contiguous = a.is_c_contiguous();
      if (!e.raw_contiguous && a.ndim() != 1) {
        throw ArgumentError("cujit: kernel '" + def.name + "': raw argument '" + im.param(k).name +
                            "' must be C-contiguous or 1-dimensional");
      }
      continue;
    }
    if (!e.used && !e.raw_view_used) continue;
    const std::size_t item = a.itemsize();
    max_item = std::max(max_item, item);
    ++layout_count;
    if (!a.is_c_contiguous() || a.shape() != shape) contiguous = false;
    for (std::size_t d = 0; d < a.shape().size(); ++d) {
      max_span = std::max(max_span, std::abs(a.strides()[d]) * a.shape()[d]);
    }
  }
  for (std::size_t k = 0; k < n_params; ++k) {
    if (spec.params[k].scalar || !im.param(k).raw) continue;
    max_span = std::max<std::int64_t>(max_span, array_of(k).size());
  }
  spec.index64 = max_span > detail::kInt32Limit;
  detail::CollapsedLayout collapsed;
  std::vector<int> layout_arrays;
  if (contiguous) {
    spec.vec = max_item <= 8 && layout_count > 0 ? static_cast<int>(16 / max_item) : 1;
    for (std::size_t k = 0; k < n_params && spec.vec > 1; ++k) {
      const detail::EwParam& e = spec.params[k];
      if (e.scalar || im.param(k).raw || !e.used) continue;
      if (array_of(k).data() % (spec.vec * dtype_size(e.dtype)) != 0) aligned = false;
    }
    if (spec.vec > 1 && aligned && n >= spec.vec) {
      spec.layout = detail::EwLayout::Vectorized;
    } else {
      spec.layout = detail::EwLayout::Contiguous;
      spec.vec = 1;
    }
  } else {
    spec.layout = detail::EwLayout::Strided;
    layout_arrays = detail::strided_array_params(def, spec);
    std::vector<Shape> strides;
    for (int k : layout_arrays) {
      const Array& a = array_of(static_cast<std::size_t>(k));
      strides.push_back(detail::broadcast_strides(a.shape(), a.strides(), shape));
    }
    collapsed = detail::collapse_dims(shape, strides, def.reduce_dims);
    spec.ndim = static_cast<int>(collapsed.shape.size());
  }

  // 5. The specialised kernel: a hash lookup after the first call.
  std::string key = type_key;
  key += spec.key();
  key += '@';
  key += std::to_string(device);
  std::shared_ptr<const detail::Specialized> specialized;
  {
    std::lock_guard<std::mutex> lock(im.mutex);
    auto it = im.specialized.find(key);
    if (it != im.specialized.end()) specialized = it->second;
  }
  if (!specialized) {
    const Target target = target_for_arch(detail::device_properties(device).compute_capability);
    auto program = detail::compile_elementwise(def, spec, target);
    auto made = std::make_shared<detail::Specialized>();
    made->spec = spec;
    made->kernel = detail::load_kernel(std::move(program), detail::elementwise_symbol(def), device);
    std::lock_guard<std::mutex> lock(im.mutex);
    specialized = im.specialized.emplace(key, std::move(made)).first->second;
  }

  // 6. Kernel arguments, in the order generate_elementwise documents.
  constexpr std::size_t kMaxParams = 3 * detail::CallArgs::kMaxArgs + 2;
  void* params[kMaxParams];
  alignas(16) unsigned char values[kMaxParams][16];
  std::size_t p = 0;
  auto push = [&](const void* bytes, std::size_t size) {
    std::memcpy(values[p], bytes, size);
    params[p] = values[p];
    ++p;
  };
  for (std::size_t k = 0; k < n_params; ++k) {
    const detail::EwParam& e = spec.params[k];
    if (e.scalar) {
      args[k].scalar().convert_to(e.dtype, values[p]);
      params[p] = values[p];
      ++p;
      continue;
    }
    const Array& a = array_of(k);
    const std::uint64_t address = a.data();
    push(&address, 8);
    if (im.param(k).raw) {
      const std::int64_t size = a.size();
      const std::int64_t stride =
          a.ndim() == 1 ? a.strides()[0] : static_cast<std::int64_t>(a.itemsize());
      push(&size, 8);
      push(&stride, 8);
    }
  }
  if (spec.index64) {
    push(&n, 8);
  } else {
    const auto n32 = static_cast<std::int32_t>(n);
    push(&n32, 4);
  }
  std::vector<unsigned char> layout_bytes;
  if (spec.layout == detail::EwLayout::Strided) {
    const std::size_t nd = collapsed.shape.size(),
                      na = std::max<std::size_t>(layout_arrays.size(), 1);
    const std::size_t isz = spec.index64 ? 8 : 4;
    layout_bytes.assign(isz * (nd + na * nd) + 8 * nd, 0);
    unsigned char* at = layout_bytes.data();
    auto put_index = [&](std::int64_t v) {
      if (spec.index64) {
        std::memcpy(at, &v, 8);
      } else {
        const auto v32 = static_cast<std::int32_t>(v);
        std::memcpy(at, &v32, 4);
      }
      at += isz;
    };
    for (std::int64_t e : collapsed.shape) put_index(e);
    for (std::size_t a = 0; a < na; ++a) {
      for (std::size_t d = 0; d < nd; ++d)
        put_index(a < collapsed.strides.size() ? collapsed.strides[a][d] : 0);
    }
    std::vector<detail::FastDivisor> divisors;
    for (std::int64_t e : collapsed.shape) {
      divisors.push_back(spec.index64 ? detail::FastDivisor{}
                                      : detail::fast_divisor(static_cast<unsigned>(e)));
    }
    for (const auto& f : divisors) {
      std::memcpy(at, &f.magic, 4);
      at += 4;
    }
    for (const auto& f : divisors) {
      std::memcpy(at, &f.shift, 4);
      at += 4;
    }
    params[p++] = layout_bytes.data();
  }

  // 7. Launch: a grid-stride loop over at most a few waves of blocks.
  const detail::LoadedKernel& kernel = specialized->kernel;
  const std::int64_t work = spec.layout == detail::EwLayout::Vectorized ? n / spec.vec : n;
  const std::int64_t wanted =
      (std::max<std::int64_t>(work, 1) + spec.block_size - 1) / spec.block_size;
  const std::int64_t cap = std::int64_t{kernel.sm_count} * detail::max_blocks_per_sm() *
                           std::max(1, 256 / spec.block_size);
  const unsigned grid = static_cast<unsigned>(std::max<std::int64_t>(1, std::min(wanted, cap)));
  detail::ensure_context(device);
  const CUresult result = detail::driver().cuLaunchKernel(kernel.function, grid, 1, 1,
                                                          static_cast<unsigned>(spec.block_size), 1,
                                                          1, 0, options.stream, params, nullptr);
  if (result != CUDA_SUCCESS) {
    detail::throw_cuda_error(
        result, "cuLaunchKernel",
        "elementwise kernel '" + def.name + "' on device " + std::to_string(device));
  }
  if (im.no_return) return {};
  return outputs;
}

}  // namespace cujit
