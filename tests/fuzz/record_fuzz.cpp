// Fuzzes the decoding of stored cache records (cache/record.*, and the row decoder of
// cache/database_schema.cpp that uses it): nothing read from a database is trusted, so any bytes
// in any field must decode to an intact record or be refused (a miss, a damaged entry, an
// empty optional), never crash, over-read or allocate what a length field claims.
//
// Input: a mode byte, then length-prefixed fields (u32 little-endian length, then that many
// bytes; a short last field takes what is left, missing fields are empty).
//   mode % 4 == 0: field 0 is a lowered-names blob for decode_names.
//   mode % 4 == 1: field 0 is a zstd frame, field 1 its expected size (u64 LE) for decompress.
//   mode % 4 == 2: field 0 is a target name for Target::parse.
//   mode % 4 == 3: a whole row of the kernels table, stored in a real SQLite database and
//                  looked up through SqliteStore: target, lowered_names, checksum, binary,
//                  source, options, metadata, log, binary_size (i64), source_size (i64),
//                  codegen_version (i64); bit 2 of the mode stores the byte fields as TEXT.

#include "cache/database_admin.hpp"
#include "cache/record.hpp"
#include "cache/sqlite_store.hpp"

#include "fuzz_check.hpp"

#include <cujit/error.hpp>

#include <sqlite3.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace cujit::detail {
namespace {

constexpr std::string_view kKey =
    "00000000000000000000000000000000000000000000000000000000000000aa";

std::vector<std::string_view> split_fields(std::string_view in) {
  std::vector<std::string_view> fields;
  while (!in.empty()) {
    std::uint32_t n = 0;
    for (std::size_t k = 0; k < 4 && k < in.size(); ++k) {
      n |= std::uint32_t(static_cast<unsigned char>(in[k])) << (8 * k);
    }
    in.remove_prefix(std::min<std::size_t>(4, in.size()));
    const std::size_t take = std::min<std::size_t>(n, in.size());
    fields.push_back(in.substr(0, take));
    in.remove_prefix(take);
  }
  return fields;
}

std::uint64_t u64_of(std::string_view bytes) {
  std::uint64_t v = 0;
  for (std::size_t k = 0; k < 8 && k < bytes.size(); ++k) {
    v |= std::uint64_t(static_cast<unsigned char>(bytes[k])) << (8 * k);
  }
  return v;
}

void check_names(std::string_view blob) {
  auto names = decode_names(blob);
  if (!names) return;
  // Every byte was accounted for: the canonical encoding is the blob itself.
  CUJIT_FUZZ_CHECK(encode_names(*names) == blob, "decoded names re-encode differently");
}

void check_decompress(std::string_view frame, std::uint64_t expected) {
  auto text = decompress(frame, expected);
  if (!text) return;
  CUJIT_FUZZ_CHECK(text->size() == expected, "decompressed size differs from the expected size");
  CUJIT_FUZZ_CHECK(expected <= kMaxSourceSize, "decompressed more than kMaxSourceSize");
  if (text->size() <= (1u << 20)) {
    auto again = decompress(compress(*text), text->size());
    CUJIT_FUZZ_CHECK(again && *again == *text, "compress/decompress round trip failed");
  }
}

void check_target(std::string_view text) {
  Target target;
  try {
    target = Target::parse(std::string(text));
  } catch (const ArgumentError&) {
    return;
  }
  CUJIT_FUZZ_CHECK(target.arch >= 0 && target.arch <= 9999, "parsed an impossible arch");
  CUJIT_FUZZ_CHECK(Target::parse(target.name()) == target, "a target's name parses differently");
}

// One database for the whole run, in a private temporary directory; a second connection
// writes the fuzzed row under SqliteStore's feet, as a damaged file or another cujit would.
struct RowHarness {
  std::string dir;
  std::unique_ptr<SqliteStore> store;
  std::unique_ptr<Database> writer;

  RowHarness() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern =
        std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/cujit_record_fuzz.XXXXXX";
    CUJIT_FUZZ_CHECK(::mkdtemp(pattern.data()) != nullptr, "cannot create a temporary directory");
    dir = pattern;
    StoreOptions options;
    options.network_fs = StoreOptions::NetworkFs::No;
    store = SqliteStore::open_writable(dir + "/kernels.db", options);
    writer = std::make_unique<Database>(
        dir + "/kernels.db", SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, dir + "/kernels.db");
    writer->set_busy_timeout(5000);
  }
  ~RowHarness() {
    store.reset();
    writer.reset();
    for (const char* name : {"/kernels.db", "/kernels.db-wal", "/kernels.db-shm"}) {
      ::unlink((dir + name).c_str());
    }
    ::rmdir(dir.c_str());
  }
};

