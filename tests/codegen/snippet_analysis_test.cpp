#include "codegen/snippet_analysis.hpp"

#include "snippet_corpus.hpp"

#include <cujit/error.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

namespace cujit::detail {
namespace {

using testing::ElementwiseCase;
using testing::ReductionCase;

// Placeholders of the corpora: T is float32, U int32.
ResolvedTypes resolve_for_test(const std::vector<Param>& in, const std::vector<Param>& out) {
  ResolvedTypes types;
  auto type_of = [&](const Param& p) {
    if (!p.is_generic) return p.dtype;
    DType t = p.placeholder == "U" ? DType::Int32 : DType::Float32;
    types.placeholders[p.placeholder] = t;
    return t;
  };
  for (const Param& p : in) types.in.push_back(type_of(p));
  for (const Param& p : out) types.out.push_back(type_of(p));
  return types;
}

SnippetSet elementwise_set(const ElementwiseCase& c) {
  std::vector<Param> in = parse_signature(c.in, c.name, "in_params");
  std::vector<Param> out = parse_signature(c.out, c.name, "out_params");
  return elementwise_snippet_set(c.name, in, out, resolve_for_test(in, out), c.operation,
                                 c.preamble, c.loop_prep, c.after_loop);
}

SnippetSet reduction_set(const ReductionCase& c) {
  std::vector<Param> in = parse_signature(c.in, c.name, "in_params");
  std::vector<Param> out = parse_signature(c.out, c.name, "out_params");
  return reduction_snippet_set(c.name, in, out, resolve_for_test(in, out), c.reduce_type,
                               c.map_expr, c.reduce_expr, c.post_map_expr, c.identity, c.preamble);
}

ElementwiseCase op(std::string in, std::string out, std::string operation,
                   std::string preamble = "") {
  return {"k", std::move(in), std::move(out), std::move(operation), std::move(preamble)};
}

// ---------------------------------------------------------------------------------------
// Valid snippets: clang must never reject what NVRTC accepts (nvrtc_corpus_test.cpp proves
// NVRTC accepts each of them).

TEST(SnippetAnalysis, ValidCorpusIsNeverRejected) {
  int fully_checked = 0;
  int total = 0;
  for (const ElementwiseCase& c : testing::valid_elementwise_corpus()) {
    SCOPED_TRACE(c.name);
    try {
      fully_checked += analyze_snippets(elementwise_set(c)).fully_checked ? 1 : 0;
    } catch (const Error& e) {
      ADD_FAILURE() << "rejected " << c.name << ":\n" << e.what();
    }
    ++total;
  }
  for (const ReductionCase& c : testing::valid_reduction_corpus()) {
    SCOPED_TRACE(c.name);
    try {
      fully_checked += analyze_snippets(reduction_set(c)).fully_checked ? 1 : 0;
    } catch (const Error& e) {
      ADD_FAILURE() << "rejected " << c.name << ":\n" << e.what();
    }
    ++total;
  }
  EXPECT_GE(total, 60);
  // The prelude models enough for clang to check most of the corpus itself; a drop here
  // means a prelude regression that makes every error wait for NVRTC.
  EXPECT_GE(fully_checked, total * 9 / 10) << fully_checked << " of " << total;
  std::cout << "[ corpus   ] " << total << " valid snippet sets, " << fully_checked
            << " fully checked by clang\n";
}

// ---------------------------------------------------------------------------------------
// Invalid snippets: certain errors, with the snippet's own line and column.

struct InvalidCase {
  std::string name;
  SnippetSet set;
  std::string label;
  int line;
  int column;
  std::string message;  ///< the complete CompileError message
};

std::vector<InvalidCase> invalid_cases() {
  std::vector<InvalidCase> cases;
  auto add = [&](std::string name, SnippetSet set, std::string label, int line, int column,
                 std::string message) {
    cases.push_back(
        {std::move(name), std::move(set), std::move(label), line, column, std::move(message)});
  };
  const std::string sig_in = "float32 x, float32 y";
  const std::string sig_out = "float32 z";
  add("syntax", elementwise_set(op(sig_in, sig_out, "z = (x - y) * ;")), "operation", 1, 15,
      "cujit: kernel 'k': expected expression\noperation line 1, column 15\n"
      "  z = (x - y) * ;\n"
      "                ^");
  add("assign_input", elementwise_set(op(sig_in, sig_out, "x = 1;")), "operation", 1, 1,
      "cujit: kernel 'k': cannot assign to input 'x': snippet inputs are read-only "
      "(write outputs only)\noperation line 1, column 1\n"
      "  x = 1;\n"
      "  ^");
  add("compound_assign_half_input",
      elementwise_set(op("float16 x, float16 y", "float16 z", "z = x; x += y")), "operation", 1, 8,
      "cujit: kernel 'k': cannot assign to input 'x': snippet inputs are read-only "
      "(write outputs only)\noperation line 1, column 8\n"
      "  z = x; x += y\n"
      "         ^");
  add("increment_input", elementwise_set(op(sig_in, sig_out, "z = 0;\n  ++x;")), "operation", 2, 5,
      "cujit: kernel 'k': cannot assign to input 'x': snippet inputs are read-only "
      "(write outputs only)\noperation line 2, column 5\n"
      "    ++x;\n"
      "      ^");
  add("postfix_increment_input", elementwise_set(op(sig_in, sig_out, "y++")), "operation", 1, 1,
      "cujit: kernel 'k': cannot assign to input 'y': snippet inputs are read-only "
      "(write outputs only)\noperation line 1, column 1\n"
      "  y++\n"
      "  ^");
  add("complex_member_of_input",
      elementwise_set(op("complex64 x", "complex64 z", "x.re = 0; z = x")), "operation", 1, 1,
      "cujit: kernel 'k': cannot assign to input 'x': snippet inputs are read-only "
      "(write outputs only)\noperation line 1, column 1\n"
      "  x.re = 0; z = x\n"
      "  ^");
  add("assign_index", elementwise_set(op(sig_in, sig_out, "i = 0; z = x")), "operation", 1, 1,
      "cujit: kernel 'k': cannot assign to 'i': it is read-only\noperation line 1, column 1\n"
      "  i = 0; z = x\n"
      "  ^");
  add("reserved_i", elementwise_set(op(sig_in, sig_out, "int i = 0; z = x + i;")), "operation", 1,
      5,
      "cujit: kernel 'k': 'i' is reserved for cujit's generated code (i, _ind, "
      "_in_ind, _out_ind, _J, _raw_<name>, _cj...); choose another name\noperation line 1, column "
      "5\n"
      "  int i = 0; z = x + i;\n"
      "      ^");
  add("reserved_raw_view", elementwise_set(op(sig_in, sig_out, "float _raw_y = x; z = _raw_y;")),
      "operation", 1, 7,
      "cujit: kernel 'k': '_raw_y' is reserved for cujit's generated code (i, _ind, "
      "_in_ind, _out_ind, _J, _raw_<name>, _cj...); choose another name\noperation line 1, column "
      "7\n"
      "  float _raw_y = x; z = _raw_y;\n"
      "        ^");
  add("reserved_internal", elementwise_set(op(sig_in, sig_out, "int _cj_n = 1; z = x;")),
      "operation", 1, 5,
      "cujit: kernel 'k': '_cj_n' is reserved for cujit's generated code (i, _ind, "
      "_in_ind, _out_ind, _J, _raw_<name>, _cj...); choose another name\noperation line 1, column "
      "5\n"
      "  int _cj_n = 1; z = x;\n"
      "      ^");
  add("redeclared_parameter", elementwise_set(op(sig_in, sig_out, "float y = 2; z = x * y;")),
      "operation", 1, 7,
      "cujit: kernel 'k': 'y' is already a variable of this snippet (a kernel "
      "parameter); choose another name\noperation line 1, column 7\n"
      "  float y = 2; z = x * y;\n"
      "        ^");
  add("reserved_use", elementwise_set(op(sig_in, sig_out, "z = _raw_q[0]")), "operation", 1, 5,
      "cujit: kernel 'k': '_raw_q' is not defined here (cujit defines _ind, "
      "_raw_<name> and the other reserved variables only where they apply)\noperation line 1, "
      "column 5\n"
      "  z = _raw_q[0]\n"
      "      ^");
  add("reduction_variable_in_elementwise", elementwise_set(op(sig_in, sig_out, "z = x + _J")),
      "operation", 1, 9,
      "cujit: kernel 'k': '_J' is not defined here (cujit defines _ind, "
      "_raw_<name> and the other reserved variables only where they apply)\noperation line 1, "
      "column 9\n"
      "  z = x + _J\n"
      "          ^");
  add("reserved_preamble",
      elementwise_set(op(sig_in, sig_out, "z = x", "__device__ int _cj_counter;")), "preamble", 1,
      16,
      "cujit: kernel 'k': '_cj_counter' is reserved for cujit's generated code (i, "
      "_ind, _in_ind, _out_ind, _J, _raw_<name>, _cj...); choose another name\npreamble line 1, "
      "column 16\n"
      "  __device__ int _cj_counter;\n"
      "                 ^");
  add("multi_line", elementwise_set(op(sig_in, sig_out, "float d = x - y;\nz = d * d +;\n")),
      "operation", 2, 12,
      "cujit: kernel 'k': expected expression\noperation line 2, column 12\n"
      "  z = d * d +;\n"
      "             ^");
  add("missing_paren_at_end", elementwise_set(op(sig_in, sig_out, "z = (x + y")), "operation", 1,
      11,
      "cujit: kernel 'k': expected ')'\noperation line 1, column 11\n"
      "  z = (x + y\n"
      "            ^");
  add("missing_semicolon", elementwise_set(op(sig_in, sig_out, "z = x y")), "operation", 1, 6,
      "cujit: kernel 'k': expected ';' after expression\noperation line 1, column 6\n"
      "  z = x y\n"
      "       ^");
  add("unterminated_comment", elementwise_set(op(sig_in, sig_out, "z = x; /* oops")), "operation",
      1, 8,
      "cujit: kernel 'k': unterminated /* comment\noperation line 1, column 8\n"
      "  z = x; /* oops\n"
      "         ^");
  add("float_modulo", elementwise_set(op(sig_in, sig_out, "z = x % 2.0f")), "operation", 1, 7,
      "cujit: kernel 'k': invalid operands to binary expression ('const float' and "
      "'float')\noperation line 1, column 7\n"
      "  z = x % 2.0f\n"
      "        ^");
  add("member_of_float", elementwise_set(op(sig_in, sig_out, "z = x.foo")), "operation", 1, 6,
      "cujit: kernel 'k': member reference base type 'const float' is not a "
      "structure or union\noperation line 1, column 6\n"
      "  z = x.foo\n"
      "       ^");
  add("preamble_syntax",
      elementwise_set(
          op(sig_in, sig_out, "z = f(x)", "__device__ float f(float v) {\n\treturn v * ;\n}")),
      "preamble", 2, 13,
      "cujit: kernel 'k': expected expression\npreamble line 2, column 13\n"
      "  \treturn v * ;\n"
      "  \t           ^");
  add("loop_prep_syntax", elementwise_set({"k", sig_in, sig_out, "z = x", "", "float acc = 0 0;"}),
      "loop_prep", 1, 14,
      "cujit: kernel 'k': expected ';' at end of declaration\nloop_prep line 1, column 14\n"
      "  float acc = 0 0;\n"
      "               ^");
  ReductionCase l2 = testing::valid_reduction_corpus()[0];
  ReductionCase bad = l2;
  bad.map_expr = "x * ";
  add("map_expr_syntax", reduction_set(bad), "map_expr", 1, 5,
      "cujit: kernel 'l2norm': expected expression\nmap_expr line 1, column 5\n"
      "  x * \n"
      "      ^");
  bad = l2;
  bad.reduce_expr = "a = b";
  add("reduce_assigns_a", reduction_set(bad), "reduce_expr", 1, 1,
      "cujit: kernel 'l2norm': cannot assign to input 'a': snippet inputs are "
      "read-only (write outputs only)\nreduce_expr line 1, column 1\n"
      "  a = b\n"
      "  ^");
  bad = l2;
  bad.post_map_expr = "y = sqrt(a) +";
  add("post_map_syntax", reduction_set(bad), "post_map_expr", 1, 14,
      "cujit: kernel 'l2norm': expected expression\npost_map_expr line 1, column 14\n"
      "  y = sqrt(a) +\n"
      "               ^");
  bad = l2;
  bad.identity = "0 +";
  add("identity_syntax", reduction_set(bad), "identity", 1, 4,
      "cujit: kernel 'l2norm': expected expression\nidentity line 1, column 4\n"
      "  0 +\n"
      "     ^");
  bad = l2;
  bad.map_expr = "x * _ind.size()";
  add("elementwise_variable_in_reduction", reduction_set(bad), "map_expr", 1, 5,
      "cujit: kernel 'l2norm': '_ind' is not defined here (cujit defines _ind, "
      "_raw_<name> and the other reserved variables only where they apply)\nmap_expr line 1, "
      "column 5\n"
      "  x * _ind.size()\n"
      "      ^");
  return cases;
}

TEST(SnippetAnalysis, InvalidCorpusThrowsWithLineAndColumn) {
  for (const InvalidCase& c : invalid_cases()) {
    SCOPED_TRACE(c.name);
    try {
      analyze_snippets(c.set);
      ADD_FAILURE() << "accepted " << c.name;
    } catch (const CompileError& e) {
      EXPECT_EQ(std::string(e.what()), c.message);
      EXPECT_EQ(e.line(), c.line);
      EXPECT_EQ(e.column(), c.column);
      EXPECT_NE(e.log().find(c.label), std::string::npos) << e.log();
      EXPECT_NE(e.source().find(c.set.snippets[0].text), std::string::npos);
    }
  }
}

// Found by fuzzing: "# 0" in a preamble set clang's line of what followed to 0, and the error
// pointed at line 0 of the snippet. Line directives would mislead NVRTC's positions too.
TEST(SnippetAnalysis, LineDirectivesAreRefusedWhereTheyAre) {
  const std::vector<std::pair<std::string, int>> directives = {
      {"#line 7", 1}, {"# 0", 1}, {"  #  line 1 \"other.cu\"", 3}, {"/* c */ # 12 \"x\"", 9}};
  for (const auto& [directive, column] : directives) {
    SCOPED_TRACE(directive);
    try {
      analyze_snippets(elementwise_set(op("T x", "T y", "y = x", "int a;\n" + directive + "\nb;")));
      ADD_FAILURE() << "accepted";
    } catch (const CompileError& e) {
      const std::string what = e.what();
      EXPECT_EQ(e.line(), 2);
      EXPECT_EQ(e.column(), column);
      EXPECT_NE(what.find("line directives"), std::string::npos) << what;
      EXPECT_NE(what.find("preamble line 2"), std::string::npos) << what;
    }
  }
  // Other directives, and '#' where no directive can start, are fine.
  EXPECT_NO_THROW(analyze_snippets(
      elementwise_set(op("T x", "T y", "y = x * N + s[0] + M(1)",
                         "#define N 3\n#define M(v) (#v[0] - 48)\nconst char s[] = \"# 0\";"))));
}

// Characters clang's parser would drop as whitespace but its raw lexer keeps (so that the two
// disagree about a directive after them), and NUL, which NVRTC would cut the source at, are
// refused where they are; in comments and literals only NUL is.
TEST(SnippetAnalysis, UnreadableCharactersAreRefusedWhereTheyAre) {
  struct Case {
    std::string operation;
    int line, column;
    std::string message;
  };
  using namespace std::string_literals;
  const std::vector<Case> cases = {
      // The fuzzer's input, shortened: invalid UTF-8, then a line marker clang would obey.
      {"\0\0\xfb\xff\0#0\ny = x"s, 1, 1, "NUL character"},
      {"y = x;\n  \xfb#0\ny = x", 2, 3, "not valid UTF-8 here (byte 0xfb)"},
      {"y = x\xc2\xa0+ x", 1, 6, "U+00A0 is not allowed outside comments"},
      {"y =\xe3\x80\x80x", 1, 4, "U+3000"},
      {"y = x; // fine: \xc2\xa0 \xfb\ny = x\0"s, 2, 6, "NUL character"},
      {"T caf\xc3\xa9 = x; y = x", 1, 6, "U+00E9"},  // clang takes it, NVRTC does not
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::PrintToString(c.operation));
    try {
      analyze_snippets(elementwise_set(op("T x", "T y", c.operation)));
      ADD_FAILURE() << "accepted";
    } catch (const CompileError& e) {
      EXPECT_EQ(e.line(), c.line);
      EXPECT_EQ(e.column(), c.column);
      EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos) << e.what();
    }
  }
  // Non-ASCII in comments and literals stays accepted (NVRTC takes it there).
  EXPECT_NO_THROW(analyze_snippets(elementwise_set(
      op("T x", "T y",
         "y = x; // \xc2\xa0 \xfb caf\xc3\xa9\nconst char* s = \"\xc2\xa0\xfb\"; (void)s; "
         "char c = '\xc3'; (void)c"))));
}

