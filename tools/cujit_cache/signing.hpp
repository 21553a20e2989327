#pragma once
// cujit-cache's signing of databases (the `sign` and `keygen` commands, `precompile --sign`) and
// the signature check of `verify --trusted-keys`.

#include "cache/database_transfer.hpp"
#include "cache/entry_signature.hpp"
#include "tools/cujit_cache/tool_options.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace cujit::tool {

/// Signs every intact entry of `database` (its content key) and every request mapped to one, with
/// `key`, replacing older signatures, in one transaction. Throws CacheError.
detail::DatabaseTransfer::SignOutcome sign_database(detail::DatabaseTransfer& database,
                                                    const detail::SigningKey& key);

/// What sign_database did, as `sign --json` and `precompile --sign --json` report it.
nlohmann::json sign_json(const detail::DatabaseTransfer::SignOutcome& outcome,
                         const detail::SigningKey& key);

/// What sign_database did to the database at `path`, as text (a line, and one more when
/// damaged entries were skipped).
std::string sign_text(const std::string& path, const detail::DatabaseTransfer::SignOutcome& outcome,
                      const detail::SigningKey& key);

/// The `sign` command: signs every entry and request mapping of an existing database (one this
/// user owns) with the secret key in `key_file`. Returns 1 when damaged entries were skipped,
/// else 0. Throws cujit::Error (exit status 2).
int sign(const Options& o, const std::string& key_file);

/// The `keygen` command: writes a key pair for signing cache entries, PREFIX.key (the secret,
/// for builders) and PREFIX.pub; replaces existing files only with --force. Returns 0. Throws
/// cujit::Error (exit status 2).
int keygen(const Options& o, const std::string& prefix);

/// A signature that does not verify.
struct SignatureProblem {
  std::string key;          ///< the request key or content key it is stored under
  std::string content_key;  ///< the entry (the one the request maps to)
  bool request = false;     ///< a request mapping's signature; else the entry's own
  detail::SignatureVerdict verdict = detail::SignatureVerdict::Unsigned;
  std::string signer;  ///< key id, when the blob names one
};

/// What audit_signatures found, counted per verdict over every intact entry and every request
/// mapped to one (damaged entries are verify's checksum findings, not counted here).
struct SignatureAudit {
  std::uint64_t valid = 0;
  std::uint64_t unsigned_entries = 0;
  std::uint64_t malformed = 0;
  std::uint64_t untrusted = 0;
  std::uint64_t bad = 0;
  std::vector<SignatureProblem> problems;  ///< everything not valid
  bool ok() const noexcept { return problems.empty(); }
};

/// Checks the signature of every intact entry (signed alone) and of every request mapping in
/// `database` against `trusted`. Throws CacheError.
SignatureAudit audit_signatures(detail::DatabaseTransfer& database,
                                const std::vector<detail::TrustedKey>& trusted);

/// The audit as `verify --json` reports it: counts, the trusted key ids, the problems.
nlohmann::json audit_json(const SignatureAudit& audit,
                          const std::vector<detail::TrustedKey>& trusted);

/// The audit as text: a line of counts, then one line per problem.
std::string audit_text(const SignatureAudit& audit, const std::vector<detail::TrustedKey>& trusted);

}  // namespace cujit::tool
