// Issue 29, item 1: a signature covers every field of a cache entry that a loader reads (lowered
// names, metadata, log, options, source), not only the binary and its labels. An attacker who
// can write a signed deployment database or the fleet edits such a field and reseals the XXH3
// checksum (which anyone can recompute): the entry must be refused, never served.
#include "cache/entry_signature.hpp"

#include "cache/database_admin.hpp"
#include "cache/database_transfer.hpp"
#include "cache/kernel_cache.hpp"
#include "cache/remote_entry.hpp"
#include "cache/sqlite_store.hpp"
#include "cache_test_util.hpp"
#include "fleet_test_util.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace cujit::detail {
namespace {

using test::FakeCompiler;
using test::FakeKernel;
using test::TempDir;
using test::WarningCapture;

TrustedKey trusted(const SigningKey& key) { return {key.public_key, key_id(key.public_key)}; }

// A kernel with two entry points, as RawModule("...", {}, {"op<1>", "op<2>"}) would make.
FakeKernel two_ops(const std::string& name = "op") {
  FakeKernel k = test::fake_kernel(name);
  k.source.name_expressions = {name + "<1>", name + "<2>"};
  return k;
}

CacheRecord record_of(const FakeKernel& k) {
  FakeCompiler compiler;
  const CompiledProgram program = compiler.fn(k.request.target)(k.source);
  return make_record(content_key(k.source, k.request.target, k.request.kind), k.request.kind,
                     k.source, program, now_ms());
}

std::string rkey(const FakeKernel& k) {
  return request_key(k.request.kind, k.request.spec, k.request.target);
}

// Each edit an attacker can make to a field the checksum does not protect, or protects with a
// checksum anyone can recompute. Resealed after the edit.
std::vector<std::pair<std::string, std::function<void(CacheRecord&)>>> edits() {
  return {
      {"lowered names swapped",
       [](CacheRecord& r) {
         std::swap(r.program.lowered_names[0].second, r.program.lowered_names[1].second);
       }},
      {"a lowered name replaced",
       [](CacheRecord& r) { r.program.lowered_names[0].second = "_Zevil"; }},
      {"metadata", [](CacheRecord& r) { r.program.metadata = R"({"pass2":"_Zop<1>"})"; }},
      {"log", [](CacheRecord& r) { r.program.log = "\x1b]0;owned\x07"; }},
      {"options", [](CacheRecord& r) { r.options = R"({"options":["-DEVIL"]})"; }},
      {"source", [](CacheRecord& r) { r.source_zstd = compress("evil"), r.source_size = 4; }},
  };
}

TEST(SignedRecord, EveryFieldALoaderReadsIsSigned) {
  const SigningKey builder = generate_signing_key();
  const FakeKernel k = two_ops();
  const CacheRecord original = record_of(k);
  for (const std::string& request : {rkey(k), std::string()}) {
    const std::string signature = sign_entry(original, request, builder);
    ASSERT_EQ(verify_entry(original, request, signature, {trusted(builder)}, nullptr),
              SignatureVerdict::Valid);
    for (const auto& [what, edit] : edits()) {
      CacheRecord r = original;
      edit(r);
      r.checksum = record_checksum(r);
      EXPECT_EQ(verify_entry(r, request, signature, {trusted(builder)}, nullptr),
                SignatureVerdict::BadSignature)
          << what << (request.empty() ? " (by content key)" : " (by request key)");
    }
  }
}

TEST(SignedRecord, UseTimesAreNotSigned) {
  // A local copy's use times change on every use; they decide eviction, not what is loaded.
  const SigningKey builder = generate_signing_key();
  const FakeKernel k = two_ops();
  CacheRecord r = record_of(k);
  const std::string signature = sign_entry(r, rkey(k), builder);
  r.created += 1000;
  r.last_used += 5000;
  EXPECT_EQ(verify_entry(r, rkey(k), signature, {trusted(builder)}, nullptr),
            SignatureVerdict::Valid);
}

// A signed deployment database (app.db) whose entry an attacker edits in place.
class EditedDeployment : public ::testing::Test {
 protected:
  void build_signed() {
    {
      CacheConfig config;
      config.database_path = app_;
      KernelCache cache(config);
      cache.get_or_compile(k_.request, k_.generator(), builder_compiler_.fn(k_.request.target));
    }
    auto store = SqliteStore::open_existing(app_, {});
    DatabaseTransfer(*store).sign_all([this](const CacheRecord& r, const std::string& request) {
      return sign_entry(r, request, builder_);
    });
    DatabaseTransfer(*store).finalize_for_deployment();
  }

  // Writes `r`'s editable fields over the stored row, checksum resealed.
  void overwrite(CacheRecord r) {
    r.checksum = record_checksum(r);
    auto store = SqliteStore::open_existing(app_, {});
    store->exec("UPDATE kernels SET lowered_names = X'" +
                to_hex(encode_names(r.program.lowered_names)) + "', metadata = X'" +
                to_hex(r.program.metadata) + "', log = X'" + to_hex(r.program.log) +
                "', options = X'" + to_hex(r.options) + "', source = X'" + to_hex(r.source_zstd) +
                "', source_size = " + std::to_string(r.source_size) + ", checksum = X'" +
                to_hex(r.checksum) + "' WHERE content_key = '" + r.content_key + "'");
  }

