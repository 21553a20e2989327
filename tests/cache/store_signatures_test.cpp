// Signatures kept with entries, in both stores: put stores them in its transaction, lookups
// bring the right one along (the mapping's by request key, the entry's by content key), and
// they go with the entry or the mapping they sign.
#include "cache/database_admin.hpp"
#include "cache/database_transfer.hpp"
#include "cache/entry_signature.hpp"
#include "cache/sqlite_store.hpp"
#include "cache/store.hpp"

#include "cache_test_util.hpp"

#include <gtest/gtest.h>

#include <memory>

namespace cujit::detail {
namespace {

using test::TempDir;

CacheRecord record_for(const std::string& name) {
  SourceProgram p;
  p.source = "__global__ void " + name + "() {}";
  p.name_expressions = {name};
  CompiledProgram c;
  c.target = Target{80};
  c.binary = std::string(100, 'b') + name;
  c.lowered_names = {{name, "_Z" + name}};
  c.metadata = "{}";
  return make_record(content_key(p, c.target, "test"), "test", p, c, now_ms());
}

std::string rkey(const std::string& name) { return request_key("test", name, Target{80}); }

EntrySignatures signed_by(const SigningKey& key, const CacheRecord& r, const std::string& request) {
  return {sign_entry(r, request, key), sign_entry(r, "", key)};
}

class StoreSignatures : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    if (GetParam()) {
      store_ = SqliteStore::open_writable(dir_.file("kernels.db"), {});
    } else {
      store_ = std::make_shared<MemoryStore>();
    }
  }
  TempDir dir_;
  std::shared_ptr<Store> store_;
  const SigningKey key_ = generate_signing_key();
};

TEST_P(StoreSignatures, PutStoresBothAndLookupsBringTheirOwn) {
  const CacheRecord r = record_for("k");
  const EntrySignatures sig = signed_by(key_, r, rkey("k"));
  ASSERT_NE(sig.request, sig.content);
  store_->put(r, rkey("k"), sig);
  const Lookup by_request = store_->find_by_request(rkey("k"));
  ASSERT_EQ(by_request.status, Lookup::Status::Hit);
  EXPECT_EQ(by_request.signature, sig.request);
  const Lookup by_content = store_->find_by_content(r.content_key);
  ASSERT_EQ(by_content.status, Lookup::Status::Hit);
  EXPECT_EQ(by_content.signature, sig.content);
  const std::vector<TrustedKey> trusted = {{key_.public_key, key_id(key_.public_key)}};
  EXPECT_EQ(verify_entry(by_request.record, rkey("k"), by_request.signature, trusted, nullptr),
            SignatureVerdict::Valid);
  EXPECT_EQ(verify_entry(by_content.record, "", by_content.signature, trusted, nullptr),
            SignatureVerdict::Valid);
}

TEST_P(StoreSignatures, UnsignedEntriesHaveNone) {
  const CacheRecord r = record_for("k");
  store_->put(r, rkey("k"));
  EXPECT_EQ(store_->find_by_request(rkey("k")).signature, "");
  EXPECT_EQ(store_->find_by_content(r.content_key).signature, "");
  EXPECT_EQ(store_->find_by_request(rkey("k")).status, Lookup::Status::Hit);
}

TEST_P(StoreSignatures, RemovalTakesTheEntrysAndItsRequestsSignatures) {
  const CacheRecord r = record_for("k");
  const CacheRecord other = record_for("other");
  store_->put(r, rkey("k"), signed_by(key_, r, rkey("k")));
  store_->put(r, rkey("alias"), signed_by(key_, r, rkey("alias")));
  store_->put(other, rkey("other"), signed_by(key_, other, rkey("other")));
  store_->remove(r.content_key);
  // Stored again unsigned, nothing of the old signatures may come back with it.
  store_->put(r, rkey("k"));
  store_->link(rkey("alias"), r.content_key);
  EXPECT_EQ(store_->find_by_request(rkey("k")).signature, "");
  EXPECT_EQ(store_->find_by_request(rkey("alias")).signature, "");
  EXPECT_EQ(store_->find_by_content(r.content_key).signature, "");
  EXPECT_NE(store_->find_by_request(rkey("other")).signature, "");
  EXPECT_NE(store_->find_by_content(other.content_key).signature, "");
  if (auto* sqlite = dynamic_cast<SqliteStore*>(store_.get())) {
    EXPECT_EQ(DatabaseTransfer(*sqlite).signatures().size(), 2u);
  } else {
    EXPECT_EQ(dynamic_cast<MemoryStore&>(*store_).signatures().size(), 2u);
  }
}

