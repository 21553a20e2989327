#include "cache/record.hpp"

#include "support/sha256.hpp"

#include <gtest/gtest.h>

#include <functional>

namespace cujit::detail {
namespace {

SourceProgram sample() {
  SourceProgram p;
  p.source = "extern \"C\" __global__ void k(float* x) { x[0] = 1; }";
  p.options = {"-use_fast_math"};
  p.name_expressions = {"k"};
  return p;
}

TEST(Sha256, MatchesKnownDigest) {
  EXPECT_EQ(to_hex(sha256("abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(to_hex(Sha256().update("a").update("bc").finish()), to_hex(sha256("abc")));
}

TEST(Sha256, FieldsAreLengthPrefixed) {
  EXPECT_NE(Sha256().field("ab").field("c").finish(), Sha256().field("a").field("bc").finish());
}

TEST(Sha256, ACopyGoesOnFromTheSameState) {
  Sha256 prefix;
  prefix.field(std::string(1000, 'p'));  // past several 64-byte blocks, mid-block at the end
  Sha256 a(prefix), b(prefix);
  a.field("x");
  b.field("y");
  EXPECT_EQ(a.finish(), Sha256().field(std::string(1000, 'p')).field("x").finish());
  EXPECT_EQ(b.finish(), Sha256().field(std::string(1000, 'p')).field("y").finish());
  EXPECT_EQ(prefix.finish(), Sha256().field(std::string(1000, 'p')).finish());
}

TEST(Keys, ContentKeyIsDeterministicAndHex) {
  std::string a = content_key(sample(), Target{80}, "raw");
  EXPECT_EQ(a, content_key(sample(), Target{80}, "raw"));
  EXPECT_EQ(a.size(), 64u);
  EXPECT_EQ(a.find_first_not_of("0123456789abcdef"), std::string::npos);
}

TEST(Keys, ContentKeyChangesWithEveryInput) {
  const Target t{80};
  std::string base = content_key(sample(), t, "raw");
  SourceProgram p = sample();
  p.source += " ";
  EXPECT_NE(content_key(p, t, "raw"), base);
  p = sample();
  p.options.push_back("-DFOO");
  EXPECT_NE(content_key(p, t, "raw"), base);
  p = sample();
  p.name_expressions.push_back("k2");
  EXPECT_NE(content_key(p, t, "raw"), base);
  p = sample();
  p.headers.emplace_back("h.cuh", "#define X 1");
  std::string with_header = content_key(p, t, "raw");
  EXPECT_NE(with_header, base);
  p.headers[0].second = "#define X 2";  // header contents, not only names, are hashed
  EXPECT_NE(content_key(p, t, "raw"), with_header);
  EXPECT_NE(content_key(sample(), Target{86}, "raw"), base);
  EXPECT_NE(content_key(sample(), Target{80, BinaryFormat::Ptx}, "raw"), base);
  EXPECT_NE(content_key(sample(), t, "elementwise"), base);
}

TEST(Keys, OptionsAreNormalised) {
  SourceProgram p = sample();
  p.options = {"  -use_fast_math ", ""};
  EXPECT_EQ(content_key(p, Target{80}, "raw"), content_key(sample(), Target{80}, "raw"));
  EXPECT_EQ(normalize_options({" -a", "", "\t-b\n"}), (std::vector<std::string>{"-a", "-b"}));
}

TEST(Keys, RequestKeyNamesKindSpecAndTarget) {
  std::string base = request_key("elementwise", "spec", Target{80});
  EXPECT_EQ(base, request_key("elementwise", "spec", Target{80}));
  EXPECT_NE(base, request_key("reduction", "spec", Target{80}));
  EXPECT_NE(base, request_key("elementwise", "spec2", Target{80}));
  EXPECT_NE(base, request_key("elementwise", "spec", Target{90}));
  EXPECT_NE(base, content_key(sample(), Target{80}, "raw"));
}

// One hasher serves every target of a lookup (the exact one, then up to 15 compatible ones):
// each key is the request key's format spelled out field by field.
TEST(Keys, OneHasherGivesEachTargetsRequestKey) {
  const std::string spec(1500, 's');
  auto spelled = [&](const Target& t, const std::string& digest) {
    Sha256 h;
    h.field("cujit-request").field("elementwise").field(spec).field(t.name()).field("compiler");
    if (!digest.empty()) h.field("includes").field(digest);
    h.field(std::int64_t{kCodegenVersion}).field(std::int64_t{kRecordFormatVersion});
    return to_hex(h.finish());
  };
  const RequestKeyHasher keys("elementwise", spec);
  for (const Target& t : {Target{90}, Target{80}, Target{90, BinaryFormat::Ptx}, Target{90}}) {
    EXPECT_EQ(keys.key(t, "compiler", ""), spelled(t, ""));
    EXPECT_EQ(keys.key(t, "compiler", "digest"), spelled(t, "digest"));
    EXPECT_EQ(request_key("elementwise", spec, t, "compiler", "digest"), spelled(t, "digest"));
  }
}

TEST(Names, RoundTrip) {
  std::vector<std::pair<std::string, std::string>> names = {
      {"k<float>", "_Z1kIfEvv"}, {"", ""}, {"x", std::string("a\0b", 3)}};
  auto decoded = decode_names(encode_names(names));
  ASSERT_TRUE(decoded);
  EXPECT_EQ(*decoded, names);
  EXPECT_TRUE(decode_names(encode_names({})).has_value());
}

TEST(Names, RejectsEveryTruncationAndTrailingBytes) {
  std::string blob = encode_names({{"k<float>", "_Z1kIfEvv"}, {"g", "_Z1gv"}});
  for (std::size_t n = 0; n < blob.size(); ++n) {
    EXPECT_FALSE(decode_names(blob.substr(0, n))) << "prefix of " << n << " bytes";
  }
  EXPECT_FALSE(decode_names(blob + "x"));
}

TEST(Names, RejectsLyingLengths) {
  std::string huge_count("\xff\xff\xff\x7f", 4);
  EXPECT_FALSE(decode_names(huge_count));
  std::string blob = encode_names({{"k", "_Z1k"}});
  blob[4] = '\x7f';  // length of the first string far beyond the blob
  EXPECT_FALSE(decode_names(blob));
}

TEST(Compression, RoundTripAndDefensiveDecompress) {
  std::string text(10000, 'a');
  text += "tail";
  std::string frame = compress(text);
  EXPECT_LT(frame.size(), text.size());
  EXPECT_EQ(decompress(frame, text.size()).value(), text);
  EXPECT_FALSE(decompress(frame, text.size() + 1));           // size field lies
  EXPECT_FALSE(decompress(frame.substr(0, 5), text.size()));  // truncated frame
  EXPECT_FALSE(decompress("not zstd at all", 15));
  EXPECT_FALSE(decompress(frame, kMaxSourceSize + 1));
  EXPECT_EQ(decompress(compress(""), 0).value(), "");
}

TEST(Record, MakeRecordSealsKeyKindTargetNamesMetadataAndBinary) {
  CompiledProgram program;
  program.target = Target{80};
  program.binary = "binary bytes";
  program.lowered_names = {{"k", "_Z1k"}};
  program.metadata = "{}";
  CacheRecord r = make_record("key", "raw", sample(), program, 1234);
  EXPECT_TRUE(r.checksum_ok());
  EXPECT_EQ(r.checksum, record_checksum(r));
  EXPECT_EQ(r.checksum.size(), 16u);
  EXPECT_EQ(r.created, 1234);
  EXPECT_EQ(decompress(r.source_zstd, r.source_size).value(), sample().source);
  // Any sealed field changed, alone, breaks the seal.
  const std::vector<std::function<void(CacheRecord&)>> changes = {
      [](CacheRecord& c) { c.program.binary[0] ^= 1; },
      [](CacheRecord& c) { c.content_key = "other key"; },
      [](CacheRecord& c) { c.kind = "elementwise"; },
      [](CacheRecord& c) { c.program.target = Target{90}; },
      [](CacheRecord& c) { c.program.target.format = BinaryFormat::Ptx; },
      [](CacheRecord& c) { c.program.lowered_names[0].second = "_Z1j"; },
      [](CacheRecord& c) { c.program.metadata = "{\"x\":1}"; },
      // Bytes moved between two fields keep the concatenation but not the seal.
      [](CacheRecord& c) {
        c.content_key += "r";
        c.kind = "aw";
      },
  };
  for (std::size_t k = 0; k < changes.size(); ++k) {
    CacheRecord changed = r;
    changes[k](changed);
    EXPECT_FALSE(changed.checksum_ok()) << "change " << k;
  }
}

}  // namespace
}  // namespace cujit::detail
