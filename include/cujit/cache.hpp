#pragma once
/// \file Configuring cujit's kernel cache and reading its counters.
///
/// Compiled kernels are kept in three layers: in process memory; in a writable SQLite
/// database (by default `$XDG_CACHE_HOME/cujit/kernels.db`, else `~/.cache/cujit/kernels.db`);
/// and in read-only deployment databases built by `cujit-cache precompile`, consulted before
/// compiling. The environment configures the process-wide cache on first use:
///
/// | variable | meaning |
/// | --- | --- |
/// | `CUJIT_CACHE` | `on` (default), `off` (memory only, no fleet tier), `readonly` (no writable
/// database) | | `CUJIT_CACHE_DIR` | directory of the writable database | | `CUJIT_CACHE_PATH` |
/// deployment databases, `a.db:b.db`, searched in order | | `CUJIT_CACHE_MAX_SIZE` | size limit of
/// the writable database: bytes, or with K/M/G suffix | | `CUJIT_CACHE_ALLOW_FOREIGN` | `1`: use
/// caches owned by another user or writable by others | | `CUJIT_CACHE_PRELOAD` | how many recently
/// used kernels to read ahead (default 64; 0: none) | | `CUJIT_MODULE_PRELOAD` | `0`: do not load
/// the read-ahead kernels' modules in the background | | `CUJIT_RECORD` | append every kernel a run
/// uses to this manifest (JSON lines) | | `CUJIT_CACHE_REMOTE` | fleet tier:
/// `redis://[user:password@]host:port[/db]` or `unix:///path.sock` | |
/// `CUJIT_CACHE_REMOTE_TIMEOUT_MS` | `connect,operation` timeouts of the fleet tier (default
/// `50,100`) | | `CUJIT_CACHE_SIGNING_KEY` | secret key file (`cujit-cache keygen`) that signs
/// kernels this process publishes | | `CUJIT_CACHE_TRUSTED_KEYS` | public key files (`a.pub:b.pub`)
/// whose signatures make remote kernels loadable | | `CUJIT_CACHE_TRUST_ANY_WRITER` | `1`: load
/// unsigned or unknown-signer remote kernels (trusts everyone who can write Redis) | |
/// `CUJIT_CACHE_REQUIRE_SIGNED` | `1`: deployment databases serve only kernels signed by a trusted
/// key |

#include <cstdint>
#include <cujit/export.hpp>
#include <functional>
#include <string>
#include <vector>

namespace cujit {

/// Default size limit of the writable cache database (1 GiB).
inline constexpr std::uint64_t kDefaultCacheMaxSize = std::uint64_t{1} << 30;
/// Most bytes of kernel binaries that prefetch_cache() reads ahead (16 MiB).
inline constexpr std::uint64_t kPreloadMaxBytes = std::uint64_t{16} << 20;

/// How the kernel cache stores compiled kernels. A plain value; apply it with configure_cache.
struct CUJIT_EXPORT CacheConfig {
  /// Use the writable database. False: compiled kernels live in process memory only.
  bool writable = true;
  /// Directory of the writable database; empty: default_cache_directory(). Created with
  /// mode 0700 when missing.
  std::string directory;
  /// Explicit file of the writable database; overrides `directory` when not empty.
  std::string database_path;
  /// Read-only deployment databases, searched in order before compiling; opened immutable.
  std::vector<std::string> deployment_databases;
  /// Manifest file (JSON lines) that every kernel specialisation used is appended to once;
  /// empty: no recording.
  std::string record_path;
  /// Size limit of the writable database in bytes; least recently used kernels are evicted
  /// beyond it. 0: no limit.
  std::uint64_t max_size = kDefaultCacheMaxSize;
  /// Load databases owned by another user or writable by group or others. Off by default:
  /// such a database could hand this process arbitrary machine code.
  bool allow_foreign_owner = false;
  /// How long to wait for another process's lock before giving up on the database (ms).
  int busy_timeout_ms = 5000;
  /// How many of the writable database's most recently used kernels prefetch_cache() (called
  /// when a device is first used) reads into memory in the background, checksums verified:
  /// a new process's first call of a kernel it used before then costs no SQLite lookup.
  /// At most kPreloadMaxBytes of binaries are kept. 0: none.
  std::size_t preload_records = 64;
  /// How long a process that misses a kernel another process on this host is compiling into
  /// the same writable database waits for it (ms) before compiling it itself; the other
  /// process dying ends the wait at once. 0: never wait (every process compiles its misses).
  int lease_timeout_ms = 60000;

