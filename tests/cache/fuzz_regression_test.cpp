// Inputs the fuzzers (tests/fuzz/record_fuzz.cpp, manifest_fuzz.cpp) found mishandled in the
// cache's decoders and in the manifest recorder.

#include "cache/manifest.hpp"
#include "cache/record.hpp"
#include "cache/sqlite.hpp"

#include <gtest/gtest.h>

#include <sqlite3.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>
#include <string_view>

namespace cujit::detail {
namespace {

std::string le(std::uint64_t v, int bytes) {
  std::string out;
  for (int k = 0; k < bytes; ++k) out.push_back(static_cast<char>((v >> (8 * k)) & 0xff));
  return out;
}

// A zstd frame header (magic, single segment, 8-byte content size) declaring `size` bytes.
std::string frame_header(std::uint64_t size) { return le(0xFD2FB528u, 4) + '\xe0' + le(size, 8); }

long peak_rss_kib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

// A damaged source column whose frame header and size column agree on 250 MiB: the frame
// cannot produce that much, so it must be refused before anything of that size is allocated
// (it used to be allocated and cleared, then decoding failed).
TEST(RecordFuzzRegression, LyingFrameSizeAllocatesNothingBig) {
  constexpr std::uint64_t kClaimed = std::uint64_t{250} << 20;
  // Header only; and a complete frame whose one RLE block decodes to 128 KiB.
  const std::string header_only = frame_header(kClaimed);
  const std::string rle_block = le(1 | (1 << 1) | (std::uint32_t{128 << 10} << 3), 3) + "a";
  const std::string complete = header_only + rle_block;
  const long before = peak_rss_kib();
  EXPECT_FALSE(decompress(header_only, kClaimed));
  EXPECT_FALSE(decompress(complete, kClaimed));
  EXPECT_LT(peak_rss_kib() - before, 64 * 1024) << "decompress allocated the claimed size";
  // The same block with its true size decodes.
  const std::string honest = frame_header(128 << 10) + rle_block;
  EXPECT_EQ(decompress(honest, 128 << 10), std::string(128 << 10, 'a'));
}

TEST(RecordFuzzRegression, TrailingBytesAfterTheFrameAreDamage) {
  const std::string frame = compress("__global__ void k() {}");
  EXPECT_TRUE(decompress(frame, 22));
  EXPECT_FALSE(decompress(frame + '\0', 22));
}

// An empty text bound from a view without storage used to be stored as NULL (and so failed a
// NOT NULL column), unlike an empty blob.
TEST(RecordFuzzRegression, EmptyTextIsNotNull) {
  Database db(":memory:", SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, ":memory:");
  db.exec("CREATE TABLE t(a TEXT NOT NULL, b BLOB NOT NULL)");
  Statement insert = db.prepare("INSERT INTO t VALUES(?1, ?2)");
  insert.bind_text(1, std::string_view()).bind_blob(2, std::string_view());
  EXPECT_NO_THROW(insert.step());
  Statement select = db.prepare("SELECT a, b FROM t");
  ASSERT_TRUE(select.step());
  EXPECT_FALSE(select.column_null(0));
  EXPECT_EQ(select.column_bytes(0), "");
  EXPECT_FALSE(select.column_null(1));
}

// A manifest whose last line holds the entry but lacks its newline (a writer that died before
// finishing the line): the entry is in the file, so recording it again must not duplicate it.
TEST(ManifestFuzzRegression, UnterminatedLastLineHoldsItsEntry) {
  std::string dir = (std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") +
                    std::string("/cujit_manifest_regression.XXXXXX");
  ASSERT_NE(::mkdtemp(dir.data()), nullptr);
  const std::string path = dir + "/manifest.jsonl";
  const std::string entry = R"({"kind":"raw","options":[],"source":"k"})";
  std::ofstream(path, std::ios::binary) << R"({"kind":"raw","source":"k","options":[]})";
  EXPECT_FALSE(ManifestRecorder(path).record(entry));
  EXPECT_EQ(read_manifest(path).size(), 1u);
  // Another entry still goes on a line of its own after it.
  EXPECT_TRUE(ManifestRecorder(path).record(R"({"kind":"raw","source":"j"})"));
  EXPECT_EQ(read_manifest(path).size(), 2u);
  ::unlink(path.c_str());
  ::rmdir(dir.c_str());
}

}  // namespace
}  // namespace cujit::detail
