#include "codegen/device_support.hpp"

#include <sys/stat.h>
#include <cstdlib>
#include <string>

namespace cujit::detail {
namespace {

// Kept small: every generated kernel compiles this, and cold-start time is NVRTC time.
constexpr std::string_view kSupport = R"CUJIT(
#ifndef CUJIT_DEVICE_SUPPORT
#define CUJIT_DEVICE_SUPPORT
template <class T> struct complex {
  T re, im;
  __host__ __device__ complex() : re(0), im(0) {}
  __host__ __device__ complex(T r, T i = T(0)) : re(r), im(i) {}
  template <class U> __host__ __device__ explicit complex(const complex<U>& o) : re(T(o.re)), im(T(o.im)) {}
  __host__ __device__ T real() const { return re; }
  __host__ __device__ T imag() const { return im; }
  __host__ __device__ complex& operator+=(const complex& o) { re += o.re; im += o.im; return *this; }
  __host__ __device__ complex& operator-=(const complex& o) { re -= o.re; im -= o.im; return *this; }
  __host__ __device__ complex& operator*=(const complex& o) { *this = *this * o; return *this; }
  __host__ __device__ complex& operator/=(const complex& o) { *this = *this / o; return *this; }
  __host__ __device__ friend complex operator+(const complex& a, const complex& b) { return complex(a.re + b.re, a.im + b.im); }
  __host__ __device__ friend complex operator-(const complex& a, const complex& b) { return complex(a.re - b.re, a.im - b.im); }
  __host__ __device__ friend complex operator*(const complex& a, const complex& b) { return complex(a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re); }
  __host__ __device__ friend complex operator/(const complex& a, const complex& b) {
    const T s = (b.re < 0 ? -b.re : b.re) + (b.im < 0 ? -b.im : b.im);
    const T ar = a.re / s, ai = a.im / s, br = b.re / s, bi = b.im / s;
    const T d = br * br + bi * bi;
    return complex((ar * br + ai * bi) / d, (ai * br - ar * bi) / d);
  }
  __host__ __device__ friend complex operator+(const complex& a, T b) { return complex(a.re + b, a.im); }
  __host__ __device__ friend complex operator+(T a, const complex& b) { return complex(a + b.re, b.im); }
  __host__ __device__ friend complex operator-(const complex& a, T b) { return complex(a.re - b, a.im); }
  __host__ __device__ friend complex operator-(T a, const complex& b) { return complex(a - b.re, -b.im); }
  __host__ __device__ friend complex operator*(const complex& a, T b) { return complex(a.re * b, a.im * b); }
  __host__ __device__ friend complex operator*(T a, const complex& b) { return complex(a * b.re, a * b.im); }
  __host__ __device__ friend complex operator/(const complex& a, T b) { return complex(a.re / b, a.im / b); }
  __host__ __device__ friend complex operator/(T a, const complex& b) { return complex(a) / b; }
  __host__ __device__ friend complex operator-(const complex& a) { return complex(-a.re, -a.im); }
  __host__ __device__ friend bool operator==(const complex& a, const complex& b) { return a.re == b.re && a.im == b.im; }
  __host__ __device__ friend bool operator!=(const complex& a, const complex& b) { return !(a == b); }
};
template <class T> __device__ T real(const complex<T>& z) { return z.re; }
template <class T> __device__ T imag(const complex<T>& z) { return z.im; }
template <class T> __device__ complex<T> conj(const complex<T>& z) { return complex<T>(z.re, -z.im); }
template <class T> __device__ T norm(const complex<T>& z) { return z.re * z.re + z.im * z.im; }
template <class T> __device__ T abs(const complex<T>& z) { return hypot(z.re, z.im); }
template <class T> __device__ T arg(const complex<T>& z) { return atan2(z.im, z.re); }
template <class T> __device__ complex<T> exp(const complex<T>& z) { const T e = exp(z.re); return complex<T>(e * cos(z.im), e * sin(z.im)); }
template <class T> __device__ complex<T> log(const complex<T>& z) { return complex<T>(log(abs(z)), arg(z)); }
template <class T> __device__ complex<T> polar(T r, T theta) { return complex<T>(r * cos(theta), r * sin(theta)); }
template <class T> __device__ complex<T> sqrt(const complex<T>& z) { const T r = sqrt(abs(z)); const T t = arg(z) / T(2); return complex<T>(r * cos(t), r * sin(t)); }

// A raw array parameter: flat element indexing, stride in bytes (sizeof(T) when contiguous).
template <class T, class I, bool Contiguous> struct _cj_RawArray {
  T* data; long long n; long long stride;
  __device__ T& operator[](I j) const {
    if (Contiguous) return data[j];
    return *reinterpret_cast<T*>(reinterpret_cast<char*>(data) + (long long)j * stride);
  }
  __device__ long long size() const { return n; }
};

template <class I> struct _cj_Indexer {
  I n;
  __device__ I size() const { return n; }
};

// n / d for 0 <= n < 2^31 with a precomputed magic number (Granlund-Montgomery, as in
// PyTorch's IntDivider): a multiply-high, an add and a shift instead of a division.
__device__ __forceinline__ unsigned _cj_div(unsigned n, unsigned magic, unsigned shift) {
  return (__umulhi(n, magic) + n) >> shift;
}

template <class T, int N> struct __align__(sizeof(T) * N) _cj_Vec { T v[N]; };
#endif
)CUJIT";

constexpr std::string_view kFp16 = "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n";

bool has_header(const std::string& dir) {
  struct stat st {};
  return stat((dir + "/cuda_fp16.h").c_str(), &st) == 0;
}

}  // namespace

std::string_view device_support_source() { return kSupport; }
std::string_view fp16_includes() { return kFp16; }

void add_minimal_option(std::vector<std::string>& options, const std::string& user_text) {
  for (const char* needle : {"#include", "cuda", "tex", "surf", "<<<"}) {
    if (user_text.find(needle) != std::string::npos) return;
  }
  for (const std::string& option : options) {
    if (option == "-minimal" || option == "--minimal") return;
  }
  options.emplace_back("-minimal");
}

bool mentions_fp16(const std::string& text) {
  return text.find("half") != std::string::npos || text.find("bfloat16") != std::string::npos ||
         text.find("fp16") != std::string::npos || text.find("bf16") != std::string::npos;
}

const std::string& cuda_include_option() {
  static const std::string option = [] {
    for (const char* var : {"CUJIT_CUDA_INCLUDE", "CUDA_PATH", "CUDA_HOME"}) {
      if (const char* value = std::getenv(var)) {
        std::string dir = value;
        if (has_header(dir)) return "-I" + dir;
        if (has_header(dir + "/include")) return "-I" + dir + "/include";
      }
    }
    for (const char* dir : {"/usr/local/cuda/include", "/usr/include"}) {
      if (has_header(dir)) return "-I" + std::string(dir);
    }
    return std::string();
  }();
  return option;
}

}  // namespace cujit::detail
