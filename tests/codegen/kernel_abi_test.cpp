// The kernel ABI tables: the generated signatures are written from the parameter tables the
// launcher packs by, so the number and order of parameters cannot drift apart.
#include "codegen/kernel_abi.hpp"

#include "codegen/elementwise_manifest.hpp"
#include "codegen/elementwise_codegen.hpp"
#include "codegen/elementwise_plan.hpp"
#include "codegen/reduction_manifest.hpp"
#include "codegen/reduction_codegen.hpp"
#include "codegen/reduction_plan.hpp"

#include <gtest/gtest.h>

namespace cujit::detail {
namespace {

// The parameters of kernel `symbol` in `source`, as the compiler will see them.
std::vector<std::string> declared_parameters(const std::string& source, const std::string& symbol) {
  const std::size_t open = source.find(symbol + "(");
  EXPECT_NE(open, std::string::npos) << symbol;
  const std::size_t begin = open + symbol.size() + 1;
  const std::size_t end = source.find(") {", begin);
  std::vector<std::string> out;
  std::size_t at = begin;
  for (std::size_t comma = source.find(", ", at); comma < end; comma = source.find(", ", at)) {
    out.push_back(source.substr(at, comma - at));
    at = comma + 2;
  }
  out.push_back(source.substr(at, end - at));
  return out;
}

std::vector<std::string> table_parameters(const std::vector<AbiParam>& table) {
  std::vector<std::string> out;
  for (const AbiParam& p : table) {
    std::string rest = p.declaration;
    for (int slot = 0; slot < p.slots(); ++slot) {
      const std::size_t comma = rest.find(", ");
      out.push_back(rest.substr(0, comma));
      rest = comma == std::string::npos ? "" : rest.substr(comma + 2);
    }
  }
  return out;
}

TEST(KernelAbiPlan, ElementwiseSignatureIsTheParameterTable) {
  const ElementwiseDefinition def = make_elementwise_definition(
      "float32 a, T x, raw T w", "T y", "y = a * x + w[i]", "axpw", "", "", "", {}, true);
  for (EwLayout layout : {EwLayout::Contiguous, EwLayout::Strided, EwLayout::Tiled2D}) {
    EwSpecialization s;
    s.layout = layout;
    s.ndim = layout == EwLayout::Contiguous ? 1 : 2;
    s.params.resize(4);
    s.params[0].scalar = true;
    s.index64 = layout == EwLayout::Strided;
    const std::vector<AbiParam> table = elementwise_parameters(def, s);
    EXPECT_EQ(declared_parameters(generate_elementwise(def, s).source, elementwise_symbol(def)),
              table_parameters(table));
    ASSERT_GE(table.size(), 5u);
    EXPECT_EQ(table[0].kind, AbiParam::Kind::Scalar);
    EXPECT_EQ(table[2].kind, AbiParam::Kind::RawArray);
    EXPECT_EQ(table[4].kind, AbiParam::Kind::Count);
    EXPECT_EQ(table[4].index64, s.index64);
    EXPECT_EQ(table.back().kind == AbiParam::Kind::Struct, layout != EwLayout::Contiguous);
  }
}

TEST(KernelAbiPlan, BothReductionPassesDeclareTheParameterTable) {
  const ReductionDefinition def =
      make_reduction_definition("T x, raw T w, float32 s", "T y", "x * w[_J] * s", "a + b", "y = a",
                                "0", "wsum", "", "", {}, true);
  RedSpecialization s;
  s.reduce_ctype = "float";
  s.params.resize(4);
  s.params[2].scalar = true;
  s.two_pass = true;
  const std::vector<AbiParam> table = reduction_parameters(def, s);
  const std::string source = generate_reduction(def, s).source;
  EXPECT_EQ(declared_parameters(source, reduction_symbol(def)), table_parameters(table));
  EXPECT_EQ(declared_parameters(source, reduction_pass2_symbol(def)), table_parameters(table));
  EXPECT_EQ(table[table.size() - 2].kind, AbiParam::Kind::Struct);
  EXPECT_EQ(table.back().kind, AbiParam::Kind::Scratch);
}

}  // namespace
}  // namespace cujit::detail
