#include "runtime/elementwise_family.hpp"

#include "codegen/elementwise_manifest.hpp"
#include "runtime/family.hpp"

#include <algorithm>
#include <cstdlib>
#include <utility>

namespace cujit::detail {
namespace {

// The snippets as the analysis sees them, with the specialisation's resolved types (so a
// snippet that names T is checked too).
SnippetSet snippet_set(const ElementwiseDefinition& def, const EwSpecialization& s) {
  const ResolvedTypes types = types_of_specialization(def.in, def.out, s.params);
  return elementwise_snippet_set(def.name, def.in, def.out, types, def.operation, def.preamble,
                                 def.loop_prep, def.after_loop);
}

const bool kReplayRegistered = register_replay<ElementwiseFamily>();

}  // namespace

const EwTuning& elementwise_tuning() {
  static const EwTuning value = [] {
    EwTuning t;
    if (const char* rows = std::getenv("CUJIT_EW_TILE_ROWS")) {
      const int v = std::atoi(rows);
      if (v == 32 || v == 128) t.tile_rows = v;
    }
    if (const char* blocks = std::getenv("CUJIT_EW_BLOCKS_PER_SM")) {
      t.blocks_per_sm = std::max(1, std::atoi(blocks));
    }
    return t;
  }();
  return value;
}

ResolvedTypes ElementwiseFamily::resolve(const Definition& def, const ArgDesc* args,
                                         std::size_t count) {
  return resolve_call_types({kWho, def.name}, ParamList(def.in, def.out), def.in, def.out, args,
                            count);
}

void ElementwiseFamily::geometry(const Who& who, const ArrayScan& scan, const Call& call,
                                 Geometry& g) {
  g.shape = &elementwise_shape(who, scan, call.size, g.sized);
}

EwPlan ElementwiseFamily::plan(const Definition& def, const Resolved&, const ArgDesc* args,
                               std::size_t, const Geometry& g, const Call& call,
                               const DeviceLimits& device) {
  return plan_elementwise(def, args, *g.shape, call.block_size, elementwise_tuning(), device);
}

void ElementwiseFamily::specialise(const Definition& def, const Resolved& types, const Plan& plan,
                                   const ArgDesc* args, std::size_t given, Specialization& spec) {
  elementwise_specialization(def, types, plan, args, given, spec);
}

FamilyBuild ElementwiseFamily::build(std::shared_ptr<const Definition> def,
                                     std::shared_ptr<const Specialization> spec,
                                     const Target& target) {
  FamilyBuild build = family_build(kKind, def->name, manifest_entry(*def, *spec), target,
                                   {{"preamble", def->preamble},
                                    {"loop_prep", def->loop_prep},
                                    {"operation", def->operation},
                                    {"after_loop", def->after_loop}},
                                   def->compile_options);
  build.snippets = [def, spec] { return snippet_set(*def, *spec); };
  build.generate = [def, spec] { return generate_elementwise(*def, *spec); };
  return build;
}

std::string ElementwiseFamily::manifest_entry(const Definition& def, const Specialization& spec) {
  return elementwise_manifest_entry(def, spec);
}

std::optional<EwSpecialization> ElementwiseFamily::generic(const Specialization& own) {
  if (own.layout == EwLayout::Strided && own.ndim > kGenericNdim) return std::nullopt;
  return generic_elementwise(own);
}

std::pair<ElementwiseDefinition, EwSpecialization> ElementwiseFamily::from_manifest(
    const std::string& entry) {
  return elementwise_from_manifest(entry);
}

}  // namespace cujit::detail
