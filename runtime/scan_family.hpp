#pragma once
// The scan family behind the steps every family takes (runtime/family.hpp): resolve (with the
// scanned value's type), the call's geometry (the broadcast shape and the scanned axis), plan,
// specialise, build, and the manifest entry back into a definition and a specialisation. The
// launch path (runtime/scan.cpp), offline specialize() and `cujit-cache precompile`'s replay
// all go through it.

#include <cujit/program.hpp>

#include "codegen/kernel_call.hpp"
#include "codegen/scan_codegen.hpp"
#include "codegen/scan_plan.hpp"
#include "runtime/launcher.hpp"

#include <memory>
#include <optional>
#include <string>
#include <utility>

namespace cujit::detail {

struct ScanFamily {
  using Definition = ScanDefinition;
  using Specialization = ScanSpecialization;
  using Plan = ScanPlan;
  static constexpr const char* kKind = "scan";
  static constexpr const char* kWho = "scan kernel";

  struct Resolved {
    ResolvedTypes types;
    std::string scan_ctype;  ///< the scanned value's C++ type
  };
  /// What besides the arguments decides a call's plan.
  struct Call {
    const ReduceOptions* reduce = nullptr;  ///< the axis (none: every element)
    int block_size = 0;                     ///< 0 chooses
  };
  /// The broadcast input shape and the scanned axis; outputs have that shape (a select
  /// kernel's: `kept_shape`).
  struct Geometry {
    ScanAxis axis;
    Shape kept_shape;
    const Shape& out_shape() const { return kept_shape.empty() ? axis.shape : kept_shape; }
    bool empty() const { return axis.n == 0; }
    static constexpr const char* kOutputs = "the scan gives";  ///< given outputs must match
    static constexpr const char* kWhat = "the shape";
  };

  static Resolved resolve(const Definition& def, const ArgDesc* args, std::size_t count);
  static const ResolvedTypes& types(const Resolved& resolved) { return resolved.types; }
  /// The arrays that give the shape: the inputs.
  static std::size_t shape_args(const ParamList& params, std::size_t) { return params.n_in(); }
  /// Fills `g`; throws ArgumentError when no input is an array, ShapeError for a bad axis.
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
  /// Scans have no generic specialisation yet: every layout is recorded as its own.
  static std::optional<Specialization> generic(const Specialization&) { return std::nullopt; }
};

/// CUJIT_SCAN_BLOCK, CUJIT_SCAN_ITEMS and CUJIT_SCAN_MIN_BLOCKS, read once.
const ScanTuning& scan_tuning();

/// Select kernels: a scan of the predicate's counts over every element in C order, whose
/// outputs (the kept values or indices, and the count) are written by position.
struct SelectFamily : ScanFamily {
  static constexpr const char* kKind = "select";
  static constexpr const char* kWho = "select kernel";
  inline static const ReduceOptions kEveryElement{};
  /// What besides the arguments decides a call's plan.
  struct Call {
    int block_size = 0;  ///< 0 chooses
  };
  /// Fills `g` for every element; the kept values are 1-d with as many elements.
  static void geometry(const Who& who, const ArrayScan& scan, const Call& call, Geometry& g);
  /// The scan's plan with an int (or, past 2^31 elements, long long) count.
  static Plan plan(const Definition& def, const Resolved& resolved, const ArgDesc* args,
                   std::size_t given, const Geometry& g, const Call& call,
                   const DeviceLimits& device);
};

}  // namespace cujit::detail
