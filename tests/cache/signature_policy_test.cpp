// Signed deployment databases at run time (CacheConfig::require_signed_deployments): a signed
// database serves its kernels; unsigned, untrusted, tampered and remapped entries are refused
// (counted, one warning per cause per database) and the kernel is compiled instead; no usable
// trusted key refuses everything.
#include "cache/signature_policy.hpp"

#include "cache/database_admin.hpp"
#include "cache/database_transfer.hpp"
#include "cache/entry_signature.hpp"
#include "cache/kernel_cache.hpp"
#include "cache/sqlite_store.hpp"
#include "cache_test_util.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

namespace cujit::detail {
namespace {

using test::fake_kernel;
using test::FakeCompiler;
using test::FakeKernel;
using test::TempDir;
using test::WarningCapture;

std::string rkey(const FakeKernel& k) {
  return request_key(k.request.kind, k.request.spec, k.request.target);
}

std::string ckey(const FakeKernel& k) {
  return content_key(k.source, k.request.target, k.request.kind);
}

class SignedDeployment : public ::testing::Test {
 protected:
  void SetUp() override {
    write_key_pair(dir_.file("builder"), builder_, false);
    write_key_pair(dir_.file("stranger"), stranger_, false);
  }

  // app.db holding `kernels` (each for its own target), signed by `key` unless null, as
  // `cujit-cache precompile --sign` makes it.
  void build(const std::vector<FakeKernel>& kernels, const SigningKey* key) {
    {
      CacheConfig config;
      config.database_path = app_;
      KernelCache cache(config);
      for (const FakeKernel& k : kernels) {
        cache.get_or_compile(k.request, k.generator(), builder_compiler_.fn(k.request.target));
      }
    }
    auto store = SqliteStore::open_existing(app_, {});
    if (key != nullptr) {
      DatabaseTransfer(*store).sign_all([key](const CacheRecord& r, const std::string& request) {
        return sign_entry(r, request, *key);
      });
    }
    DatabaseTransfer(*store).finalize_for_deployment();
  }

  CacheConfig run_config(bool required, const std::string& trusted_keys) const {
    CacheConfig c;
    c.database_path = dir_.file("kernels.db");
    c.deployment_databases = {app_};
    c.require_signed_deployments = required;
    c.trusted_keys_path = trusted_keys;
    return c;
  }
  CacheConfig required() const { return run_config(true, dir_.file("builder.pub")); }

  // The binary `k` gets from a fresh cache with `config`, and where it came from.
  std::string serve(const CacheConfig& config, const FakeKernel& k, CacheOutcome* where,
                    CacheStats* stats = nullptr) {
    KernelCache cache(config);
    auto program =
        cache.get_or_compile(k.request, k.generator(), compiler_.fn(k.request.target), where);
    if (stats != nullptr) *stats = cache.stats();
    return program->binary;
  }

  // Replaces an entry's binary and reseals its checksum: damage detection passes, only the
  // signature can tell.
  void replace_binary(const std::string& content_key, const std::string& binary) {
    auto store = SqliteStore::open_existing(app_, {});
    CacheRecord r = DatabaseAdmin(*store).load(content_key, false).value();
    r.program.binary = binary;
    r.checksum = record_checksum(r);
    store->exec("UPDATE kernels SET binary = X'" + to_hex(binary) +
                "', binary_size = " + std::to_string(binary.size()) + ", checksum = X'" +
                to_hex(r.checksum) + "' WHERE content_key = '" + content_key + "'");
  }

