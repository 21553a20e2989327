#include "tools/cujit_cache/signing.hpp"

#include <fmt/format.h>

#include <map>

namespace cujit::tool {
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

detail::DatabaseAdmin::SignOutcome sign_database(detail::DatabaseAdmin& database,
                                                 const detail::SigningKey& key) {
  return database.sign_all([&key](const detail::CacheRecord& record, const std::string& request) {
    return detail::sign_entry(record, request, key);
  });
}

SignatureAudit audit_signatures(detail::DatabaseAdmin& database,
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

}  // namespace cujit::tool
