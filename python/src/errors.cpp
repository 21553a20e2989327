// cujit::Error and its subclasses as the exception classes of cujit._errors.
#include "bindings.hpp"

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <exception>

namespace cujit::python {
namespace {

// Sets the Python error to an instance of cujit._errors.<name> carrying `message`; a
// CompileError also carries where it points and what the compiler said.
void raise(const char* name, const Error& e, const CompileError* compile = nullptr) {
  nb::object cls = nb::module_::import_("cujit._errors").attr(name);
  nb::object error = cls(nb::str(e.what()));
  if (compile != nullptr) {
    error.attr("line") = compile->line();
    error.attr("column") = compile->column();
    error.attr("log") = compile->log();
    error.attr("source") = compile->source();
    error.attr("options") = compile->options();
  }
  PyErr_SetObject(cls.ptr(), error.ptr());
}

void translate(const std::exception_ptr& thrown, void*) {
  try {
    std::rethrow_exception(thrown);
  } catch (const CompilerUnavailableError& e) {
    raise("CompilerUnavailableError", e, &e);
  } catch (const CompileError& e) {
    raise("CompileError", e, &e);
  } catch (const SignatureError& e) {
    raise("SignatureError", e);
  } catch (const TypeError& e) {
    raise("TypeError", e);
  } catch (const ShapeError& e) {
    raise("ShapeError", e);
  } catch (const ArgumentError& e) {
    raise("ArgumentError", e);
  } catch (const DeviceError& e) {
    raise("DeviceError", e);
  } catch (const CudaError& e) {
    raise("CudaError", e);
  } catch (const CacheError& e) {
    raise("CacheError", e);
  } catch (const Error& e) {
    raise("Error", e);
  }
}

}  // namespace

void bind_errors(nb::module_&) { nb::register_exception_translator(&translate); }

}  // namespace cujit::python
