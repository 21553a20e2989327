#include "codegen/scan_manifest.hpp"

#include <cujit/error.hpp>

#include "codegen/manifest_json.hpp"
#include "codegen/reduction_manifest.hpp"
#include "codegen/spec_json.hpp"
#include "codegen/validation.hpp"
#include "support/json_text.hpp"

#include <nlohmann/json.hpp>

namespace cujit::detail {

ScanDefinition make_scan_definition(std::string in_params, std::string out_params,
                                    std::string map_expr, std::string scan_expr,
                                    std::string post_map_expr, std::string identity,
                                    std::string name, std::string scan_type, bool exclusive,
                                    std::string preamble, std::vector<std::string> options) {
  const DefinitionWords words{"scan kernel", "scan", "scanned", "scan_expr", "scan_type"};
  ScanDefinition def;
  static_cast<ReductionDefinition&>(def) = make_reduction_definition(
      std::move(in_params), std::move(out_params), std::move(map_expr), std::move(scan_expr),
      std::move(post_map_expr), std::move(identity), std::move(name), std::move(scan_type),
      std::move(preamble), std::move(options), true, words);
  def.exclusive = exclusive;
  const std::string who = "cujit: scan kernel '" + def.name + "'";
  if (def.identity.empty()) {
    throw ArgumentError(who +
                        ": identity is empty; a scan needs the neutral element of its "
                        "scan_expr (\"0\" for a sum)");
  }
  for (const auto* params : {&def.in, &def.out}) {
    for (const Param& p : *params) {
      if (p.raw) {
        throw ArgumentError(who + ": parameter '" + p.name +
                            "' is raw; a scan kernel takes element parameters only");
      }
    }
  }
  return def;
}

ScanDefinition make_select_definition(std::string in_params, std::string predicate,
                                      std::string name, bool indices, std::string preamble,
                                      std::vector<std::string> options, bool partition) {
  const std::string who = "cujit: select kernel '" + name + "'";
  // The kept values have the first input's type, written as it is (a placeholder or a dtype).
  std::string kept_type = "int64";
  if (!indices) {
    const std::vector<Param> in = parse_signature(in_params, who, "in_params");
    if (in.empty()) throw ArgumentError(who + ": in_params declares no input");
    kept_type = in[0].is_generic ? in[0].placeholder : std::string(dtype_name(in[0].dtype));
  }
  const DefinitionWords words{"select kernel", "select", "selected", "scan_expr", "scan_type"};
  ScanDefinition def;
  static_cast<ReductionDefinition&>(def) =
      make_reduction_definition(std::move(in_params), kept_type + " cujit_kept, int64 cujit_count",
                                std::move(predicate), "a + b", "(void)0", "0", std::move(name), "",
                                std::move(preamble), std::move(options), true, words);
  def.post_map_expr.clear();
  def.select = indices ? SelectWhat::Indices : SelectWhat::Values;
  def.partition = partition;
  for (const Param& p : def.in) {
    if (p.raw) {
      throw ArgumentError(who + ": parameter '" + p.name +
                          "' is raw; a select kernel takes element parameters only");
    }
  }
  if (def.select == SelectWhat::Values) def.use.used[0] = 1;  // its values are written
  return def;
}

std::string scan_manifest_entry(const ScanDefinition& def, const ScanSpecialization& s) {
  if (def.select != SelectWhat::None) {
    nlohmann::json entry = {
        {"kind", "select"},
        {"name", text_json(def.name)},
        {"in_params", text_json(def.in_signature)},
        {"predicate", text_json(def.map_expr)},
        {"indices", def.select == SelectWhat::Indices},
        {"preamble", text_json(def.preamble)},
        {"options", text_json(def.compile_options)},
        {"specialization", nullptr},
    };
    if (!def.link.empty()) entry["link"] = link_json(def.link);
    if (def.partition) entry["partition"] = true;  // absent otherwise: earlier keys unchanged
    return entry_with_spec(entry, spec_json_text(s));
  }
  nlohmann::json entry = {
      {"kind", "scan"},
      {"name", text_json(def.name)},
      {"in_params", text_json(def.in_signature)},
      {"out_params", text_json(def.out_signature)},
      {"map_expr", text_json(def.map_expr)},
      {"scan_expr", text_json(def.reduce_expr)},
      {"post_map_expr", text_json(def.post_map_expr)},
      {"identity", text_json(def.identity)},
      {"preamble", text_json(def.preamble)},
      {"scan_type", text_json(def.reduce_type)},
      {"exclusive", def.exclusive},
      {"options", text_json(def.compile_options)},
      {"specialization", nullptr},
  };
  if (!def.link.empty()) entry["link"] = link_json(def.link);
  return entry_with_spec(entry, spec_json_text(s));
}

namespace {

// The definition of a manifest entry of kind "scan" or "select".
ScanDefinition definition_of(const nlohmann::json& j) {
  auto text = [&](const char* field) {
    return require_text(j.at(field), std::string("manifest entry: \"") + field + "\"");
  };
  auto flag = [&](const char* field) {
    if (!j.at(field).is_boolean()) {
      throw ArgumentError(std::string("cujit: manifest entry: \"") + field +
                          "\" must be true or false");
    }
    return j.at(field).get<bool>();
  };
  const std::vector<std::string> options =
      require_texts(j.at("options"), "manifest entry: \"options\"");
  if (j.at("kind") == "select") {
    return make_select_definition(text("in_params"), text("predicate"), text("name"),
                                  flag("indices"), text("preamble"), options,
                                  j.contains("partition") && flag("partition"));
  }
  if (j.at("kind") != "scan") {
    throw ArgumentError("cujit: manifest entry is not a scan: " + j.at("kind").dump());
  }
  return make_scan_definition(text("in_params"), text("out_params"), text("map_expr"),
                              text("scan_expr"), text("post_map_expr"), text("identity"),
                              text("name"), text("scan_type"), flag("exclusive"), text("preamble"),
                              options);
}

}  // namespace

std::pair<ScanDefinition, ScanSpecialization> scan_from_manifest(const std::string& entry) {
  try {
    const nlohmann::json j = nlohmann::json::parse(entry);
    ScanDefinition def = definition_of(j);
    if (j.contains("link")) def.link = require_link(j.at("link"), "manifest entry: \"link\"");
    ScanSpecialization s;
    read_spec_json(j.at("specialization"), s);
    // The scan type is pasted into the generated source: a type name, never code.
    const std::string who = std::string("cujit: manifest entry for ") +
                            (def.select == SelectWhat::None ? "scan" : "select") + " '" + def.name +
                            "'";
    check_type_name(s.scan_ctype, who, "scan_ctype");
    if (s.params.size() != def.in.size() + def.out.size() || s.kept_ndim < 1 || s.kept_ndim > 64 ||
        s.scan_ndim < 1 || s.scan_ndim > 64 || s.items < 1 || s.items > 32 || s.block_size < 32 ||
        s.block_size > 960 || s.block_size % 32 != 0 || s.min_blocks < 0 || s.min_blocks > 32 ||
        s.scan_ctype.empty()) {
      throw ArgumentError(who + " is inconsistent");
    }
    return {std::move(def), std::move(s)};
  } catch (const nlohmann::json::exception& e) {
    throw ArgumentError("cujit: malformed scan manifest entry: " + json_error_text(e));
  }
}

}  // namespace cujit::detail
