#pragma once
// The process-wide kernel cache: in-memory layer, writable SQLite database, read-only
// deployment databases. Knows nothing about CUDA; the caller supplies how to generate source
// and how to compile it, so the cache never parses or generates anything itself.

#include <cujit/program.hpp>

#include <functional>
#include <memory>
#include <string>

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
};

/// Generates the source for a request (called only on a miss at the request level).
using GenerateFn = std::function<SourceProgram()>;
/// Compiles a generated program; attaches metadata to the result.
using CompileFn = std::function<CompiledProgram(const SourceProgram&)>;

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

class KernelCache {
 public:
  /// The process-wide cache, configured from the environment on first use.
  static KernelCache& global();

  /// Returns the compiled program for `request`: from memory, else from a database (by
  /// request key, then by content key after generating the source), else by compiling it and
  /// storing the result. Concurrent callers asking for the same missing kernel compile it
  /// once. Storage failures degrade to a warning; compile errors propagate. Thread-safe.
  std::shared_ptr<const CompiledProgram> get_or_compile(const KernelRequest& request,
                                                        const GenerateFn& generate,
                                                        const CompileFn& compile);
};

}  // namespace cujit::detail