// Found by fuzzing: clang's parser takes time exponential in the number of '<' after
// undeclared names in one expression (22 took 10 s, each two more about four times as long;
// NVRTC needs 27 ms). Past ten open in one statement, directly or through macros, the
// analysis leaves the snippets to NVRTC (without the limit this test would not finish).
TEST(SnippetAnalysis, LongChainsOfOpenAnglesAreLeftToNvrtc) {
  std::string chain = "y = x";
  for (int k = 0; k < 40; ++k) chain += k % 2 == 0 ? " <b" : " <c";
  EXPECT_FALSE(analyze_snippets(elementwise_set(op("T x", "T y", chain))).fully_checked);
  // Six uses of a macro spelling four (two through another macro), and a cycle of macros.
  EXPECT_FALSE(analyze_snippets(elementwise_set(op("T x", "T y", "y = x L L L L L L;",
                                                   "#define M <b <c\n#define L <b <c M\n")))
                   .fully_checked);
  EXPECT_FALSE(analyze_snippets(elementwise_set(op("T x", "T y", "y = x P P P P P P P P P P P;",
                                                   "#define P <b Q\n#define Q P\n")))
                   .fully_checked);
  // A chain of 200,000 macros, each naming the next: counted without a thread's stack per
  // macro (a recursive count overflowed it).
  std::string chained;
  for (int k = 0; k < 200000; ++k) {
    chained += "#define M" + std::to_string(k) + " <b M" + std::to_string(k + 1) + "\n";
  }
  EXPECT_FALSE(
      analyze_snippets(elementwise_set(op("T x", "T y", "y = x M0;", chained))).fully_checked);
  // Ten open, eight nested and closed, or many in separate statements: analysed as before.
  std::string ten = "bool t = x";
  for (int k = 0; k < 10; ++k) ten += " < x";
  EXPECT_TRUE(analyze_snippets(elementwise_set(op("T x", "T y", "y = x; " + ten + "; (void)t")))
                  .fully_checked);
  std::string statements = "y = x;";
  for (int k = 0; k < 20; ++k) statements += " y = x < y ? x : y;";
  EXPECT_TRUE(analyze_snippets(elementwise_set(op("T x", "T y", statements))).fully_checked);
  EXPECT_THROW(analyze_snippets(
                   elementwise_set(op("T x", "T y", "V<V<V<V<V<V<V<V<float>>>>>>>> v{}; y = x +;",
                                      "template <class E> struct V { E e; };"))),
               CompileError);
}

