// Proves that NVRTC accepts every snippet of the valid corpus, so that the analysis test
// (which requires clang to accept them all) really checks "never reject what NVRTC accepts".
// Each snippet goes through the real code generators (a contiguous elementwise kernel, a
// one-pass reduction); no GPU is needed, only NVRTC.
#include "codegen/elementwise_codegen.hpp"
#include "codegen/elementwise_manifest.hpp"
#include "codegen/kernel_call.hpp"
#include "codegen/reduction_codegen.hpp"
#include "codegen/reduction_manifest.hpp"

#include "snippet_corpus.hpp"

#include <cujit/error.hpp>
#include <cujit/program.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace cujit::detail {
namespace {

using testing::ElementwiseCase;
using testing::ReductionCase;

// A kernel name for a corpus entry (its name may be a reserved word such as "max").
std::string kernel_name(const std::string& name) {
  std::string k = "corpus_" + name;
  for (char& ch : k) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return k;
}

DType type_of(const Param& p) {
  return !p.is_generic ? p.dtype : p.placeholder == "U" ? DType::Int32 : DType::Float32;
}

// The real generated kernel of an elementwise case: contiguous, T = float32, U = int32.
SourceProgram elementwise_program(const ElementwiseCase& c,
                                  const std::vector<std::string>& options) {
  const ElementwiseDefinition def =
      make_elementwise_definition(c.in, c.out, c.operation, kernel_name(c.name), c.preamble,
                                  c.loop_prep, c.after_loop, options, true);
  EwSpecialization s;
  s.layout = EwLayout::Contiguous;
  const ParamList params(def.in, def.out);
  for (std::size_t k = 0; k < params.size(); ++k) {
    EwParam e;
    e.dtype = type_of(params[k]);
    e.used = def.use.used[k] != 0;
    e.raw_view_used = def.use.raw_view_used[k] != 0;
    s.params.push_back(e);
  }
  return generate_elementwise(def, s);
}

// The real generated kernels of a reduction case: one-pass segments.
SourceProgram reduction_program(const ReductionCase& c) {
  const ReductionDefinition def =
      make_reduction_definition(c.in, c.out, c.map_expr, c.reduce_expr, c.post_map_expr, c.identity,
                                kernel_name(c.name), "", c.preamble, {"-std=c++17"}, true);
  RedSpecialization s;
  s.reduce_ctype = c.reduce_type;
  const ParamList params(def.in, def.out);
  for (std::size_t k = 0; k < params.size(); ++k) {
    RedParam e;
    e.dtype = type_of(params[k]);
    e.used = def.use.used[k] != 0;
    e.raw_view_used = def.use.raw_view_used[k] != 0;
    s.params.push_back(e);
  }
  return generate_reduction(def, s);
}

// Compiles every program on a few threads (NVRTC is thread-safe); names each one rejected.
void expect_nvrtc_accepts(const std::vector<std::pair<std::string, SourceProgram>>& programs) {
  std::atomic<std::size_t> next{0};
  std::mutex mutex;
  std::vector<std::string> failures;
  auto work = [&] {
    for (std::size_t k = next++; k < programs.size(); k = next++) {
      try {
        compile(programs[k].second, Target::parse("sm_80"));
      } catch (const CompileError& e) {
        std::lock_guard<std::mutex> lock(mutex);
        failures.push_back(programs[k].first + ":\n" + e.log());
      }
    }
  };
  std::vector<std::thread> threads;
  const unsigned n = std::max(1u, std::min(8u, std::thread::hardware_concurrency()));
  for (unsigned t = 0; t < n; ++t) threads.emplace_back(work);
  for (std::thread& t : threads) t.join();
  for (const std::string& f : failures) ADD_FAILURE() << "NVRTC rejects corpus entry " << f;
}

TEST(NvrtcCorpus, AcceptsEveryValidElementwiseSnippet) {
  std::vector<std::pair<std::string, SourceProgram>> programs;
  for (const ElementwiseCase& c : testing::valid_elementwise_corpus()) {
    programs.emplace_back(c.name, elementwise_program(c, {"-std=c++17"}));
  }
  expect_nvrtc_accepts(programs);
}

TEST(NvrtcCorpus, AcceptsEveryValidReductionSnippet) {
  std::vector<std::pair<std::string, SourceProgram>> programs;
  for (const ReductionCase& c : testing::valid_reduction_corpus()) {
    programs.emplace_back(c.name, reduction_program(c));
  }
  expect_nvrtc_accepts(programs);
}

// The C++20 cases of the analysis test, as NVRTC sees them.
TEST(NvrtcCorpus, FollowsTheCxxStandard) {
  const ElementwiseCase consteval_case{"consteval_three", "float32 x", "float32 z",
                                       "z = x * three()",
                                       "__device__ consteval int three() { return 3; }"};
  EXPECT_NO_THROW(
      compile(elementwise_program(consteval_case, {"-std=c++20"}), Target::parse("sm_80")));
  EXPECT_THROW(compile(elementwise_program(consteval_case, {"-std=c++17"}), Target::parse("sm_80")),
               CompileError);
  const ElementwiseCase concept_case{"concept_name", "float32 x", "float32 z",
                                     "float concept = x; z = concept;"};
  EXPECT_NO_THROW(
      compile(elementwise_program(concept_case, {"-std=c++17"}), Target::parse("sm_80")));
  EXPECT_THROW(compile(elementwise_program(concept_case, {"-std=c++20"}), Target::parse("sm_80")),
               CompileError);
}

// The generated kernel is not lenient: a snippet the analysis rejects is rejected by NVRTC too.
TEST(NvrtcCorpus, GeneratedKernelRejectsInvalidSnippets) {
  const std::vector<ElementwiseCase> invalid = {
      {"syntax", "float32 x, float32 y", "float32 z", "z = (x - y) * ;"},
      {"assign_input", "float32 x", "float32 z", "x = 1; z = x;"},
      {"assign_half_input", "float16 x, float16 y", "float16 z", "z = x; x += y"},
      {"float_modulo", "float32 x", "float32 z", "z = x % 2.0f"},
      {"undefined_raw_view", "float32 x", "float32 z", "z = _raw_q[0]"},
  };
  for (const ElementwiseCase& c : invalid) {
    EXPECT_THROW(compile(elementwise_program(c, {"-std=c++17"}), Target::parse("sm_80")),
                 CompileError)
        << c.name;
  }
}

}  // namespace
}  // namespace cujit::detail
