#include "tools/cujit_cache/signing.hpp"

#include "tools/cujit_cache/tool_util.hpp"

#include <fmt/format.h>

#include <iostream>
#include <map>

namespace cujit::tool {

using detail::DatabaseTransfer;
using detail::SqliteStore;

namespace {

using detail::SignatureVerdict;

// The verdict's name in --json output.
const char* short_name(SignatureVerdict verdict) {
  switch (verdict) {
    case SignatureVerdict::Valid:
      return "valid";
    case SignatureVerdict::Unsigned:
      return "unsigned";
    case SignatureVerdict::Malformed:
      return "malformed";
    case SignatureVerdict::UnknownSigner:
      return "untrusted";
    case SignatureVerdict::BadSignature:
      return "bad";
  }
  return "unknown";
}

void count(SignatureAudit& audit, SignatureVerdict verdict) {
  switch (verdict) {
    case SignatureVerdict::Valid:
      ++audit.valid;
      break;
    case SignatureVerdict::Unsigned:
      ++audit.unsigned_entries;
      break;
    case SignatureVerdict::Malformed:
      ++audit.malformed;
      break;
    case SignatureVerdict::UnknownSigner:
      ++audit.untrusted;
      break;
    case SignatureVerdict::BadSignature:
      ++audit.bad;
      break;
  }
}

std::string key_ids(const std::vector<detail::TrustedKey>& trusted) {
  std::string out;
  for (const auto& k : trusted) out += (out.empty() ? "" : ", ") + k.id;
  return out.empty() ? "none" : out;
}

}  // namespace

detail::DatabaseTransfer::SignOutcome sign_database(detail::DatabaseTransfer& database,
                                                    const detail::SigningKey& key) {
  return database.sign_all([&key](const detail::CacheRecord& record, const std::string& request) {
    return detail::sign_entry(record, request, key);
  });
}

SignatureAudit audit_signatures(detail::DatabaseTransfer& database,
                                const std::vector<detail::TrustedKey>& trusted) {
  const std::map<std::string, std::string> signatures = database.signatures();
  SignatureAudit audit;
  auto check = [&](const detail::CacheRecord& record, const std::string& request) {
    const std::string& key = request.empty() ? record.content_key : request;
    auto found = signatures.find(key);
    const std::string none;
    SignatureProblem p;
    p.verdict = detail::verify_entry(
        record, request, found == signatures.end() ? none : found->second, trusted, &p.signer);
    count(audit, p.verdict);
    if (p.verdict == SignatureVerdict::Valid) return;
    p.key = key;
    p.content_key = record.content_key;
    p.request = !request.empty();
    audit.problems.push_back(std::move(p));
  };
  database.for_each_record(
      [&](const detail::CacheRecord& record, const std::vector<std::string>& requests) {
        check(record, "");
        for (const auto& request : requests) check(record, request);
      });
  return audit;
}

nlohmann::json audit_json(const SignatureAudit& audit,
                          const std::vector<detail::TrustedKey>& trusted) {
  nlohmann::json ids = nlohmann::json::array();
  for (const auto& k : trusted) ids.push_back(k.id);
  nlohmann::json problems = nlohmann::json::array();
  for (const auto& p : audit.problems) {
    problems.push_back({{"key", p.key},
                        {"content_key", p.content_key},
                        {"what", p.request ? "request" : "entry"},
                        {"verdict", short_name(p.verdict)},
                        {"message", detail::to_string(p.verdict)},
                        {"signer", p.signer}});
  }
  return {{"valid", audit.valid},
          {"unsigned", audit.unsigned_entries},
          {"malformed", audit.malformed},
          {"untrusted", audit.untrusted},
          {"bad", audit.bad},
          {"trusted_keys", ids},
          {"problems", problems},
          {"ok", audit.ok()}};
}

std::string audit_text(const SignatureAudit& audit,
                       const std::vector<detail::TrustedKey>& trusted) {
  std::string out = fmt::format(
      "signatures: {} valid, {} unsigned, {} malformed, {} by untrusted keys, {} bad (trusted "
      "keys: {})\n",
      audit.valid, audit.unsigned_entries, audit.malformed, audit.untrusted, audit.bad,
      key_ids(trusted));
  for (const auto& p : audit.problems) {
    const std::string what =
        p.request ? "request " + p.key + " -> entry " + p.content_key : "entry " + p.content_key;
    out += fmt::format("  {}: {}{}\n", what, detail::to_string(p.verdict),
                       p.signer.empty() ? "" : " (key id " + p.signer + ")");
  }
  return out;
}

nlohmann::json sign_json(const DatabaseTransfer::SignOutcome& s, const detail::SigningKey& key) {
  return {{"entries", s.entries},
          {"requests", s.requests},
          {"damaged_skipped", s.damaged},
          {"key_id", detail::key_id(key.public_key)}};
}

std::string sign_text(const std::string& path, const DatabaseTransfer::SignOutcome& s,
                      const detail::SigningKey& key) {
  std::string out =
      fmt::format("signed {} and {} of {} with key {}\n", count(s.entries, "entry", "entries"),
                  count(s.requests, "request mapping", "request mappings"), path,
                  detail::key_id(key.public_key));
  if (s.damaged > 0) {
    out += fmt::format("skipped {} (run cujit-cache verify on it)\n",
                       count(s.damaged, "damaged entry", "damaged entries"));
  }
  return out;
}

// Signs every entry and request mapping of an existing database (one this user owns).
int sign(const Options& o, const std::string& key_file) {
  const detail::SigningKey key = detail::read_signing_key(key_file);
  auto store = SqliteStore::open_existing(db_path(o), store_options(o));
  DatabaseTransfer admin(*store);
  const DatabaseTransfer::SignOutcome s = sign_database(admin, key);
  if (o.json) {
    nlohmann::json j = sign_json(s, key);
    j["path"] = db_path(o);
    print_json(j);
  } else {
    std::cout << sign_text(db_path(o), s, key);
  }
  return s.damaged > 0 ? 1 : 0;
}

// Writes a key pair for signing cache entries; the secret stays with builders.
int keygen(const Options& o, const std::string& prefix) {
  const detail::SigningKey key = detail::generate_signing_key();
  detail::write_key_pair(prefix, key, o.force);
  const std::string id = detail::key_id(key.public_key);
  if (o.json) {
    print_json({{"secret_key", prefix + ".key"}, {"public_key", prefix + ".pub"}, {"key_id", id}});
    return 0;
  }
  std::cout << "wrote " << prefix << ".key (secret, mode 0600: for builders, "
            << "CUJIT_CACHE_SIGNING_KEY)\nwrote " << prefix << ".pub (key id " << id
            << ": for readers, CUJIT_CACHE_TRUSTED_KEYS)\n";
  return 0;
}

}  // namespace cujit::tool