// The prelude read as text and from the PCH give the same verdicts, positions and messages.
std::string verdict(const SnippetSet& set, PreludeMode mode) {
  try {
    SnippetReport r = analyze_snippets(set, mode);
    std::string out = r.fully_checked ? "checked" : "deferred";
    for (const auto& ids : r.identifiers) {
      out += " |";
      for (const std::string& id : ids) out += " " + id;
    }
    return out;
  } catch (const CompileError& e) {
    return e.what();
  }
}

TEST(SnippetAnalysis, PreludeAsTextAndPrecompiledAgree) {
  std::vector<SnippetSet> sets;
  for (const ElementwiseCase& c : testing::valid_elementwise_corpus()) {
    sets.push_back(elementwise_set(c));
  }
  for (const ReductionCase& c : testing::valid_reduction_corpus()) sets.push_back(reduction_set(c));
  for (const InvalidCase& c : invalid_cases()) sets.push_back(c.set);
  sets.push_back(elementwise_set(op("float32 x", "float32 z", "z = foo(x) +* ;")));
  for (const SnippetSet& set : sets) {
    SCOPED_TRACE(set.kernel_name + ": " + set.snippets[2].text);
    EXPECT_EQ(verdict(set, PreludeMode::Text), verdict(set, PreludeMode::Precompiled));
  }
}

