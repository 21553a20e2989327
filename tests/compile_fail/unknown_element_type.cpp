// Compiled by tests/compile_fail/run.cmake once per CASE_* macro: every case but CASE_CONTROL
// must fail to compile with its message (run.cmake) and the offending type or function (issue
// 21: no link error, no silent garbage; issue 32: no template wall, no discarded view).
// CASE_CONTROL must compile, so that the failures are the static_assert and not a broken
// command line.
#if defined(CASE_HALF_FIRST) || defined(CASE_CONTROL)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif

#include <cujit/cujit.hpp>

#if defined(CASE_HALF_AFTER_CUJIT)
#include <cuda_fp16.h>
#endif

#include <vector>

struct Pixel {
  unsigned char r, g, b;
};

void use(const cujit::Array& a) {
#if defined(CASE_CONTROL)
  (void)cujit::Array::from_host(std::vector<float>{1, 2});
  (void)cujit::Array::from_host(std::vector<bool>{true, false});
  (void)cujit::Array::from_host(std::vector<std::complex<float>>{});
  (void)cujit::Array::from_host(std::vector<__half>{});
  (void)cujit::Array::from_host(std::vector<__nv_bfloat16>{});
  (void)a.to_host<std::complex<double>>();
  (void)a.to_host<bool>();
  (void)a.to_host<cujit::float16>();
  (void)cujit::Scalar(__half(1.0f));
  (void)cujit::Scalar(2.0);
  (void)cujit::exp(a - 1.0);
#elif defined(CASE_KERNEL_ARGUMENT_STRING)
  cujit::ElementwiseKernel k("T x", "T y", "y = x", "copy");
  (void)k(a, "not an argument");
#elif defined(CASE_DISCARDED_RESHAPE)
  a.reshape({2, -1});  // does nothing: the view is dropped
#elif defined(CASE_DISCARDED_TO_DLPACK)
  a.to_dlpack();  // leaks the tensor
#elif defined(CASE_DISCARDED_EXPRESSION)
  cujit::exp(a - 1.0);  // builds an expression and runs nothing
#elif defined(CASE_DISCARDED_REDUCTION)
  cujit::sum(a * a);  // computes a result nobody reads
#elif defined(CASE_FROM_HOST_STRUCT)
  (void)cujit::Array::from_host(std::vector<Pixel>{});
#elif defined(CASE_TO_HOST_LONG_DOUBLE)
  (void)a.to_host<long double>();
#elif defined(CASE_SCALAR_LONG_DOUBLE)
  (void)cujit::Scalar(1.0L);
#elif defined(CASE_FROM_POINTER_WCHAR)
  (void)cujit::Array::from_pointer(static_cast<wchar_t*>(nullptr), {4}, a.device());
#elif defined(CASE_HALF_AFTER_CUJIT)
  (void)cujit::Array::from_host(std::vector<__half>{});
#endif
}
