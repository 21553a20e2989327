// Issue 19, without a server: the fleet tier's URL syntax, its configuration from the
// environment, and the defensive decoding of entries (every truncation and every field).

#include "cache/remote_entry.hpp"
#include "cache/entry_signature.hpp"
#include "cache/remote_endpoint.hpp"
#include "cache_test_util.hpp"

#include <gtest/gtest.h>

#include <cstdlib>

namespace cujit::detail {
namespace {

using test::WarningCapture;

TEST(RemoteUrl, ParsesTcpUnixUsersPasswordsAndDatabases) {
  auto e = parse_remote_url("redis://cache.internal", nullptr);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->host, "cache.internal");
  EXPECT_EQ(e->port, 6379);
  EXPECT_EQ(e->db, 0);
  e = parse_remote_url("redis://fleet:p%40ss:w@10.0.0.5:7000/3", nullptr);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->user, "fleet");
  EXPECT_EQ(e->password, "p@ss:w");
  EXPECT_EQ(e->host, "10.0.0.5");
  EXPECT_EQ(e->port, 7000);
  EXPECT_EQ(e->db, 3);
  EXPECT_EQ(e->display(), "redis://fleet:***@10.0.0.5:7000/3");
  e = parse_remote_url("redis://secret@h", nullptr);  // the default user's password
  ASSERT_TRUE(e);
  EXPECT_EQ(e->user, "");
  EXPECT_EQ(e->password, "secret");
  EXPECT_EQ(e->display().find("secret"), std::string::npos);
  e = parse_remote_url("redis://[::1]:6380", nullptr);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->host, "::1");
  EXPECT_EQ(e->port, 6380);
  e = parse_remote_url("unix:///run/redis/redis.sock?db=2", nullptr);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->socket_path, "/run/redis/redis.sock");
  EXPECT_EQ(e->db, 2);
}

TEST(RemoteUrl, RefusesWhatItCannotUseSayingWhy) {
  for (const char* bad :
       {"rediss://h:6380", "http://h", "redis://", "redis://h:0", "redis://h:99999", "redis://h/x",
        "redis://u:%zz@h", "unix://rel.sock", "unix:///s.sock?database=1", "redis://[::1"}) {
    std::string why;
    EXPECT_FALSE(parse_remote_url(bad, &why)) << bad;
    EXPECT_FALSE(why.empty()) << bad;
  }
  std::string why;
  parse_remote_url("rediss://h", &why);
  EXPECT_NE(why.find("TLS"), std::string::npos) << why;
}

TEST(RemoteConfig, FromEnvironment) {
  WarningCapture warnings;
  ::setenv("CUJIT_CACHE_REMOTE", "redis://h:1/2", 1);
  ::setenv("CUJIT_CACHE_REMOTE_TIMEOUT_MS", "20,300", 1);
  ::setenv("CUJIT_CACHE_SIGNING_KEY", "/k/builder.key", 1);
  ::setenv("CUJIT_CACHE_TRUSTED_KEYS", "/k/a.pub:/k/b.pub", 1);
  ::setenv("CUJIT_CACHE_TRUST_ANY_WRITER", "1", 1);
  ::setenv("CUJIT_CACHE_REQUIRE_SIGNED", "yes", 1);
  CacheConfig c = CacheConfig::from_environment();
  EXPECT_EQ(c.remote_url, "redis://h:1/2");
  EXPECT_EQ(c.remote_connect_timeout_ms, 20);
  EXPECT_EQ(c.remote_timeout_ms, 300);
  EXPECT_EQ(c.signing_key_path, "/k/builder.key");
  EXPECT_EQ(c.trusted_keys_path, "/k/a.pub:/k/b.pub");
  EXPECT_TRUE(c.trust_any_writer);
  EXPECT_TRUE(c.require_signed_deployments);
  EXPECT_EQ(warnings.count(), 0u);
  ::setenv("CUJIT_CACHE_REMOTE_TIMEOUT_MS", "fast", 1);
  c = CacheConfig::from_environment();
  EXPECT_EQ(c.remote_connect_timeout_ms, 50);
  EXPECT_EQ(c.remote_timeout_ms, 100);
  EXPECT_EQ(warnings.count(), 1u);
  ::setenv("CUJIT_CACHE", "off", 1);  // process memory only: no fleet either
  EXPECT_TRUE(CacheConfig::from_environment().remote_url.empty());
  for (const char* v : {"CUJIT_CACHE", "CUJIT_CACHE_REMOTE", "CUJIT_CACHE_REMOTE_TIMEOUT_MS",
                        "CUJIT_CACHE_SIGNING_KEY", "CUJIT_CACHE_TRUSTED_KEYS",
                        "CUJIT_CACHE_TRUST_ANY_WRITER", "CUJIT_CACHE_REQUIRE_SIGNED"}) {
    ::unsetenv(v);
  }
  c = CacheConfig::from_environment();
  EXPECT_TRUE(c.remote_url.empty());
  EXPECT_FALSE(c.trust_any_writer);
}

