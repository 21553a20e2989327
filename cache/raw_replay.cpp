#include "cache/raw_replay.hpp"

#include <cujit/error.hpp>

#include "cache/json_text.hpp"

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
  if (!program.link_inputs.empty()) {  // the code itself: a replay links the same bytes
    nlohmann::json link = nlohmann::json::array();
    for (const LinkInput& input : program.link_inputs) {
      link.push_back({to_string(input.kind), text_json(input.name), text_json(input.bytes)});
    }
    j["link"] = link;
  }
  return dump_json(j);
}

namespace {

LinkInput::Kind link_kind(const std::string& text) {
  for (auto kind : {LinkInput::Kind::LtoIr, LinkInput::Kind::Cubin, LinkInput::Kind::Fatbin,
                    LinkInput::Kind::Ptx}) {
    if (text == to_string(kind)) return kind;
  }
  throw ArgumentError("cujit: raw manifest entry: unknown link input kind '" + text + "'");
}

std::vector<LinkInput> link_inputs(const nlohmann::json& link) {
  const std::string what = "raw manifest entry: \"link\" [kind, name, bytes] triple";
  if (!link.is_array()) throw ArgumentError("cujit: " + what + "s must be an array");
  std::vector<LinkInput> out;
  for (const auto& l : link) {
    if (!l.is_array() || l.size() != 3) throw ArgumentError("cujit: " + what + " expected");
    out.push_back(
        {link_kind(require_text(l[0], what)), require_text(l[1], what), require_text(l[2], what)});
  }
  return out;
}

}  // namespace

KernelRequest raw_kernel_request(const SourceProgram& program, const Target& target) {
  KernelRequest r;
  r.kind = "raw";
  r.manifest_entry = raw_manifest_entry(program);
  r.spec = r.manifest_entry;
  r.target = target;
  r.name = program.name;
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
  if (auto link = j.find("link"); link != j.end()) p.link_inputs = link_inputs(*link);
  return p;
}

}  // namespace cujit::detail
