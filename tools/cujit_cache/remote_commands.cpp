#include "tools/cujit_cache/remote_commands.hpp"

#include "cache/database_transfer.hpp"
#include "cache/entry_signature.hpp"
#include "cache/redis_client.hpp"
#include "cache/remote_endpoint.hpp"
#include "cache/remote_entry.hpp"
#include "cache/server_text.hpp"
#include "cache/units.hpp"
#include "tools/cujit_cache/tool_util.hpp"

#include <cujit/error.hpp>

#include <fmt/format.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <map>
#include <set>
#include <utility>
#include <vector>

namespace cujit::tool {
namespace {

using detail::RedisConnection;
using detail::RedisError;
using detail::RedisFailure;
using detail::SignatureVerdict;
using nlohmann::json;
using Args = RemoteCommands::Args;

// A pipeline of this many SETs (or this many bytes) costs about one round trip.
constexpr std::size_t kBatchEntries = 64;
constexpr std::size_t kBatchBytes = std::size_t{8} << 20;
constexpr int kScanCount = 1000;
// Bounds on one SCAN walk. A hostile server can answer with cursors that never come back to 0
// and new keys each time; a real walk of even a huge fleet ends far below these.
constexpr std::size_t kMaxScanSteps = 100000;
constexpr std::size_t kMaxScanKeys = std::size_t{1} << 20;
constexpr std::size_t kMaxScanKeyBytes = std::size_t{256} << 20;

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

// Connects to the URL given (or $CUJIT_CACHE_REMOTE) with the tool's generous timeouts.
RedisConnection connect(const Args& a) {
  const std::string url = a.url.empty() ? env("CUJIT_CACHE_REMOTE") : a.url;
  if (url.empty()) {
    throw ArgumentError(
        "cujit-cache: no Redis server given: pass --remote redis://[user:password@]host:port[/db] "
        "(or unix:///path/redis.sock[?db=N]) or set CUJIT_CACHE_REMOTE");
  }
  if (a.timeout_ms <= 0) throw ArgumentError("cujit-cache: --timeout-ms must be positive");
  std::string why;
  const auto endpoint = detail::parse_remote_url(url, &why);
  // The URL itself is not repeated: it may hold a password.
  if (!endpoint) throw ArgumentError("cujit-cache: the Redis URL is malformed: " + why);
  const auto op = std::chrono::milliseconds(a.timeout_ms);
  return RedisConnection(*endpoint, std::min(op, std::chrono::milliseconds(2000)), op);
}

[[noreturn]] void scan_failed(const RedisConnection& c, const std::string& pattern,
                              const std::string& why) {
  throw CacheError("cujit-cache: the SCAN of " + c.endpoint().display() + " for " + pattern +
                   " did not finish: " + why + " (a misbehaving server?)");
}

// Every key matching `pattern`, sorted (SCAN may return a key twice). Throws CacheError when
// the walk does not end within the bounds above or a cursor comes back (it would never end).
std::vector<std::string> scan_all(RedisConnection& c, const std::string& pattern) {
  std::set<std::string> keys;
  std::set<std::uint64_t> cursors;
  std::size_t key_bytes = 0;
  std::uint64_t cursor = 0;
  for (std::size_t step = 1;; ++step) {
    std::vector<std::string> batch;
    cursor = c.scan(cursor, pattern, kScanCount, batch);
    for (auto& key : batch) {
      const std::size_t size = key.size();
      if (keys.insert(std::move(key)).second) key_bytes += size;
    }
    if (cursor == 0) break;
    if (keys.size() > kMaxScanKeys || key_bytes > kMaxScanKeyBytes) {
      scan_failed(c, pattern,
                  fmt::format("{} keys ({} of names) after {} steps, over the bound of {} keys "
                              "or {}",
                              keys.size(), detail::format_bytes(key_bytes), step, kMaxScanKeys,
                              detail::format_bytes(kMaxScanKeyBytes)));
    }
    if (step == kMaxScanSteps) scan_failed(c, pattern, fmt::format("no end after {} steps", step));
    if (!cursors.insert(cursor).second) {
      scan_failed(c, pattern, fmt::format("cursor {} came back after {} steps", cursor, step));
    }
  }
  return {keys.begin(), keys.end()};
}

// ---- reading and trusting entries ---------------------------------------------------------

// One kernel key read back and decoded (not yet verified).
struct Fetched {
  enum class Status { Decoded, Vanished, Refused } status = Status::Refused;
  std::string cause;  // when Refused
  std::uint64_t size = 0;
  detail::RemoteEntry entry;
};

Fetched fetch_entry(RedisConnection& c, const std::string& key) {
  Fetched f;
  const std::string request = detail::request_key_of(key);
  if (request.empty()) {
    f.cause = "not a kernel key (no request key in its name)";
    return f;
  }
  detail::BoundedValue value;
  try {
    value = c.get_bounded(key, detail::kMaxRemoteValue);
  } catch (const RedisError& e) {
    if (e.failure() != RedisFailure::Reply) throw;
    f.cause = "not a string value (wrong type)";
    return f;
  }
  f.size = value.size;
  if (value.status == detail::BoundedValue::Status::Missing) {
    f.status = Fetched::Status::Vanished;  // deleted (or evicted) since the scan
    return f;
  }
  if (value.status == detail::BoundedValue::Status::TooLarge) {
    f.cause = "too large (over " + detail::format_bytes(detail::kMaxRemoteValue) + "; not read)";
    return f;
  }
  const detail::RemoteDecode decoded = decode_remote_entry(value.value, request, &f.entry);
  if (decoded != detail::RemoteDecode::Ok) {
    f.cause = to_string(decoded);
    return f;
  }
  f.status = Fetched::Status::Decoded;
  return f;
}

// Whom the reader trusts: --trusted-keys, else $CUJIT_CACHE_TRUSTED_KEYS; and --trust-any.
struct Trust {
  std::vector<detail::TrustedKey> keys;
  bool any = false;
  bool given() const { return !keys.empty() || any; }
  // As the runtime tier: trusting any writer accepts unsigned entries and unknown signers, never
  // a signature that does not match its entry.
  bool accepts(SignatureVerdict v) const {
    return v == SignatureVerdict::Valid ||
           (any && (v == SignatureVerdict::Unsigned || v == SignatureVerdict::UnknownSigner));
  }
};

Trust load_trust(const Args& a) {
  Trust t;
  t.any = a.trust_any;
  const std::string paths = a.trusted.empty() ? env("CUJIT_CACHE_TRUSTED_KEYS") : a.trusted;
  if (!paths.empty()) t.keys = detail::read_trusted_keys(paths);
  return t;
}

// ---- push ---------------------------------------------------------------------------------

// The key entries are signed with: --sign, else $CUJIT_CACHE_SIGNING_KEY, else none.
struct Signer {
  std::optional<detail::SigningKey> key;
  std::string source;  // for the report
  std::string id;
};

Signer load_signer(const Args& a) {
  Signer s;
  const std::string from_env = env("CUJIT_CACHE_SIGNING_KEY");
  const std::string path = a.sign.empty() ? from_env : a.sign;
  if (path.empty()) return s;
  s.key = detail::read_signing_key(path);
  s.id = detail::key_id(s.key->public_key);
  s.source = (a.sign.empty() ? "$CUJIT_CACHE_SIGNING_KEY (" + path + ")" : path);
  return s;
}

// Collects SETs and sends them in pipelined batches.
class Publisher {
 public:
  explicit Publisher(RedisConnection& c) : c_(c) {}
  void add(std::string key, std::string value) {
    batch_bytes_ += key.size() + value.size();
    bytes_ += value.size();
    ++entries_;
    batch_.emplace_back(std::move(key), std::move(value));
    if (batch_.size() >= kBatchEntries || batch_bytes_ >= kBatchBytes) flush();
  }
  void flush() {
    if (batch_.empty()) return;
    c_.set_many(batch_);
    batch_.clear();
    batch_bytes_ = 0;
  }
  std::uint64_t entries() const { return entries_; }
  std::uint64_t bytes() const { return bytes_; }

