#pragma once
// The kernel cache as a chain of tiers (issue 31). A lookup that misses the memory layer goes
// down the chain of tier.hpp's Tier objects in three passes, then to the compiler; the order
// is written once, in TierChain::resolve (tier_chain.cpp). Each tier is testable alone over
// the in-memory store.

#include "cache/kernel_cache.hpp"
#include "cache/key_lease.hpp"
#include "cache/record.hpp"

#include <cujit/program.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace cujit::detail {

/// "kernel 'saxpy' (raw, sm_90)": how messages name a request.
std::string describe_request(const KernelRequest& request);

/// How a program found for another target than the one asked for serves it (counted apart in
/// CacheStats).
enum class TargetMatch : std::uint8_t { Exact, ArchSpecific, CompatibleCubin, Ptx };

/// What a tier found: the program, where it came from, and for which target.
struct Found {
  std::shared_ptr<const CompiledProgram> program;
  CacheOutcome where = CacheOutcome::Compiled;
  TargetMatch match = TargetMatch::Exact;
  explicit operator bool() const noexcept { return program != nullptr; }
};

/// One lookup on its way down the chain: the request and its request key, and the generated
/// source and its content key, made at most once, by the first tier (or the compiler) that
/// needs them. Also what the tiers take before compiling and give back after: the writable
/// store's lease (held until the program is stored) and the fleet's.
class Search {
 public:
  /// `request` and `compiler` must outlive the search.
  Search(const KernelRequest& request, Compiler& compiler);
  const KernelRequest& request() const noexcept { return request_; }
  /// The compiler the caller supplied (the last tier).
  Compiler& compiler() const noexcept { return compiler_; }
  /// request_key() of the request (kind, spec, target and the compiler's identity).
  const std::string& request_key() const noexcept { return request_key_; }
  /// request_key() of the request for another target (a compatible one).
  std::string request_key_for(const Target& target) const;
  /// Whether the source was generated (the by-content pass and later).
  bool generated() const noexcept { return source_.has_value(); }
  /// The generated source; generates it on the first call (what the compiler's generate()
  /// throws propagates).
  const SourceProgram& source();
  /// The content key of source() for the request's target and kind.
  const std::string& content_key();

  std::optional<KeyLease> lease;  ///< the writable store's, taken before compiling
  bool fleet_lease = false;       ///< whether this host holds the fleet's lease of the kernel

 private:
  const KernelRequest& request_;
  Compiler& compiler_;
  RequestKeyHasher keys_;
  std::string request_key_;
  std::optional<SourceProgram> source_;
  std::string content_key_;
};

/// One level of the cache below the memory layer. Every pass is optional; a tier that has
/// nothing to say returns an empty Found. Storage failures degrade inside the tier (a warning,
/// then a miss); compile errors and what the caller's Compiler throws propagate.
class Tier {
 public:
  virtual ~Tier() = default;
  /// Pass 1, by request key, before any source exists.
  virtual Found by_request(Search& search) {
    (void)search;
    return {};
  }
  /// Pass 2, by content key: the same source may have been compiled for another request.
  virtual Found by_content(Search& search) {
    (void)search;
    return {};
  }
  /// Pass 3, just before compiling: another process or host may be compiling it (leases).
  virtual Found before_compile(Search& search) {
    (void)search;
    return {};
  }
  /// After compiling: keeps the program (`record`, null when none could be made).
  virtual void keep(Search& search, const CacheRecord* record) {
    (void)search;
    (void)record;
  }
  /// Compiling failed: gives back what before_compile took. Never throws.
  virtual void abandon(Search& search) noexcept { (void)search; }
};

}  // namespace cujit::detail
