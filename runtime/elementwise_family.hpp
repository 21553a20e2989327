#pragma once
// The elementwise family behind the steps every family takes (runtime/family.hpp): resolve,
// the call's geometry, plan, specialise, build, and the manifest entry back into a
// definition and a specialisation. The launch path (runtime/elementwise.cpp), offline
// specialize() and `cujit-cache precompile`'s replay all go through it, so a kernel
// specialised without a GPU is the one a first call looks up.

#include <cujit/program.hpp>

#include "codegen/elementwise_codegen.hpp"
#include "codegen/elementwise_plan.hpp"
#include "codegen/kernel_call.hpp"
#include "runtime/launcher.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

namespace cujit::detail {

/// CUJIT_EW_TILE_ROWS (32, 64 or 128) and CUJIT_EW_BLOCKS_PER_SM, read once.
const EwTuning& elementwise_tuning();

struct ElementwiseFamily {
  using Definition = ElementwiseDefinition;
  using Resolved = ResolvedTypes;
  using Specialization = EwSpecialization;
  using Plan = EwPlan;
  static constexpr const char* kKind = "elementwise";
  static constexpr const char* kWho = "kernel";

  /// What besides the arguments decides a call's plan.
  struct Call {
    std::int64_t size = -1;  ///< the element count when no non-raw array gives the shape
    int block_size = 0;      ///< 0 chooses
  };
  /// The shape a call runs over: the broadcast of its arrays, or `size` elements.
  struct Geometry {
    const Shape* shape = nullptr;
    Shape sized;
    Geometry() = default;
    Geometry(const Geometry&) = delete;
    Geometry& operator=(const Geometry&) = delete;
    const Shape& out_shape() const { return *shape; }
    bool empty() const { return shape_product(*shape) == 0; }
    static constexpr const char* kOutputs =
        "the broadcast of the inputs is";  ///< given outputs must match
    static constexpr const char* kWhat = "the broadcast shape";
  };

  /// The dtypes of every parameter for the first `count` arguments. Throws as
  /// resolve_call_types does.
  static Resolved resolve(const Definition& def, const ArgDesc* args, std::size_t count);
  static const ResolvedTypes& types(const Resolved& resolved) { return resolved; }
  /// The arrays that give the shape: all of them (given outputs must have it too).
  static std::size_t shape_args(const ParamList&, std::size_t count) { return count; }
  /// Fills `g` for a call whose arrays `scan` found. Throws as elementwise_shape does.
  static void geometry(const Who& who, const ArrayScan& scan, const Call& call, Geometry& g);
  static Plan plan(const Definition& def, const Resolved& types, const ArgDesc* args,
                   std::size_t given, const Geometry& g, const Call& call,
                   const DeviceLimits& device);
  /// The specialisation of `plan` into `spec` (reused across calls: no allocation).
  static void specialise(const Definition& def, const Resolved& types, const Plan& plan,
                         const ArgDesc* args, std::size_t given, Specialization& spec);
  /// What compiling `spec` of `def` for `target` takes; both are shared with its closures.
  static FamilyBuild build(std::shared_ptr<const Definition> def,
                           std::shared_ptr<const Specialization> spec, const Target& target);
  /// The manifest entry of `spec` (also the cache's request spec).
  static std::string manifest_entry(const Definition& def, const Specialization& spec);
  /// The inverse of manifest_entry. Throws ArgumentError.
  static std::pair<Definition, Specialization> from_manifest(const std::string& entry);
  /// The generic specialisation of a call whose own is `own` (codegen/elementwise_plan.hpp);
  /// nullopt when its arrays have more dimensions than a generic one serves.
  static std::optional<Specialization> generic(const Specialization& own);
};

}  // namespace cujit::detail
