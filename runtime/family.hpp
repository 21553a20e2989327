#pragma once
// Every kernel family behind one interface: the steps a call takes (resolve -> geometry ->
// plan -> specialise -> build; packing stays with each family's launch), as static members
// of a family type (ElementwiseFamily, ReductionFamily). Written once over it:
//   - offline_build: ElementwiseKernel::specialize and ReductionKernel::specialize, the steps
//     of a call on described arguments, with no driver;
//   - register_replay: `cujit-cache precompile`'s rebuild of a family's manifest entries;
//   - memo_key: the key under which a kernel object keeps a loaded specialisation, rendered
//     from the specialisation's one serialisation (codegen/spec_serial.hpp).
// A family F provides the types Definition, Resolved, Specialization, Plan, Call (what
// besides the arguments decides the plan) and Geometry (the shapes a call runs over, with
// out_shape(), empty(), kOutputs and kWhat), the names kKind and kWho, and resolve, types,
// shape_args, geometry, plan, specialise, build, manifest_entry, from_manifest and generic (the
// specialisation that serves every layout of a call's dtypes, when the family has one).

#include <cujit/error.hpp>
#include <cujit/kernel_args.hpp>
#include <cujit/specialize.hpp>

#include "codegen/arg_spec.hpp"
#include "codegen/kernel_call.hpp"
#include "codegen/spec_serial.hpp"
#include "core/layout.hpp"
#include "runtime/launcher.hpp"
#include "support/log.hpp"

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace cujit::detail {

/// Throws ArgumentError naming `who`: a call over `shape` (`what`) launches nothing.
[[noreturn]] void nothing_to_launch(const Who& who, const char* what, const Shape& shape);

/// Throws CompilerUnavailableError naming `who`: with no compiler, a call whose arrays collapse
/// to more dimensions than its family's generic specialisation serves (kGenericNdim) has no
/// kernel to run.
[[noreturn]] void no_generic_plan(const Who& who);

/// What F's kernel `def` compiles for described arguments `args`: the steps of a call
/// (outputs not given are described as cujit allocates them), for `target`. Throws as a call
/// with such arguments does, and ArgumentError when the call would launch nothing.
template <class F>
FamilyBuild offline_build(std::shared_ptr<const typename F::Definition> def,
                          const std::vector<ArgSpec>& args, const typename F::Call& call,
                          const Target& target, const SpecializeOptions& options) {
  const ParamList params(def->in, def->out);
  const Who who{F::kWho, def->name};
  const std::size_t count = args.size();
  check_argument_count(who, params, count);
  SpecDescs descs(who, params, args);
  const typename F::Resolved resolved = F::resolve(*def, descs.data(), count);
  ArrayScan scan;
  scan_arrays(scan, who, params, descs.data(), count, F::shape_args(params, count));
  typename F::Geometry g;
  F::geometry(who, scan, call, g);
  if (count == params.size()) {
    check_output_shapes(who, params, descs.data(), g.out_shape(), F::Geometry::kOutputs);
  } else {
    for (std::size_t j = 0; j < params.n_out(); ++j) {
      descs.describe_allocated(params.n_in() + j, g.out_shape(), F::types(resolved).out[j]);
    }
  }
  if (g.empty()) nothing_to_launch(who, F::Geometry::kWhat, g.out_shape());
  const typename F::Plan plan = F::plan(*def, resolved, descs.data(), count, g, call,
                                        device_limits(who, target, options.device));
  auto spec = std::make_shared<typename F::Specialization>();
  F::specialise(*def, resolved, plan, descs.data(), count, *spec);
  return F::build(std::move(def), std::move(spec), target);
}

/// Registers F's replay of manifest entries for `cujit-cache precompile`; returns true (for a
/// static initialiser in F's translation unit).
template <class F>
bool register_replay() {
  register_family_replay(F::kKind, [](const std::string& entry, const Target& target) {
    auto parsed = F::from_manifest(entry);
    return F::build(std::make_shared<const typename F::Definition>(std::move(parsed.first)),
                    std::make_shared<const typename F::Specialization>(std::move(parsed.second)),
                    target);
  });
  register_generic(F::kKind, [](const std::string& entry) -> std::optional<std::string> {
    const auto [def, own] = F::from_manifest(entry);
    const std::optional<typename F::Specialization> generic = F::generic(own);
    if (!generic || generic->key() == own.key()) return std::nullopt;
    return F::manifest_entry(def, *generic);
  });
  return true;
}

/// Without a compiler, a call whose own specialisation `own` was not shipped runs F's generic
/// one when the deployment has it (`load(generic)` loads it), after one info line naming the
/// manifest entry to record; `generic` receives it. Otherwise rethrows `missing`, which names
/// the call's own specialisation, the one to record.
template <class F, class Load>
auto load_generic(const typename F::Definition& def, const typename F::Specialization& own,
                  std::shared_ptr<const typename F::Specialization>& generic,
                  const CompilerUnavailableError& missing, Load&& load) {
  const std::optional<typename F::Specialization> made = F::generic(own);
  if (!made) throw missing;
  generic = std::make_shared<const typename F::Specialization>(*made);
  try {
    auto module = load(generic);
    log_always(LogLevel::Info,
               "kernel '" + def.name +
                   "': no compiler here and this call's specialisation was not shipped; running "
                   "its generic specialisation (slower). Record it for the deployment: " +
                   F::manifest_entry(def, own));
    return module;
  } catch (const CompilerUnavailableError&) {
    throw missing;
  }
}

/// Writes into `key` the key of `spec` loaded on `device` among one kernel object's
/// specialisations (a PerThread buffer keeps a call's lookup free of allocation).
template <class Spec>
void memo_key(std::string& key, const Spec& spec, int device) {
  key.clear();
  key.append(reinterpret_cast<const char*>(&device), sizeof device);
  append_spec_bytes(key, spec);
}

/// A value of type T that one thread's calls reuse (its storage grows once), one per `Tag`.
/// While the thread's thread_local objects are destroyed (a destructor at thread or program
/// exit that launches a kernel), get() returns `fallback` instead of the destroyed value.
template <class T, class Tag>
class PerThread {
 public:
  static T& get(T& fallback) {
    if (gone_) return fallback;
    thread_local Holder holder;
    return holder.value;
  }

 private:
  struct Holder {
    T value;
    ~Holder() { gone_ = true; }
  };
  static thread_local bool gone_;  // trivially destructible: still readable at thread exit
};
template <class T, class Tag>
thread_local bool PerThread<T, Tag>::gone_ = false;

/// Tags of the per-thread buffers of the launch paths.
struct MemoKeyBuffer;
struct CallKeyBuffer;
struct SpecBuffer;

}  // namespace cujit::detail
