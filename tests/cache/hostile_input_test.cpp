// Issue 16, findings 3 and 5: any bytes in, a cujit::Error or a result out. Text that is not
// UTF-8 goes into JSON as {"base64": ...} (support/json_text.hpp); NUL bytes, directories and
// devices are refused with a typed error. The RawModule tests failed on eb933fb (a
// nlohmann::json::type_error escaped; the NUL source compiled its first half; from_file read a
// directory as an empty source).

#include "support/json_text.hpp"
#include "cache/manifest.hpp"
#include "cache/raw_replay.hpp"
#include "cache_test_util.hpp"
#include "codegen/validation.hpp"

#include <cujit/error.hpp>
#include <cujit/raw_module.hpp>

#include <gtest/gtest.h>

#include <fstream>
#include <typeinfo>

namespace cujit::detail {
namespace {

using test::TempDir;

std::string every_byte() {
  std::string all;
  for (int c = 1; c < 256; ++c) all += static_cast<char>(c);
  return all;
}

TEST(JsonText, Utf8IsRecognisedExactly) {
  EXPECT_TRUE(is_utf8(""));
  EXPECT_TRUE(is_utf8("plain ascii"));
  EXPECT_TRUE(is_utf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"));  // é € 😀
  for (const char* bad :
       {"caf\xe9", "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xe2\x82", "\x80", "\xff"}) {
    EXPECT_FALSE(is_utf8(bad)) << printable(bad);
  }
}

TEST(JsonText, Base64RoundTripsEveryByteAndRefusesJunk) {
  const std::string all = every_byte() + std::string(1, '\0');
  for (std::size_t n = 0; n <= 5; ++n) {
    EXPECT_EQ(base64_decode(base64_encode(all.substr(0, n))).value(), all.substr(0, n));
  }
  EXPECT_EQ(base64_encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(base64_decode(base64_encode(all)).value(), all);
  for (const char* junk : {"Zm9", "Zm9v!mFy", "Zm=v", "Zh==", "====", "Zm9vYmFy===="}) {
    EXPECT_FALSE(base64_decode(junk)) << junk;
  }
}

TEST(JsonText, OneRuleForTextThatIsNotUtf8) {
  EXPECT_EQ(text_json("ok"), nlohmann::json("ok"));
  EXPECT_EQ(text_json("caf\xe9"), (nlohmann::json{{"base64", "Y2Fm6Q=="}}));
  EXPECT_EQ(json_text(text_json("caf\xe9")).value(), "caf\xe9");
  EXPECT_EQ(json_text(nlohmann::json("x")).value(), "x");
  EXPECT_FALSE(json_text(nlohmann::json(5)));
  EXPECT_FALSE(json_text(nlohmann::json{{"base64", "!!"}}));
  EXPECT_THROW(require_text(nlohmann::json::array(), "field"), ArgumentError);
  // dump_json never throws: bad strings become base64 objects, bad keys get U+FFFD.
  nlohmann::json j = {{"path", "/tmp/\xe9.db"}, {"list", {"a", "\xff"}}};
  j["k\xe9y"] = 1;
  const nlohmann::json back = nlohmann::json::parse(dump_json(j, 2));
  EXPECT_EQ(json_text(back["path"]).value(), "/tmp/\xe9.db");
  EXPECT_EQ(json_text(back["list"][1]).value(), "\xff");
  EXPECT_EQ(back["k\xef\xbf\xbdy"], 1);
}

// append_text_json writes what dump_json(text_json(...)) writes, byte for byte: manifest
// entries are request keys, so one escape written differently would change every key.
TEST(JsonText, TextWrittenDirectlyIsNlohmannsDump) {
  std::vector<std::string> texts = {"",
                                    "plain",
                                    "a\"b\\c/d",
                                    "\x7f del",
                                    "caf\xc3\xa9 \xf0\x9f\x98\x80",
                                    "caf\xe9",
                                    std::string("nul\0in", 6),
                                    every_byte()};
  for (int c = 0; c < 256; ++c) texts.push_back(std::string(1, static_cast<char>(c)));
  std::string line;
  for (int c = 0; c < 0x80; ++c) line += static_cast<char>(c);  // every ASCII byte, NUL too
  texts.push_back(line + "\nz = x;\r\n\ttail");
  for (const std::string& text : texts) {
    std::string out = "<";
    append_text_json(out, text);
    EXPECT_EQ(out, "<" + dump_json(text_json(text))) << base64_encode(text);
  }
}

TEST(HostileInput, RawManifestEntriesCarryEveryByte) {
  SourceProgram p;
  p.source = "// " + every_byte() + "\nextern \"C\" __global__ void k() {}\n";
  p.name = "caf\xe9.cu";
  p.options = {"-DLABEL=\xe9"};
  p.name_expressions = {"k\xff"};
  p.headers = {{"h\xe9.h", "// \xfe"}};
  const std::string entry = raw_manifest_entry(p);
  const SourceProgram back = raw_program_from_entry(entry);
  EXPECT_EQ(back.source, p.source);
  EXPECT_EQ(back.name, p.name);
  EXPECT_EQ(back.options, p.options);
  EXPECT_EQ(back.name_expressions, p.name_expressions);
  EXPECT_EQ(back.headers, p.headers);
  EXPECT_THROW(raw_program_from_entry(R"({"kind":"raw","source":{"base64":"%%"}})"), ArgumentError);
  EXPECT_THROW(raw_program_from_entry(R"({"kind":"raw","source":"x","options":[1]})"),
               ArgumentError);
}

TEST(HostileInput, ARawModuleWithLatin1SourceOptionAndPathCompiles) {
  TempDir dir;
  CacheConfig config;
  config.directory = dir.path();
  config.record_path = dir.file("recorded.jsonl");
  configure_cache(config);
  const std::string source =
      "// caf\xe9 (Latin-1)\nextern \"C\" __global__ void k(float* x) { x[0] = LABEL; }\n";
  const std::string path = dir.file("caf\xe9.cu");
  std::ofstream(path, std::ios::binary) << source;
  for (int from_file = 0; from_file < 2; ++from_file) {
    try {
      RawModule m = from_file ? RawModule::from_file(path, {"-DLABEL=1.0f", "-DUNUSED=\xe9"})
                              : RawModule(source, {"-DLABEL=1.0f", "-DUNUSED=\xe9"});
      EXPECT_FALSE(m.compile_for(Target{80})->binary.empty());
    } catch (const std::exception& e) {
      ADD_FAILURE() << "from_file " << from_file << ": " << typeid(e).name() << ": " << e.what();
    }
  }
  configure_cache(CacheConfig::from_environment());
}

TEST(HostileInput, NulBytesDirectoriesAndDevicesAreRefused) {
  const std::string half = "extern \"C\" __global__ void k(float* x) { x[0] = 1; }";
  EXPECT_THROW(RawModule(half + std::string(1, '\0') + " junk that NVRTC never saw"),
               ArgumentError);
  SourceProgram p;
  p.source = half + std::string(1, '\0') + "}";
  EXPECT_THROW(compile(p, Target{80}), ArgumentError);
  TempDir dir;
  for (const std::string& path : {dir.path(), std::string("/dev/zero"), dir.file("missing.cu")}) {
    EXPECT_THROW(RawModule::from_file(path), ArgumentError) << path;
    EXPECT_THROW(RawModule::from_file(path + ".ptx"), ArgumentError) << path;
  }
}

// A manifest line nested 10^5 deep: nlohmann's dump recursed once per level and overflowed
// the stack (the recorder reads every line of CUJIT_RECORD's file); now an ArgumentError.
TEST(HostileInput, DeeplyNestedManifestLinesAreRefused) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_THROW(canonical_manifest_entry(deep), ArgumentError);
  EXPECT_THROW(canonical_manifest_entry(R"({"kind":"raw","x":)" + deep + "}"), ArgumentError);
  EXPECT_NO_THROW(
      canonical_manifest_entry(R"({"kind":"raw","s":"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["})"));
  TempDir dir;
  std::ofstream(dir.file("m.jsonl")) << deep << "\n";
  ManifestRecorder recorder(dir.file("m.jsonl"));
  EXPECT_TRUE(recorder.record(R"({"kind":"raw","source":"x"})"));
}

}  // namespace
}  // namespace cujit::detail