 private:
  RedisConnection& c_;
  std::vector<std::pair<std::string, std::string>> batch_;
  std::size_t batch_bytes_ = 0;
  std::uint64_t entries_ = 0;
  std::uint64_t bytes_ = 0;
};

struct PushTally {
  std::uint64_t records = 0;
  std::uint64_t entries = 0;
  std::uint64_t bytes = 0;
  std::uint64_t without_request = 0;  // records found only by content key: no fleet entry
  std::uint64_t too_large = 0;
  std::uint64_t damaged = 0;
  double seconds = 0;
};

void report_push(const ToolContext& ctx, const RedisConnection& c, const Signer& s,
                 const PushTally& t) {
  const double seconds = std::max(t.seconds, 1e-9);
  const double per_second = static_cast<double>(t.entries) / seconds;
  const double mb_per_second = static_cast<double>(t.bytes) / 1e6 / seconds;
  if (ctx.json) {
    print_json({{"from", ctx.db_path},
                {"remote", c.endpoint().display()},
                {"records", t.records},
                {"pushed", t.entries},
                {"bytes", t.bytes},
                {"seconds", t.seconds},
                {"entries_per_s", per_second},
                {"mb_per_s", mb_per_second},
                {"signed", s.key.has_value()},
                {"signer", s.key ? json(s.id) : json(nullptr)},
                {"signing_key", s.source},
                {"without_request_key", t.without_request},
                {"too_large", t.too_large},
                {"damaged_skipped", t.damaged}});
    return;
  }
  std::cout << fmt::format(
      "pushed {} ({}) from {} to {}: {} in {:.2f} s, {:.0f} entries/s, {:.1f} MB/s\n",
      count(t.entries, "entry", "entries"), count(t.records, "record", "records"), ctx.db_path,
      c.endpoint().display(), detail::format_bytes(t.bytes), t.seconds, per_second, mb_per_second);
  if (s.key) {
    std::cout << "signed with " << s.source << ", key id " << s.id << "\n";
  } else {
    std::cout << "note: entries are UNSIGNED (no --sign and no CUJIT_CACHE_SIGNING_KEY): readers "
                 "load them only with CUJIT_CACHE_TRUST_ANY_WRITER=1\n";
  }
  if (t.without_request > 0)
    std::cout << fmt::format("skipped {} no request key maps to\n",
                             count(t.without_request, "record", "records"));
  if (t.too_large > 0)
    std::cout << fmt::format("skipped {} over the 64 MiB value limit\n",
                             count(t.too_large, "entry", "entries"));
  if (t.damaged > 0)
    std::cout << fmt::format("skipped {} (run cujit-cache verify)\n",
                             count(t.damaged, "damaged record", "damaged records"));
}

int push(const ToolContext& ctx, const Args& a) {
  auto store = detail::SqliteStore::open_existing(ctx.db_path, ctx.store);
  const Signer signer = load_signer(a);
  RedisConnection c = connect(a);
  Publisher out(c);
  PushTally t;
  const auto started = std::chrono::steady_clock::now();
  t.damaged = detail::DatabaseTransfer(*store).for_each_record(
      [&](const detail::CacheRecord& r, const std::vector<std::string>& request_keys) {
        ++t.records;
        if (request_keys.empty()) ++t.without_request;
        for (const auto& request : request_keys) {
          std::string value = encode_remote_entry(
              request, r, signer.key ? sign_entry(r, request, *signer.key) : std::string());
          if (value.size() > detail::kMaxRemoteValue) {
            ++t.too_large;  // readers refuse it unread
            continue;
          }
          out.add(detail::remote_kernel_key(request), std::move(value));
        }
      });
  out.flush();
  t.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  t.entries = out.entries();
  t.bytes = out.bytes();
  report_push(ctx, c, signer, t);
  return t.damaged > 0 || t.too_large > 0 ? 1 : 0;
}

// ---- pull ---------------------------------------------------------------------------------

struct PullTally {
  std::uint64_t entries = 0;
  std::uint64_t pulled = 0;
  std::uint64_t present = 0;
  std::uint64_t kept = 0;
  std::uint64_t vanished = 0;
  std::map<std::string, std::uint64_t> refused;  // by cause
  json refused_keys = json::array();
  std::uint64_t refused_total() const {
    std::uint64_t n = 0;
    for (const auto& [cause, count] : refused) n += count;
    return n;
  }
  void refuse(const std::string& key, const std::string& cause, const std::string& signer) {
    ++refused[cause];
    refused_keys.push_back({{"key", key}, {"cause", cause}});
    if (!signer.empty()) refused_keys.back()["signer"] = signer;
  }
};

void pull_one(RedisConnection& c, const std::string& key, const Trust& trust,
              detail::DatabaseTransfer& into, PullTally& t) {
  Fetched f = fetch_entry(c, key);
  if (f.status == Fetched::Status::Vanished) {
    ++t.vanished;
    return;
  }
  if (f.status == Fetched::Status::Refused) return t.refuse(key, f.cause, "");
  std::string signer;
  const SignatureVerdict verdict =
      verify_entry(f.entry.record, f.entry.request_key, f.entry.signature, trust.keys, &signer);
  if (!trust.accepts(verdict)) return t.refuse(key, to_string(verdict), signer);
  // The signature comes along (stored only where this import writes the mapping), so that the
  // pulled database can be required signed and verified again.
  std::map<std::string, std::string> signatures;
  if (!f.entry.signature.empty()) signatures.emplace(f.entry.request_key, f.entry.signature);
  const auto outcome = into.import_record(f.entry.record, {f.entry.request_key}, signatures);
  ++(outcome.inserted ? t.pulled : t.present);
  t.kept += outcome.kept_requests;
}

void report_pull(const ToolContext& ctx, const RedisConnection& c, const std::string& to,
                 const PullTally& t) {
  if (ctx.json) {
    print_json({{"remote", c.endpoint().display()},
                {"to", to},
                {"entries", t.entries},
                {"pulled", t.pulled},
                {"already_present", t.present},
                {"requests_kept", t.kept},
                {"vanished", t.vanished},
                {"refused", t.refused_total()},
                {"refused_by_cause", t.refused},
                {"refused_keys", t.refused_keys}});
    return;
  }
  std::cout << fmt::format("pulled {} from {} into {} ({} already present, {} refused)\n",
                           count(t.pulled, "entry", "entries"), c.endpoint().display(), to,
                           t.present, t.refused_total());
  for (const auto& [cause, count] : t.refused)
    std::cout << fmt::format("  refused {}: {}\n", count, cause);
  if (t.kept > 0) {
    std::cout << fmt::format("kept {} of {} that the server maps elsewhere\n",
                             count(t.kept, "request mapping", "request mappings"), to);
  }
  if (t.vanished > 0)
    std::cout << fmt::format("{} while pulling (evicted or deleted)\n",
                             count(t.vanished, "entry vanished", "entries vanished"));
}

int pull(const ToolContext& ctx, const Args& a) {
  const Trust trust = load_trust(a);
  if (!trust.given()) {
    throw ArgumentError(
        "cujit-cache: pull loads kernels into a database that programs will run: name the "
        "builders you trust with --trusted-keys a.pub:b.pub (or CUJIT_CACHE_TRUSTED_KEYS), or "
        "pass --trust-any to accept whatever anyone who can write the server stored");
  }
  RedisConnection c = connect(a);
  const bool new_output = !a.output.empty();
  const std::string to = new_output ? a.output : ctx.db_path;
  if (new_output) ctx.check_output(to);
  auto store = new_output || ::access(to.c_str(), F_OK) != 0
                   ? detail::SqliteStore::open_writable(to, ctx.store)
                   : detail::SqliteStore::open_existing(to, ctx.store);
  detail::DatabaseTransfer into(*store);
  PullTally t;
  for (const auto& key : scan_all(c, detail::remote_kernel_pattern())) {
    ++t.entries;
    pull_one(c, key, trust, into, t);
  }
  if (new_output) into.finalize_for_deployment();  // an output built so is usually shipped
  report_pull(ctx, c, to, t);
  return t.refused_total() > 0 ? 1 : 0;
}

// ---- ls --remote --------------------------------------------------------------------------

// The kernel's name: its first name expression, when it has one.
std::string kernel_name(const detail::CacheRecord& r) {
  const auto& names = r.program.lowered_names;
  if (names.empty()) return "";
  return names.size() == 1 ? names[0].first
                           : names[0].first + " (+" + std::to_string(names.size() - 1) + ")";
}

json listing_json(const std::string& key, const Fetched& f, const Trust& trust) {
  json j = {
      {"redis_key", key}, {"request_key", detail::request_key_of(key)}, {"value_size", f.size}};
  if (f.status != Fetched::Status::Decoded) {
    j["error"] = f.status == Fetched::Status::Vanished ? "vanished" : f.cause;
    return j;
  }
  const detail::CacheRecord& r = f.entry.record;
  std::string signer;
  const SignatureVerdict verdict =
      verify_entry(r, f.entry.request_key, f.entry.signature, trust.keys, &signer);
  j.update({{"key", r.content_key},
            {"kind", r.kind},
            {"target", r.program.target.name()},
            {"binary_size", r.program.binary.size()},
            {"created", iso_time(r.created)},
            {"nvrtc_version", r.nvrtc_version},
            {"name", kernel_name(r)},
            {"signer", signer.empty() ? json(nullptr) : json(signer)},
            {"signed", verdict != SignatureVerdict::Unsigned}});
  if (trust.given()) {
    j["signature"] = to_string(verdict);
    j["valid"] = trust.accepts(verdict);
  }
  return j;
}

// A string field of a listing, escaped: keys and entries are whatever the server holds.
std::string field(const json& j, const char* name) {
  return detail::server_text(j[name].get<std::string>());
}

void print_listing_row(const json& j, bool with_trust) {
  const std::string request = field(j, "request_key").substr(0, 16);
  if (j.contains("error")) {
    std::cout << fmt::format(
        "{:<16}  {:>10}  ({})\n", request.empty() ? field(j, "redis_key") : request,
        detail::format_bytes(j["value_size"].get<std::uint64_t>()), field(j, "error"));
    return;
  }
  const std::string signer = j["signer"].is_string()   ? field(j, "signer")
                             : j["signed"].get<bool>() ? "malformed"
                                                       : "unsigned";
  std::cout << fmt::format(
      "{:<16}  {:<12}  {:<11}  {:>10}  {:<20}  {:<16}  {}{}\n", request, field(j, "kind"),
      field(j, "target"), detail::format_bytes(j["binary_size"].get<std::uint64_t>()),
      field(j, "created"), signer,
      with_trust ? (j["valid"].get<bool>() ? "valid  " : "REFUSED  ") : "", field(j, "name"));
}

int remote_ls(const ToolContext& ctx, const Args& a) {
  const Trust trust = load_trust(a);
  RedisConnection c = connect(a);
  json listing = json::array();
  for (const auto& key : scan_all(c, detail::remote_kernel_pattern()))
    listing.push_back(listing_json(key, fetch_entry(c, key), trust));
  if (ctx.json) {
    print_json(listing);
    return 0;
  }
  std::cout << fmt::format("{:<16}  {:<12}  {:<11}  {:>10}  {:<20}  {:<16}  {}{}\n", "REQUEST",
                           "KIND", "TARGET", "SIZE", "CREATED", "SIGNER",
                           trust.given() ? "TRUST  " : "", "NAME");
  std::size_t valid = 0;
  for (const auto& j : listing) {
    print_listing_row(j, trust.given());
    valid += j.value("valid", false) ? 1 : 0;
  }
  std::cout << count(listing.size(), "entry", "entries") << " on " << c.endpoint().display();
  if (trust.given()) std::cout << " (" << valid << " valid for the trusted keys)";
  std::cout << "\n";
  return 0;
}

// ---- info --remote ------------------------------------------------------------------------

struct ServerMemory {
  std::optional<std::uint64_t> used_memory;
  std::optional<std::uint64_t> maxmemory;
  std::optional<std::string> policy;
  std::string denied;  // why INFO could not be read
};

ServerMemory server_memory(RedisConnection& c) {
  ServerMemory m;
  std::string text;
  try {
    text = c.info("memory");
  } catch (const RedisError& e) {
    if (e.failure() == RedisFailure::Io) throw;
    m.denied = e.what();  // NOPERM for a restricted ACL user: the rest still works
    return m;
  }
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::size_t colon = line.find(':');
    const std::string name = line.substr(0, colon);
    const std::string value = colon == std::string::npos ? "" : line.substr(colon + 1);
    if (name == "used_memory") m.used_memory = std::strtoull(value.c_str(), nullptr, 10);
    if (name == "maxmemory") m.maxmemory = std::strtoull(value.c_str(), nullptr, 10);
    if (name == "maxmemory_policy") m.policy = value;
    start = end + 1;
  }
  return m;
}

// What an operator should change: the tier relies on the server evicting old kernels.
std::vector<std::string> memory_warnings(const ServerMemory& m) {
  std::vector<std::string> out;
  if (!m.denied.empty()) {
    out.push_back("INFO is not permitted for this user; memory settings unknown");
    return out;
  }
  if (m.maxmemory && *m.maxmemory == 0) {
    out.push_back(
        "maxmemory is 0 (no limit): the fleet cache grows until the server runs out of memory; "
        "set maxmemory and maxmemory-policy allkeys-lru");
  }
  if (m.policy && *m.policy != "allkeys-lru" && *m.policy != "allkeys-lfu") {
    out.push_back("maxmemory-policy is " + *m.policy +
                  ": kernel entries carry no TTL, so only allkeys-lru or allkeys-lfu evicts the "
                  "least used ones; at maxmemory the server may refuse new publications");
  }
  return out;
}

std::uint64_t total_string_bytes(RedisConnection& c, const std::vector<std::string>& keys) {
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < keys.size(); i += 256) {
    const std::vector<std::string> batch(
        keys.begin() + static_cast<std::ptrdiff_t>(i),
        keys.begin() + static_cast<std::ptrdiff_t>(std::min(keys.size(), i + 256)));
    for (std::int64_t n : c.strlen_many(batch)) total += n > 0 ? static_cast<std::uint64_t>(n) : 0;
  }
  return total;
}