void check_row(const std::vector<std::string_view>& f, bool as_text) {
  static RowHarness harness;
  auto field = [&](std::size_t k) { return k < f.size() ? f[k] : std::string_view(); };
  const std::string_view target = field(0), names = field(1), checksum = field(2),
                         binary = field(3), source = field(4);
  const auto binary_size = static_cast<std::int64_t>(u64_of(field(8)));
  const auto source_size = static_cast<std::int64_t>(u64_of(field(9)));
  {
    Database& db = *harness.writer;
    db.exec("BEGIN; DELETE FROM kernels; DELETE FROM requests");
    Statement s = db.prepare(
        "INSERT INTO kernels(content_key, kind, target, record_size, binary_size, source_size, "
        "created, last_used, nvrtc_version, codegen_version, checksum, lowered_names, options, "
        "metadata, log, source, binary) VALUES(?1, 'raw', ?2, 0, ?3, ?4, 0, 0, 'fuzz', ?5, ?6, "
        "?7, ?8, ?9, ?10, ?11, ?12)");
    auto bytes = [&](int index, std::string_view value) {
      if (as_text) {
        s.bind_text(index, value);
      } else {
        s.bind_blob(index, value);
      }
    };
    s.bind_text(1, kKey);
    bytes(2, target);
    s.bind(3, binary_size).bind(4, source_size);
    s.bind(5, static_cast<std::int64_t>(u64_of(field(10))));
    bytes(6, checksum);
    bytes(7, names);
    bytes(8, field(5));
    bytes(9, field(6));
    bytes(10, field(7));
    bytes(11, source);
    bytes(12, binary);
    s.step();
    s.reset();
    db.exec("INSERT INTO requests VALUES('" + std::string(kKey) + "', '" + std::string(kKey) +
            "'); COMMIT");
  }
  SqliteStore& store = *harness.store;
  for (const Lookup& found :
       {store.find_by_content(std::string(kKey)), store.find_by_request(std::string(kKey))}) {
    CUJIT_FUZZ_CHECK(found.status != Lookup::Status::Miss, "a stored row was not found");
    if (found.status != Lookup::Status::Hit) continue;
    const CacheRecord& r = found.record;
    CUJIT_FUZZ_CHECK(r.checksum_ok(), "a hit with a wrong checksum");
    CUJIT_FUZZ_CHECK(r.program.binary == binary, "a hit with other binary bytes");
    CUJIT_FUZZ_CHECK(static_cast<std::int64_t>(r.program.binary.size()) == binary_size,
                     "a hit whose binary size disagrees with its size field");
    CUJIT_FUZZ_CHECK(r.program.target.name() == target, "a hit for another target");
    CUJIT_FUZZ_CHECK(r.content_key == kKey && r.kind == "raw", "a hit under another key or kind");
    CUJIT_FUZZ_CHECK(encode_names(r.program.lowered_names) == names, "a hit with other names");
    CUJIT_FUZZ_CHECK(r.source_size <= kMaxSourceSize, "a hit with an oversized source");
  }
  // The cujit-cache tool's path: the record as stored, damaged or not, and its source.
  std::optional<CacheRecord> loaded = DatabaseAdmin(store).load(std::string(kKey), true);
  CUJIT_FUZZ_CHECK(loaded.has_value(), "a stored row could not be loaded");
  std::optional<std::string> text = DatabaseAdmin::source_of(*loaded);
  if (text) CUJIT_FUZZ_CHECK(text->size() == loaded->source_size, "source of another size");
}

}  // namespace
}  // namespace cujit::detail

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace cujit::detail;
  if (size == 0) return 0;
  const unsigned mode = data[0];
  const std::vector<std::string_view> fields =
      split_fields(cujit::fuzz::as_text(data + 1, size - 1));
  auto field = [&](std::size_t k) { return k < fields.size() ? fields[k] : std::string_view(); };
  switch (mode % 4) {
    case 0:
      check_names(field(0));
      break;
    case 1:
      check_decompress(field(0), u64_of(field(1)));
      break;
    case 2:
      check_target(field(0));
      break;
    default:
      check_row(fields, (mode & 4) != 0);
      break;
  }
  return 0;
}
