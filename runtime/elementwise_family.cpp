#include "runtime/elementwise_family.hpp"

#include "codegen/elementwise_manifest.hpp"

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

// What compiling one specialisation takes; `def` and `s` are shared with the closures.
FamilyBuild family_build(std::shared_ptr<const ElementwiseDefinition> def,
                         std::shared_ptr<const EwSpecialization> s, const Target& target) {
  FamilyBuild build;
  build.request.kind = "elementwise";
  build.request.spec = elementwise_manifest_entry(*def, *s);
  build.request.target = target;
  build.request.manifest_entry = build.request.spec;
  build.snippets = [def, s] { return snippet_set(*def, *s); };
  build.generate = [def, s] { return generate_elementwise(*def, *s); };
  build.kernel = def->name;
  build.request.name = def->name;
  build.snippet_texts = {{"preamble", def->preamble},
                         {"loop_prep", def->loop_prep},
                         {"operation", def->operation},
                         {"after_loop", def->after_loop}};
  return build;
}

// Rebuilds elementwise kernels from manifest entries for `cujit-cache precompile`.
const bool kReplayRegistered = [] {
  register_family_replay("elementwise", [](const std::string& entry, const Target& target) {
    auto parsed = elementwise_from_manifest(entry);
    return family_build(std::make_shared<ElementwiseDefinition>(std::move(parsed.first)),
                        std::make_shared<EwSpecialization>(std::move(parsed.second)), target);
  });
  return true;
}();

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

EwBuild elementwise_build(std::shared_ptr<const ElementwiseDefinition> def,
                          const ResolvedTypes& types, const EwPlan& plan, const ArgDesc* args,
                          std::size_t given, const Target& target) {
  EwBuild build;
  build.spec = std::make_shared<const EwSpecialization>(
      elementwise_specialization(*def, types, plan, args, given));
  build.family = family_build(std::move(def), build.spec, target);
  return build;
}

}  // namespace cujit::detail
