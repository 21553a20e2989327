// A user kernel's call from Python, read in C++: CuPy arrays through their C layout
// (cupy_layout.hpp) into views the thread keeps (view_cache.hpp), PyTorch tensors off their
// methods, cujit Arrays and Python numbers as they are; any other object through the package's
// cujit._arrays.slow_item (__cuda_array_interface__, DLPack, NumPy scalars, big ints, and the
// errors for host arrays). No Python frame runs for the known kinds.
#include "call_path.hpp"

#include "cupy_layout.hpp"
#include "view_cache.hpp"

#include <cujit/device.hpp>

#include <cstring>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

namespace cujit::python {
namespace {

// A Python object held for the life of the process (never released: the interpreter may be
// gone when statics are destroyed).
PyObject* forever(nb::object o) { return o.release().ptr(); }

PyObject* interned(const char* name) { return PyUnicode_InternFromString(name); }

struct Names {
  PyObject* data = interned("data");
  PyObject* ptr = interned("ptr");
  PyObject* shape = interned("shape");
  PyObject* strides = interned("strides");
  PyObject* dtype = interned("dtype");
  PyObject* device_id = interned("device_id");
  PyObject* data_ptr = interned("data_ptr");
  PyObject* stride = interned("stride");
  PyObject* get_device = interned("get_device");
  PyObject* is_conj = interned("is_conj");
  PyObject* is_neg = interned("is_neg");
};

const Names& names() {
  static const Names n;
  return n;
}

nb::object attr(nb::handle o, PyObject* name) {
  PyObject* value = PyObject_GetAttr(o.ptr(), name);
  if (value == nullptr) throw nb::python_error();
  return nb::steal(value);
}

nb::object method(nb::handle o, PyObject* name) {
  PyObject* value = PyObject_CallMethodNoArgs(o.ptr(), name);
  if (value == nullptr) throw nb::python_error();
  return nb::steal(value);
}

// cujit._arrays' function `name` (the package's slow paths).
nb::handle arrays_function(const char* name) {
  static PyObject* module = forever(nb::module_::import_("cujit._arrays"));
  return forever(nb::handle(module).attr(name));  // held for the process, like the module
}

// Types whose instances are read without checks, learned on first sight.
struct KnownType {
  PyTypeObject* type;
  Library library;
  bool fields;  // CuPy arrays read through their C layout (cupy_layout.hpp)
};
std::vector<KnownType>& known_types() {
  static std::vector<KnownType> types;
  return types;
}

const KnownType* known(PyTypeObject* type) {
  for (const KnownType& k : known_types()) {
    if (k.type == type) return &k;
  }
  return nullptr;
}

// Learns the type of `instance`, seen for the first time.
void learn(nb::handle instance) {
  PyTypeObject* type = Py_TYPE(instance.ptr());
  const nb::handle t(reinterpret_cast<PyObject*>(type));
  const std::string module = nb::cast<std::string>(t.attr("__module__"));
  const std::string name = nb::cast<std::string>(t.attr("__name__"));
  Library library = Library::None;
  if (module.rfind("cupy", 0) == 0 && name == "ndarray") library = Library::Cupy;
  if (module.rfind("torch", 0) == 0 && (name == "Tensor" || name == "Parameter")) {
    library = Library::Torch;
  }
  if (library == Library::None || known(type) != nullptr) return;
  Py_INCREF(t.ptr());
  const bool fields = library == Library::Cupy && cupy_layout_holds(type, instance.ptr());
  known_types().push_back({type, library, fields});
}

std::unordered_map<PyObject*, DType>& dtype_codes() {
  static std::unordered_map<PyObject*, DType> codes;
  return codes;
}

// The dtype of a dtype object asked before, without running Python.
std::optional<DType> known_dtype(PyObject* dtype) {
  const auto found = dtype_codes().find(dtype);
  if (found == dtype_codes().end()) return std::nullopt;
  return found->second;
}

// The dtype of a NumPy or PyTorch dtype object; each object's answer is kept (a few dozen at
// most are kept: dtypes made afresh, with metadata say, are asked each time).
DType dtype_of(nb::handle dtype) {
  std::unordered_map<PyObject*, DType>& codes = dtype_codes();
  const auto found = codes.find(dtype.ptr());
  if (found != codes.end()) return found->second;
  static nb::handle code_of = arrays_function("_dtype_code");
  const auto t = static_cast<DType>(nb::cast<int>(code_of(dtype)));
  if (codes.size() < 64) {
    codes.emplace(dtype.ptr(), t);
    Py_INCREF(dtype.ptr());
  }
  return t;
}

}  // namespace

namespace {
thread_local int t_call_depth = 0;  // PythonCalls alive on this thread
}  // namespace

PythonCall::Depth::Depth() : outermost(t_call_depth++ == 0) {}
PythonCall::Depth::~Depth() { --t_call_depth; }

PythonCall::PythonCall(nb::handle args, std::size_t count, const std::string& who,
                       nb::handle stream)
    : count_(count), given_stream_(stream) {
  // The thread's view cache serves the outermost call only: a call made while another is
  // reading its arguments (a property of an argument calling a kernel) makes its own views.
  if (depth_.outermost) {
    cache_ = &ViewCache::local();
    cache_->begin();
  }
  args_.reserve(count);
  weak_.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    const nb::handle arg(PyTuple_GET_ITEM(args.ptr(), static_cast<Py_ssize_t>(i)));
    add(arg, i, who);
    weak_.push_back(PyLong_CheckExact(arg.ptr()) || PyFloat_CheckExact(arg.ptr()));
  }
}

