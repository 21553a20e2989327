// The expression generator (codegen/expression_codegen.hpp) without a GPU: every operation
// has a name of its own, and each unary function reaches the generated source.

#include "codegen/expression_codegen.hpp"

#include <cujit/error.hpp>

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace cujit::detail {
namespace {

// input -> op -> the root: one float32 array through one unary function.
ExprGraph unary_graph(ExprOp op) {
  ExprGraph g;
  g.inputs = {DType::Float32};
  ExprGraphNode in;
  in.op = ExprOp::Input;
  in.index = 0;
  ExprGraphNode f;
  f.op = op;
  f.args = {0};
  g.nodes = {in, f};
  return g;
}

TEST(ExpressionCodegen, EveryOperationHasItsOwnName) {
  std::set<std::string> names;
  for (int i = 0; i <= static_cast<int>(kLastExprOp); ++i) {
    const std::string name(expr_op_name(static_cast<ExprOp>(i)));
    EXPECT_FALSE(name.empty()) << "ExprOp " << i;
    EXPECT_TRUE(names.insert(name).second || name == "-") << name;  // "-": negation, subtraction
  }
}

TEST(ExpressionCodegen, UnaryFunctionsReachTheSource) {
  for (const ExprOp op : {ExprOp::Exp, ExprOp::Log, ExprOp::Sqrt, ExprOp::Tanh, ExprOp::Floor}) {
    const ExprDefinition d = generate_expression(unary_graph(op));
    const std::string call = std::string(expr_op_name(op)) + "(";
    EXPECT_NE(d.operation.find(call), std::string::npos) << d.operation;
  }
}

TEST(ExpressionCodegen, ReductionsRefuseElementIndices) {
  ExprGraph g;
  ExprGraphNode index;
  index.op = ExprOp::Index;
  index.dtype = index.operand_dtype = DType::Int64;
  g.nodes = {index};
  EXPECT_THROW(generate_expression_reduction(g, ExprReduce::Sum), ArgumentError);
  EXPECT_EQ(reduce_types(ExprReduce::Prod, DType::UInt8).out, DType::UInt64);
  EXPECT_THROW(reduce_types(ExprReduce::Max, DType::Complex64), TypeError);
}

}  // namespace
}  // namespace cujit::detail
