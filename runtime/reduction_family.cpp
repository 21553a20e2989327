#include "runtime/reduction_family.hpp"

#include <cujit/error.hpp>

#include "codegen/reduction_manifest.hpp"
#include "runtime/family.hpp"

#include <algorithm>
#include <cstdlib>
#include <utility>

namespace cujit::detail {
namespace {

int env_int(const char* name, int fallback) {
  const char* value = std::getenv(name);
  return value ? std::max(1, std::atoi(value)) : fallback;
}

SnippetSet snippet_set(const ReductionDefinition& def, const RedSpecialization& s) {
  const ResolvedTypes types = types_of_specialization(def.in, def.out, s.params);
  return reduction_snippet_set(def.name, def.in, def.out, types, s.reduce_ctype, def.map_expr,
                               def.reduce_expr, def.post_map_expr, def.identity, def.preamble);
}

const bool kReplayRegistered = register_replay<ReductionFamily>();

}  // namespace

// Tuning knobs read once from the environment (run-time options, not build switches).
// CUJIT_RED_WAVES: two waves keep every SM busy while the slowest blocks of the first finish
// (H200, 2026-11-22: axis 0 of 16384^2 3914 -> 4309 GB/s; four were slower than two).
// CUJIT_RED_SEG_WAVES: split segments aim for 32 blocks per resident block slot, in chunks of
// whole tiles (H100, 2026-11-23, full sum of 2^28 float32, first pass: 344-349 us; chunks
// that are not whole tiles were slower, 351-362 us). CUJIT_RED_BLOCK: a multiple of 32.
const RedTuning& reduction_tuning() {
  static const RedTuning value = [] {
    RedTuning t;
    const int block = env_int("CUJIT_RED_BLOCK", t.block_size);
    if (block % 32 == 0 && block <= 1024) t.block_size = block;
    t.waves = env_int("CUJIT_RED_WAVES", t.waves);
    t.segment_waves = env_int("CUJIT_RED_SEG_WAVES", t.segment_waves);
    t.segment_lane_loads = env_int("CUJIT_RED_SEG_LOADS", t.segment_lane_loads);
    t.fold_max_outputs = env_int("CUJIT_RED_FOLD", t.fold_max_outputs);
    return t;
  }();
  return value;
}

std::string resolve_reduce_ctype(const ReductionDefinition& def, const ResolvedTypes& types) {
  const std::string& t = def.reduce_type;
  if (t.find_first_not_of(" \t") == std::string::npos) {
    return std::string(dtype_cuda_type(types.out[0]));
  }
  DType dtype;
  if (parse_dtype(t, dtype)) return std::string(dtype_cuda_type(dtype));
  auto it = types.placeholders.find(t);
  if (it != types.placeholders.end()) return std::string(dtype_cuda_type(it->second));
  return t;  // a C++ type, e.g. a struct from the preamble
}

ReductionFamily::Resolved ReductionFamily::resolve(const Definition& def, const ArgDesc* args,
                                                   std::size_t count) {
  Resolved resolved;
  resolved.types = resolve_call_types({kWho, def.name}, ParamList(def.in, def.out), def.in, def.out,
                                      args, count);
  resolved.reduce_ctype = resolve_reduce_ctype(def, resolved.types);
  return resolved;
}

void ReductionFamily::geometry(const Who& who, const ArrayScan& scan, const Call& call,
                               Geometry& g) {
  if (scan.shape == nullptr) {
    throw ArgumentError(who.text() +
                        ": at least one non-raw input must be an array (it gives the shape to "
                        "reduce)");
  }
  g.shape = scan.shape;
  g.axes = reduction_axes(who, *scan.shape, *call.reduce);
}

RedPlan ReductionFamily::plan(const Definition& def, const Resolved& resolved, const ArgDesc* args,
                              std::size_t, const Geometry& g, const Call& call,
                              const DeviceLimits& device) {
  return plan_reduction(def, resolved.types, resolved.reduce_ctype, args, *g.shape, g.axes,
                        call.reduce->keepdims, call.block_size, reduction_tuning(), device);
}

std::optional<RedPlan> ReductionFamily::plan_generic(const Definition& def,
                                                     const Resolved& resolved, const ArgDesc* args,
                                                     const Geometry& g, const Call& call,
                                                     const DeviceLimits& device) {
  return plan_reduction_generic(def, resolved.types, resolved.reduce_ctype, args, *g.shape, g.axes,
                                call.reduce->keepdims, reduction_tuning(), device);
}

std::optional<RedSpecialization> ReductionFamily::generic(const Specialization& own) {
  if (own.segmented) return std::nullopt;  // segments are planned on their mean length
  if (own.out_ndim > kGenericNdim || own.red_ndim > kGenericNdim) return std::nullopt;
  return generic_reduction(own);
}

FamilyBuild ReductionFamily::build(std::shared_ptr<const Definition> def,
                                   std::shared_ptr<const Specialization> spec,
                                   const Target& target) {
  FamilyBuild build = family_build(kKind, def->name, manifest_entry(*def, *spec), target,
                                   {{"preamble", def->preamble},
                                    {"identity", def->identity},
                                    {"map_expr", def->map_expr},
                                    {"reduce_expr", def->reduce_expr},
                                    {"post_map_expr", def->post_map_expr}},
                                   def->compile_options);
  build.snippets = [def, spec] { return snippet_set(*def, *spec); };
  build.generate = [def, spec] { return generate_reduction(*def, *spec); };
  return build;
}

std::string ReductionFamily::manifest_entry(const Definition& def, const Specialization& spec) {
  return reduction_manifest_entry(def, spec);
}

std::pair<ReductionDefinition, RedSpecialization> ReductionFamily::from_manifest(
    const std::string& entry) {
  return reduction_from_manifest(entry);
}

}  // namespace cujit::detail
