#include "cache/raw_replay.hpp"

#include <cujit/error.hpp>

#include "cache/include_digest.hpp"
#include "cache/kernel_names.hpp"
#include "support/json_text.hpp"

#include <nlohmann/json.hpp>

namespace cujit::detail {
std::string raw_manifest_entry(const SourceProgram& program) {
  nlohmann::json j = {{"kind", "raw"},
                      {"source", text_json(program.source)},
                      {"options", text_json(program.options)},
                      {"name_expressions", text_json(program.name_expressions)}};
  // Optional fields appear only when they differ from the defaults, so that the common entry
  // stays short and stable.
  if (program.name != SourceProgram{}.name) j["name"] = text_json(program.name);
  if (!program.headers.empty()) {
    nlohmann::json headers = nlohmann::json::array();
    for (const auto& [name, text] : program.headers) {
      headers.push_back({text_json(name), text_json(text)});
    }
    j["headers"] = headers;
  }
  if (!program.link_inputs.empty()) j["link"] = link_json(program.link_inputs);  // the code itself
  return dump_json(j);
}

KernelRequest raw_kernel_request(const SourceProgram& program, const Target& target) {
  KernelRequest r;
  r.kind = "raw";
  r.manifest_entry = raw_manifest_entry(program);
  r.spec = r.manifest_entry;
  r.target = target;
  r.name = program_kernel_names(program);  // "saxpy", not "raw_module.cu", in messages
  r.include_digest = include_digest({program.source}, program.options, program.headers,
                                    "cujit: raw module '" + r.name + "'", program.name);
  return r;
}

SourceProgram raw_program_from_entry(const std::string& entry) {
  nlohmann::json j = nlohmann::json::parse(entry, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    throw ArgumentError("cujit: raw manifest entry is not a JSON object");
  }
  auto source = j.find("source");
  if (source == j.end()) throw ArgumentError("cujit: raw manifest entry has no \"source\"");
  SourceProgram p;
  p.source = require_text(*source, "raw manifest entry: \"source\"");
  if (auto name = j.find("name"); name != j.end()) {
    p.name = require_text(*name, "raw manifest entry: \"name\"");
  }
  auto texts = [&](const char* field) {
    auto it = j.find(field);
    return it == j.end() ? std::vector<std::string>()
                         : require_texts(*it, std::string("raw manifest entry: \"") + field + "\"");
  };
  p.options = texts("options");
  p.name_expressions = texts("name_expressions");
  if (auto headers = j.find("headers"); headers != j.end()) {
    const std::string what = "raw manifest entry: \"headers\" [name, contents] pair";
    if (!headers->is_array()) throw ArgumentError("cujit: " + what + "s must be an array");
    for (const auto& h : *headers) {
      if (!h.is_array() || h.size() != 2) throw ArgumentError("cujit: " + what + " expected");
      p.headers.emplace_back(require_text(h[0], what), require_text(h[1], what));
    }
  }
  if (auto link = j.find("link"); link != j.end()) {
    p.link_inputs = require_link(*link, "raw manifest entry: \"link\"");
  }
  return p;
}

}  // namespace cujit::detail