// Errors clang cannot be sure of are left to NVRTC: no throw, fully_checked false.
TEST(SnippetAnalysis, UncertainErrorsDeferToNvrtc) {
  const std::string in = "float32 x, float32 y";
  const std::string out = "float32 z";
  const std::vector<ElementwiseCase> cases = {
      op(in, out, "z = foo(x) +* ;"),                  // unknown function first
      op(in, out, "z = undefined_thing<float>(x);"),   // unknown template
      op(in, out, "myint k = 3; z = x + k;"),          // unknown type
      op(in, out, "if (x > y) { z = x;"),              // breaks the scaffolding
      op(in, out, "z = x", "#include <cub/cub.cuh>"),  // header clang cannot see
      op(in, out, "z = x + _cj_n"),                    // a generated-code internal: NVRTC decides
      op(in, out, "z = _helper(x)"),                   // a user name that merely starts with '_'
      op(in, out, "z = x +;", "#include \"snippet_analysis_test.cpp\""),  // nothing from disk
      op(in, out, "z = x +;", "#if __CUDA_ARCH__ >= 900\n#define FAST 1\n#endif"),
      op(in, out, "z = x", "#error unsupported"),    // #error may sit in an #if
      op(in, out, "z = x", "struct S : Base {};"),   // unknown base class
      op(in, out, "z = CUDART_PI_F * x"),            // macro from a header
      op("float16 x", "float16 z", "z = x + 1.0f"),  // overloads the prelude only models
      op(in, out, "z = x; x = w;"),                  // unknown name before the assignment
  };
  for (const ElementwiseCase& c : cases) {
    SCOPED_TRACE(c.operation + " / " + c.preamble);
    SnippetReport report;
    EXPECT_NO_THROW(report = analyze_snippets(elementwise_set(c)));
    EXPECT_FALSE(report.fully_checked);
  }
}