json optional_json(const std::optional<std::uint64_t>& v) { return v ? json(*v) : json(nullptr); }

std::string optional_bytes(const std::optional<std::uint64_t>& v) {
  return v ? detail::format_bytes(*v) : std::string("unknown");
}

int remote_info(const ToolContext& ctx, const Args& a) {
  RedisConnection c = connect(a);
  const auto kernels = scan_all(c, detail::remote_kernel_pattern());
  const std::string lease_pattern = detail::remote_lease_key("*");
  const std::size_t leases = scan_all(c, lease_pattern).size();
  const std::uint64_t bytes = total_string_bytes(c, kernels);
  const std::int64_t keys = c.dbsize();
  const ServerMemory m = server_memory(c);
  const std::vector<std::string> warnings = memory_warnings(m);
  if (ctx.json) {
    print_json({{"remote", c.endpoint().display()},
                {"entries", kernels.size()},
                {"leases", leases},
                {"entry_bytes", bytes},
                {"keys", keys},
                {"used_memory", optional_json(m.used_memory)},
                {"maxmemory", optional_json(m.maxmemory)},
                {"maxmemory_policy", m.policy ? json(*m.policy) : json(nullptr)},
                {"warnings", warnings}});
    return 0;
  }
  std::cout << fmt::format(
      "remote:       {}\nentries:      {} ({})\nleases:       {}\nkeys:         {} in the "
      "database\nused memory:  {}\nmaxmemory:    {}\npolicy:       {}\n",
      c.endpoint().display(), kernels.size(), detail::format_bytes(bytes), leases, keys,
      optional_bytes(m.used_memory),
      m.maxmemory && *m.maxmemory == 0 ? "0 (no limit)" : optional_bytes(m.maxmemory),
      detail::server_text(m.policy.value_or("unknown")));
  // The policy, in a warning too, is the server's text.
  for (const auto& w : warnings) std::cout << "warning: " << detail::server_text(w) << "\n";
  return 0;
}

}  // namespace