void PythonCall::note_array(Library library, int device) {
  if (device_ >= 0) return;
  library_ = library;
  device_ = device;
}

void PythonCall::add(nb::handle arg, std::size_t index, const std::string& who) {
  PyTypeObject* type = Py_TYPE(arg.ptr());
  if (type == &PyFloat_Type) {
    args_.emplace_back(Scalar(PyFloat_AS_DOUBLE(arg.ptr())));
    return;
  }
  if (type == &PyBool_Type) {
    args_.emplace_back(Scalar(arg.ptr() == Py_True));
    return;
  }
  if (type == &PyLong_Type) {
    int overflow = 0;
    const long long value = PyLong_AsLongLongAndOverflow(arg.ptr(), &overflow);
    if (overflow == 0) {
      args_.emplace_back(Scalar(static_cast<std::int64_t>(value)));
      return;
    }
  }
  static PyTypeObject* const array_type = reinterpret_cast<PyTypeObject*>(nb::type<Array>().ptr());
  if (type == array_type) {  // exactly cujit.Array: its C++ object, no type lookup
    const Array& a = *nb::inst_ptr<Array>(arg);
    note_array(Library::None, a.device_id());
    args_.emplace_back(a);
    return;
  }
  if (const KnownType* k = known(type)) {
    CupyFields fields;
    if (k->fields && read_cupy_fields(arg.ptr(), fields)) {
      if (const std::optional<DType> dtype = known_dtype(fields.dtype)) {
        return add_cupy(fields, *dtype);
      }
      // Asking Python for the dtype may let another thread reshape the array (which frees the
      // shape the fields point at): its fields are read again after.
      const DType dtype = dtype_of(nb::handle(fields.dtype));
      if (read_cupy_fields(arg.ptr(), fields)) return add_cupy(fields, dtype);
    }
    if (k->library == Library::Cupy) return add_cupy(arg);
    return add_torch(arg, who);
  }
  add_slow(arg, index, who);
  learn(arg);
}

Array& PythonCall::new_view(Array view) {
  if (views_.capacity() == 0) views_.reserve(count_);  // never reallocates: Args point here
  views_.push_back(std::move(view));
  return views_.back();
}

void PythonCall::add_cupy(const CupyFields& f, DType dtype) {
  const Array* view = cache_ != nullptr ? cache_->view(f, dtype) : nullptr;
  if (view == nullptr) {
    view = &new_view(Array::from_pointer(f.address, Shape(f.shape, f.shape + f.ndim),
                                         Shape(f.strides, f.strides + f.ndim), dtype,
                                         Device::get(f.device)));
  }
  note_array(Library::Cupy, f.device);
  args_.emplace_back(*view);
}

