#include "codegen/elementwise_manifest.hpp"

#include "codegen/manifest_json.hpp"
#include "codegen/spec_json.hpp"

#include "support/json_text.hpp"

#include <cujit/error.hpp>

#include "codegen/validation.hpp"

#include <nlohmann/json.hpp>

namespace cujit::detail {

ElementwiseDefinition make_elementwise_definition(std::string in_params, std::string out_params,
                                                  std::string operation, std::string name,
                                                  std::string preamble, std::string loop_prep,
                                                  std::string after_loop,
                                                  std::vector<std::string> options,
                                                  bool reduce_dims) {
  if (!is_valid_kernel_name(name)) {
    throw ArgumentError("cujit: invalid kernel name '" + printable(name) +
                        "': expected a C identifier that is not reserved");
  }
  if (operation.find_first_not_of(" \t\r\n") == std::string::npos) {
    throw ArgumentError("cujit: kernel '" + name + "': the operation is empty");
  }
  check_compile_options(options, "cujit: kernel '" + name + "'", "compile_options");
  ElementwiseDefinition def;
  def.name = std::move(name);
  const std::string who = "cujit: kernel '" + def.name + "'";
  def.in = parse_signature(in_params, who, "in_params");
  def.out = parse_signature(out_params, who, "out_params");
  check_signatures(def.in, def.out, who);
  check_param_count(def.in.size() + def.out.size(), "cujit: kernel '" + def.name + "'");
  def.in_signature = std::move(in_params);
  def.out_signature = std::move(out_params);
  def.operation = std::move(operation);
  def.preamble = std::move(preamble);
  def.loop_prep = std::move(loop_prep);
  def.after_loop = std::move(after_loop);
  def.compile_options = std::move(options);
  def.reduce_dims = reduce_dims;
  std::vector<std::string> names;
  for (const Param& p : def.in) names.push_back(p.name);
  for (const Param& p : def.out) names.push_back(p.name);
  def.use =
      param_use(names, std::vector<char>(names.size(), 0),
                {&def.operation, &def.loop_prep, &def.after_loop, &def.preamble}, &def.operation);
  return def;
}

std::string elementwise_manifest_prefix(const ElementwiseDefinition& def) {
  // The entry's members in nlohmann's order (keys sorted), written directly: this runs in
  // every kernel's constructor. "specialization" sorts after every other member, so the text
  // ends with its key and the caller appends its value and the closing brace.
  std::string text = "{\"after_loop\":";
  append_text_json(text, def.after_loop);
  text += ",\"in_params\":";
  append_text_json(text, def.in_signature);
  text += ",\"kind\":\"elementwise\"";
  if (!def.link.empty()) {  // absent: older entries unchanged
    (text += ",\"link\":") += dump_json(link_json(def.link));
  }
  text += ",\"loop_prep\":";
  append_text_json(text, def.loop_prep);
  text += ",\"name\":";
  append_text_json(text, def.name);
  text += ",\"operation\":";
  append_text_json(text, def.operation);
  text += ",\"options\":[";
  for (const std::string& option : def.compile_options) {
    if (text.back() != '[') text += ',';
    append_text_json(text, option);
  }
  text += "],\"out_params\":";
  append_text_json(text, def.out_signature);
  text += ",\"preamble\":";
  append_text_json(text, def.preamble);
  text += def.reduce_dims ? ",\"reduce_dims\":true" : ",\"reduce_dims\":false";
  text += ",\"specialization\":";
  return text;
}

std::string elementwise_manifest_entry(const ElementwiseDefinition& def,
                                       const EwSpecialization& s) {
  std::string text =
      def.manifest_prefix.empty() ? elementwise_manifest_prefix(def) : def.manifest_prefix;
  text += spec_json_text(s);
  text += '}';
  return text;
}

std::pair<ElementwiseDefinition, EwSpecialization> elementwise_from_manifest(
    const std::string& entry) {
  try {
    const nlohmann::json j = nlohmann::json::parse(entry);
    auto text = [&](const char* field) {
      return require_text(j.at(field), std::string("manifest entry: \"") + field + "\"");
    };
    ElementwiseDefinition def = make_elementwise_definition(
        text("in_params"), text("out_params"), text("operation"), text("name"), text("preamble"),
        text("loop_prep"), text("after_loop"),
        require_texts(j.at("options"), "manifest entry: \"options\""), j.at("reduce_dims"));
    if (j.contains("link")) def.link = require_link(j.at("link"), "manifest entry: \"link\"");
    EwSpecialization s;
    read_spec_json(j.at("specialization"), s);
    if (s.params.size() != def.in.size() + def.out.size() || s.ndim < 1 || s.ndim > 64 ||
        s.vec < 1 || s.vec > 16 || s.block_size < 1 || s.block_size > 1024 ||
        (s.tile_rows != 32 && s.tile_rows != 64 && s.tile_rows != 128)) {
      throw ArgumentError("cujit: manifest entry for '" + def.name + "' is inconsistent");
    }
    return {std::move(def), std::move(s)};
  } catch (const nlohmann::json::exception& e) {
    throw ArgumentError("cujit: malformed elementwise manifest entry: " + json_error_text(e));
  }
}

}  // namespace cujit::detail
