#include "codegen/kernel_call.hpp"

#include <cujit/error.hpp>

#include "core/layout.hpp"

namespace cujit::detail {

std::int64_t ArgDesc::size() const { return shape == nullptr ? 1 : shape_product(*shape); }

std::string Who::text() const { return "cujit: " + std::string(family) + " '" + name + "'"; }

std::string ParamList::role(std::size_t k) const {
  return (k < n_in() ? "input '" : "output '") + (*this)[k].name + "'";
}

void check_argument_count(const Who& who, const ParamList& params, std::size_t count) {
  if (count == params.n_in() || count == params.size()) return;
  throw ArgumentError(who.text() + " takes " + std::to_string(params.n_in()) + " input(s)" +
                      (params.n_out() == 0 ? std::string()
                                           : " optionally followed by " +
                                                 std::to_string(params.n_out()) + " output(s)") +
                      ", but " + std::to_string(count) + " argument(s) were given");
}

void scan_arrays(ArrayScan& scan, const Who& who, const ParamList& params, const ArgDesc* args,
                 std::size_t count, std::size_t shape_args) {
  const Shape* first = nullptr;
  bool same = true;
  for (std::size_t k = 0; k < count; ++k) {
    const ArgDesc& a = args[k];
    if (!a.is_array) continue;
    if (a.null)
      throw ArgumentError(who.text() + ": argument '" + params[k].name + "' is a null array");
    if (scan.device < 0) {
      scan.device = a.device;
    } else if (a.device != scan.device) {
      throw DeviceError(who.text() + ": argument '" + params[k].name + "' is on device " +
                        std::to_string(a.device) + " but earlier arrays are on device " +
                        std::to_string(scan.device));
    }
    if (k >= shape_args || params[k].raw) continue;
    if (first == nullptr) {
      first = a.shape;
    } else if (*a.shape != *first) {
      same = false;
    }
  }
  scan.shape = first;
  if (first == nullptr || same) return;
  scan.broadcast = broadcast_arguments(
      std::min(count, shape_args),
      [&](std::size_t k) -> const Shape* {
        return args[k].is_array && !params[k].raw ? args[k].shape : nullptr;
      },
      [&](std::size_t k) { return params.role(k); }, who.text());
  scan.shape = &scan.broadcast;
}

int call_device(const Who& who, int array_device, int stream_device) {
  if (array_device >= 0 && stream_device >= 0 && array_device != stream_device) {
    throw DeviceError(who.text() + ": the stream belongs to device " +
                      std::to_string(stream_device) + " but the arrays are on device " +
                      std::to_string(array_device) + "; launch on a stream of device " +
                      std::to_string(array_device));
  }
  return array_device >= 0 ? array_device : stream_device;
}

void check_output_shapes(const Who& who, const ParamList& params, const ArgDesc* args,
                         const Shape& shape, const char* what) {
  for (std::size_t k = params.n_in(); k < params.size(); ++k) {
    if (params[k].raw || *args[k].shape == shape) continue;
    throw ShapeError(who.text() + ": output '" + params[k].name + "' has shape " +
                     shape_text(*args[k].shape) + " but " + what + " " + shape_text(shape));
  }
}

void check_raw_array(const Who& who, const Param& param, const ArgDesc& arg) {
  if (arg.c_contiguous || arg.shape->size() == 1) return;
  throw ArgumentError(who.text() + ": raw argument '" + param.name +
                      "' must be C-contiguous or 1-dimensional");
}

ResolvedTypes resolve_call_types(const Who& who, const ParamList& params,
                                 const std::vector<Param>& in, const std::vector<Param>& out,
                                 const ArgDesc* args, std::size_t count) {
  std::vector<ArgType> in_args, out_args;
  for (std::size_t k = 0; k < params.size(); ++k) {
    ArgType a;
    a.present = k < count;
    if (a.present) {
      a.is_array = args[k].is_array;
      a.dtype = args[k].dtype;
    }
    (k < params.n_in() ? in_args : out_args).push_back(a);
  }
  for (std::size_t k = params.n_in(); k < count; ++k) {
    if (!args[k].is_array) {
      throw TypeError(who.text() + ": output '" + params[k].name +
                      "' must be an array, not a scalar");
    }
  }
  return resolve_types(in, out, in_args, out_args, who.text());
}

}  // namespace cujit::detail