  TempDir dir_;
  const std::string app_ = dir_.file("app.db");
  const SigningKey builder_ = generate_signing_key();
  const SigningKey stranger_ = generate_signing_key();
  FakeCompiler builder_compiler_;  // builds app.db
  FakeCompiler compiler_;          // the running process's
};

TEST_F(SignedDeployment, ASignedDatabaseServesByRequestAndByContentKey) {
  const FakeKernel k = fake_kernel("k");
  build({k}, &builder_);
  WarningCapture warnings;
  KernelCache cache(required());
  CacheOutcome where{};
  cache.get_or_compile(k.request, k.generator(), compiler_.fn(Target{80}), &where);
  EXPECT_EQ(where, CacheOutcome::DeploymentHit);
  // Another request for the same source: found by content key, with the entry's signature.
  FakeKernel alias = k;
  alias.request.spec = "another spec, the same source";
  cache.get_or_compile(alias.request, alias.generator(), compiler_.fn(Target{80}), &where);
  EXPECT_EQ(where, CacheOutcome::DeploymentHit);
  EXPECT_EQ(compiler_.calls, 0);
  EXPECT_EQ(cache.stats().deployment_hits, 2u);
  EXPECT_EQ(cache.stats().deployment_refused, 0u);
  EXPECT_EQ(warnings.count(), 0u) << warnings.joined();
}

TEST_F(SignedDeployment, UnsignedEntriesAreRefusedCountedAndWarnedAboutOnce) {
  const FakeKernel a = fake_kernel("a"), b = fake_kernel("b");
  build({a, b}, nullptr);
  CacheOutcome where{};
  serve(run_config(false, ""), a, &where);  // not required: served
  EXPECT_EQ(where, CacheOutcome::DeploymentHit);

  WarningCapture warnings;
  KernelCache cache(required());
  for (const FakeKernel* k : {&a, &b}) {
    cache.get_or_compile(k->request, k->generator(), compiler_.fn(Target{80}), &where);
    EXPECT_EQ(where, CacheOutcome::Compiled);
  }
  EXPECT_EQ(compiler_.calls, 2);
  // Each kernel was found twice (by request key, then by content key) and refused twice.
  EXPECT_EQ(cache.stats().deployment_refused, 4u);
  EXPECT_EQ(cache.stats().deployment_hits, 0u);
  ASSERT_EQ(warnings.count(), 1u) << warnings.joined();
  EXPECT_TRUE(warnings.contains(app_)) << warnings.joined();
  EXPECT_TRUE(warnings.contains(to_string(SignatureVerdict::Unsigned))) << warnings.joined();
  cache.reset_stats();
  EXPECT_EQ(cache.stats().deployment_refused, 0u);
}

TEST_F(SignedDeployment, AnUntrustedSignerIsRefusedByItsKeyIdOneWarningPerCause) {
  const FakeKernel a = fake_kernel("a"), b = fake_kernel("b"), c = fake_kernel("c");
  build({a, b, c}, &stranger_);
  SqliteStore::open_existing(app_, {})->exec("DELETE FROM signatures WHERE key IN ('" + rkey(c) +
                                             "', '" + ckey(c) + "')");
  CacheOutcome where{};
  EXPECT_EQ(serve(run_config(true, dir_.file("stranger.pub")), a, &where),
            builder_compiler_.fn(Target{80})(a.source).binary);
  EXPECT_EQ(where, CacheOutcome::DeploymentHit);  // trusted, the same database serves

  WarningCapture warnings;
  KernelCache cache(required());
  for (const FakeKernel* k : {&a, &b, &c}) {
    cache.get_or_compile(k->request, k->generator(), compiler_.fn(Target{80}), &where);
    EXPECT_EQ(where, CacheOutcome::Compiled);
  }
  EXPECT_EQ(cache.stats().deployment_refused, 6u);
  ASSERT_EQ(warnings.count(), 2u) << warnings.joined();  // untrusted (a, b) and unsigned (c)
  EXPECT_TRUE(warnings.contains(to_string(SignatureVerdict::UnknownSigner))) << warnings.joined();
  EXPECT_TRUE(warnings.contains(key_id(stranger_.public_key))) << warnings.joined();
  EXPECT_TRUE(warnings.contains(to_string(SignatureVerdict::Unsigned))) << warnings.joined();
}

TEST_F(SignedDeployment, ATamperedBinaryIsRefusedAndCompiled) {
  const FakeKernel k = fake_kernel("k");
  build({k}, &builder_);
  replace_binary(ckey(k), "EVIL CODE");
  CacheOutcome where{};
  EXPECT_EQ(serve(run_config(false, ""), k, &where), "EVIL CODE");  // the checksum passes
  EXPECT_EQ(where, CacheOutcome::DeploymentHit);

  WarningCapture warnings;
  CacheStats stats;
  const std::string served = serve(required(), k, &where, &stats);
  EXPECT_EQ(where, CacheOutcome::Compiled);
  EXPECT_EQ(served, compiler_.fn(Target{80})(k.source).binary);
  EXPECT_EQ(stats.deployment_refused, 2u);
  ASSERT_EQ(warnings.count(), 1u) << warnings.joined();
  EXPECT_TRUE(warnings.contains(to_string(SignatureVerdict::BadSignature))) << warnings.joined();
  EXPECT_TRUE(warnings.contains(key_id(builder_.public_key))) << warnings.joined();
}

TEST_F(SignedDeployment, ARemappedRequestIsRefusedAndTheRightKernelFoundByContent) {
  const FakeKernel a = fake_kernel("a"), b = fake_kernel("b");
  build({a, b}, &builder_);
  // a's request now answers b's intact, validly signed entry.
  SqliteStore::open_existing(app_, {})->exec("UPDATE requests SET content_key = '" + ckey(b) +
                                             "' WHERE request_key = '" + rkey(a) + "'");
  const std::string a_binary = builder_compiler_.fn(Target{80})(a.source).binary;
  const std::string b_binary = builder_compiler_.fn(Target{80})(b.source).binary;
  CacheOutcome where{};
  EXPECT_EQ(serve(run_config(false, ""), a, &where), b_binary);  // the attack, unchecked

  WarningCapture warnings;
  CacheStats stats;
  EXPECT_EQ(serve(required(), a, &where, &stats), a_binary);
  EXPECT_EQ(where, CacheOutcome::DeploymentHit);  // a's own entry, by content key
  EXPECT_EQ(stats.deployment_refused, 1u);
  EXPECT_EQ(warnings.count(), 1u) << warnings.joined();
  EXPECT_EQ(compiler_.calls, 0);
}

TEST_F(SignedDeployment, CompatibleTargetsNeedASignatureToo) {
  const FakeKernel sm80 = fake_kernel("k", Target{80});
  FakeKernel device = fake_kernel("k", Target{86});
  device.request.compatible = compatible_targets(86);
  build({sm80}, nullptr);
  CacheOutcome where{};
  CacheStats stats;
  {
    WarningCapture warnings;
    serve(required(), device, &where, &stats);
    EXPECT_EQ(warnings.count(), 1u) << warnings.joined();
  }
  EXPECT_EQ(where, CacheOutcome::Compiled);
  EXPECT_EQ(stats.deployment_refused, 1u);
  EXPECT_EQ(stats.compatible_cubin_hits, 0u);

  TempDir fresh;  // signed: the sm_80 cubin serves the 8.6 device
  std::remove(app_.c_str());
  build({sm80}, &builder_);
  CacheConfig config = required();
  config.database_path = fresh.file("kernels.db");
  const std::string served = serve(config, device, &where, &stats);
  EXPECT_EQ(where, CacheOutcome::DeploymentHit);
  EXPECT_EQ(served, builder_compiler_.fn(Target{80})(sm80.source).binary);
  EXPECT_EQ(stats.compatible_cubin_hits, 1u);
  EXPECT_EQ(stats.deployment_refused, 0u);
}

TEST_F(SignedDeployment, WithoutUsableTrustedKeysEverythingIsRefusedWithOneWarning) {
  const FakeKernel a = fake_kernel("a"), b = fake_kernel("b");
  build({a, b}, &builder_);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "no trusted key"},
      {dir_.file("missing.pub"), "missing.pub"},
      {dir_.file("builder.key"), "builder.key"},  // a secret key is not a public one
  };
  for (const auto& [keys, said] : cases) {
    WarningCapture warnings;
    KernelCache cache(run_config(true, keys));
    CacheOutcome where{};
    for (const FakeKernel* k : {&a, &b}) {
      cache.get_or_compile(k->request, k->generator(), compiler_.fn(Target{80}), &where);
      EXPECT_EQ(where, CacheOutcome::Compiled) << keys;
    }
    EXPECT_EQ(cache.stats().deployment_refused, 4u) << keys;
    ASSERT_EQ(warnings.count(), 1u) << keys << ": " << warnings.joined();
    EXPECT_TRUE(warnings.contains(said)) << warnings.joined();
    EXPECT_TRUE(warnings.contains("refused")) << warnings.joined();
    std::remove(dir_.file("kernels.db").c_str());  // the next case compiles again
    std::remove(dir_.file("kernels.db-wal").c_str());
    std::remove(dir_.file("kernels.db-shm").c_str());
  }
}