  /// The fleet tier, searched after the local databases and before compiling:
  /// `redis://[user:password@]host[:port][/db]` or `unix:///path/redis.sock[?db=N]`. Empty: none.
  /// Kernels compiled here are published to it in the background.
  std::string remote_url;
  /// Connecting to the fleet tier gives up after this long (ms).
  int remote_connect_timeout_ms = 50;
  /// One fleet-tier operation gives up after this long (ms).
  int remote_timeout_ms = 100;
  /// After a fleet-tier failure (one warning), the tier is skipped for this long (ms).
  int remote_backoff_ms = 30000;
  /// How long a process that misses a kernel another host is compiling waits for its
  /// publication (ms) before compiling it itself; also the lease's lifetime. 0: no fleet lease.
  int remote_lease_ms = 30000;
  /// Secret key file that signs the kernels this process publishes (and `precompile --sign`).
  std::string signing_key_path;
  /// Public key files, ':'-separated: remote kernels are loaded only with a valid signature by
  /// one of them (and deployment databases, with require_signed_deployments).
  std::string trusted_keys_path;
  /// Load remote kernels without a valid trusted signature. Off by default: anyone who can
  /// write the Redis server could then run code in every process of the fleet.
  bool trust_any_writer = false;
  /// Deployment databases serve only kernels signed by a key in trusted_keys_path
  /// (`cujit-cache precompile --sign`): a kernel found by request key needs a valid signature
  /// of that request mapping, one found by content key a valid signature of the entry. Anything
  /// else is refused (one warning per cause per database, counted in
  /// CacheStats::deployment_refused) and looked up further or compiled; with no usable trusted
  /// key, every deployment kernel is refused. The writable database is the process's own and
  /// needs no signatures.
  bool require_signed_deployments = false;

