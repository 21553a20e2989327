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

// argmin, argmax and logsumexp accumulate structs their preamble defines; every reduction has
// its own name, and one kernel name per structure and reduction.
TEST(ExpressionCodegen, ArgAndLogSumExpReductionsUseStructAccumulators) {
  ExprGraph g;
  g.nodes = {ExprGraphNode{ExprOp::Input, DType::Float16, DType::Float16, 0, {}}};
  g.inputs = {DType::Float16};
  const ExprReduction arg = generate_expression_reduction(g, ExprReduce::ArgMax);
  EXPECT_EQ(arg.reduce_type, "_cjx_Arg");
  EXPECT_EQ(arg.out_params, "int64 out0");
  EXPECT_EQ(arg.post_map, "out0 = a.i;");
  EXPECT_NE(arg.preamble.find("struct _cjx_Arg { float v; long long i; };"), std::string::npos);
  EXPECT_NE(arg.preamble.find("(b.v > a.v || (b.v == a.v && b.i < a.i))"), std::string::npos);
  EXPECT_NE(arg.map_expr.find("static_cast<long long>(_J)"), std::string::npos);
  const ExprReduction low = generate_expression_reduction(g, ExprReduce::ArgMin);
  EXPECT_NE(low.preamble.find("(b.v < a.v ||"), std::string::npos);
  const ExprReduction lse = generate_expression_reduction(g, ExprReduce::LogSumExp);
  EXPECT_EQ(lse.out_params, "float16 out0");
  EXPECT_EQ(lse.reduce_type, "_cjx_Lse");
  EXPECT_EQ(lse.post_map, "out0 = static_cast<half>(a.m + log(a.s));");
  EXPECT_NE(lse.identity.find("0xff800000"), std::string::npos);  // -inf
  std::vector<std::string> names;
  for (int op = 0; op <= static_cast<int>(ExprReduce::LogSumExp); ++op) {
    names.push_back(expr_reduce_name(static_cast<ExprReduce>(op)));
    const std::string name = generate_expression_reduction(g, static_cast<ExprReduce>(op)).name;
    EXPECT_EQ(name.rfind("expr_" + names.back() + "_", 0), 0u) << name;
  }
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), names.size());
}

}  // namespace
}  // namespace cujit::detail