// What a deployed program sets: CUJIT_CACHE_REQUIRE_SIGNED=1 CUJIT_CACHE_TRUSTED_KEYS=...
// Sets an environment variable (unsets it for null) and restores it when destroyed.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    value != nullptr ? ::setenv(name, value, 1) : ::unsetenv(name);
  }
  ~ScopedEnv() { old_ ? ::setenv(name_, old_->c_str(), 1) : ::unsetenv(name_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST_F(SignedDeployment, TheEnvironmentRequiresSignatures) {
  const FakeKernel k = fake_kernel("k");
  build({k}, &stranger_);
  CacheConfig unchecked, checked;
  {
    const std::string trusted = dir_.file("builder.pub");
    ScopedEnv dir("CUJIT_CACHE_DIR", dir_.path().c_str()), path("CUJIT_CACHE_PATH", app_.c_str()),
        keys("CUJIT_CACHE_TRUSTED_KEYS", trusted.c_str());
    {
      ScopedEnv off("CUJIT_CACHE_REQUIRE_SIGNED", nullptr);
      unchecked = CacheConfig::from_environment();
    }
    ScopedEnv on("CUJIT_CACHE_REQUIRE_SIGNED", "1");
    checked = CacheConfig::from_environment();
  }
  EXPECT_FALSE(unchecked.require_signed_deployments);
  EXPECT_TRUE(checked.require_signed_deployments);
  EXPECT_EQ(checked.trusted_keys_path, dir_.file("builder.pub"));
  CacheOutcome where{};
  serve(unchecked, k, &where);
  EXPECT_EQ(where, CacheOutcome::DeploymentHit);
  WarningCapture warnings;
  CacheStats stats;
  serve(checked, k, &where, &stats);
  EXPECT_EQ(where, CacheOutcome::Compiled);
  EXPECT_EQ(stats.deployment_refused, 2u);
  EXPECT_TRUE(warnings.contains(key_id(stranger_.public_key))) << warnings.joined();
}

// The policy alone: what each verdict does, the once-per-cause-per-database warnings.
TEST(SignaturePolicy, AdmitsOnlyValidSignaturesAndWarnsOncePerCausePerDatabase) {
  TempDir dir;
  const SigningKey key = generate_signing_key();
  write_key_pair(dir.file("k"), key, false);
  CacheRecord r;
  r.content_key = std::string(64, 'a');
  r.kind = "test";
  r.program.target = Target{80};
  r.program.binary = "cubin";
  SignaturePolicy policy(dir.file("k.pub"));
  WarningCapture warnings;
  EXPECT_TRUE(policy.admits("one.db", r, "q", sign_entry(r, "q", key)));
  EXPECT_TRUE(policy.admits("one.db", r, "", sign_entry(r, "", key)));
  EXPECT_FALSE(policy.admits("one.db", r, "q", sign_entry(r, "", key)));
  EXPECT_FALSE(policy.admits("one.db", r, "q", sign_entry(r, "other", key)));
  EXPECT_FALSE(policy.admits("one.db", r, "q", ""));
  EXPECT_FALSE(policy.admits("one.db", r, "q", "short"));
  EXPECT_FALSE(policy.admits("two.db", r, "q", ""));
  EXPECT_EQ(warnings.count(), 4u) << warnings.joined();  // bad, unsigned, malformed; two.db
  EXPECT_TRUE(warnings.contains("two.db")) << warnings.joined();
  EXPECT_TRUE(warnings.contains(to_string(SignatureVerdict::Malformed))) << warnings.joined();
}

}  // namespace
}  // namespace cujit::detail