// ---- the command line ---------------------------------------------------------------------

RemoteCommands::RemoteCommands(CLI::App& app, CLI::App& ls, CLI::App& info, bool& json,
                               std::string& db) {
  add_push(app, json, db);
  add_pull(app, json, db);
  add_inspection(ls, info);
}

void RemoteCommands::add_push(CLI::App& app, bool& json, std::string& db) {
  push_ = app.add_subcommand("push",
                             "copy a database's kernels to the fleet tier's Redis server, signed");
  push_
      ->add_option("--remote", args_.url,
                   "redis://[user:password@]host:port[/db] or unix:///path.sock[?db=N] "
                   "(default: $CUJIT_CACHE_REMOTE)")
      ->type_name("URL");
  push_->add_option("--sign", args_.sign,
                    "secret key file to sign entries with (default: $CUJIT_CACHE_SIGNING_KEY; "
                    "without either, entries are unsigned)");
  push_->add_option("--db", db, "database to push (default: the user cache)");
  push_->add_option("--timeout-ms", args_.timeout_ms, "per-operation timeout (default 10000)");
  push_->add_flag("--json", json, "machine-readable output");
}

void RemoteCommands::add_pull(CLI::App& app, bool& json, std::string& db) {
  pull_ = app.add_subcommand(
      "pull", "copy the fleet tier's verified kernels into a database (a deployment database)");
  pull_->add_option("--remote", args_.url, "Redis URL (default: $CUJIT_CACHE_REMOTE)")
      ->type_name("URL");
  auto* trusted = pull_->add_option(
      "--trusted-keys", args_.trusted,
      "public key files of trusted builders, a.pub:b.pub (default: $CUJIT_CACHE_TRUSTED_KEYS)");
  pull_
      ->add_flag("--trust-any", args_.trust_any,
                 "also accept unsigned entries and unknown signers (not a bad signature)")
      ->excludes(trusted);
  pull_->add_option("-o,--output", args_.output,
                    "database to build, finalised for shipping (default: --db, the user cache)");
  pull_->add_option("--db", db, "database to pull into when there is no -o");
  pull_->add_option("--timeout-ms", args_.timeout_ms, "per-operation timeout (default 10000)");
  pull_->add_flag("--json", json, "machine-readable output");
}