CacheRecord sample_record() {
  SourceProgram p;
  p.source = "extern \"C\" __global__ void k(float* x) { x[0] = 1; }\n";
  p.name_expressions = {"k"};
  CompiledProgram c;
  c.target = Target{90};
  c.binary = std::string(300, '\x42');
  c.lowered_names = {{"k", "k"}};
  c.metadata = R"({"m":1})";
  c.log = "log";
  return make_record(content_key(p, c.target, "raw"), "raw", p, c, 1234);
}

TEST(RemoteEntry, RoundTripsAndBindsTheRequestKey) {
  const CacheRecord r = sample_record();
  const std::string key(64, 'a');
  const std::string value = encode_remote_entry(key, r, "sig");
  RemoteEntry e;
  ASSERT_EQ(decode_remote_entry(value, key, &e), RemoteDecode::Ok);
  EXPECT_EQ(e.request_key, key);
  EXPECT_EQ(e.signature, "sig");
  EXPECT_EQ(e.record.program.binary, r.program.binary);
  EXPECT_EQ(e.record.program.lowered_names, r.program.lowered_names);
  EXPECT_EQ(e.record.program.target, r.program.target);
  EXPECT_EQ(e.record.source_zstd, r.source_zstd);
  EXPECT_EQ(decode_remote_entry(value, std::string(64, 'b'), &e), RemoteDecode::WrongRequest);
  EXPECT_EQ(remote_kernel_key(key), "cujit:1:kernel:" + key);
  EXPECT_EQ(request_key_of(remote_kernel_key(key)), key);
  EXPECT_EQ(request_key_of("cujit:1:lease:" + key), "");
  EXPECT_EQ(request_key_of("cujit:1:kernel:xyz"), "");
}

// The fuzzer's property (tests/fuzz/remote_fuzz.cpp): a value decodes to an entry that encodes
// back to the same bytes. Stripping an older log's trailing NUL while decoding broke it
// (corpus/remote/regression_log_trailing_nul, found by the fresh-clone CI's fuzzing run).
TEST(RemoteEntry, ALogEndingInANulKeepsItsOneEncoding) {
  CacheRecord r = sample_record();
  r.program.log = std::string("warning: x\0", 11);
  const std::string key(64, 'a');
  const std::string value = encode_remote_entry(key, r, "sig");
  RemoteEntry e;
  ASSERT_EQ(decode_remote_entry(value, key, &e), RemoteDecode::Ok);
  EXPECT_EQ(encode_remote_entry(e.request_key, e.record, e.signature), value);
}

TEST(RemoteEntry, EveryTruncationAndEveryExtensionIsMalformed) {
  const std::string key(64, 'a');
  const std::string value = encode_remote_entry(key, sample_record(), "");
  RemoteEntry e;
  for (std::size_t n = 0; n < value.size(); ++n) {
    ASSERT_EQ(decode_remote_entry(value.substr(0, n), key, &e), RemoteDecode::Malformed) << n;
  }
  EXPECT_EQ(decode_remote_entry(value + "x", key, &e), RemoteDecode::Malformed);
}

TEST(RemoteEntry, AFlippedByteNeverDecodesAsTheOriginal) {
  const std::string key(64, 'a');
  const CacheRecord r = sample_record();
  const std::string value = encode_remote_entry(key, r, "");
  for (std::size_t i = 0; i < value.size(); i += 3) {
    std::string bad = value;
    bad[i] ^= 0x20;
    RemoteEntry e;
    const RemoteDecode d = decode_remote_entry(bad, key, &e);
    // Only the unsealed fields (log, options, source, times, signature) may change and still
    // decode; the binary, names, metadata, key, kind and target are sealed by the checksum.
    if (d == RemoteDecode::Ok) {
      EXPECT_EQ(e.record.program.binary, r.program.binary) << i;
      EXPECT_EQ(e.record.program.metadata, r.program.metadata) << i;
      EXPECT_EQ(e.record.program.lowered_names, r.program.lowered_names) << i;
      EXPECT_EQ(e.record.content_key, r.content_key) << i;
      EXPECT_EQ(e.record.program.target, r.program.target) << i;
    }
  }
}

}  // namespace
}  // namespace cujit::detail
