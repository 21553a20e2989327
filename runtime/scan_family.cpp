#include "runtime/scan_family.hpp"

#include <cujit/error.hpp>

#include "codegen/scan_manifest.hpp"
#include "codegen/snippet_analysis.hpp"
#include "runtime/family.hpp"
#include "runtime/reduction_family.hpp"

#include <cstdlib>
#include <utility>

namespace cujit::detail {
namespace {

// The snippets as the clang analysis checks them: a reduction's, the combining one labelled
// as the scan's.
SnippetSet snippet_set(const ScanDefinition& def, const ScanSpecialization& s) {
  const ResolvedTypes types = types_of_specialization(def.in, def.out, s.params);
  SnippetSet set =
      reduction_snippet_set(def.name, def.in, def.out, types, s.scan_ctype, def.map_expr,
                            def.reduce_expr, def.post_map_expr, def.identity, def.preamble);
  const bool select = def.select != SelectWhat::None;
  for (Snippet& snippet : set.snippets) {
    if (snippet.label == "reduce_expr") snippet.label = "scan_expr";
    if (select && snippet.label == "map_expr") snippet.label = "predicate";
  }
  return set;
}

const bool kReplayRegistered = register_replay<ScanFamily>();
const bool kSelectReplayRegistered = register_replay<SelectFamily>();

}  // namespace

// CUJIT_SCAN_BLOCK (a multiple of 32 up to 960), CUJIT_SCAN_ITEMS (1 to 32) and
// CUJIT_SCAN_MIN_BLOCKS (0 to 32: __launch_bounds__' second argument), read once:
// run-time tuning knobs, not build switches.
const ScanTuning& scan_tuning() {
  static const ScanTuning value = [] {
    ScanTuning t;
    if (const char* v = std::getenv("CUJIT_SCAN_BLOCK")) {
      const int block = std::atoi(v);
      if (block > 0 && block % 32 == 0 && block <= 960) t.block_size = block;
    }
    if (const char* v = std::getenv("CUJIT_SCAN_ITEMS")) {
      const int items = std::atoi(v);
      if (items >= 1 && items <= 32) t.items = items;
    }
    if (const char* v = std::getenv("CUJIT_SCAN_MIN_BLOCKS")) {
      const int blocks = std::atoi(v);
      if (blocks >= 0 && blocks <= 32) t.min_blocks = blocks;
    }
    return t;
  }();
  return value;
}

ScanFamily::Resolved ScanFamily::resolve(const Definition& def, const ArgDesc* args,
                                         std::size_t count) {
  Resolved resolved;
  const char* who = def.select == SelectWhat::None ? kWho : SelectFamily::kWho;
  resolved.types =
      resolve_call_types({who, def.name}, ParamList(def.in, def.out), def.in, def.out, args, count);
  resolved.scan_ctype = resolve_reduce_ctype(def, resolved.types);
  return resolved;
}

void ScanFamily::geometry(const Who& who, const ArrayScan& scan, const Call& call, Geometry& g) {
  if (scan.shape == nullptr) {
    throw ArgumentError(who.text() +
                        ": at least one input must be an array (it gives the shape to scan)");
  }
  g.axis = scan_axis(who, *scan.shape, *call.reduce);
}

ScanPlan ScanFamily::plan(const Definition& def, const Resolved& resolved, const ArgDesc* args,
                          std::size_t, const Geometry& g, const Call& call, const DeviceLimits&) {
  return plan_scan(def, resolved.types, resolved.scan_ctype, args, g.axis, call.block_size,
                   scan_tuning());
}

FamilyBuild ScanFamily::build(std::shared_ptr<const Definition> def,
                              std::shared_ptr<const Specialization> spec, const Target& target) {
  const bool select = def->select != SelectWhat::None;
  std::vector<std::pair<std::string, std::string>> snippets = {{"preamble", def->preamble}};
  if (select) {
    snippets.push_back({"predicate", def->map_expr});
  } else {
    snippets.insert(snippets.end(), {{"identity", def->identity},
                                     {"map_expr", def->map_expr},
                                     {"scan_expr", def->reduce_expr},
                                     {"post_map_expr", def->post_map_expr}});
  }
  FamilyBuild build =
      family_build(select ? SelectFamily::kKind : kKind, def->name, manifest_entry(*def, *spec),
                   target, snippets, def->compile_options);
  build.snippets = [def, spec] { return snippet_set(*def, *spec); };
  build.generate = [def, spec] { return generate_scan(*def, *spec); };
  return build;
}

void SelectFamily::geometry(const Who& who, const ArrayScan& scan, const Call&, Geometry& g) {
  ScanFamily::geometry(who, scan, ScanFamily::Call{&kEveryElement, 0}, g);
  g.kept_shape = Shape{g.axis.n};
}

ScanPlan SelectFamily::plan(const Definition& def, const Resolved& resolved, const ArgDesc* args,
                            std::size_t, const Geometry& g, const Call& call, const DeviceLimits&) {
  if (def.select == SelectWhat::Values && !args[0].is_array) {
    throw ArgumentError(Who{kWho, def.name}.text() + ": input '" + def.in[0].name +
                        "' is a scalar, but the kept values are the first input's elements: it "
                        "must be an array (or keep indices)");
  }
  // Counts fit an int below 2^31 elements: packed statuses.
  const char* counter = g.axis.n < kInt32IndexLimit ? "int" : "long long";
  return plan_scan(def, resolved.types, counter, args, g.axis, call.block_size, scan_tuning());
}

std::string ScanFamily::manifest_entry(const Definition& def, const Specialization& spec) {
  return scan_manifest_entry(def, spec);
}

std::pair<ScanDefinition, ScanSpecialization> ScanFamily::from_manifest(const std::string& entry) {
  return scan_from_manifest(entry);
}

}  // namespace cujit::detail
