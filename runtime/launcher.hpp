#pragma once
// The launcher every kernel family shares. A family supplies its definition, resolve, plan,
// generate and pack; the launcher owns the per-kernel caches (resolved types, loaded
// specialisations), the compilation through the kernel cache with the snippet analysis beside
// it, the mapping of NVRTC errors onto the user's snippets, loading, and the launch itself.

#include <cujit/array.hpp>
#include <cujit/error.hpp>
#include <cujit/kernel_args.hpp>
#include <cujit/program.hpp>

#include "cache/kernel_cache.hpp"
#include "codegen/kernel_call.hpp"
#include "codegen/snippet_analysis.hpp"
#include "runtime/module.hpp"

#include <cuda.h>

#include <functional>
#include <memory>
#include <mutex>
#include <chrono>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace cujit::detail {

/// A map from keys to shared immutable values with a double-checked lookup: readers take the
/// lock only to find; a miss computes outside the lock and the first insert wins. Bounded:
/// `max_size` > 0 starts over when full (a program that calls with ever new shapes).
template <class Key, class Value, class Hash = std::hash<Key>>
class SharedCache {
 public:
  explicit SharedCache(std::size_t max_size = 0) : max_size_(max_size) {}
  std::shared_ptr<const Value> find(const Key& key) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = map_.find(key);
    return it == map_.end() ? nullptr : it->second;
  }
  std::shared_ptr<const Value> insert(const Key& key, std::shared_ptr<const Value> value) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (max_size_ > 0 && map_.size() >= max_size_) map_.clear();
    return map_.emplace(key, std::move(value)).first->second;
  }

 private:
  std::size_t max_size_;
  mutable std::mutex mutex_;
  std::unordered_map<Key, std::shared_ptr<const Value>, Hash> map_;
};

/// Argument descriptions of a call, on the stack; only the described ones are constructed.
class CallDescs {
 public:
  void describe(std::size_t k, const Arg& arg);
  void describe(std::size_t k, const Array& array);
  const ArgDesc* data() const { return reinterpret_cast<const ArgDesc*>(storage_); }

 private:
  alignas(ArgDesc) unsigned char storage_[sizeof(ArgDesc) * kMaxCallArgs];
};

/// "dtype kind" bytes of the first `count` arguments: the key of their resolved types.
std::string type_key(const Arg* args, std::size_t count);

/// Appends `value`'s bytes to `key`.
template <class T>
void put_bytes(std::string& key, const T& value) {
  key.append(reinterpret_cast<const char*>(&value), sizeof(T));
}

/// CUJIT_TRACE_SPECIALIZE=1: reports a call that planned (arguments of a look the kernel
/// object had not seen): planning, with its specialisation, from `start` to `planned`, then the
/// rest of the call (outputs, packing, the launch) until now.
void trace_planned_call(const std::string& kernel, std::chrono::steady_clock::time_point start,
                        std::chrono::steady_clock::time_point planned);

/// Appends to a call's key what planning reads of `arg`: its dtype, and of an array its
/// storage, device, shape, strides and 16-byte alignment (the widest vector access), never
/// its address. Returns the array's device, or -1 for a scalar or an array without storage.
int put_argument_look(std::string& key, const Arg& arg);

/// What a family compiles for one specialisation.
struct FamilyBuild {
  KernelRequest request;                 ///< kind, spec (manifest entry), target
  std::function<SnippetSet()> snippets;  ///< for the clang analysis
  std::function<SourceProgram()> generate;
  std::string kernel;                                              ///< for messages
  std::vector<std::pair<std::string, std::string>> snippet_texts;  ///< label, text
  /// The device's JIT (for_device): PTX of a compatible target, or compiled for a device newer
  /// than NVRTC, into a cubin for request.target. Empty offline.
  std::function<CompiledProgram(const CompiledProgram& ptx)> jit_ptx;
};

/// A family's build of kernel `name` whose request spec (and manifest entry) is `spec`, for
/// `target`, from snippets labelled as `snippet_texts` compiled with `options`: everything but
/// the closures (snippets, generate), which the family sets. The request carries the digest of
/// the on-disk headers the snippets may include (cache/include_digest.hpp).
FamilyBuild family_build(const char* kind, const std::string& name, std::string spec,
                         const Target& target,
                         std::vector<std::pair<std::string, std::string>> snippet_texts,
                         const std::vector<std::string>& options);

/// The program of `build`, through the kernel cache. On a miss NVRTC compiles; only when it
/// reports an error does the clang analysis run (its error, the more precise, wins), and
/// NVRTC's errors are mapped onto the snippets. `outcome`, when not null, receives where the
/// cache found the program.
std::shared_ptr<const CompiledProgram> compile_family(const FamilyBuild& build,
                                                      CacheOutcome* outcome = nullptr);

/// Registers `cujit-cache precompile`'s replay of a family's manifest entries.
void register_family_replay(
    const std::string& kind,
    std::function<FamilyBuild(const std::string& entry, const Target&)> parse);

/// What a device asks of the kernel cache: a cubin for its own sm_XY (known without NVRTC),
/// the compatible targets searched before compiling, and the driver's JIT for PTX found among
/// them or compiled for a device newer than NVRTC.
struct DeviceTarget {
  Target target;
  std::vector<Target> compatible;
  std::function<CompiledProgram(const CompiledProgram& ptx)> jit_ptx;
};
DeviceTarget device_target(int device);

/// `build` asking for code that runs on the device of `device`: its request searches the
/// compatible targets and JIT-compiles PTX.
FamilyBuild for_device(FamilyBuild build, const DeviceTarget& device);

/// The target of `device`, the compilation of `build_for(target)` and its module loaded on
/// `device` (CUJIT_TRACE_SPECIALIZE=1 prints where the time went).
std::shared_ptr<const LoadedModule> compile_and_load(
    const std::string& kernel, int device,
    const std::function<std::shared_ptr<const CompiledProgram>(const DeviceTarget&)>& build_for);

/// Compiles `program` for `target` with NVRTC; for a device newer than NVRTC (with a `jit`),
/// PTX for the newest architecture NVRTC knows, JIT-compiled.
CompiledProgram compile_for_target(
    const SourceProgram& program, const Target& target,
    const std::function<CompiledProgram(const CompiledProgram& ptx)>& jit);

/// `symbol` of `module`; throws ArgumentError naming `kernel` when it is missing.
CUfunction kernel_function(const LoadedModule& module, const std::string& symbol,
                           const std::string& kernel);

/// Grid and block of one launch.
struct LaunchShape {
  unsigned grid_x = 1, grid_y = 1;
  unsigned block_x = 1, block_y = 1;
  unsigned shared_bytes = 0;  ///< dynamic shared memory per block
};

/// Launches `function` on `stream` of `device` (whose context it makes current). `dependent`:
/// with programmatic stream serialisation, scheduled while the previous kernel's last blocks
/// run (the kernel waits with griddepcontrol.wait). Throws CudaError naming `what` ("the
/// second pass of reduction kernel") and `kernel`.
void launch_function(CUfunction function, const LaunchShape& shape, CUstream stream, void** params,
                     int device, bool dependent, const char* what, const std::string& kernel);

/// Rethrows a CompileError from NVRTC for a generated kernel with a message that names the
/// kernel and the snippet ("operation line 2") where NVRTC's log points into one (#line).
[[noreturn]] void rethrow_snippet_error(
    const CompileError& error, const std::string& kernel,
    const std::vector<std::pair<std::string, std::string>>& snippets);

}  // namespace cujit::detail
