// Issue 19: poisoned fleet entries. Whoever can write the Redis server can store anything under
// any key; each such entry must be refused, counted and warned about (once per cause), and the
// kernel compiled here instead: never loaded.

#include "cache/remote_entry.hpp"
#include "fleet_test_util.hpp"

#include <gtest/gtest.h>

#include <functional>

namespace cujit::detail {
namespace {

using test::connect_to;
using test::fake_kernel;
using test::FakeCompiler;
using test::host_config;
using test::KeyPairFiles;
using test::RedisServer;
using test::TempDir;
using test::WarningCapture;

// A correctly built entry for `k`, as a builder holding `key` would publish it.
struct Planted {
  std::string request_key;
  CacheRecord record;
};

Planted entry_for(const test::FakeKernel& k) {
  FakeCompiler compiler;
  const CompiledProgram program = compiler.fn(k.request.target)(k.source);
  Planted p;
  p.request_key = request_key(k.request.kind, k.request.spec, k.request.target);
  p.record = make_record(content_key(k.source, k.request.target, k.request.kind), k.request.kind,
                         k.source, program, now_ms());
  return p;
}

std::string signed_value(const Planted& p, const SigningKey& key) {
  return encode_remote_entry(p.request_key, p.record, sign_entry(p.record, p.request_key, key));
}

// Plants with `plant`, then asks a fresh host for kernel "victim": it must compile it, count one
// refusal and warn once with `cause`.
void expect_refused(RedisServer& redis, const KeyPairFiles& keys,
                    const std::function<void(RedisConnection&, const std::string& key)>& plant,
                    const std::string& cause) {
  const auto victim = fake_kernel("victim");
  auto admin = connect_to(redis.url());
  plant(admin, remote_kernel_key(entry_for(victim).request_key));
  TempDir dir;
  FakeCompiler compiler;
  WarningCapture warnings;
  KernelCache cache(host_config(dir, redis.url(), keys));
  CacheOutcome where{};
  auto program = cache.get_or_compile(victim.request, victim.generator(),
                                      compiler.fn(victim.request.target), &where);
  EXPECT_EQ(where, CacheOutcome::Compiled);
  EXPECT_EQ(compiler.calls, 1);
  EXPECT_EQ(program->binary, compiler.fn(victim.request.target)(victim.source).binary);
  EXPECT_EQ(cache.stats().remote_refused, 1u);
  EXPECT_EQ(cache.stats().remote_hits, 0u);
  EXPECT_EQ(warnings.count(), 1u) << warnings.joined();
  EXPECT_TRUE(warnings.contains(cause)) << "expected '" << cause << "' in:\n" << warnings.joined();
}

TEST(FleetHostile, ABadSignatureIsRefused) {
  RedisServer redis;
  CUJIT_REQUIRE_REDIS(redis);
  KeyPairFiles keys;
  expect_refused(
      redis, keys,
      [&](RedisConnection& c, const std::string& key) {
        Planted p = entry_for(fake_kernel("victim"));
        std::string signature = sign_entry(p.record, p.request_key, keys.key);
        signature.back() ^= 1;
        c.set(key, encode_remote_entry(p.request_key, p.record, signature));
      },
      "signature does not match the entry");
}

TEST(FleetHostile, AnotherKernelsSignedEntryUnderThisKeyIsRefused) {
  RedisServer redis;
  CUJIT_REQUIRE_REDIS(redis);
  KeyPairFiles keys;
  // Copied as it is: it names its own request.
  expect_refused(
      redis, keys,
      [&](RedisConnection& c, const std::string& key) {
        c.set(key, signed_value(entry_for(fake_kernel("other")), keys.key));
      },
      "entry stored under another request's key");
}

TEST(FleetHostile, AnotherKernelsBinaryWithItsValidSignatureRelabelledIsRefused) {
  RedisServer redis;
  CUJIT_REQUIRE_REDIS(redis);
  KeyPairFiles keys;
  // Relabelled with this request's key: the signature was made for the other request.
  expect_refused(
      redis, keys,
      [&](RedisConnection& c, const std::string& key) {
        const Planted other = entry_for(fake_kernel("other"));
        const std::string victim_key = entry_for(fake_kernel("victim")).request_key;
        c.set(key, encode_remote_entry(victim_key, other.record,
                                       sign_entry(other.record, other.request_key, keys.key)));
      },
      "signature does not match the entry");
}

TEST(FleetHostile, ASwappedBinaryIsRefusedResealedOrNot) {
  RedisServer redis;
  CUJIT_REQUIRE_REDIS(redis);
  KeyPairFiles keys;
  const auto swapped = [&](bool reseal) {
    return [&, reseal](RedisConnection& c, const std::string& key) {
      Planted p = entry_for(fake_kernel("victim"));
      const std::string signature = sign_entry(p.record, p.request_key, keys.key);
      p.record.program.binary = "FAKEBIN:evil" + std::string(512, '\x7f');
      if (reseal) p.record.checksum = record_checksum(p.record);
      c.set(key, encode_remote_entry(p.request_key, p.record, signature));
    };
  };
  expect_refused(redis, keys, swapped(false), "entry fails its checksum");
  expect_refused(redis, keys, swapped(true), "signature does not match the entry");
}

TEST(FleetHostile, ATruncatedValueIsRefused) {
  RedisServer redis;
  CUJIT_REQUIRE_REDIS(redis);
  KeyPairFiles keys;
  expect_refused(
      redis, keys,
      [&](RedisConnection& c, const std::string& key) {
        const std::string value = signed_value(entry_for(fake_kernel("victim")), keys.key);
        c.set(key, value.substr(0, value.size() - 70));
      },
      "malformed or truncated entry");
}

TEST(FleetHostile, AKeyOfTheWrongRedisTypeIsRefused) {
  RedisServer redis;
  CUJIT_REQUIRE_REDIS(redis);
  KeyPairFiles keys;
  expect_refused(
      redis, keys,
      [&](RedisConnection& c, const std::string& key) {
        c.execute({"RPUSH", key, "a", "b"});
      },
      "not a string value");
}

TEST(FleetHostile, AnUnknownSignerIsRefused) {
  RedisServer redis;
  CUJIT_REQUIRE_REDIS(redis);
  KeyPairFiles keys;
  const SigningKey stranger = generate_signing_key();
  expect_refused(
      redis, keys,
      [&](RedisConnection& c, const std::string& key) {
        c.set(key, signed_value(entry_for(fake_kernel("victim")), stranger));
      },
      "signed by an untrusted key (signer " + key_id(stranger.public_key) + ")");
}

TEST(FleetHostile, AnUnsignedEntryIsRefusedUnlessEveryWriterIsTrusted) {
  RedisServer redis;
  CUJIT_REQUIRE_REDIS(redis);
  KeyPairFiles keys;
  const auto unsigned_entry = [](RedisConnection& c, const std::string& key) {
    const Planted p = entry_for(fake_kernel("victim"));
    c.set(key, encode_remote_entry(p.request_key, p.record, ""));
  };
  expect_refused(redis, keys, unsigned_entry, "unsigned");
  // The operator's explicit choice: load what anyone who can write the server stored.
  TempDir dir;
  CacheConfig config = host_config(dir, redis.url(), keys);
  config.trusted_keys_path.clear();
  config.trust_any_writer = true;
  KernelCache cache(config);
  FakeCompiler compiler;
  const auto victim = fake_kernel("victim");
  CacheOutcome where{};
  cache.get_or_compile(victim.request, victim.generator(), compiler.fn(victim.request.target),
                       &where);
  EXPECT_EQ(where, CacheOutcome::RemoteHit);
  EXPECT_EQ(compiler.calls, 0);
}

TEST(FleetHostile, AOneGibValueIsRefusedUnread) {
  RedisServer redis({"--proto-max-bulk-len", "2gb"});
  CUJIT_REQUIRE_REDIS(redis);
  KeyPairFiles keys;
  expect_refused(
      redis, keys,
      [&](RedisConnection& c, const std::string& key) {
        // A valid entry's start, padded to 1 GiB by the server itself (nothing that large is sent).
        c.set(key, signed_value(entry_for(fake_kernel("victim")), keys.key));
        c.execute({"SETRANGE", key, std::to_string((std::uint64_t{1} << 30) - 1), "x"});
      },
      "a value of 1073741824 bytes");
}

TEST(FleetHostile, WithoutTrustedKeysNothingIsLoadedButKernelsArePublished) {
  RedisServer redis;
  CUJIT_REQUIRE_REDIS(redis);
  KeyPairFiles keys;
  auto admin = connect_to(redis.url());
  const auto victim = fake_kernel("victim");
  const Planted p = entry_for(victim);
  admin.set(remote_kernel_key(p.request_key), signed_value(p, keys.key));
  TempDir dir;
  CacheConfig config = host_config(dir, redis.url(), keys);
  config.trusted_keys_path.clear();
  WarningCapture warnings;
  KernelCache cache(config);
  FakeCompiler compiler;
  CacheOutcome where{};
  cache.get_or_compile(victim.request, victim.generator(), compiler.fn(victim.request.target),
                       &where);
  EXPECT_EQ(where, CacheOutcome::Compiled);
  const auto mine = fake_kernel("mine");
  cache.get_or_compile(mine.request, mine.generator(), compiler.fn(mine.request.target));
  cache.flush();
  EXPECT_EQ(cache.stats().remote_published, 2u);
  EXPECT_EQ(cache.stats().remote_hits, 0u);
  EXPECT_EQ(warnings.count(), 1u) << warnings.joined();
  EXPECT_TRUE(warnings.contains("no trusted key is configured")) << warnings.joined();
}

}  // namespace
}  // namespace cujit::detail