  /// The configuration the environment variables above describe. A malformed value is
  /// reported with a warning and ignored. Thread-safe.
  static CacheConfig from_environment();
};

/// Replaces the configuration of the process-wide cache: closes its databases and empties
/// its memory layer (programs already handed out stay valid). Databases are opened lazily;
/// a database that cannot be used later degrades to a warning. Thread-safe.
CUJIT_EXPORT void configure_cache(const CacheConfig& config);

/// The configuration of the process-wide cache. Thread-safe.
CUJIT_EXPORT CacheConfig cache_config();

/// Keeps compiled kernels in process memory only: no database is read or written, and the
/// fleet tier is off. Equivalent to `CUJIT_CACHE=off`. Thread-safe.
CUJIT_EXPORT void disable_cache();

/// Adds a read-only deployment database to the process-wide cache, searched after those
/// already configured. Opens it now; throws CacheError naming the path when it is missing,
/// not a cujit cache database, of another schema version, or refused for its owner or
/// permissions. Thread-safe.
CUJIT_EXPORT void add_deployment_database(const std::string& path);

/// Opens the cache databases in a background thread and returns at once, so that the first
/// kernel does not wait for them (a few hundred microseconds for the writable database), and
/// reads the writable database's most recently used kernels ahead (CacheConfig::
/// preload_records). cujit calls it when a device is first used, and then also loads those
/// kernels' modules into the device's context in the background (CUJIT_MODULE_PRELOAD=0: not);
/// call it earlier still, for example before creating a CUDA context yourself (`import cujit`
/// calls it). Once per cache configuration: later calls, until configure_cache(), do nothing.
/// Thread-safe.
CUJIT_EXPORT void prefetch_cache();

/// The default directory of the writable database: `$CUJIT_CACHE_DIR`, else
/// `$XDG_CACHE_HOME/cujit`, else `$HOME/.cache/cujit`. Thread-safe.
CUJIT_EXPORT std::string default_cache_directory();

/// Counters of the process-wide cache since the process started (or the last
/// reset_cache_stats). Lookups that find a kernel in memory, in the writable database or in a
/// deployment database are hits; a miss compiles.
struct CUJIT_EXPORT CacheStats {
  /// Found in the process's memory.
  std::uint64_t memory_hits = 0;
  std::uint64_t disk_hits = 0;        ///< found in the writable database
  std::uint64_t deployment_hits = 0;  ///< found in a read-only deployment database
  /// Of the disk and deployment hits, those served by code for another target than the
  /// device's own sm_XY (cujit::compatible_targets, in this order): an arch-specific sm_XYa
  /// cubin, a cubin of the same major and a lower minor, PTX JIT-compiled by the driver (then
  /// stored as the device's cubin in the writable database: the JIT runs once per machine).
  std::uint64_t arch_specific_hits = 0;
  /// Of those, served by a cubin of the same major and a lower minor.
  std::uint64_t compatible_cubin_hits = 0;
  /// Of those, served by PTX JIT-compiled by the driver.
  std::uint64_t ptx_hits = 0;
  /// Entries a deployment database found but did not serve because signed deployments are
  /// required (CacheConfig::require_signed_deployments) and the entry's signature is missing,
  /// malformed, by an untrusted key or not over this entry (or no trusted key can be used).
  std::uint64_t deployment_refused = 0;
  std::uint64_t misses = 0;              ///< compiled by the cache's caller-supplied compiler
  std::uint64_t nvrtc_compilations = 0;  ///< cujit::nvrtc_compile_count() of the process
  std::uint64_t warnings = 0;            ///< cache warnings issued by this process
  /// The fleet tier (CacheConfig::remote_url): kernels found there (verified, then stored in
  /// the writable database), lookups that found nothing, entries refused (bad or missing
  /// signature, malformed, too large, wrong type), kernels published, operations that failed
  /// or timed out, and the total time spent in lookups (microseconds).
  std::uint64_t remote_hits = 0;
  /// Fleet lookups that found nothing.
  std::uint64_t remote_misses = 0;
  /// Fleet entries refused.
  std::uint64_t remote_refused = 0;
  /// Kernels published to the fleet.
  std::uint64_t remote_published = 0;
  /// Fleet operations that failed or timed out.
  std::uint64_t remote_errors = 0;
  /// Time spent in fleet lookups, microseconds.
  std::uint64_t remote_lookup_us = 0;
  /// Kernels this process waited for because another host held their fleet lease, and of
  /// those, the ones published in time (the rest were compiled here after the wait).
  std::uint64_t remote_lease_waits = 0;
  /// Of those waits, the kernels published in time.
  std::uint64_t remote_lease_served = 0;
};

/// Counters of the process-wide cache. Thread-safe.
CUJIT_EXPORT CacheStats cache_stats();

/// Zeroes the hit and miss counters of the process-wide cache (not nvrtc_compilations and
/// warnings, which count the whole process). Thread-safe.
CUJIT_EXPORT void reset_cache_stats();

/// Receives each warning's text (without the "cujit: warning: " prefix).
using WarningSink = std::function<void(const std::string& message)>;

/// Replaces where warnings go (by default stderr, as "cujit: warning: <message>") and
/// returns the previous sink; an empty sink restores the default. Warnings are counted
/// whatever the sink. The sink may be called from any thread. Thread-safe. A sink set here
/// receives every warning whatever CUJIT_LOG says; cujit/log.hpp's set_log_sink receives
/// warnings only while none is set here, and info and debug messages too.
CUJIT_EXPORT WarningSink set_warning_sink(WarningSink sink);

/// Number of warnings cujit has issued in this process. Thread-safe.
CUJIT_EXPORT std::uint64_t warning_count() noexcept;

}  // namespace cujit
