#pragma once
// The reduction family behind the steps every family takes (runtime/family.hpp): resolve
// (with the accumulator's type), the call's geometry (input shape and axes), plan, specialise,
// build, and the manifest entry back into a definition and a specialisation. The launch path
// (runtime/reduction.cpp), offline specialize() and `cujit-cache precompile`'s replay all go
// through it, so a kernel specialised without a GPU is the one a first call looks up.

#include <cujit/program.hpp>

#include "codegen/kernel_call.hpp"
#include "codegen/reduction_codegen.hpp"
#include "codegen/reduction_plan.hpp"
#include "runtime/launcher.hpp"

#include <memory>
#include <optional>
#include <string>
#include <utility>

namespace cujit::detail {

/// CUJIT_RED_BLOCK, CUJIT_RED_WAVES and CUJIT_RED_SEG_WAVES, read once.
const RedTuning& reduction_tuning();

/// The accumulator's C++ type for resolved `types`: the definition's reduce_type (a dtype
/// name, a placeholder or a C++ type), else the first output's type.
std::string resolve_reduce_ctype(const ReductionDefinition& def, const ResolvedTypes& types);

/// Writes into `key` everything about a reduction or scan call that decides its plan: each
/// argument's look (put_argument_look), the block size, the axes and keepdims. Returns the
/// device of the first array (-1 when there is none).
int reduce_call_signature(std::string& key, const Arg* args, std::size_t count,
                          const LaunchOptions& options, const ReduceOptions& reduce);

struct ReductionFamily {
  using Definition = ReductionDefinition;
  using Specialization = RedSpecialization;
  using Plan = RedPlan;
  static constexpr const char* kKind = "reduction";
  static constexpr const char* kWho = "reduction kernel";

  struct Resolved {
    ResolvedTypes types;
    std::string reduce_ctype;  ///< the accumulator's C++ type
  };
  /// What besides the arguments decides a call's plan.
  struct Call {
    const ReduceOptions* reduce = nullptr;  ///< axes and keepdims
    int block_size = 0;                     ///< 0 chooses
  };
  /// The input shape a call reduces and its axes.
  struct Geometry {
    const Shape* shape = nullptr;
    RedAxes axes;
    const Shape& out_shape() const { return axes.out_shape; }
    bool empty() const { return axes.n_out == 0; }
    static constexpr const char* kOutputs = "the reduction gives";  ///< given outputs must match
    static constexpr const char* kWhat = "the output shape";
  };

  static Resolved resolve(const Definition& def, const ArgDesc* args, std::size_t count);
  static const ResolvedTypes& types(const Resolved& resolved) { return resolved.types; }
  /// The arrays that give the shape: the inputs (outputs have the reduced shape).
  static std::size_t shape_args(const ParamList& params, std::size_t) { return params.n_in(); }
  /// Fills `g`; throws ArgumentError when no non-raw input is an array, ShapeError for bad
  /// axes.
  static void geometry(const Who& who, const ArrayScan& scan, const Call& call, Geometry& g);
  static Plan plan(const Definition& def, const Resolved& resolved, const ArgDesc* args,
                   std::size_t given, const Geometry& g, const Call& call,
                   const DeviceLimits& device);
  static void specialise(const Definition&, const Resolved&, const Plan& plan, const ArgDesc*,
                         std::size_t, Specialization& spec) {
    spec = plan.spec;
  }
  static FamilyBuild build(std::shared_ptr<const Definition> def,
                           std::shared_ptr<const Specialization> spec, const Target& target);
  static std::string manifest_entry(const Definition& def, const Specialization& spec);
  static std::pair<Definition, Specialization> from_manifest(const std::string& entry);
  /// The generic specialisation of a call whose own is `own` (codegen/reduction_plan.hpp);
  /// nullopt when its kept or reduced layout has more dimensions than a generic one serves.
  static std::optional<Specialization> generic(const Specialization& own);
  /// The call's generic plan (plan_reduction_generic), or nullopt.
  static std::optional<Plan> plan_generic(const Definition& def, const Resolved& resolved,
                                          const ArgDesc* args, const Geometry& g, const Call& call,
                                          const DeviceLimits& device);
};

}  // namespace cujit::detail
