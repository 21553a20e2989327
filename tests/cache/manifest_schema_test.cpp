// The manifest format (CUJIT_RECORD) as documented in docs/manifest.schema.json: every entry
// the code writes, through the recorder as a run writes them, validates against the schema, and
// the schema declares no field the code stopped writing. The validator below implements the
// subset of JSON Schema the file uses (type, const, enum, minimum, maximum, required,
// properties, additionalProperties: false, items, oneOf, $ref into $defs); a keyword it does not
// know fails the test, so the schema cannot silently use more.

#include "cache/kernel_cache.hpp"
#include "cache/manifest.hpp"
#include "cache/raw_replay.hpp"
#include "cache_test_util.hpp"
#include "codegen/elementwise_manifest.hpp"
#include "codegen/reduction_manifest.hpp"
#include "codegen/scan_manifest.hpp"
#include "codegen/snippet_corpus.hpp"
#include "support/json_text.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <set>

namespace cujit::detail {
namespace {

using nlohmann::json;

json load_schema() {
  std::ifstream in(std::string(CUJIT_SOURCE_DIR) + "/docs/manifest.schema.json");
  return json::parse(in, nullptr, false);
}

class Validator {
 public:
  explicit Validator(json schema) : root_(std::move(schema)) {}

  // Empty when `value` satisfies `schema`; else what failed, at which path.
  std::string check(const json& value, const json& schema, const std::string& at) {
    static const std::set<std::string> kKnown = {"$schema",    "$id",
                                                 "title",      "description",
                                                 "$defs",      "$ref",
                                                 "type",       "const",
                                                 "enum",       "minimum",
                                                 "maximum",    "required",
                                                 "properties", "additionalProperties",
                                                 "items",      "oneOf"};
    for (const auto& [keyword, _] : schema.items()) {
      if (kKnown.count(keyword) == 0) return at + ": schema keyword '" + keyword + "' unknown";
    }
    if (schema.contains("$ref")) {
      const std::string ref = schema["$ref"];
      const std::string prefix = "#/$defs/";
      if (ref.rfind(prefix, 0) != 0) return at + ": unsupported $ref " + ref;
      if (std::string e = check(value, root_["$defs"].at(ref.substr(prefix.size())), at);
          !e.empty())
        return e;
    }
    if (schema.contains("type") && !type_ok(value, schema["type"])) {
      return at + ": expected " + schema["type"].dump() + ", got " + value.dump().substr(0, 60);
    }
    if (schema.contains("const") && value != schema["const"])
      return at + ": not " + schema["const"].dump();
    if (schema.contains("enum") &&
        std::find(schema["enum"].begin(), schema["enum"].end(), value) == schema["enum"].end()) {
      return at + ": " + value.dump() + " not in the enum";
    }
    if (schema.contains("minimum") && value.is_number() && value < schema["minimum"])
      return at + ": below the minimum";
    if (schema.contains("maximum") && value.is_number() && value > schema["maximum"])
      return at + ": above the maximum";
    if (std::string e = check_object(value, schema, at); !e.empty()) return e;
    if (schema.contains("items") && value.is_array()) {
      for (std::size_t k = 0; k < value.size(); ++k) {
        std::string e = check(value[k], schema["items"], at + "[" + std::to_string(k) + "]");
        if (!e.empty()) return e;
      }
    }
    if (schema.contains("oneOf")) {
      int matched = 0;
      std::string errors;
      for (const json& option : schema["oneOf"]) {
        std::string e = check(value, option, at);
        matched += e.empty() ? 1 : 0;
        errors += "\n    " + e;
      }
      if (matched != 1) return at + ": matches " + std::to_string(matched) + " of oneOf" + errors;
    }
    return {};
  }

  const json& root() const { return root_; }

 private:
  static bool type_ok(const json& value, const json& type) {
    if (type.is_array()) {
      for (const json& t : type) {
        if (type_ok(value, t)) return true;
      }
      return false;
    }
    const std::string t = type;
    return (t == "object" && value.is_object()) || (t == "array" && value.is_array()) ||
           (t == "string" && value.is_string()) || (t == "boolean" && value.is_boolean()) ||
           (t == "integer" && value.is_number_integer()) || (t == "number" && value.is_number());
  }

