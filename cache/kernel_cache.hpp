#pragma once
// The process-wide kernel cache: the memory layer, then a chain of tiers (tier_chain.hpp: the
// deployment databases, the writable database, code for compatible targets, the fleet), then
// the compiler. Knows nothing about CUDA; the caller supplies, as one Compiler object, how to
// generate the source and compile it, so the cache never parses or generates anything itself.

#include <cujit/cache.hpp>
#include <cujit/program.hpp>

#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace cujit::detail {

/// What the caller knows about a kernel before generating any source: a canonical text
/// naming everything that selects the generated code (kernel kind, signature strings,
/// snippets, options, argument specialisation) and the target. The cache adds versions.
struct KernelRequest {
  std::string kind;  ///< "elementwise", "reduction", "raw"
  std::string spec;  ///< canonical text; equal specs must generate equal sources
  Target target;
  /// Manifest entry (JSON) from which `cujit-cache precompile` can regenerate the source;
  /// empty when the kernel cannot be replayed (then it is not recorded).
  std::string manifest_entry;
  /// The kernel's name, for messages ("squared_diff").
  std::string name;
  /// Other targets whose code runs where `target` is wanted, best first (compatible_targets of
  /// the device): searched by request key after `target` itself, before compiling.
  std::vector<Target> compatible;
  /// The digest of the on-disk headers the program may include (include_digest.hpp), part of
  /// its request and content keys; empty when it includes none.
  std::string include_digest;
  /// With an include digest: a compiled kernel is also stored under the request key without
  /// it, where a target that does not have the headers looks (`cujit-cache precompile`).
  bool link_without_headers = false;
};

/// The request key of `r` for `target` (its own, or a compatible one): kind, spec, target, the
/// compiler's identity and the include digest (record.hpp's request_key).
std::string request_key(const KernelRequest& r, const Target& target);

/// Generates the source for a request (called only on a miss at the request level).
using GenerateFn = std::function<SourceProgram()>;
/// Compiles a generated program; attaches metadata to the result.
using CompileFn = std::function<CompiledProgram(const SourceProgram&)>;

/// The last tier of the cache, which the caller supplies with each request: it makes the
/// request's source (only when a tier or the compilation needs it, at most once per lookup),
/// compiles it, and may turn PTX found for a compatible target into a cubin for the request's
/// target (the driver's JIT). Used by one lookup at a time.
class Compiler {
 public:
  virtual ~Compiler() = default;
  /// The request's source; what it throws propagates to the caller.
  virtual SourceProgram generate() = 0;
  /// `source` compiled for the request's target, with its metadata. Throws CompileError
  /// (CompilerUnavailableError when no compiler can be loaded).
  virtual CompiledProgram compile(const SourceProgram& source) = 0;
  /// Whether jit_ptx works; when not, PTX found for a compatible target is served as it is.
  virtual bool jits_ptx() const { return false; }
  /// `ptx` JIT-compiled into a cubin for the request's target (then stored for it, so the JIT
  /// happens once per machine). May throw cujit::Error (then the next compatible target is
  /// tried).
  virtual CompiledProgram jit_ptx(const CompiledProgram& ptx);
};

/// A Compiler made of functions (tests, tools, benchmarks, raw modules). `jit` may be empty.
class FunctionCompiler final : public Compiler {
 public:
  using JitFn = std::function<CompiledProgram(const CompiledProgram& ptx)>;
  FunctionCompiler(GenerateFn generate, CompileFn compile, JitFn jit = {})
      : generate_(std::move(generate)), compile_(std::move(compile)), jit_(std::move(jit)) {}
  SourceProgram generate() override { return generate_(); }
  CompiledProgram compile(const SourceProgram& source) override { return compile_(source); }
  bool jits_ptx() const override { return static_cast<bool>(jit_); }
  CompiledProgram jit_ptx(const CompiledProgram& ptx) override { return jit_(ptx); }

 private:
  GenerateFn generate_;
  CompileFn compile_;
  JitFn jit_;
};

/// How `cujit-cache precompile` turns a manifest entry back into a kernel: each kernel family
/// (elementwise, reduction, raw) registers one ReplayFn for its `kind` at static-init time.
struct ReplayedKernel {
  KernelRequest request;
  GenerateFn generate;
  CompileFn compile;
};
using ReplayFn = std::function<ReplayedKernel(const std::string& manifest_entry, const Target&)>;
/// Registers the replay function of a kernel kind. Thread-safe.
void register_replay(const std::string& kind, ReplayFn fn);
/// Rebuilds a kernel from a manifest entry (JSON with a "kind" field) for `target`; throws
/// ArgumentError for an unknown kind or a malformed entry.
ReplayedKernel replay(const std::string& manifest_entry, const Target& target);