TEST_P(StoreSignatures, RemappingARequestDropsItsSignature) {
  const CacheRecord a = record_for("a");
  const CacheRecord b = record_for("b");
  store_->put(a, rkey("q"), signed_by(key_, a, rkey("q")));
  store_->put(b, rkey("q"));  // the request now answers b: a's mapping signature is void
  EXPECT_EQ(store_->find_by_request(rkey("q")).signature, "");
  store_->put(a, rkey("r"), signed_by(key_, a, rkey("r")));
  store_->link(rkey("r"), b.content_key);
  EXPECT_EQ(store_->find_by_request(rkey("r")).signature, "");
  EXPECT_NE(store_->find_by_content(a.content_key).signature, "");  // the entry's own stays
}

INSTANTIATE_TEST_SUITE_P(Stores, StoreSignatures, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Sqlite" : "Memory";
                         });

TEST(SqliteStoreSignatures, SignAllSignsEveryEntryAndMappingAndSkipsDamagedOnes) {
  TempDir dir;
  auto store = SqliteStore::open_writable(dir.file("kernels.db"), {});
  DatabaseAdmin admin(*store);
  DatabaseTransfer transfer(*store);
  const CacheRecord a = record_for("a");
  const CacheRecord b = record_for("b");
  const CacheRecord c = record_for("c");
  store->put(a, rkey("a"));
  store->put(a, rkey("a2"));
  store->put(b, rkey("b"));
  store->put(c, "");
  store->exec("UPDATE kernels SET binary = CAST('x' AS BLOB) WHERE content_key = '" +
              b.content_key + "'");
  const SigningKey key = generate_signing_key();
  const auto outcome = transfer.sign_all([&](const CacheRecord& r, const std::string& request) {
    return sign_entry(r, request, key);
  });
  EXPECT_EQ(outcome.entries, 2u);
  EXPECT_EQ(outcome.requests, 2u);
  EXPECT_EQ(outcome.damaged, 1u);
  const std::map<std::string, std::string> all = transfer.signatures();
  EXPECT_EQ(all.size(), 4u);
  const std::vector<TrustedKey> trusted = {{key.public_key, key_id(key.public_key)}};
  for (const std::string& request : {rkey("a"), rkey("a2")}) {
    EXPECT_EQ(verify_entry(a, request, all.at(request), trusted, nullptr), SignatureVerdict::Valid);
  }
  EXPECT_EQ(verify_entry(a, "", all.at(a.content_key), trusted, nullptr), SignatureVerdict::Valid);
  EXPECT_EQ(verify_entry(c, "", all.at(c.content_key), trusted, nullptr), SignatureVerdict::Valid);
  EXPECT_EQ(all.count(b.content_key) + all.count(rkey("b")), 0u);
  EXPECT_EQ(admin.info().signatures, 4u);
  // Signing again replaces, never duplicates; clear() takes every signature.
  transfer.sign_all([&](const CacheRecord& r, const std::string& request) {
    return sign_entry(r, request, key);
  });
  EXPECT_EQ(transfer.signatures().size(), 4u);
  admin.clear();
  EXPECT_TRUE(transfer.signatures().empty());
}

