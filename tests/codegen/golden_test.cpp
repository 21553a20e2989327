// Golden files for everything that keys the cache: the generated source and the request spec
// (manifest entry) of a fixed corpus covering every elementwise layout and reduction strategy,
// tied to kCodegenVersion. A change in generated code without a version bump fails, and so
// does a bump without a change. CUJIT_UPDATE_GOLDENS=1 rewrites the files (after a bump).
#include "cache/record.hpp"
#include "codegen/golden_corpus.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace cujit::detail {
namespace {

const std::string kGoldenDir = CUJIT_TEST_GOLDEN_DIR;

bool updating() {
  const char* value = std::getenv("CUJIT_UPDATE_GOLDENS");
  return value != nullptr && std::string(value) == "1";
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "<missing " + path + ">";
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  ASSERT_TRUE(out.good()) << path;
}

// FNV-1a 64 over every golden text: the fingerprint of the whole corpus.
std::string fingerprint(const std::vector<GoldenCase>& corpus) {
  std::uint64_t h = 1469598103934665603ull;
  for (const GoldenCase& c : corpus) {
    for (const std::string* text : {&c.name, &c.golden}) {
      for (unsigned char b : *text) h = (h ^ b) * 1099511628211ull;
      h = (h ^ 0xffu) * 1099511628211ull;
    }
  }
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

struct Recorded {
  int codegen_version = -1;
  std::string fingerprint;
};

Recorded read_recorded() {
  Recorded r;
  std::istringstream in(read_text(kGoldenDir + "/VERSION"));
  std::string word;
  while (in >> word) {
    if (word == "codegen_version") in >> r.codegen_version;
    if (word == "fingerprint") in >> r.fingerprint;
  }
  return r;
}

TEST(Golden, CorpusCoversEveryLayoutAndStrategy) {
  const std::vector<GoldenCase> corpus = golden_corpus();
  EXPECT_GE(corpus.size(), 20u);
  for (const char* needle : {"ew_vectorized", "ew_contiguous", "ew_strided", "ew_rows2d",
                             "ew_tiled2d", "red_segments", "red_rows", "red_columns"}) {
    bool found = false;
    for (const GoldenCase& c : corpus) found |= c.name.rfind(needle, 0) == 0;
    EXPECT_TRUE(found) << needle;
  }
}

TEST(Golden, GeneratedSourceAndRequestSpecsMatchTheFiles) {
  const std::vector<GoldenCase> corpus = golden_corpus();
  const Recorded recorded = read_recorded();
  const std::string now = fingerprint(corpus);
  if (updating()) {
    ASSERT_FALSE(now != recorded.fingerprint && kCodegenVersion == recorded.codegen_version)
        << "generated code changed: bump kCodegenVersion in cache/record.hpp, then update";
    ASSERT_FALSE(now == recorded.fingerprint && kCodegenVersion != recorded.codegen_version)
        << "kCodegenVersion changed but the generated code did not: revert the bump";
    for (const GoldenCase& c : corpus) write_text(kGoldenDir + "/" + c.name + ".txt", c.golden);
    write_text(kGoldenDir + "/VERSION", "codegen_version " + std::to_string(kCodegenVersion) +
                                            "\nfingerprint " + now + "\n");
    return;
  }
  for (const GoldenCase& c : corpus) {
    EXPECT_EQ(c.golden, read_text(kGoldenDir + "/" + c.name + ".txt"))
        << c.name << ": the generated code changed; bump kCodegenVersion and run the codegen "
        << "tests with CUJIT_UPDATE_GOLDENS=1";
  }
  EXPECT_EQ(now, recorded.fingerprint)
      << "generated code differs from tests/codegen/golden: bump kCodegenVersion in "
         "cache/record.hpp and run the codegen tests with CUJIT_UPDATE_GOLDENS=1";
  EXPECT_EQ(kCodegenVersion, recorded.codegen_version)
      << (now == recorded.fingerprint
              ? "kCodegenVersion changed without a change in generated code: revert the bump"
              : "update the goldens (CUJIT_UPDATE_GOLDENS=1) after bumping kCodegenVersion");
}

// The request and content keys of the corpus for a fixed target and compiler identity. A
// change means every deployed cache misses (or, worse, a key no longer names everything that
// selects the binary): bump kRecordFormatVersion or kCodegenVersion on purpose, then update.
TEST(Golden, CacheKeysOfTheCorpusMatchTheFile) {
  std::string keys;
  for (const GoldenCase& c : golden_corpus()) {
    keys += c.name + " request " + request_key(c.kind, c.spec, Target{90}, "golden-compiler") +
            " content " + content_key(c.program, Target{90}, c.kind, "golden-compiler") + "\n";
  }
  const std::string path = kGoldenDir + "/keys.txt";
  if (updating()) {
    write_text(path, keys);
    return;
  }
  EXPECT_EQ(keys, read_text(path)) << "the cache keys changed: if on purpose, bump the record "
                                      "format or codegen version and run with "
                                      "CUJIT_UPDATE_GOLDENS=1";
}

}  // namespace
}  // namespace cujit::detail