/// The manifest entry of the generic specialisation of a recorded one (a kernel that serves
/// every layout of the call's dtypes, which a target without a compiler falls back to), or
/// nullopt when its family has none or the entry is generic already.
using GenericFn = std::function<std::optional<std::string>(const std::string& manifest_entry)>;
/// Registers the generic entries of a kernel kind. Thread-safe.
void register_generic(const std::string& kind, GenericFn fn);
/// generic_entry of `manifest_entry`'s kind; nullopt for a kind without one. Throws
/// ArgumentError for a malformed entry.
std::optional<std::string> generic_entry(const std::string& manifest_entry);

class Store;

/// Where get_or_compile found a program.
enum class CacheOutcome : std::uint8_t {
  MemoryHit,      ///< in this process's memory (including waiting for another thread)
  DiskHit,        ///< in the writable database
  DeploymentHit,  ///< in a read-only deployment database
  RemoteHit,      ///< in the fleet tier (verified, then stored in the writable database)
  Compiled,       ///< compiled by the caller's Compiler (a miss)
};

class KernelCache {
 public:
  /// The process-wide cache, configured from the environment on first use. Never
  /// destroyed; pending last-used times are written at exit.
  static KernelCache& global();

  /// A cache with its own memory layer and databases (opened lazily, on first need).
  /// `cujit-cache precompile` uses one writing into the output database.
  explicit KernelCache(CacheConfig config);
  /// A cache over given stores, for tests: `writable` may be null (memory only); the
  /// deployment stores are searched in order before compiling. `record_path` as in
  /// CacheConfig.
  KernelCache(std::shared_ptr<Store> writable, std::vector<std::shared_ptr<Store>> deployments,
              std::string record_path = {});
  /// Writes pending last-used times; never throws.
  ~KernelCache();
  KernelCache(const KernelCache&) = delete;
  KernelCache& operator=(const KernelCache&) = delete;

  /// Returns the compiled program for `request`: from memory, else from the chain of tiers
  /// (tier_chain.hpp: by request key, then by content key after generating the source), else
  /// compiled by `compiler` and stored. Concurrent callers asking for the same missing kernel
  /// compile it once. Storage failures degrade to a warning; compile errors propagate. Reports
  /// where the program came from in `*outcome` (when not null). Thread-safe.
  std::shared_ptr<const CompiledProgram> get_or_compile(const KernelRequest& request,
                                                        Compiler& compiler,
                                                        CacheOutcome* outcome = nullptr);
  /// As above, with a FunctionCompiler of `generate` and `compile` (no PTX JIT).
  std::shared_ptr<const CompiledProgram> get_or_compile(const KernelRequest& request,
                                                        const GenerateFn& generate,
                                                        const CompileFn& compile,
                                                        CacheOutcome* outcome = nullptr);

  /// Replaces the configuration: drops the memory layer and closes the databases (programs
  /// already handed out stay valid; compilations in flight finish with the old layers).
  /// Thread-safe.
  void configure(CacheConfig config);
  /// The current configuration (deployment databases added later included). Thread-safe.
  CacheConfig config() const;
  /// Opens a deployment database now and searches it after those configured. Throws
  /// CacheError naming the path when it cannot be used. Thread-safe.
  void add_deployment_database(const std::string& path);
  /// Opens the databases in a background thread, so that the first lookup does not wait for
  /// them (a few hundred microseconds for the writable database in WAL mode), then reads the
  /// writable database's most recently used kernels ahead (CacheConfig::preload_records);
  /// call it early, for example while a CUDA context is being created. Failures degrade as on
  /// first use. Once per configuration: a later call returns the first one's future. Thread-
  /// safe; returns at once, with a future that is ready when the background work is done (for
  /// tests; nothing needs to wait for it).
  std::shared_future<void> prefetch();
  /// The programs prefetch() read ahead that no lookup has taken yet, most recently used
  /// first (the runtime loads their modules in the background). Thread-safe.
  std::vector<std::shared_ptr<const CompiledProgram>> preloaded_programs() const;
  /// The writable store, opening it if needed; null when disabled or unusable (after its
  /// one warning). Thread-safe.
  std::shared_ptr<Store> writable_store();
  /// Hit and miss counters of this cache; nvrtc_compilations and warnings are the
  /// process's. Thread-safe.
  CacheStats stats() const;
  /// Zeroes this cache's hit and miss counters. Thread-safe.
  void reset_stats();
  /// Forgets every program in the memory layer (the next lookups go to the databases).
  /// Thread-safe.
  void clear_memory();
  /// Number of programs in the memory layer. Thread-safe.
  std::size_t memory_size() const;
  /// Writes pending last-used times and counters to the writable database; failures degrade
  /// to a warning. Thread-safe.
  void flush();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cujit::detail