// The analysis parses the standard NVRTC compiles with: keywords differ between them.
TEST(SnippetAnalysis, FollowsTheCxxStandard) {
  SnippetSet cxx20 = elementwise_set(op("float32 x", "float32 z", "z = x * three()",
                                        "__device__ consteval int three() { return 3; }"));
  cxx20.cxx_standard = 20;
  EXPECT_TRUE(analyze_snippets(cxx20).fully_checked);
  cxx20.cxx_standard = 17;  // consteval is no keyword: an unknown type name, left to NVRTC
  SnippetReport report;
  EXPECT_NO_THROW(report = analyze_snippets(cxx20));
  EXPECT_FALSE(report.fully_checked);

  SnippetSet names =
      elementwise_set(op("float32 x", "float32 z", "float concept = x; z = concept;"));
  EXPECT_TRUE(analyze_snippets(names).fully_checked);
  names.cxx_standard = 20;
  EXPECT_THROW(analyze_snippets(names), CompileError);
}

TEST(SnippetAnalysis, FullyCheckedWhenClangUnderstandsEverything) {
  SnippetReport report =
      analyze_snippets(elementwise_set(op("float32 x, float32 y", "float32 z", "z = x + y")));
  EXPECT_TRUE(report.fully_checked);
  SnippetSet empty;
  empty.kernel_name = "empty";
  EXPECT_TRUE(analyze_snippets(empty).fully_checked);  // the prelude itself is clean
}

