// Proves that NVRTC accepts every snippet of the valid corpus, so that the analysis test
// (which requires clang to accept them all) really checks "never reject what NVRTC accepts".
// Each snippet goes into a small wrapper kernel shaped like the generated ones; no GPU is
// needed, only NVRTC.
#include "codegen/signature.hpp"

#include "snippet_corpus.hpp"

#include <cujit/error.hpp>
#include <cujit/program.hpp>

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <cstdlib>
#include <string>
#include <vector>

namespace cujit::detail {
namespace {

using testing::ElementwiseCase;
using testing::ReductionCase;

// Where cuda_fp16.h lives on this machine, as an NVRTC option; empty when not found.
std::string cuda_include_option() {
  auto has_header = [](const std::string& dir) {
    struct stat st {};
    return stat((dir + "/cuda_fp16.h").c_str(), &st) == 0;
  };
  for (const char* var : {"CUJIT_CUDA_INCLUDE", "CUDA_PATH", "CUDA_HOME"}) {
    if (const char* value = std::getenv(var)) {
      if (has_header(value)) return std::string("-I") + value;
      if (has_header(std::string(value) + "/include"))
        return std::string("-I") + value + "/include";
    }
  }
  for (const char* dir : {"/usr/local/cuda/include", "/usr/include"}) {
    if (has_header(dir)) return std::string("-I") + dir;
  }
  return {};
}

// What generated code offers snippets, in its simplest form.
constexpr const char* kWrapperHeader = R"(
#include <cuda_fp16.h>
#include <cuda_bf16.h>
template <class T> struct complex {
  T re, im;
  __device__ complex() : re(0), im(0) {}
  __device__ complex(T r, T i = T(0)) : re(r), im(i) {}
  __device__ T real() const { return re; }
  __device__ T imag() const { return im; }
  __device__ friend complex operator+(const complex& a, const complex& b) {
    return complex(a.re + b.re, a.im + b.im);
  }
  __device__ friend complex operator*(const complex& a, const complex& b) {
    return complex(a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re);
  }
  __device__ friend complex operator*(const complex& a, T b) {
    return complex(a.re * b, a.im * b);
  }
};
template <class T> __device__ T abs(const complex<T>& z) { return hypot(z.re, z.im); }
template <class T> __device__ complex<T> conj(const complex<T>& z) {
  return complex<T>(z.re, -z.im);
}
template <class T> struct RawArray {
  T* p; long long n;
  __device__ T& operator[](long long j) const { return p[j]; }
  __device__ long long size() const { return n; }
};
struct Indexer { long long n; __device__ long long size() const { return n; } };
)";

struct Typed {
  std::vector<Param> in, out;
  std::vector<DType> in_types, out_types;
};

Typed typed(const std::string& name, const std::string& in_sig, const std::string& out_sig) {
  Typed t;
  t.in = parse_signature(in_sig, name, "in_params");
  t.out = parse_signature(out_sig, name, "out_params");
  auto type_of = [](const Param& p) {
    return !p.is_generic ? p.dtype : p.placeholder == "U" ? DType::Int32 : DType::Float32;
  };
  for (const Param& p : t.in) t.in_types.push_back(type_of(p));
  for (const Param& p : t.out) t.out_types.push_back(type_of(p));
  return t;
}

std::string snippet(const std::string& where, const std::string& text) {
  return "\n#line 1 \"" + where + "\"\n" + text + "\n";
}

std::string elementwise_wrapper(const ElementwiseCase& c, const std::string& ns) {
  Typed t = typed(c.name, c.in, c.out);
  std::string params, views, elements;
  auto add = [&](const Param& p, DType d, bool input, std::size_t k) {
    const std::string type(dtype_cuda_type(d));
    const std::string ptr = "p" + std::to_string(k);
    params += type + "* " + ptr + ", ";
    if (p.raw) {
      views += "  const RawArray<" + type + "> " + p.name + "{" + ptr + ", n};\n";
    } else {
      views += "  const RawArray<" + type + "> _raw_" + p.name + "{" + ptr + ", n};\n";
      elements += std::string("    ") + (input ? "const " : "") + type + "& " + p.name + " = " +
                  ptr + "[i];\n";
    }
  };
  std::size_t k = 0;
  for (std::size_t j = 0; j < t.in.size(); ++j) add(t.in[j], t.in_types[j], true, k++);
  for (std::size_t j = 0; j < t.out.size(); ++j) add(t.out[j], t.out_types[j], false, k++);
  return "namespace " + ns + " {\ntypedef float T;\ntypedef int U;\n" +
         snippet(c.name + ":preamble", c.preamble) + "#line 1 \"wrapper\"\n" +
         "__global__ void kernel(" + params + "long long n) {\n  const Indexer _ind{n};\n" + views +
         snippet(c.name + ":loop_prep", c.loop_prep) + ";\n" +
         "  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;\n"
         "       i += (long long)gridDim.x * blockDim.x) {\n" +
         elements + snippet(c.name + ":operation", c.operation) + ";\n  }\n" +
         snippet(c.name + ":after_loop", c.after_loop) + ";\n}\n}\n";
}

std::string reduction_wrapper(const ReductionCase& c, const std::string& ns) {
  Typed t = typed(c.name, c.in, c.out);
  const std::string& R = c.reduce_type;
  std::string params, views, inputs, outputs;
  std::size_t k = 0;
  for (std::size_t j = 0; j < t.in.size(); ++j, ++k) {
    const std::string type(dtype_cuda_type(t.in_types[j]));
    const std::string ptr = "p" + std::to_string(k);
    params += type + "* " + ptr + ", ";
    views += "  const RawArray<" + type + "> _raw_" + t.in[j].name + "{" + ptr + ", n};\n";
    inputs += "    const " + type + "& " + t.in[j].name + " = " + ptr + "[_J];\n";
  }
  for (std::size_t j = 0; j < t.out.size(); ++j, ++k) {
    const std::string type(dtype_cuda_type(t.out_types[j]));
    const std::string ptr = "p" + std::to_string(k);
    params += type + "* " + ptr + ", ";
    outputs += "    " + type + "& " + t.out[j].name + " = " + ptr + "[0];\n";
  }
  const std::string identity = c.identity.empty() ? R + "()" : c.identity;
  return "namespace " + ns + " {\ntypedef float T;\ntypedef int U;\n" +
         snippet(c.name + ":preamble", c.preamble) + "#line 1 \"wrapper\"\n" +
         "__global__ void kernel(" + params + "long long n) {\n" +
         "  const Indexer _in_ind{n};\n  const Indexer _out_ind{1};\n" + views + "  " + R +
         " _acc = (" + snippet(c.name + ":identity", identity) + ");\n" +
         "  for (long long _J = threadIdx.x; _J < n; _J += blockDim.x) {\n" + inputs + "    " + R +
         " _m = (" + snippet(c.name + ":map_expr", c.map_expr) + ");\n" + "    const " + R +
         "& a = _acc;\n    const " + R + "& b = _m;\n    " + R + " _r = (" +
         snippet(c.name + ":reduce_expr", c.reduce_expr) + ");\n    _acc = _r;\n  }\n" +
         "  {\n    const " + R + "& a = _acc;\n" + outputs +
         snippet(c.name + ":post_map_expr", c.post_map_expr) + ";\n  }\n}\n}\n";
}

// Compiles all cases in one NVRTC program (one compile keeps the test fast); on failure,
// compiles each alone so the message names every rejected snippet.
void expect_nvrtc_accepts(const std::vector<std::pair<std::string, std::string>>& wrappers) {
  const std::string include = cuda_include_option();
  if (include.empty()) GTEST_SKIP() << "cuda_fp16.h not found (set CUJIT_CUDA_INCLUDE)";
  SourceProgram program;
  program.name = "corpus.cu";
  program.options = {include, "-std=c++17"};
  program.source = kWrapperHeader;
  for (const auto& [name, code] : wrappers) program.source += code;
  try {
    CompiledProgram compiled = compile(program, Target::parse("sm_80"));
    EXPECT_FALSE(compiled.binary.empty());
    return;
  } catch (const CompileError&) {
  }
  for (const auto& [name, code] : wrappers) {
    program.source = std::string(kWrapperHeader) + code;
    try {
      compile(program, Target::parse("sm_80"));
    } catch (const CompileError& e) {
      ADD_FAILURE() << "NVRTC rejects corpus entry " << name << ":\n" << e.log();
    }
  }
}

TEST(NvrtcCorpus, AcceptsEveryValidElementwiseSnippet) {
  std::vector<std::pair<std::string, std::string>> wrappers;
  int k = 0;
  for (const ElementwiseCase& c : testing::valid_elementwise_corpus()) {
    wrappers.emplace_back(c.name, elementwise_wrapper(c, "ew" + std::to_string(k++)));
  }
  expect_nvrtc_accepts(wrappers);
}

TEST(NvrtcCorpus, AcceptsEveryValidReductionSnippet) {
  std::vector<std::pair<std::string, std::string>> wrappers;
  int k = 0;
  for (const ReductionCase& c : testing::valid_reduction_corpus()) {
    wrappers.emplace_back(c.name, reduction_wrapper(c, "red" + std::to_string(k++)));
  }
  expect_nvrtc_accepts(wrappers);
}

// The C++20 cases of the analysis test, as NVRTC sees them.
TEST(NvrtcCorpus, FollowsTheCxxStandard) {
  const std::string include = cuda_include_option();
  if (include.empty()) GTEST_SKIP() << "cuda_fp16.h not found (set CUJIT_CUDA_INCLUDE)";
  SourceProgram program;
  program.source = std::string(kWrapperHeader) +
                   elementwise_wrapper({"consteval", "float32 x", "float32 z", "z = x * three()",
                                        "__device__ consteval int three() { return 3; }"},
                                       "cxx20");
  program.options = {include, "-std=c++20"};
  EXPECT_NO_THROW(compile(program, Target::parse("sm_80")));
  program.options = {include, "-std=c++17"};
  EXPECT_THROW(compile(program, Target::parse("sm_80")), CompileError);

  program.source =
      std::string(kWrapperHeader) +
      elementwise_wrapper({"concept", "float32 x", "float32 z", "float concept = x; z = concept;"},
                          "names");
  EXPECT_NO_THROW(compile(program, Target::parse("sm_80")));
  program.options = {include, "-std=c++20"};
  EXPECT_THROW(compile(program, Target::parse("sm_80")), CompileError);
}

// The wrapper is not lenient: a snippet the analysis rejects is rejected by NVRTC too.
TEST(NvrtcCorpus, WrapperRejectsInvalidSnippets) {
  const std::string include = cuda_include_option();
  if (include.empty()) GTEST_SKIP() << "cuda_fp16.h not found (set CUJIT_CUDA_INCLUDE)";
  const std::vector<ElementwiseCase> invalid = {
      {"syntax", "float32 x, float32 y", "float32 z", "z = (x - y) * ;"},
      {"assign_input", "float32 x", "float32 z", "x = 1; z = x;"},
      {"assign_half_input", "float16 x, float16 y", "float16 z", "z = x; x += y"},
      {"float_modulo", "float32 x", "float32 z", "z = x % 2.0f"},
      {"undefined_raw_view", "float32 x", "float32 z", "z = _raw_q[0]"},
  };
  for (const ElementwiseCase& c : invalid) {
    SourceProgram program;
    program.options = {include, "-std=c++17"};
    program.source = std::string(kWrapperHeader) + elementwise_wrapper(c, "bad");
    EXPECT_THROW(compile(program, Target::parse("sm_80")), CompileError) << c.name;
  }
}

}  // namespace
}  // namespace cujit::detail