TEST(SqliteStoreSignatures, ADeploymentDatabaseServesItsSignatures) {
  TempDir dir;
  const std::string path = dir.file("app.db");
  const SigningKey key = generate_signing_key();
  const CacheRecord r = record_for("k");
  {
    auto store = SqliteStore::open_writable(path, {});
    store->put(r, rkey("k"), signed_by(key, r, rkey("k")));
    DatabaseTransfer(*store).finalize_for_deployment();
  }
  auto deployed = SqliteStore::open_read_only(path, {});
  EXPECT_EQ(deployed->find_by_request(rkey("k")).signature, sign_entry(r, rkey("k"), key));
  EXPECT_EQ(deployed->find_by_content(r.content_key).signature, sign_entry(r, "", key));
  EXPECT_THROW(DatabaseTransfer(*deployed).sign_all(
                   [](const CacheRecord&, const std::string&) { return "x"; }),
               CacheError);
}

// An import carries the signatures of what it writes, and nothing else: a request it leaves
// mapped to another entry keeps its own signature (or none).
TEST(SqliteStoreSignatures, ImportCarriesTheSignaturesOfWhatItWrites) {
  TempDir dir;
  const SigningKey key = generate_signing_key();
  auto from = SqliteStore::open_writable(dir.file("from.db"), {});
  auto to = SqliteStore::open_writable(dir.file("to.db"), {});
  const CacheRecord a = record_for("a"), b = record_for("b"), c = record_for("c");
  from->put(a, rkey("q1"), signed_by(key, a, rkey("q1")));
  from->put(a, rkey("q2"), signed_by(key, a, rkey("q2")));
  from->put(c, rkey("q3"), signed_by(key, c, rkey("q3")));
  to->put(b, rkey("q2"));  // q2 answers b here: the import keeps it so
  to->put(c, rkey("q3"));  // c is here already, unsigned
  DatabaseTransfer source(*from);
  DatabaseTransfer destination(*to);
  const auto signatures = source.signatures();
  source.for_each_record([&](const CacheRecord& r, const std::vector<std::string>& requests) {
    destination.import_record(r, requests, signatures);
  });
  EXPECT_EQ(to->find_by_content(a.content_key).signature, sign_entry(a, "", key));
  EXPECT_EQ(to->find_by_request(rkey("q1")).signature, sign_entry(a, rkey("q1"), key));
  EXPECT_EQ(to->find_by_request(rkey("q2")).record.content_key, b.content_key);
  EXPECT_EQ(to->find_by_request(rkey("q2")).signature, "");
  EXPECT_EQ(to->find_by_content(c.content_key).signature, "");
  EXPECT_EQ(to->find_by_request(rkey("q3")).signature, "");
  EXPECT_EQ(destination.signatures().size(), 2u);
}

// Schema version 3 added the signatures table: an older writable database is rebuilt, an older
// deployment database is refused naming the version (it must be rebuilt by precompile).
TEST(SqliteStoreSignatures, AVersion2DatabaseIsRebuiltOrRefused) {
  TempDir dir;
  const std::string path = dir.file("old.db");
  {
    auto store = SqliteStore::open_writable(path, {});
    store->put(record_for("k"), rkey("k"));
    store->exec("DROP TABLE signatures; PRAGMA user_version = 2");
    DatabaseTransfer(*store).finalize_for_deployment();
  }
  try {
    SqliteStore::open_read_only(path, {});
    FAIL() << "a version-2 deployment database was accepted";
  } catch (const CacheError& e) {
    EXPECT_NE(std::string(e.what()).find("schema version 2"), std::string::npos) << e.what();
  }
  auto rebuilt = SqliteStore::open_writable(path, {});
  const DatabaseInfo info = DatabaseAdmin(*rebuilt).info();
  EXPECT_EQ(info.schema_version, 3);
  EXPECT_EQ(info.entries, 0u);
  const CacheRecord r = record_for("k");
  rebuilt->put(r, rkey("k"), {"", sign_entry(r, "", generate_signing_key())});
  EXPECT_NE(rebuilt->find_by_content(r.content_key).signature, "");
}

}  // namespace
}  // namespace cujit::detail