void RemoteCommands::add_inspection(CLI::App& ls, CLI::App& info) {
  const std::string remote_help =
      "inspect the fleet tier's Redis server instead of a database; URL as "
      "redis://[user:password@]host:port[/db] (default: $CUJIT_CACHE_REMOTE)";
  ls_remote_ =
      ls.add_option("--remote", args_.url, remote_help)->expected(0, 1)->type_name("[URL]");
  ls.add_option("--trusted-keys", args_.trusted,
                "with --remote: also check signatures against these public keys (default: "
                "$CUJIT_CACHE_TRUSTED_KEYS)")
      ->needs(ls_remote_);
  ls.add_option("--timeout-ms", args_.timeout_ms, "with --remote: per-operation timeout")
      ->needs(ls_remote_);
  info_remote_ =
      info.add_option("--remote", args_.url, remote_help)->expected(0, 1)->type_name("[URL]");
  info.add_option("--timeout-ms", args_.timeout_ms, "with --remote: per-operation timeout")
      ->needs(info_remote_);
}

std::optional<int> RemoteCommands::run(const ToolContext& context) const {
  if (*push_) return push(context, args_);
  if (*pull_) return pull(context, args_);
  if (ls_remote_->count() > 0) return remote_ls(context, args_);
  if (info_remote_->count() > 0) return remote_info(context, args_);
  return std::nullopt;
}

}  // namespace cujit::tool
