#include "tools/cujit_cache/inspect_commands.hpp"

#include "cache/compiler_identity.hpp"
#include "cache/database_admin.hpp"
#include "cache/kernel_names.hpp"
#include "cache/units.hpp"
#include "support/sha256.hpp"
#include "tools/cujit_cache/signing.hpp"
#include "tools/cujit_cache/tool_util.hpp"

#include <fmt/format.h>
#include <sys/stat.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <iostream>
#include <optional>
#include <vector>

namespace cujit::tool {

using detail::DatabaseAdmin;
using detail::SqliteStore;
using nlohmann::json;

namespace {

// An NVRTC identity as recorded ("13.0 (109338064 bytes, 1792100186)": version, library size
// and time) for people: "13.0 (build 1a2b3c4d)", the size and time as one short label.
std::string readable_nvrtc(const std::string& identity) {
  const std::size_t open = identity.find(" (");
  if (open == std::string::npos || identity.find(" bytes, ", open) == std::string::npos) {
    return identity;
  }
  return identity.substr(0, open) + " (build " +
         detail::to_hex(detail::sha256(identity.substr(open))).substr(0, 8) + ")";
}

json summary_json(const detail::RecordSummary& r) {
  return {{"key", r.content_key},
          {"content_key", r.content_key},
          {"name", r.name},
          {"kind", r.kind},
          {"target", r.target},
          {"record_size", r.record_size},
          {"binary_size", r.binary_size},
          {"source_size", r.source_size},
          {"created", iso_time(r.created)},
          {"last_used", iso_time(r.last_used)}};
}

// True when `names` (kernel_names' "a,b") holds `kernel`.
bool names_kernel(const std::string& names, const std::string& kernel) {
  return ("," + names + ",").find("," + kernel + ",") != std::string::npos;
}

// No --db, and the user cache does not exist yet (nothing was cached): not an error.
bool user_cache_missing(const Options& o) {
  struct stat st {};
  return o.db.empty() && ::stat(db_path(o).c_str(), &st) != 0;
}

}  // namespace

// `kernel` (--kernel): only the entries of that kernel. Without --db and before anything was
// cached, the user cache does not exist yet: an empty listing, not an error.
int ls(const Options& o, const std::string& kernel) {
  std::vector<detail::RecordSummary> records;
  if (!user_cache_missing(o)) {
    records = DatabaseAdmin(*SqliteStore::open_existing(db_path(o), store_options(o))).list(true);
  }
  if (!kernel.empty()) {
    records.erase(std::remove_if(records.begin(), records.end(),
                                 [&](const auto& r) { return !names_kernel(r.name, kernel); }),
                  records.end());
  }
  if (o.json) {
    json j = json::array();
    for (const auto& r : records) j.push_back(summary_json(r));
    print_json(j);
    return 0;
  }
  std::cout << fmt::format("{:<16}  {:<24}  {:<11}  {:<11}  {:>10}  {}\n", "CONTENT KEY", "KERNEL",
                           "KIND", "TARGET", "BINARY", "LAST USED");
  for (const auto& r : records) {
    std::cout << fmt::format("{:<16}  {:<24}  {:<11}  {:<11}  {:>10}  {}\n",
                             r.content_key.substr(0, 16), r.name.empty() ? "?" : r.name, r.kind,
                             r.target, detail::format_bytes(r.binary_size), iso_time(r.last_used));
  }
  std::cout << count(records.size(), "entry", "entries") << " in " << db_path(o)
            << (user_cache_missing(o) ? " (no cache yet)" : "") << "\n";
  return 0;
}

// Without --db and before anything was cached: says so, like ls (exit status 0).
int info(const Options& o) {
  if (user_cache_missing(o)) {
    if (o.json) {
      print_json({{"path", db_path(o)}, {"exists", false}, {"entries", 0}});
    } else {
      std::cout << "database:     " << db_path(o) << " (no cache yet)\nentries:      0\n";
    }
    return 0;
  }
  auto store = SqliteStore::open_existing(db_path(o), store_options(o));
  detail::DatabaseInfo i = DatabaseAdmin(*store).info();
  if (o.json) {
    print_json({{"path", i.path},
                {"schema_version", i.schema_version},
                {"file_size", i.file_size},
                {"entries", i.entries},
                {"requests", i.requests},
                {"stored_bytes", i.stored_bytes},
                {"journal_mode", i.journal_mode},
                {"hits", i.hits},
                {"misses", i.misses},
                {"evictions", i.evictions},
                {"stale", i.stale},
                {"signatures", i.signatures},
                {"per_target", i.per_target},
                {"per_kind", i.per_kind},
                {"nvrtc_version", detail::compiler_version()}});
    return 0;
  }
  std::cout << fmt::format(
      "database:     {}\nschema:       {}\nfile size:    {}\nentries:      {} ({} stored, {})"
      "\njournal:      {}\nhits:         {}\nmisses:       {}\nevictions:    "
      "{}\nstale:        {} (other NVRTC or codegen version)\nsignatures:   {}\nnvrtc:        {}\n",
      i.path, i.schema_version, detail::format_bytes(i.file_size), i.entries,
      detail::format_bytes(i.stored_bytes), count(i.requests, "request key", "request keys"),
      i.journal_mode, i.hits, i.misses, i.evictions, i.stale, i.signatures,
      detail::compiler_version().empty() ? "not available here"
                                         : readable_nvrtc(detail::compiler_version()));
  std::cout << "per target:  ";
  for (const auto& [t, n] : i.per_target) std::cout << " " << t << "=" << n;
  std::cout << "\nper kind:    ";
  for (const auto& [k, n] : i.per_kind) std::cout << " " << k << "=" << n;
  std::cout << "\n";
  return 0;
}

int show(const Options& o, const std::string& key, bool with_source) {
  auto store = SqliteStore::open_existing(db_path(o), store_options(o));
  DatabaseAdmin admin(*store);
  auto r = admin.load(key, true);
  if (!r) {
    const std::string message = "no entry with key " + key + " in " + db_path(o);
    if (o.json) {
      print_json({{"error", message}});
    } else {
      std::cerr << "cujit-cache: " << message << "\n";
    }
    return 1;
  }
  auto source = DatabaseAdmin::source_of(*r);
  bool intact = r->checksum_ok() && source.has_value();
  json names = json::array();
  for (const auto& [e, l] : r->program.lowered_names) names.push_back({e, l});
  const std::vector<std::string> requests = admin.request_keys_of(r->content_key);
  std::string kernel = detail::kernel_names_from_options(r->options);
  if (kernel.empty() && source) kernel = detail::kernel_names_in_source(*source);
  if (o.json) {
    json j = {{"key", r->content_key},
              {"content_key", r->content_key},
              {"request_keys", requests},
              {"name", kernel},
              {"kind", r->kind},
              {"target", r->program.target.name()},
              {"binary_size", r->program.binary.size()},
              {"source_size", r->source_size},
              {"checksum", detail::to_hex(r->checksum)},
              {"intact", intact},
              {"created", iso_time(r->created)},
              {"last_used", iso_time(r->last_used)},
              {"nvrtc_version", r->nvrtc_version},
              {"codegen_version", r->codegen_version},
              {"lowered_names", names},
              {"options", json::parse(r->options, nullptr, false)},
              {"metadata", r->program.metadata},
              {"log", r->program.log}};
    if (with_source) j["source"] = source.value_or("");
    print_json(j);
    return intact ? 0 : 1;
  }
  std::cout << fmt::format(
      "content key:  {}\nkernel:       {}\nkind:         {}\ntarget:       {}\nbinary:       {} "
      "(record checksum {}{})\ncreated:      {}\nlast used:    {}\nnvrtc:        {}\n"
      "codegen:      {}\noptions:      {}\nmetadata:     {}\n",
      r->content_key, kernel.empty() ? "?" : kernel, r->kind, r->program.target.name(),
      detail::format_bytes(r->program.binary.size()), detail::to_hex(r->checksum),
      intact ? "" : ", DAMAGED", iso_time(r->created), iso_time(r->last_used),
      readable_nvrtc(r->nvrtc_version), r->codegen_version, r->options, r->program.metadata);
  for (const std::string& request : requests) std::cout << "request key:  " << request << "\n";
  for (const auto& [e, l] : r->program.lowered_names) {
    std::cout << "lowered:      " << e << " -> " << l << "\n";
  }
  if (!r->program.log.empty()) std::cout << "log:\n" << r->program.log << "\n";
  if (with_source) std::cout << "source:\n" << source.value_or("(damaged)") << "\n";
  return intact ? 0 : 1;
}

// `trusted_keys` (--trusted-keys): also check every signature against these public keys.
int verify(const Options& o, bool fix, const std::string& trusted_keys) {
  // Read first: a key file that cannot be used is an error (exit 2), not a finding.
  std::vector<detail::TrustedKey> trusted;
  if (!trusted_keys.empty()) trusted = detail::read_trusted_keys(trusted_keys);
  auto store = SqliteStore::open_existing(db_path(o), store_options(o));
  DatabaseAdmin admin(*store);
  detail::DatabaseTransfer transfer(*store);
  detail::VerifyReport r = admin.verify(fix);
  bool ok = r.integrity_ok && (r.damaged.empty() || r.removed);
  std::optional<SignatureAudit> audit;
  if (!trusted_keys.empty()) {
    audit = audit_signatures(transfer, trusted);
    ok = ok && audit->ok();
  }
  if (o.json) {
    json j = {{"path", db_path(o)},   {"integrity", r.integrity_message},
              {"checked", r.checked}, {"damaged", r.damaged},
              {"removed", r.removed}, {"ok", ok}};
    if (audit) j["signatures"] = audit_json(*audit, trusted);
    print_json(j);
  } else {
    std::cout << fmt::format("{}: integrity {}; {} checked, {} damaged{}\n", db_path(o),
                             r.integrity_ok ? "ok" : "FAILED", count(r.checked, "entry", "entries"),
                             r.damaged.size(), r.removed ? " (removed)" : "");
    if (!r.integrity_ok) std::cout << r.integrity_message << "\n";
    for (const auto& k : r.damaged) std::cout << "  damaged: " << k << "\n";
    if (audit) std::cout << audit_text(*audit, trusted);
  }
  return ok ? 0 : 1;
}

}  // namespace cujit::tool