void PythonCall::add_cupy(nb::handle x) {
  const Names& n = names();
  const nb::object memory = attr(x, n.data);
  const auto address = nb::cast<std::uint64_t>(attr(memory, n.ptr));
  const int device = nb::cast<int>(attr(memory, n.device_id));
  const DType dtype = dtype_of(attr(x, n.dtype));
  const Array& view =
      new_view(Array::from_pointer(address, int_sequence(attr(x, n.shape)),
                                   int_sequence(attr(x, n.strides)), dtype, Device::get(device)));
  note_array(Library::Cupy, device);
  args_.emplace_back(view);
}

void PythonCall::add_torch(nb::handle x, const std::string& who) {
  const Names& n = names();
  const int device = nb::cast<int>(method(x, n.get_device));
  if (device < 0) {
    throw TypeError("cujit: " + who + ": a host tensor was given; pass a CUDA tensor");
  }
  if (method(x, n.is_conj).ptr() == Py_True || method(x, n.is_neg).ptr() == Py_True) {
    // A flag over unchanged memory, as PyTorch's own DLPack export refuses.
    throw TypeError("cujit: " + who +
                    ": a conjugate or negative view was given; pass "
                    "x.resolve_conj() or x.resolve_neg()");
  }
  const DType dtype = dtype_of(attr(x, n.dtype));
  Shape strides = int_sequence(method(x, n.stride));  // in elements
  for (std::int64_t& s : strides) s *= static_cast<std::int64_t>(dtype_size(dtype));
  const Array& view = new_view(Array::from_pointer(nb::cast<std::uint64_t>(method(x, n.data_ptr)),
                                                   int_sequence(attr(x, n.shape)),
                                                   std::move(strides), dtype, Device::get(device)));
  note_array(Library::Torch, device);
  args_.emplace_back(view);
}

// Everything else goes through cujit._arrays.slow_item(arg, who), which answers (item, library
// name or None, producer stream or None): item a cujit Array, an (address, shape, strides,
// dtype, device[, in elements]) view, or a (dtype name, value) scalar.
void PythonCall::add_slow(nb::handle arg, std::size_t index, const std::string& who) {
  static nb::handle slow_item = arrays_function("slow_item");
  const nb::object consumer =
      nb::hasattr(arg, "__dlpack__") ? nb::object(nb::int_(dlpack_consumer_stream())) : nb::none();
  const nb::tuple answer =
      nb::borrow<nb::tuple>(slow_item(arg, who + ": argument " + std::to_string(index), consumer));
  const nb::handle item = answer[0];
  const Library library = library_named(answer[1]);
  if (nb::isinstance<Array>(item)) {
    held_.push_back(nb::borrow(item));
    const Array& a = nb::cast<const Array&>(item);
    note_array(library, a.device_id());
    args_.emplace_back(a);
    return;
  }
  const nb::tuple t = nb::borrow<nb::tuple>(item);
  if (t.size() >= 5) {
    const Array& view = new_view(call_view(t, who));
    note_array(library, view.device_id());
    args_.emplace_back(view);
    if (!answer[2].is_none()) producers_.push_back(nb::cast<std::uintptr_t>(answer[2]));
    return;
  }
  const DType dtype = dtype_named(nb::cast<std::string>(t[0]), who);
  args_.emplace_back(with_value(dtype, t[1], [](auto typed) { return Scalar(typed); }));
}

const char* reading_of(nb::handle object) {
  const KnownType* k = known(Py_TYPE(object.ptr()));
  if (k == nullptr) return nullptr;
  return k->fields ? "fields" : "attributes";
}

Library library_named(nb::handle name) {
  if (name.is_none()) return Library::None;
  const std::string text = nb::cast<std::string>(name);
  if (text == "cupy") return Library::Cupy;
  if (text == "torch") return Library::Torch;
  return Library::None;
}

const char* library_name(Library library) {
  switch (library) {
    case Library::Cupy:
      return "cupy";
    case Library::Torch:
      return "torch";
    default:
      return nullptr;
  }
}

