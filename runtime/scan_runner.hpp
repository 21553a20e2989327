#pragma once
// What ScanKernel and SelectKernel share below their calls: the resolved types, the loaded
// specialisations and the planned calls of one kernel object, loading a specialisation
// through the kernel cache, and launching a planned call (the tile flags cleared in
// stream-ordered scratch, then one block per tile).

#include <cujit/array.hpp>
#include <cujit/kernel_args.hpp>

#include "codegen/scan_plan.hpp"
#include "runtime/driver.hpp"
#include "runtime/launcher.hpp"
#include "runtime/module.hpp"
#include "runtime/scan_family.hpp"

#include <memory>
#include <string>
#include <vector>

namespace cujit::detail {

/// A loaded specialisation: its kernel and parameter list.
struct ScanLoaded {
  std::shared_ptr<const LoadedModule> module;
  std::vector<AbiParam> parameters;
  CUfunction function = nullptr;
  unsigned shared_bytes = 0;  ///< dynamic shared memory per block (scan_dynamic_shared)
};

/// What a call signature needs besides addresses and scalar values.
struct ScanCall {
  std::shared_ptr<const ScanLoaded> loaded;
  ScanPlan plan;
  std::vector<unsigned char> layout;  ///< the layout struct's bytes
};

/// One kernel object's caches and steps.
class ScanRunner {
 public:
  explicit ScanRunner(std::shared_ptr<const ScanDefinition> def) : def_(std::move(def)) {}

  const ScanDefinition& def() const { return *def_; }
  const std::shared_ptr<const ScanDefinition>& shared_def() const { return def_; }
  /// The resolved types of a call whose arguments are `args` (described by `descs`).
  std::shared_ptr<const ScanFamily::Resolved> resolve(const Arg* args, const ArgDesc* descs,
                                                      std::size_t count);
  /// `spec` loaded on `device` (compiled through the kernel cache on a miss).
  std::shared_ptr<const ScanLoaded> load(const ScanSpecialization& spec, int device);
  /// A planned call: `plan` with its loaded kernel and layout bytes; throws ArgumentError
  /// naming `who` when it has more tiles than one launch takes.
  std::shared_ptr<const ScanCall> make_call(const Who& who, ScanPlan plan, int device);
  /// Launches `call` on `stream` of `device` with the parameters' arrays (null for scalars).
  void execute(const ScanCall& call, const Arg* args, const Array* const* arrays, CUstream stream,
               int device) const;

  SharedCache<std::string, ScanCall>& calls() { return calls_; }

 private:
  void allow_shared(const ScanLoaded& loaded, int device) const;

  std::shared_ptr<const ScanDefinition> def_;
  SharedCache<std::string, ScanFamily::Resolved> resolved_;
  SharedCache<std::string, ScanLoaded> loaded_;     ///< by memo_key (spec bytes and device)
  SharedCache<std::string, ScanCall> calls_{1024};  ///< by call signature
};

}  // namespace cujit::detail