// ---------------------------------------------------------------------------------------
// Identifiers.

std::set<std::string> ids(const SnippetReport& r, std::size_t k) { return r.identifiers.at(k); }

TEST(SnippetAnalysis, IdentifiersPerSnippet) {
  using Set = std::set<std::string>;
  SnippetReport r =
      analyze_snippets(elementwise_set(op("float32 x, float32 y", "float32 z", "z = x * 2")));
  ASSERT_EQ(r.identifiers.size(), 4u);
  EXPECT_EQ(ids(r, 2), (Set{"x", "z"}));  // y is never loaded
  EXPECT_TRUE(ids(r, 1).empty());

  // Keywords, member names after '.', '->' and '::', and directives are not identifiers.
  r = analyze_snippets(elementwise_set(
      op("float32 x, float32 y", "float32 z",
         "if (x > 0) { z = static_cast<float>(x); }\n#pragma unroll\nfor (int k = 0; k < 2; ++k) "
         "{ Pair p{x, y}; z += p.y + (&p)->x; }",
         "struct Pair { float x, y; };")));
  EXPECT_EQ(ids(r, 2), (Set{"Pair", "k", "p", "x", "y", "z"}));

  r = analyze_snippets(elementwise_set(
      op("float32 x, float32 y", "float32 z", "z = thrust::complex<float>(x, 0).real()")));
  EXPECT_EQ(ids(r, 2), (Set{"thrust", "x", "z"}));

  // A preamble macro that names a parameter counts as a use of it.
  r = analyze_snippets(elementwise_set(op("float32 x, float32 y", "float32 z", "z = MIX(2)",
                                          "#define Y_PART (y * 3)\n#define MIX(a) (a + Y_PART)")));
  EXPECT_EQ(ids(r, 2), (Set{"MIX", "Y_PART", "a", "y", "z"}));

  r = analyze_snippets(elementwise_set(op("float32 x", "float32 z", "z = _raw_x[i]")));
  EXPECT_EQ(ids(r, 2), (Set{"_raw_x", "i", "z"}));
}

