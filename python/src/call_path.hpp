#pragma once
// A user kernel's call from Python: its arguments read into cujit Args, the library and device
// of its first array, and the stream it runs on (python/src/call_path.cpp).

#include "bindings.hpp"
#include "cupy_layout.hpp"
#include "view_cache.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace cujit::python {

/// The array library whose arrays a call was given first: its outputs are made as that
/// library's arrays, on its current stream.
enum class Library { None, Cupy, Torch };

/// "cupy", "torch", or nullptr for Library::None.
const char* library_name(Library library);
/// The Library named "cupy" or "torch"; None for None or any other name.
Library library_named(nb::handle name);

/// The (OutputAllocator, source) pair of cujit._arrays.outputs_of for `library`: what
/// allocates a call's outputs and wraps them as that library's arrays; None for Library::None.
nb::object outputs_of(Library library);

/// The stream handle a call runs on: `stream` (a raw handle, or a CuPy or PyTorch stream,
/// read from its ptr, cuda_stream or handle), else the current stream of `library` on
/// `device`, else 0 (the legacy default stream). cujit::TypeError for other objects.
std::uintptr_t stream_handle(nb::handle stream, Library library, int device);

/// One call's positional arguments, read with the GIL held: views of the arrays (valid while
/// this object and the Python arguments live), scalars, the first array's library and device,
/// and the producer streams that __cuda_array_interface__ (v3) inputs named.
class PythonCall {
 public:
  /// Reads the first `count` items of the tuple `args`, for a call on `stream` (the call's
  /// stream= keyword, None when not given). Raises what reading them raises: cujit.TypeError
  /// (with `who` and the argument's position) for host arrays and objects that are neither GPU
  /// arrays nor scalars.
  PythonCall(nb::handle args, std::size_t count, const std::string& who, nb::handle stream);
  PythonCall(const PythonCall&) = delete;
  PythonCall& operator=(const PythonCall&) = delete;

  const std::vector<Arg>& args() const noexcept { return args_; }
  /// Whether argument `i` was a Python int or float (a "weak" scalar, NumPy 2's term: it may
  /// take its parameter's width in a raw kernel).
  bool weak(std::size_t i) const noexcept { return weak_[i]; }
  Library library() const noexcept { return library_; }
  /// The first array's device; -1 when no argument is an array.
  int device() const noexcept { return device_; }
  /// The call's stream: stream_handle() of the stream= keyword for this call's library and
  /// device.
  std::uintptr_t stream() const;
  /// Makes `stream` wait for the work on the producers' streams (events; with the GIL
  /// released or not).
  void wait_for_producers(std::uintptr_t stream) const;

 private:
  void add(nb::handle arg, std::size_t index, const std::string& who);
  void add_cupy(nb::handle x);
  // `fields` read with no Python run since, `dtype` theirs (any Python call may free them).
  void add_cupy(const CupyFields& fields, DType dtype);
  Array& new_view(Array view);
  void add_torch(nb::handle x, const std::string& who);
  void add_slow(nb::handle arg, std::size_t index, const std::string& who);
  void note_array(Library library, int device);
  std::uintptr_t dlpack_consumer_stream() const;

  // Counts the thread's PythonCalls alive (first member: it is undone however the
  // constructor ends).
  struct Depth {
    Depth();
    ~Depth();
    Depth(const Depth&) = delete;
    Depth& operator=(const Depth&) = delete;
    bool outermost;
  } depth_;
  std::size_t count_;
  ViewCache* cache_ = nullptr;    // the thread's view cache, for the outermost call
  std::vector<Array> views_;      // views made for this call alone
  std::vector<nb::object> held_;  // cujit Arrays the slow path made
  std::vector<Arg> args_;
  std::vector<std::uintptr_t> producers_;
  std::vector<bool> weak_;
  nb::handle given_stream_;
  Library library_ = Library::None;
  int device_ = -1;
};

/// How calls read arguments of `object`'s type: "fields" (a CuPy array read through its C
/// layout), "attributes" (CuPy arrays and PyTorch tensors), or nullptr while the type is
/// unknown (the package's slow path). For tests.
const char* reading_of(nb::handle object);

/// A tuple or list of Python ints as a Shape.
Shape int_sequence(nb::handle sequence);

}  // namespace cujit::python