  CacheConfig required() const {
    CacheConfig c;
    c.database_path = dir_.file("kernels.db");
    c.deployment_databases = {app_};
    c.require_signed_deployments = true;
    c.trusted_keys_path = dir_.file("builder.pub");
    return c;
  }

  TempDir dir_;
  const std::string app_ = dir_.file("app.db");
  const SigningKey builder_ = generate_signing_key();
  const FakeKernel k_ = two_ops();
  FakeCompiler builder_compiler_;
};

TEST_F(EditedDeployment, AnEditedFieldIsRefusedAndTheKernelCompiledHere) {
  write_key_pair(dir_.file("builder"), builder_, false);
  build_signed();
  const CacheRecord original =
      DatabaseAdmin(*SqliteStore::open_existing(app_, {}))
          .load(content_key(k_.source, k_.request.target, k_.request.kind), true)
          .value();
  {  // unedited: served from the deployment
    KernelCache cache(required());
    CacheOutcome where{};
    FakeCompiler compiler;
    cache.get_or_compile(k_.request, k_.generator(), compiler.fn(k_.request.target), &where);
    ASSERT_EQ(where, CacheOutcome::DeploymentHit);
  }
  for (const auto& [what, edit] : edits()) {
    CacheRecord r = original;
    edit(r);
    overwrite(r);
    WarningCapture warnings;
    TempDir own;
    CacheConfig config = required();
    config.database_path = own.file("kernels.db");
    KernelCache cache(config);
    FakeCompiler compiler;
    CacheOutcome where{};
    auto program =
        cache.get_or_compile(k_.request, k_.generator(), compiler.fn(k_.request.target), &where);
    EXPECT_EQ(where, CacheOutcome::Compiled) << what;
    EXPECT_EQ(program->lowered_name("op<1>"), "_Zop<1>") << what;
    EXPECT_EQ(program->metadata, R"({"fake":true})") << what;
    EXPECT_GE(cache.stats().deployment_refused, 1u) << what;
    EXPECT_TRUE(warnings.contains("signature does not match the entry")) << what << ":\n"
                                                                         << warnings.joined();
  }
}

// The same edits on the fleet: refused, compiled here, and never stored in the local database.
TEST(SignedFleetRecord, AnEditedFieldIsRefusedAndNeverStoredLocally) {
  test::RedisServer redis;
  CUJIT_REQUIRE_REDIS(redis);
  test::KeyPairFiles keys;
  const FakeKernel k = two_ops("fleetop");
  const CacheRecord original = record_of(k);
  const std::string signature = sign_entry(original, rkey(k), keys.key);
  auto admin = test::connect_to(redis.url());
  for (const auto& [what, edit] : edits()) {
    CacheRecord r = original;
    edit(r);
    r.checksum = record_checksum(r);
    admin.set(remote_kernel_key(rkey(k)), encode_remote_entry(rkey(k), r, signature));
    TempDir dir;
    FakeCompiler compiler;
    WarningCapture warnings;
    {
      KernelCache cache(test::host_config(dir, redis.url(), keys));
      CacheOutcome where{};
      auto program =
          cache.get_or_compile(k.request, k.generator(), compiler.fn(k.request.target), &where);
      EXPECT_EQ(where, CacheOutcome::Compiled) << what;
      EXPECT_EQ(program->lowered_name("fleetop<1>"), "_Zfleetop<1>") << what;
      EXPECT_EQ(cache.stats().remote_refused, 1u) << what;
      EXPECT_TRUE(warnings.contains("signature does not match the entry")) << what << ":\n"
                                                                           << warnings.joined();
    }
    // The local copy is the one compiled here.
    auto local = SqliteStore::open_existing(dir.file("kernels.db"), {});
    Lookup found = local->find_by_request(rkey(k));
    ASSERT_EQ(found.status, Lookup::Status::Hit) << what;
    EXPECT_EQ(found.record.program.lowered_name("fleetop<1>"), "_Zfleetop<1>") << what;
  }
}

// A verified fleet entry is stored locally with its signature, so that what came from a signed
// source can be checked again there (`cujit-cache verify --trusted-keys`).
TEST(SignedFleetRecord, ALocalCopyKeepsTheFleetSignature) {
  test::RedisServer redis;
  CUJIT_REQUIRE_REDIS(redis);
  test::KeyPairFiles keys;
  const FakeKernel k = two_ops("keptop");
  const CacheRecord r = record_of(k);
  auto admin = test::connect_to(redis.url());
  admin.set(remote_kernel_key(rkey(k)),
            encode_remote_entry(rkey(k), r, sign_entry(r, rkey(k), keys.key)));
  TempDir dir;
  {
    KernelCache cache(test::host_config(dir, redis.url(), keys));
    FakeCompiler compiler;
    CacheOutcome where{};
    cache.get_or_compile(k.request, k.generator(), compiler.fn(k.request.target), &where);
    ASSERT_EQ(where, CacheOutcome::RemoteHit);
    cache.flush();
  }
  auto local = SqliteStore::open_existing(dir.file("kernels.db"), {});
  DatabaseAdmin local_db(*local);
  DatabaseTransfer local_transfer(*local);
  ASSERT_EQ(local_transfer.signatures().count(rkey(k)), 1u);
  const CacheRecord stored = local_db.load(r.content_key, true).value();
  EXPECT_EQ(verify_entry(stored, rkey(k), local_transfer.signatures().at(rkey(k)),
                         {trusted(keys.key)}, nullptr),
            SignatureVerdict::Valid);
}

}  // namespace
}  // namespace cujit::detail