TEST(SnippetAnalysis, IdentifiersOfReductions) {
  using Set = std::set<std::string>;
  SnippetReport r = analyze_snippets(reduction_set(testing::valid_reduction_corpus()[4]));  // dot
  ASSERT_EQ(r.identifiers.size(), 5u);
  EXPECT_EQ(ids(r, 2), (Set{"x", "y"}));
  EXPECT_EQ(ids(r, 3), (Set{"a", "b"}));
  EXPECT_EQ(ids(r, 4), (Set{"a", "z"}));
}

// ---------------------------------------------------------------------------------------
// The snippet sets of the two kernel families.

std::string describe(const std::vector<SnippetVariable>& vars) {
  std::string out;
  for (const SnippetVariable& v : vars) {
    static const char* kinds[] = {"element", "raw", "index", "size"};
    out += v.name + ":" + v.cuda_type + ":" + kinds[static_cast<int>(v.kind)] +
           (v.writable ? ":w" : "") + " ";
  }
  return out;
}

TEST(SnippetSets, ElementwiseLayout) {
  std::vector<Param> in = parse_signature("float32 x, raw T t", "k", "in_params");
  std::vector<Param> out = parse_signature("float16 z", "k", "out_params");
  ResolvedTypes types =
      resolve_types(in, out, {{true, true, DType::Float32}, {true, true, DType::Float64}}, {}, "k");
  SnippetSet set = elementwise_snippet_set("k", in, out, types, "z = x", "P", "L", "A");
  EXPECT_EQ(set.kernel_name, "k");
  ASSERT_EQ(set.snippets.size(), 4u);
  const std::vector<std::string> labels = {"preamble", "loop_prep", "operation", "after_loop"};
  const std::vector<std::string> texts = {"P", "L", "z = x", "A"};
  for (std::size_t k = 0; k < 4; ++k) {
    EXPECT_EQ(set.snippets[k].label, labels[k]);
    EXPECT_EQ(set.snippets[k].text, texts[k]);
  }
  EXPECT_EQ(set.snippets[0].form, Snippet::Form::TopLevel);
  EXPECT_EQ(set.snippets[2].scope_parent, 1);
  EXPECT_EQ(set.snippets[3].scope_parent, 1);
  EXPECT_EQ(describe(set.snippets[1].variables),
            "_raw_x:float:raw:w t:double:raw:w _raw_z:half:raw:w _ind::size ");
  EXPECT_EQ(describe(set.snippets[2].variables),
            "i:long long:index x:float:element z:half:element:w ");
  EXPECT_TRUE(set.snippets[3].variables.empty());  // sees loop_prep's through its scope
  EXPECT_EQ(set.type_aliases, (std::vector<std::pair<std::string, std::string>>{{"T", "double"}}));
}

TEST(SnippetSets, ReductionLayout) {
  std::vector<Param> in = parse_signature("T x", "k", "in_params");
  std::vector<Param> out = parse_signature("T y", "k", "out_params");
  ResolvedTypes types = resolve_types(in, out, {{true, true, DType::Float32}}, {}, "k");
  SnippetSet set =
      reduction_snippet_set("k", in, out, types, "float", "x * x", "a + b", "y = a", "0", "P");
  ASSERT_EQ(set.snippets.size(), 5u);
  const std::vector<std::string> labels = {"preamble", "identity", "map_expr", "reduce_expr",
                                           "post_map_expr"};
  for (std::size_t k = 0; k < 5; ++k) EXPECT_EQ(set.snippets[k].label, labels[k]);
  EXPECT_EQ(set.snippets[1].form, Snippet::Form::Expression);
  EXPECT_EQ(set.snippets[4].form, Snippet::Form::Statements);
  EXPECT_EQ(describe(set.snippets[2].variables),
            "_raw_x:float:raw:w _J:long long:index _in_ind::size _out_ind::size x:float:element ");
  EXPECT_EQ(describe(set.snippets[3].variables), "a:float:element b:float:element ");
  EXPECT_EQ(describe(set.snippets[4].variables),
            "_raw_y:float:raw:w _in_ind::size _out_ind::size a:float:element y:float:element:w ");
}

// ---------------------------------------------------------------------------------------
// Formatting and API details.

TEST(FormatSnippetLocation, LineAndCaret) {
  EXPECT_EQ(format_snippet_location("operation", "z = x +;", 1, 8),
            "operation line 1, column 8\n  z = x +;\n         ^");
  EXPECT_EQ(format_snippet_location("preamble", "a\n\tb c\nd", 2, 4),
            "preamble line 2, column 4\n  \tb c\n  \t  ^");
  EXPECT_EQ(format_snippet_location("op", "a", 3, 1), "op line 3, column 1");
  EXPECT_EQ(format_snippet_error("k", "op", "a +", 1, 4, "expected expression"),
            "cujit: kernel 'k': expected expression\nop line 1, column 4\n  a +\n     ^");
}