namespace {

// CuPy's current stream through its Cython C API: cupy_backends.cuda.stream exports
// get_current_stream_ptr in __pyx_capi__ as a capsule named by its C signature. Taken only
// under exactly that signature ("intptr_t (void)", CuPy 13 and 14), so that a CuPy that
// changes it falls back to the Python path; null then.
using CurrentStreamPtr = std::intptr_t (*)();

CurrentStreamPtr cupy_stream_function() {
  static const CurrentStreamPtr function = []() -> CurrentStreamPtr {
    constexpr const char* kSignature = "intptr_t (void)";
    try {
      const nb::object capi =
          nb::module_::import_("cupy_backends.cuda.stream").attr("__pyx_capi__");
      PyObject* capsule = PyDict_GetItemString(capi.ptr(), "get_current_stream_ptr");  // borrowed
      if (capsule == nullptr || !PyCapsule_IsValid(capsule, kSignature)) return nullptr;
      void* pointer = PyCapsule_GetPointer(capsule, kSignature);
      CurrentStreamPtr f = nullptr;
      static_assert(sizeof f == sizeof pointer);
      std::memcpy(&f, &pointer, sizeof f);
      return f;
    } catch (const nb::python_error&) {
      return nullptr;  // no cupy_backends, or no __pyx_capi__: the Python path
    }
  }();
  return function;
}

std::uintptr_t cupy_current_stream() {
  if (const CurrentStreamPtr f = cupy_stream_function()) {
    const std::intptr_t handle = f();  // a C call: no Stream object made and read
    if (PyErr_Occurred() != nullptr) throw nb::python_error();
    return static_cast<std::uintptr_t>(handle);
  }
  static PyObject* current = forever(nb::module_::import_("cupy.cuda").attr("get_current_stream"));
  return nb::cast<std::uintptr_t>(attr(nb::handle(current)(), names().ptr));
}

std::uintptr_t torch_current_stream(int device) {
  static PyObject* raw = [] {
    const nb::object c = nb::module_::import_("torch._C");
    // The raw handle, no Stream object made (older PyTorch: through torch.cuda).
    if (nb::hasattr(c, "_cuda_getCurrentRawStream")) {
      return forever(c.attr("_cuda_getCurrentRawStream"));
    }
    return static_cast<PyObject*>(nullptr);
  }();
  if (raw != nullptr) return nb::cast<std::uintptr_t>(nb::handle(raw)(device));
  const nb::object cuda = nb::module_::import_("torch.cuda");
  return nb::cast<std::uintptr_t>(cuda.attr("current_stream")(device).attr("cuda_stream"));
}

}  // namespace

std::uintptr_t stream_handle(nb::handle stream, Library library, int device) {
  if (!stream.is_none()) {
    if (PyLong_Check(stream.ptr())) return nb::cast<std::uintptr_t>(stream);
    for (const char* attribute : {"ptr", "cuda_stream", "handle"}) {
      if (nb::hasattr(stream, attribute)) {
        const nb::object handle = stream.attr(attribute);
        if (!handle.is_none()) return nb::cast<std::uintptr_t>(nb::int_(handle));
      }
    }
    throw TypeError(std::string("cujit: stream: unsupported type '") +
                    Py_TYPE(stream.ptr())->tp_name + "'");
  }
  if (library == Library::Cupy) return cupy_current_stream();
  if (library == Library::Torch) return torch_current_stream(device < 0 ? 0 : device);
  return 0;
}

nb::object outputs_of(Library library) {
  if (library == Library::None) return nb::none();
  static nb::handle of = arrays_function("outputs_of");
  return of(library_name(library));
}

std::uintptr_t PythonCall::stream() const {
  return stream_handle(given_stream_, library_, device_);
}

// The stream a DLPack producer is asked to order its work before: the call's, as far as the
// arguments read so far tell it (DLPack's 1 for the legacy default stream, as 0 is ambiguous).
std::uintptr_t PythonCall::dlpack_consumer_stream() const {
  const std::uintptr_t s = stream();
  return s == 0 ? 1 : s;
}

namespace {

// __cuda_array_interface__ v3: work on each producer's stream comes before the consumer's.
void wait_for(const std::vector<std::uintptr_t>& producers, std::uintptr_t stream, int device) {
  for (std::uintptr_t producer : producers) {
    if (producer == stream) continue;
    const Device on = Device::get(device < 0 ? Device::current().id() : device);
    const Event ready(on);
    ready.record(Stream::wrap(reinterpret_cast<CUstream_st*>(producer), on));
    ready.wait_on(Stream::wrap(reinterpret_cast<CUstream_st*>(stream), on));
  }
}

}  // namespace

void PythonCall::wait_for_producers(std::uintptr_t stream) const {
  wait_for(producers_, stream, device_);
}

}  // namespace cujit::python
