#include "codegen/reduction_manifest.hpp"

#include "codegen/manifest_json.hpp"
#include "codegen/spec_json.hpp"

#include "support/json_text.hpp"

#include <cujit/error.hpp>

#include "codegen/validation.hpp"

#include <nlohmann/json.hpp>

namespace cujit::detail {
namespace {

bool blank(const std::string& text) {
  return text.find_first_not_of(" \t\r\n") == std::string::npos;
}

// Inputs are used where the map or the preamble names them; outputs are always written by the
// post-map.
ParamUse reduction_param_use(const ReductionDefinition& def) {
  std::vector<std::string> in_names, out_names;
  for (const Param& p : def.in) in_names.push_back(p.name);
  for (const Param& p : def.out) out_names.push_back(p.name);
  ParamUse use = param_use(in_names, std::vector<char>(in_names.size(), 0),
                           {&def.map_expr, &def.preamble}, nullptr);
  const ParamUse out = param_use(out_names, std::vector<char>(out_names.size(), 1),
                                 {&def.post_map_expr, &def.preamble}, nullptr);
  using Flags = std::vector<char> ParamUse::*;
  for (Flags part : {&ParamUse::used, &ParamUse::raw_view_used, &ParamUse::write_only}) {
    (use.*part).insert((use.*part).end(), (out.*part).begin(), (out.*part).end());
  }
  use.any_raw_view |= out.any_raw_view;
  return use;
}

// A peeled specialisation as the planner makes them: rows a block each, one 16-byte vector of
// the loaded inputs' single item size.
bool peel_consistent(const ReductionDefinition& def, const RedSpecialization& s) {
  if (s.strategy != RedStrategy::Rows || s.group != s.block_size || s.vec < 2 ||
      !s.red_contiguous || s.row_loads != 0 || s.rows_per_pass != 1) {
    return false;
  }
  for (std::size_t k = 0; k < def.in.size() && k < s.params.size(); ++k) {
    const RedParam& p = s.params[k];
    if (p.used && !p.scalar && !def.in[k].raw &&
        dtype_size(p.dtype) * static_cast<std::size_t>(s.vec) != 16) {
      return false;
    }
  }
  return true;
}

}  // namespace

ReductionDefinition make_reduction_definition(std::string in_params, std::string out_params,
                                              std::string map_expr, std::string reduce_expr,
                                              std::string post_map_expr, std::string identity,
                                              std::string name, std::string reduce_type,
                                              std::string preamble,
                                              std::vector<std::string> options, bool reduce_dims,
                                              const DefinitionWords& words) {
  if (!is_valid_kernel_name(name)) {
    throw ArgumentError("cujit: invalid kernel name '" + printable(name) +
                        "': expected a C identifier that is not reserved");
  }
  for (const auto& [label, text] :
       {std::pair<const char*, const std::string*>{"map_expr", &map_expr},
        {words.combine, &reduce_expr},
        {"post_map_expr", &post_map_expr}}) {
    if (blank(*text)) {
      throw ArgumentError(std::string("cujit: ") + words.family + " '" + name + "': " + label +
                          " is empty");
    }
  }
  const std::string who = std::string("cujit: ") + words.family + " '" + name + "'";
  check_compile_options(options, who, "compile_options");
  check_type_name(reduce_type, who, words.type);
  ReductionDefinition def;
  def.name = std::move(name);
  def.in = parse_signature(in_params, who, "in_params");
  def.out = parse_signature(out_params, who, "out_params");
  check_signatures(def.in, def.out, who);
  check_param_count(def.in.size() + def.out.size(), who);
  if (def.out.empty()) {
    throw ArgumentError(who + ": out_params declares no output; a " + words.what +
                        " needs at least one");
  }
  bool any_array_input = false;
  for (const Param& p : def.in) any_array_input = any_array_input || !p.raw;
  if (!any_array_input) {
    throw ArgumentError(who +
                        ": in_params needs at least one non-raw input (it gives the shape "
                        "that is " +
                        words.verb + ")");
  }
  def.in_signature = std::move(in_params);
  def.out_signature = std::move(out_params);
  def.map_expr = std::move(map_expr);
  def.reduce_expr = std::move(reduce_expr);
  def.post_map_expr = std::move(post_map_expr);
  def.identity = blank(identity) ? std::string() : std::move(identity);
  def.preamble = std::move(preamble);
  def.reduce_type = std::move(reduce_type);
  def.compile_options = std::move(options);
  def.reduce_dims = reduce_dims;
  def.use = reduction_param_use(def);
  return def;
}

std::string reduction_manifest_entry(const ReductionDefinition& def, const RedSpecialization& s) {
  nlohmann::json entry = {
      {"kind", "reduction"},
      {"name", text_json(def.name)},
      {"in_params", text_json(def.in_signature)},
      {"out_params", text_json(def.out_signature)},
      {"map_expr", text_json(def.map_expr)},
      {"reduce_expr", text_json(def.reduce_expr)},
      {"post_map_expr", text_json(def.post_map_expr)},
      {"identity", text_json(def.identity)},
      {"preamble", text_json(def.preamble)},
      {"reduce_type", text_json(def.reduce_type)},
      {"options", text_json(def.compile_options)},
      {"reduce_dims", def.reduce_dims},
      {"specialization", nullptr},
  };
  if (!def.link.empty()) entry["link"] = link_json(def.link);  // absent: older entries unchanged
  return entry_with_spec(entry, spec_json_text(s));
}

namespace {

// A segmented specialisation has the one kept and one reduced dimension its generator
// assumes, walks each segment in a loop (no fixed loads per row), loads vectors only after a
// peeled head and is no column walk; 64-bit offsets only in a segmented one.
bool segments_consistent(const RedSpecialization& s) {
  if (!s.segmented) return !s.segments64;
  return s.out_ndim == 1 && s.red_ndim == 1 && s.strategy != RedStrategy::Columns &&
         s.row_loads == 0 && (s.vec == 1 || s.peel);
}

// A folded specialisation is the column walk its generator assumes: one kept and one reduced
// dimension, scalar loads, a thread per output and fold, two passes, not segmented.
bool fold_consistent(const RedSpecialization& s) {
  if (!s.fold) return true;
  return s.strategy == RedStrategy::Columns && s.out_ndim == 1 && s.red_ndim == 1 && s.vec == 1 &&
         s.group == 32 && s.two_pass && !s.segmented && !s.peel;
}

// A staged specialisation is the row walk its generator assumes: one kept and one reduced
// contiguous dimension, scalar loads, one pass, not segmented, loaded inputs that fit the tile.
bool stage_consistent(const ReductionDefinition& def, const RedSpecialization& s) {
  if (!s.staged) return true;
  return s.strategy == RedStrategy::Rows && s.out_ndim == 1 && s.red_ndim == 1 && s.vec == 1 &&
         s.red_contiguous && !s.two_pass && !s.segmented && !s.peel && !s.fold &&
         s.row_loads == 0 && reduction_stage_capacity(def, s) >= kMaxStagedRow;
}

}  // namespace

std::pair<ReductionDefinition, RedSpecialization> reduction_from_manifest(
    const std::string& entry) {
  try {
    const nlohmann::json j = nlohmann::json::parse(entry);
    if (j.at("kind") != "reduction") {
      throw ArgumentError("cujit: manifest entry is not a reduction: " + j.at("kind").dump());
    }
    auto text = [&](const char* field) {
      return require_text(j.at(field), std::string("manifest entry: \"") + field + "\"");
    };
    ReductionDefinition def = make_reduction_definition(
        text("in_params"), text("out_params"), text("map_expr"), text("reduce_expr"),
        text("post_map_expr"), text("identity"), text("name"), text("reduce_type"),
        text("preamble"), require_texts(j.at("options"), "manifest entry: \"options\""),
        j.at("reduce_dims"));
    if (j.contains("link")) def.link = require_link(j.at("link"), "manifest entry: \"link\"");
    RedSpecialization s;
    read_spec_json(j.at("specialization"), s);
    // The accumulator type is pasted into the generated source: a type name, never code.
    check_type_name(s.reduce_ctype, "cujit: manifest entry for reduction '" + def.name + "'",
                    "reduce_ctype");
    const bool group_ok = (s.group >= 1 && s.group <= 32 && (s.group & (s.group - 1)) == 0) ||
                          s.group == s.block_size;
    if (s.params.size() != def.in.size() + def.out.size() || s.out_ndim < 1 || s.out_ndim > 64 ||
        s.red_ndim < 1 || s.red_ndim > 64 || s.vec < 1 || s.vec > 16 || !group_ok ||
        s.block_size < 32 || s.block_size > 1024 || s.block_size % 32 != 0 || s.pass2_block < 0 ||
        s.pass2_block > 1024 || s.pass2_block % 32 != 0 || s.reduce_ctype.empty() ||
        s.row_loads < 0 || s.row_loads > 4 || s.rows_per_pass < 1 || s.rows_per_pass > 8 ||
        (s.peel && !peel_consistent(def, s)) || !segments_consistent(s) || !fold_consistent(s) ||
        !stage_consistent(def, s) || (s.segmented && !def.has_identity())) {
      throw ArgumentError("cujit: manifest entry for reduction '" + def.name + "' is inconsistent");
    }
    return {std::move(def), std::move(s)};
  } catch (const nlohmann::json::exception& e) {
    throw ArgumentError("cujit: malformed reduction manifest entry: " + json_error_text(e));
  }
}

}  // namespace cujit::detail