TEST(SnippetAnalysis, InvalidScopeParentIsAnArgumentError) {
  SnippetSet set = elementwise_set(op("float32 x", "float32 z", "z = x"));
  set.snippets[2].scope_parent = 3;
  EXPECT_THROW(analyze_snippets(set), ArgumentError);
  set.snippets[2].scope_parent = 0;  // a TopLevel snippet has no scope to share
  EXPECT_THROW(analyze_snippets(set), ArgumentError);
}

TEST(SnippetAnalysis, ConcurrentCallsAgree) {
  const SnippetSet good = elementwise_set(op("float32 x, float32 y", "float32 z", "z = x + y"));
  const SnippetSet bad = elementwise_set(op("float32 x, float32 y", "float32 z", "z = x +;"));
  std::vector<std::thread> threads;
  std::vector<int> failures(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int k = 0; k < 25; ++k) {
        try {
          if (analyze_snippets(good).identifiers.at(2) != std::set<std::string>{"x", "y", "z"}) {
            ++failures[t];
          }
        } catch (...) {
          ++failures[t];
        }
        try {
          analyze_snippets(bad);
          ++failures[t];
        } catch (const CompileError& e) {
          if (e.column() != 8) ++failures[t];
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures, std::vector<int>(4, 0));
}

// ---------------------------------------------------------------------------------------
// Speed: analysis runs once per kernel specialisation and must stay in milliseconds.

double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

struct Timing {
  double wall_ms;  // median
  double cpu_ms;   // median CPU time of this thread (unaffected by competing processes)
  int errors;      // runs that threw CompileError
};

Timing median_ms(const SnippetSet& set, int runs, PreludeMode mode) {
  std::vector<double> wall, cpu;
  int errors = 0;
  for (int k = 0; k < runs; ++k) {
    auto start = std::chrono::steady_clock::now();
    double cpu_start = thread_cpu_ms();
    try {
      analyze_snippets(set, mode);
    } catch (const CompileError&) {
      ++errors;
    }
    cpu.push_back(thread_cpu_ms() - cpu_start);
    wall.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count());
  }
  std::sort(wall.begin(), wall.end());
  std::sort(cpu.begin(), cpu.end());
  return {wall[wall.size() / 2], cpu[cpu.size() / 2], errors};
}

// Reports timings (no bound: a test is not a benchmark); checks that every run of both modes
// gives the set's verdict, so repeated runs in one process stay independent.
TEST(SnippetAnalysis, MedianTimePerSnippetSet) {
  const auto& ew = testing::valid_elementwise_corpus();
  const std::vector<std::pair<std::string, SnippetSet>> sets = {
      // the last one is invalid
      {"squared_diff", elementwise_set(ew[0])},
      {"preamble_template",
       elementwise_set(*std::find_if(ew.begin(), ew.end(),
                                     [](const auto& c) { return c.name == "preamble_template"; }))},
      {"argmax reduction", reduction_set(testing::valid_reduction_corpus()[3])},
      {"syntax error", elementwise_set(op("float32 x, float32 y", "float32 z", "z = x +;"))},
  };
  for (std::size_t k = 0; k < sets.size(); ++k) {
    const auto& [name, set] = sets[k];
    const int expected_errors = k + 1 == sets.size() ? 100 : 0;
    auto [text_ms, text_cpu_ms, text_errors] = median_ms(set, 100, PreludeMode::Text);
    EXPECT_EQ(text_errors, expected_errors) << name;
    std::cout << "[ timing   ] analyze_snippets(" << name << ", prelude as text): median "
              << text_ms << " ms wall, " << text_cpu_ms << " ms CPU over 100 runs\n";
    auto [ms, cpu_ms, errors] = median_ms(set, 100, PreludeMode::Precompiled);
    EXPECT_EQ(errors, expected_errors) << name;
    std::cout << "[ timing   ] analyze_snippets(" << name << ", precompiled prelude): median " << ms
              << " ms wall, " << cpu_ms << " ms CPU over 100 runs\n";
    RecordProperty("median_ms_" + std::to_string(k), std::to_string(ms));
    RecordProperty("median_cpu_ms_" + std::to_string(k), std::to_string(cpu_ms));
  }
}

}  // namespace
}  // namespace cujit::detail
