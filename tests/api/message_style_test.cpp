// One style for every message (issue 32): "cujit: <who>: <what>" once, then details on lines of
// their own; no doubled prefix, no parser internals, SQLite's text once, generated code never
// shown as the user's, one error counted once. A catalogue of messages met at first contact,
// pinned; runs without a GPU (NVRTC compiles, nothing launches).
#include <cujit/cujit.hpp>

#include "cache/sqlite_store.hpp"
#include "codegen/elementwise_manifest.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>

namespace cujit {
namespace {

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

const Target kSm90 = Target::parse("sm_90");
std::vector<ArgSpec> f32(std::vector<Shape> shapes) {
  std::vector<ArgSpec> out;
  for (Shape& s : shapes) out.push_back(ArgSpec::array(DType::Float32, std::move(s)));
  return out;
}

TEST(MessageStyle, TheCatalogueReadsOneWay) {
  const ElementwiseKernel mul("T x, T y", "T z", "z = x * y", "mul");
  const ElementwiseKernel typo("T x", "T y", "y = x + undefined_fn(x);", "axpb_typo");
  const ElementwiseKernel paren("T x", "T y", "y = (x + 1;", "axpb_paren");
  const std::string not_a_db = ::testing::TempDir() + "cujit-not-a-database.db";
  std::ofstream(not_a_db) << std::string(4096, 'x');
  const std::map<std::string, std::string> messages = {
      {"broadcast", message_of([&] {
         mul.specialize(f32({{3, 4}, {5}}), kSm90);
       })},
      {"typo", message_of([&] { typo.specialize(f32({{4}}), kSm90); })},
      {"paren", message_of([&] { paren.specialize(f32({{4}}), kSm90); })},
      {"manifest", message_of([] {
         detail::elementwise_from_manifest(R"({"kind":"elementwise","name":"a",
           "in_params":"T x","out_params":"T y","operation":"y = x","preamble":"",
           "loop_prep":"","after_loop":"","options":[]})");
       })},
      {"not a database", message_of([&] { detail::SqliteStore::open_read_only(not_a_db, {}); })},
      {"architecture", message_of([&] {
         mul.specialize(f32({{4}, {4}}), Target::parse("sm_95"));
       })},
      {"dtype", message_of([&] {
         mul.specialize({ArgSpec::array(DType::Float32, {4}), ArgSpec::array(DType::Float64, {4})},
                        kSm90);
       })},
      {"signature", message_of([] { ElementwiseKernel("T x y", "T z", "z = x", "sig"); })},
      {"reduction signature",
       message_of([] { ReductionKernel("T x", "T x", "x", "a + b", "x = a", "0", "dup"); })},
  };
  std::filesystem::remove(not_a_db);
  EXPECT_EQ(first_line(messages.at("broadcast")),
            "cujit: kernel 'mul': input 'y' does not broadcast with the arguments before it: "
            "shapes (3, 4), (5,) cannot be broadcast together");
  EXPECT_EQ(first_line(messages.at("paren")), "cujit: kernel 'axpb_paren': expected ')'");
  EXPECT_NE(messages.at("paren").find("\noperation line 1, column 11\n  y = (x + 1;\n"),
            std::string::npos);
  EXPECT_EQ(first_line(messages.at("typo")),
            "cujit: kernel 'axpb_typo': identifier \"undefined_fn\" is undefined");
  EXPECT_NE(messages.at("typo").find("1 error detected"), std::string::npos);
  EXPECT_EQ(messages.at("typo").find("2 errors"), std::string::npos);
  EXPECT_EQ(messages.at("typo").find(";;"), std::string::npos);  // generated text, not the user's
  EXPECT_EQ(messages.at("manifest"),
            "cujit: malformed elementwise manifest entry: \"reduce_dims\" is missing");
  EXPECT_EQ(messages.at("not a database"), "cujit: deployment cache database " + not_a_db +
                                               " cannot be used: file is not a database");
  EXPECT_NE(messages.at("architecture").find("cannot build sm_95; it builds sm_75, sm_80"),
            std::string::npos);
  EXPECT_EQ(messages.at("dtype"),
            "cujit: kernel 'mul': input 'y': expected float32 (T is bound to it by 'x'), got "
            "float64 (cujit does not cast arrays)");
  EXPECT_EQ(first_line(messages.at("signature")),
            "cujit: kernel 'sig': in_params: expected ',' after parameter 'x', found 'y'");
  EXPECT_EQ(first_line(messages.at("reduction signature")),
            "cujit: reduction kernel 'dup': out_params: parameter 'x' is also an input; input "
            "and output names must differ");
  for (const auto& [name, message] : messages) {
    SCOPED_TRACE(name + ": " + message);
    EXPECT_EQ(message.rfind("cujit: ", 0), 0u);
    EXPECT_EQ(first_line(message).find("cujit: ", 1), std::string::npos);  // one prefix
    EXPECT_EQ(message.find("json.exception"), std::string::npos);
    EXPECT_EQ(message.find(" bytes, "), std::string::npos);  // no library identity
  }
}

}  // namespace
}  // namespace cujit