  std::string check_object(const json& value, const json& schema, const std::string& at) {
    if (!value.is_object()) return {};
    if (schema.contains("required")) {
      for (const json& field : schema["required"]) {
        if (!value.contains(field.get<std::string>()))
          return at + ": no \"" + field.get<std::string>() + "\"";
      }
    }
    const json properties = schema.value("properties", json::object());
    for (const auto& [key, item] : value.items()) {
      if (properties.contains(key)) {
        if (std::string e = check(item, properties[key], at + "." + key); !e.empty()) return e;
      } else if (schema.contains("additionalProperties") &&
                 schema["additionalProperties"] == false) {
        return at + ": field \"" + key + "\" is not in the schema";
      }
    }
    return {};
  }

  json root_;
};

// Entries of every kind, with the optional fields too, as the code writes them.
std::vector<std::string> written_entries() {
  std::vector<std::string> entries;
  for (const testing::ElementwiseCase& c : testing::valid_elementwise_corpus()) {
    ElementwiseDefinition def =
        make_elementwise_definition(c.in, c.out, c.operation, "k_" + c.name, c.preamble,
                                    c.loop_prep, c.after_loop, {"-O3"}, true);
    EwSpecialization s;
    s.params.resize(def.in.size() + def.out.size());
    entries.push_back(elementwise_manifest_entry(def, s));
    def.link = {LinkInput{LinkInput::Kind::LtoIr, "helpers.ltoir", std::string("\xff\x00ir", 4)}};
    entries.push_back(elementwise_manifest_entry(def, s));
  }
  for (const testing::ReductionCase& c : testing::valid_reduction_corpus()) {
    ReductionDefinition def =
        make_reduction_definition(c.in, c.out, c.map_expr, c.reduce_expr, c.post_map_expr,
                                  c.identity, "k_" + c.name, c.reduce_type, c.preamble, {}, true);
    RedSpecialization s;
    s.params.resize(def.in.size() + def.out.size());
    s.reduce_ctype = c.reduce_type;
    entries.push_back(reduction_manifest_entry(def, s));
    // Peeled rows and linked device code: the optional fields.
    s.strategy = RedStrategy::Rows;
    s.vec = 4;
    s.group = s.block_size;
    s.red_contiguous = true;
    s.peel = true;
    def.link = {LinkInput{LinkInput::Kind::LtoIr, "helpers.ltoir", std::string("\xff\x00ir", 4)}};
    entries.push_back(reduction_manifest_entry(def, s));
    // Segments (cujit::segments) with 64-bit offsets: two more optional fields.
    s.segmented = s.segments64 = true;
    entries.push_back(reduction_manifest_entry(def, s));
  }
  for (bool exclusive : {false, true}) {
    ScanDefinition def = make_scan_definition("T x", "T y", "x", "a + b", "y = a", "0", "k_scan",
                                              "", exclusive, "", {"-O3"});
    ScanSpecialization s;
    s.params.resize(2);
    s.scan_ctype = "float";
    s.min_blocks = exclusive ? 4 : 0;
    if (exclusive) {
      def.link = {LinkInput{LinkInput::Kind::LtoIr, "helpers.ltoir", std::string("\xff\x00ir", 4)}};
    }
    entries.push_back(scan_manifest_entry(def, s));
    entries.push_back(scan_manifest_entry(
        make_select_definition("T x, T t", "x > t", "k_select", exclusive, "", {}), s));
    entries.push_back(scan_manifest_entry(
        make_select_definition("T x, T t", "x > t", "k_part", exclusive, "", {}, true), s));
  }
  SourceProgram raw;
  raw.source = "extern \"C\" __global__ void k(float* p) { p[0] = 1; }\n";
  entries.push_back(raw_manifest_entry(raw));
  raw.source =
      "#include \"scale.h\"\ntemplate <class T> __global__ void scale(T* p) { p[0] *= 2; }";
  raw.options = {"-use_fast_math", "-DLATIN=\xe9"};  // not UTF-8: base64
  raw.name_expressions = {"scale<float>"};
  raw.headers = {{"scale.h", "#pragma once\n"}};
  raw.name = "scale.cu";
  raw.link_inputs = {LinkInput{LinkInput::Kind::Cubin, "lib.cubin",
                               "\x7f"
                               "ELF"}};
  entries.push_back(raw_manifest_entry(raw));
  return entries;
}

TEST(ManifestSchema, EveryEntryTheCodeWritesValidates) {
  const json schema = load_schema();
  ASSERT_TRUE(schema.is_object()) << "docs/manifest.schema.json is missing or not JSON";
  Validator v(schema);
  const std::vector<std::string> entries = written_entries();
  ASSERT_GT(entries.size(), 10u);
  for (const std::string& entry : entries) {
    const json j = json::parse(entry, nullptr, false);
    ASSERT_TRUE(j.is_object()) << entry;
    EXPECT_EQ(v.check(j, v.root(), "entry"), "") << entry.substr(0, 300);
  }
}

// Entries are written as text, without a JSON tree (elementwise_manifest_prefix, the spec
// writer); they are request keys, so they must be exactly nlohmann's dump of themselves: keys
// sorted, strings escaped its way. Includes text with quotes, control bytes and Latin-1.
TEST(ManifestSchema, EveryEntryIsNlohmannsOwnDumpOfIt) {
  std::vector<std::string> entries = written_entries();
  ElementwiseDefinition def = make_elementwise_definition(
      "T x", "T y", "y = x; // \"q\" \\ tab\there\r\n\x01\x1f\x7f", "odd_text",
      "// caf\xe9\n#define Q \"a\\\"\"\n", "\t", "", {"-DX=\"\\n\"", "-O3"}, false);
  EwSpecialization s;
  s.params.resize(2);
  entries.push_back(elementwise_manifest_entry(def, s));
  for (const std::string& entry : entries) {
    EXPECT_EQ(dump_json(json::parse(entry)), entry);
  }
}

TEST(ManifestSchema, RecordedManifestLinesValidate) {
  // A run with CUJIT_RECORD writes through the cache's recorder: canonical lines, each once.
  test::TempDir dir;
  const std::string path = dir.file("recorded.jsonl");
  KernelCache cache(nullptr, {}, path);
  const std::vector<std::string> entries = written_entries();
  for (int round = 0; round < 2; ++round) {
    for (std::size_t k = 0; k < entries.size(); ++k) {
      KernelRequest request;
      request.kind = manifest_entry_kind(entries[k]);
      request.spec = entries[k];
      request.target = Target{90};
      request.manifest_entry = entries[k];
      cache.get_or_compile(
          request, [] { return SourceProgram{}; },
          [](const SourceProgram&) { return CompiledProgram{}; });
    }
    cache.clear_memory();
  }
  const std::vector<std::string> lines = read_manifest(path);
  EXPECT_EQ(lines.size(), entries.size());  // each once, though requested twice
  Validator v(load_schema());
  for (const std::string& line : lines) {
    EXPECT_EQ(line, canonical_manifest_entry(line));
    EXPECT_EQ(v.check(json::parse(line), v.root(), "line"), "") << line.substr(0, 300);
  }
}

TEST(ManifestSchema, TheValidatorRejectsWhatTheSchemaForbids) {
  Validator v(load_schema());
  const json good = json::parse(written_entries().front());
  EXPECT_EQ(v.check(good, v.root(), "e"), "");
  json missing = good;
  missing.erase("operation");
  EXPECT_NE(v.check(missing, v.root(), "e"), "");
  json extra = good;
  extra["surprise"] = 1;
  EXPECT_NE(v.check(extra, v.root(), "e"), "");
  json bad_kind = good;
  bad_kind["kind"] = "future";
  EXPECT_NE(v.check(bad_kind, v.root(), "e"), "");
  json bad_dtype = good;
  bad_dtype["specialization"]["params"][0]["dtype"] = "float8";
  EXPECT_NE(v.check(bad_dtype, v.root(), "e"), "");
  json bad_text = good;
  bad_text["operation"] = json{{"base64", 5}};
  EXPECT_NE(v.check(bad_text, v.root(), "e"), "");
}

}  // namespace
}  // namespace cujit::detail
