#include "cache/raw_replay.hpp"

#include <cujit/error.hpp>

#include <nlohmann/json.hpp>

namespace cujit::detail {
namespace {

std::vector<std::string> string_list(const nlohmann::json& entry, const char* field) {
  std::vector<std::string> out;
  auto it = entry.find(field);
  if (it == entry.end()) return out;
  if (!it->is_array()) {
    throw ArgumentError(std::string("cujit: raw manifest entry: \"") + field +
                        "\" must be an array of strings");
  }
  for (const auto& v : *it) {
    if (!v.is_string()) {
      throw ArgumentError(std::string("cujit: raw manifest entry: \"") + field +
                          "\" must be an array of strings");
    }
    out.push_back(v.get<std::string>());
  }
  return out;
}

ReplayedKernel replay_raw(const std::string& entry, const Target& target) {
  SourceProgram program = raw_program_from_entry(entry);
  ReplayedKernel k;
  k.request = raw_kernel_request(program, target);
  k.generate = [program] { return program; };
  k.compile = [target](const SourceProgram& p) { return compile(p, target); };
  return k;
}

const bool registered = [] {
  register_replay("raw", replay_raw);
  return true;
}();

}  // namespace

std::string raw_manifest_entry(const SourceProgram& program) {
  nlohmann::json j = {{"kind", "raw"},
                      {"source", program.source},
                      {"options", program.options},
                      {"name_expressions", program.name_expressions}};
  // Optional fields appear only when they differ from the defaults, so that the common entry
  // stays short and stable.
  if (program.name != SourceProgram{}.name) j["name"] = program.name;
  if (!program.headers.empty()) {
    nlohmann::json headers = nlohmann::json::array();
    for (const auto& [name, text] : program.headers) headers.push_back({name, text});
    j["headers"] = headers;
  }
  return j.dump();
}

KernelRequest raw_kernel_request(const SourceProgram& program, const Target& target) {
  KernelRequest r;
  r.kind = "raw";
  r.manifest_entry = raw_manifest_entry(program);
  r.spec = r.manifest_entry;
  r.target = target;
  return r;
}

SourceProgram raw_program_from_entry(const std::string& entry) {
  nlohmann::json j = nlohmann::json::parse(entry, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    throw ArgumentError("cujit: raw manifest entry is not a JSON object");
  }
  auto source = j.find("source");
  if (source == j.end() || !source->is_string()) {
    throw ArgumentError("cujit: raw manifest entry has no string \"source\"");
  }
  SourceProgram p;
  p.source = source->get<std::string>();
  if (auto name = j.find("name"); name != j.end()) {
    if (!name->is_string())
      throw ArgumentError("cujit: raw manifest entry: \"name\" must be a string");
    p.name = name->get<std::string>();
  }
  p.options = string_list(j, "options");
  p.name_expressions = string_list(j, "name_expressions");
  if (auto headers = j.find("headers"); headers != j.end()) {
    if (!headers->is_array()) {
      throw ArgumentError(
          "cujit: raw manifest entry: \"headers\" must be an array of "
          "[name, contents] pairs");
    }
    for (const auto& h : *headers) {
      if (!h.is_array() || h.size() != 2 || !h[0].is_string() || !h[1].is_string()) {
        throw ArgumentError(
            "cujit: raw manifest entry: \"headers\" must be an array of "
            "[name, contents] pairs");
      }
      p.headers.emplace_back(h[0].get<std::string>(), h[1].get<std::string>());
    }
  }
  return p;
}

}  // namespace cujit::detail
