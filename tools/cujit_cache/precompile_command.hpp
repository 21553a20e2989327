#pragma once
// cujit-cache precompile: compiles every entry of a manifest (recorded with CUJIT_RECORD) for
// every target into a deployment database, optionally signed.
//
//   cujit-cache precompile manifest.jsonl --arch sm_80,sm_86,sm_90 [--ptx] -o app.db -j 8
//               [--threads] [--sign builder.key] [--force] [--json]

#include "tools/cujit_cache/tool_options.hpp"

#include <string>
#include <vector>

namespace cujit::tool {

/// The precompile command's own options, filled in by the parse.
struct PrecompileArgs {
  std::string manifest;            ///< the manifest file
  std::vector<std::string> archs;  ///< --arch, each a comma-separated list of targets
  bool ptx = false;                ///< --ptx: also compute_XY for every sm_XY
  std::string output;              ///< -o: the output database
  unsigned jobs = 0;               ///< -j; 0: every core
  bool threads = false;            ///< --threads: threads of one process, not worker processes
  std::string sign_key;            ///< --sign: secret key file; empty: the output is not signed
};

/// Compiles every (manifest entry, target) pair not already in the output into it, with a
/// progress display, and reports what happened. Concurrent precompiles into one output are
/// safe: each compiles into a private database published at the end. A precompile that fails
/// leaves no new file behind. Returns 0 when every job succeeded, 1 when any failed; throws
/// cujit::Error (a manifest, target or key that cannot be used; exit status 2).
int precompile(const Options& o, const PrecompileArgs& a);

}  // namespace cujit::tool
