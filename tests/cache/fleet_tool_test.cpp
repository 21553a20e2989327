// Issue 19: the operator tools of the fleet tier, end to end against a real redis-server:
// `cujit-cache push` seeds the server from a database, `pull` builds a (deployment) database
// from what the fleet compiled, verified; `ls --remote` and `info --remote` inspect it.

#include "cache/database_admin.hpp"
#include "cache/remote_entry.hpp"
#include "fleet_test_util.hpp"
#include "tool_test_util.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <iostream>
#include <set>

namespace cujit::detail {
namespace {

using nlohmann::json;
using test::connect_to;
using test::fake_kernel;
using test::FakeCompiler;
using test::host_config;
using test::KeyPairFiles;
using test::RedisServer;
using test::TempDir;
using test::tool;
using test::ToolRun;

// The tool runs without the fleet variables of whoever runs the tests.
const std::string kCleanEnv =
    "env -u CUJIT_CACHE_REMOTE -u CUJIT_CACHE_SIGNING_KEY -u CUJIT_CACHE_TRUSTED_KEYS";

std::vector<std::string> names(int n, const std::string& prefix = "k") {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.push_back(prefix + std::to_string(i));
  return out;
}

// A host's cache database (no fleet tier) holding `kernels`, compiled by the fake compiler.
std::string local_database(const TempDir& dir, const std::vector<std::string>& kernels) {
  CacheConfig config;
  config.database_path = dir.file("local.db");
  config.preload_records = 0;
  {
    KernelCache cache(config);
    FakeCompiler compiler;
    for (const auto& name : kernels) {
      const auto k = fake_kernel(name);
      cache.get_or_compile(k.request, k.generator(), compiler.fn(k.request.target), nullptr);
    }
  }
  return config.database_path;
}

// Loads `kernels` on a fresh host of the fleet: how many came from the fleet, how many it
// compiled.
struct HostRun {
  int remote_hits = 0;
  int compiled = 0;
};

HostRun fresh_host(const std::string& url, const KeyPairFiles& keys,
                   const std::vector<std::string>& kernels) {
  TempDir dir;
  test::WarningCapture warnings;  // refusals are expected in some tests
  KernelCache host(host_config(dir, url, keys));
  FakeCompiler compiler;
  HostRun run;
  for (const auto& name : kernels) {
    const auto k = fake_kernel(name);
    CacheOutcome where{};
    host.get_or_compile(k.request, k.generator(), compiler.fn(k.request.target), &where);
    run.remote_hits += where == CacheOutcome::RemoteHit ? 1 : 0;
  }
  run.compiled = compiler.calls;
  return run;
}

std::string rkey(const std::string& name) {
  const auto k = fake_kernel(name);
  return request_key(k.request.kind, k.request.spec, k.request.target);
}

ToolRun push(const std::string& url, const std::string& db, const std::string& extra = "") {
  return tool("push --remote " + url + " --db " + db + " --json " + extra, kCleanEnv);
}

TEST(FleetTool, PushSeedsTheFleetAndAnotherHostLoadsItVerified) {
  CUJIT_SKIP_WITHOUT_TOOL();
  RedisServer redis;
  CUJIT_REQUIRE_REDIS(redis);
  KeyPairFiles keys;
  TempDir dir;
  const auto kernels = names(3);
  const ToolRun run = push(redis.url(), local_database(dir, kernels), "--sign " + keys.secret());
  ASSERT_EQ(run.status, 0) << run.out;
  const json j = run.parsed();
  EXPECT_EQ(j["pushed"], 3);
  EXPECT_EQ(j["records"], 3);
  EXPECT_EQ(j["signed"], true);
  EXPECT_EQ(j["signer"], key_id(keys.key.public_key));
  EXPECT_GT(j["bytes"].get<std::uint64_t>(), 3u * 512);
  EXPECT_GT(j["entries_per_s"].get<double>(), 0.0);
  auto admin = connect_to(redis.url());
  for (const auto& name : kernels) EXPECT_TRUE(admin.exists(remote_kernel_key(rkey(name))));
  const HostRun host = fresh_host(redis.url(), keys, kernels);
  EXPECT_EQ(host.remote_hits, 3);
  EXPECT_EQ(host.compiled, 0);
}

TEST(FleetTool, PushTakesTheServerAndKeyFromTheEnvironmentAndSaysWhichKeySigned) {
  CUJIT_SKIP_WITHOUT_TOOL();
  RedisServer redis;
  CUJIT_REQUIRE_REDIS(redis);
  KeyPairFiles keys;
  TempDir dir;
  const std::string db = local_database(dir, names(2));
  const std::string env = kCleanEnv + " CUJIT_CACHE_REMOTE=" + redis.url();
  ToolRun run = tool("push --db " + db, env + " CUJIT_CACHE_SIGNING_KEY=" + keys.secret());
  ASSERT_EQ(run.status, 0) << run.out;
  EXPECT_NE(run.out.find("pushed 2 entries"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("entries/s"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("signed with $CUJIT_CACHE_SIGNING_KEY"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find(key_id(keys.key.public_key)), std::string::npos) << run.out;
  run = tool("push --db " + db, env);
  ASSERT_EQ(run.status, 0) << run.out;
  EXPECT_NE(run.out.find("UNSIGNED"), std::string::npos) << run.out;
  // Now unsigned on the server: a host trusting only the builder's key compiles them.
  EXPECT_EQ(fresh_host(redis.url(), keys, names(2)).compiled, 2);
}

TEST(FleetTool, WithoutAServerOrTrustTheToolRefusesToRun) {
  CUJIT_SKIP_WITHOUT_TOOL();
  TempDir dir;
  const std::string db = local_database(dir, names(1));
  ToolRun run = tool("push --db " + db, kCleanEnv, true);
  EXPECT_EQ(run.status, 2) << run.out;
  EXPECT_NE(run.out.find("no Redis server given"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("CUJIT_CACHE_REMOTE"), std::string::npos) << run.out;
  run = tool("ls --remote --json", kCleanEnv);
  EXPECT_EQ(run.status, 2) << run.out;
  EXPECT_TRUE(run.parsed().contains("error")) << run.out;
  run = tool("pull --remote redis://127.0.0.1:1 -o " + dir.file("out.db"), kCleanEnv, true);
  EXPECT_EQ(run.status, 2) << run.out;
  EXPECT_NE(run.out.find("--trusted-keys"), std::string::npos) << run.out;
  EXPECT_FALSE(std::filesystem::exists(dir.file("out.db")));
  run = tool("push --remote redis://127.0.0.1:x --db " + db, kCleanEnv, true);
  EXPECT_EQ(run.status, 2) << run.out;
  EXPECT_NE(run.out.find("malformed"), std::string::npos) << run.out;
}

TEST(FleetTool, PullBuildsADeploymentDatabaseFromWhatTheFleetCompiled) {
  CUJIT_SKIP_WITHOUT_TOOL();
  RedisServer redis;
  CUJIT_REQUIRE_REDIS(redis);
  KeyPairFiles keys;
  const auto kernels = names(4);
  {
    TempDir builder;
    KernelCache host(host_config(builder, redis.url(), keys));
    FakeCompiler compiler;
    for (const auto& name : kernels) {
      const auto k = fake_kernel(name);
      host.get_or_compile(k.request, k.generator(), compiler.fn(k.request.target), nullptr);
    }
    host.flush();
    ASSERT_EQ(host.stats().remote_published, 4u);
  }
  TempDir dir;
  const std::string out = dir.file("fleet.db");
  const std::string args =
      "pull --remote " + redis.url() + " --trusted-keys " + keys.pub() + " -o " + out + " --json";
  ToolRun run = tool(args, kCleanEnv);
  ASSERT_EQ(run.status, 0) << run.out;
  json j = run.parsed();
  EXPECT_EQ(j["entries"], 4);
  EXPECT_EQ(j["pulled"], 4);
  EXPECT_EQ(j["refused"], 0);
  const json info = tool("--db " + out + " info --json").parsed();
  EXPECT_EQ(info["journal_mode"], "delete");  // finalised: shippable as is
  EXPECT_EQ(info["entries"], 4);
  auto store = SqliteStore::open_read_only(out, StoreOptions{});
  for (const auto& name : kernels)
    EXPECT_EQ(store->find_by_request(rkey(name)).status, Lookup::Status::Hit) << name;
  // It serves as a deployment database: no compiler, no fleet.
  CacheConfig deployed;
  deployed.writable = false;
  deployed.deployment_databases = {out};
  KernelCache cache(deployed);
  FakeCompiler compiler;
  for (const auto& name : kernels) {
    const auto k = fake_kernel(name);
    CacheOutcome where{};
    cache.get_or_compile(k.request, k.generator(), compiler.fn(k.request.target), &where);
    EXPECT_EQ(where, CacheOutcome::DeploymentHit) << name;
  }
  EXPECT_EQ(compiler.calls, 0);
  // The fleet's signatures come along: the pulled database serves a reader that requires them,
  // and verify checks every mapping again (before the fix it was unsigned: every kernel refused).
  CacheConfig required = deployed;
  required.require_signed_deployments = true;
  required.trusted_keys_path = keys.pub();
  KernelCache strict(required);
  for (const auto& name : kernels) {
    const auto k = fake_kernel(name);
    CacheOutcome where{};
    strict.get_or_compile(k.request, k.generator(), compiler.fn(k.request.target), &where);
    EXPECT_EQ(where, CacheOutcome::DeploymentHit) << name;
  }
  EXPECT_EQ(strict.stats().deployment_refused, 0u);
  const json verified =
      tool("--db " + out + " verify --trusted-keys " + keys.pub() + " --json", kCleanEnv).parsed();
  EXPECT_EQ(verified["signatures"]["valid"], 4) << verified.dump();
  run = tool(args, kCleanEnv);  // again: nothing new
  ASSERT_EQ(run.status, 0) << run.out;
  EXPECT_EQ(run.parsed()["pulled"], 0);
  EXPECT_EQ(run.parsed()["already_present"], 4);
}

// A correctly built entry for kernel `name`, signed with `key` (or unsigned).
std::string entry_value(const std::string& name, const SigningKey* key) {
  const auto k = fake_kernel(name);
  FakeCompiler compiler;
  const CacheRecord r =
      make_record(content_key(k.source, k.request.target, k.request.kind), k.request.kind, k.source,
                  compiler.fn(k.request.target)(k.source), now_ms());
  const std::string request = rkey(name);
  return encode_remote_entry(request, r, key ? sign_entry(r, request, *key) : std::string());
}

TEST(FleetTool, PullRefusesPoisonedAndUnsignedEntriesCountingEachCause) {
  CUJIT_SKIP_WITHOUT_TOOL();
  RedisServer redis;
  CUJIT_REQUIRE_REDIS(redis);
  KeyPairFiles keys;
  auto admin = connect_to(redis.url());
  admin.set(remote_kernel_key(rkey("good0")), entry_value("good0", &keys.key));
  admin.set(remote_kernel_key(rkey("good1")), entry_value("good1", &keys.key));
  admin.set(remote_kernel_key(rkey("unsigned")), entry_value("unsigned", nullptr));
  admin.set(remote_kernel_key(rkey("garbage")), "cujit-fleet-entry-1\nnot an entry");
  admin.set(remote_kernel_key(rkey("moved")), entry_value("good0", &keys.key));  // another's
  admin.execute({"RPUSH", remote_kernel_key(rkey("list")), "a"});
  const std::string huge = remote_kernel_key(rkey("huge"));
  admin.set(huge, entry_value("huge", &keys.key));
  admin.execute({"SETRANGE", huge, std::to_string(kMaxRemoteValue), "x"});
  TempDir dir;
  const std::string base = "pull --remote " + redis.url() + " --json -o ";
  ToolRun run = tool(base + dir.file("a.db") + " --trusted-keys " + keys.pub(), kCleanEnv);
  EXPECT_EQ(run.status, 1) << run.out;
  json j = run.parsed();
  EXPECT_EQ(j["entries"], 7);
  EXPECT_EQ(j["pulled"], 2);
  EXPECT_EQ(j["refused"], 5);
  const json causes = j["refused_by_cause"];
  EXPECT_EQ(causes.value("unsigned", 0), 1) << causes;
  EXPECT_EQ(causes.value(to_string(RemoteDecode::Malformed), 0), 1) << causes;
  EXPECT_EQ(causes.value(to_string(RemoteDecode::WrongRequest), 0), 1) << causes;
  EXPECT_EQ(causes.value("not a string value (wrong type)", 0), 1) << causes;
  EXPECT_EQ(causes.value("too large (over 64.0 MiB; not read)", 0), 1) << causes;
  EXPECT_EQ(DatabaseAdmin(*SqliteStore::open_existing(dir.file("a.db"), {})).list().size(), 2u);
  // Trusting any writer takes the unsigned entry too, never the poisoned ones.
  run = tool(base + dir.file("b.db") + " --trust-any", kCleanEnv);
  EXPECT_EQ(run.status, 1) << run.out;
  EXPECT_EQ(run.parsed()["pulled"], 3);
  EXPECT_EQ(run.parsed()["refused"], 4);
}

TEST(FleetTool, EntriesPushedWithAnUntrustedKeyAreRefusedByPullAndHosts) {
  CUJIT_SKIP_WITHOUT_TOOL();
  RedisServer redis;
  CUJIT_REQUIRE_REDIS(redis);
  KeyPairFiles keys;
  KeyPairFiles stranger;
  TempDir dir;
  const auto kernels = names(3);
  ASSERT_EQ(push(redis.url(), local_database(dir, kernels), "--sign " + stranger.secret()).status,
            0);
  const ToolRun run = tool("pull --remote " + redis.url() + " --trusted-keys " + keys.pub() +
                               " -o " + dir.file("out.db") + " --json",
                           kCleanEnv);
  EXPECT_EQ(run.status, 1) << run.out;
  const json j = run.parsed();
  EXPECT_EQ(j["pulled"], 0);
  EXPECT_EQ(j["refused_by_cause"].value("signed by an untrusted key", 0), 3) << j;
  ASSERT_EQ(j["refused_keys"].size(), 3u);
  EXPECT_EQ(j["refused_keys"][0]["signer"], key_id(stranger.key.public_key));
  EXPECT_EQ(fresh_host(redis.url(), keys, kernels).compiled, 3);
}

TEST(FleetTool, LsAndInfoRemoteDescribeTheServer) {
  CUJIT_SKIP_WITHOUT_TOOL();
  RedisServer redis;
  CUJIT_REQUIRE_REDIS(redis);
  KeyPairFiles keys;
  TempDir dir;
  ASSERT_EQ(push(redis.url(), local_database(dir, names(3)), "--sign " + keys.secret()).status, 0);
  auto admin = connect_to(redis.url());
  admin.set(remote_kernel_key(rkey("odd")), entry_value("odd", nullptr));
  admin.set(remote_lease_key(rkey("busy")), "holder", 60000);
  ToolRun run =
      tool("ls --remote " + redis.url() + " --json --trusted-keys " + keys.pub(), kCleanEnv);
  ASSERT_EQ(run.status, 0) << run.out;
  json listing = run.parsed();
  ASSERT_TRUE(listing.is_array()) << run.out;
  ASSERT_EQ(listing.size(), 4u);
  std::set<std::string> seen;
  for (const auto& e : listing) {
    EXPECT_EQ(e["kind"], "test");
    EXPECT_EQ(e["target"], "sm_80");
    EXPECT_EQ(e["request_key"], rkey(e["name"].get<std::string>()));
    const bool odd = e["name"] == "odd";
    EXPECT_EQ(e["valid"], !odd) << e;
    EXPECT_EQ(e["signer"], odd ? json(nullptr) : json(key_id(keys.key.public_key))) << e;
    seen.insert(e["name"].get<std::string>());
  }
  EXPECT_EQ(seen, (std::set<std::string>{"k0", "k1", "k2", "odd"}));
  run = tool("ls --remote " + redis.url(), kCleanEnv);
  EXPECT_NE(run.out.find("4 entries on redis://127.0.0.1:"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("unsigned"), std::string::npos) << run.out;

  run = tool("info --json --remote " + redis.url(), kCleanEnv);
  ASSERT_EQ(run.status, 0) << run.out;
  json info = run.parsed();
  EXPECT_EQ(info["entries"], 4);
  EXPECT_EQ(info["leases"], 1);
  std::uint64_t bytes = 0;
  for (const auto& e : listing) bytes += e["value_size"].get<std::uint64_t>();
  EXPECT_EQ(info["entry_bytes"], bytes);
  EXPECT_EQ(info["keys"], 5);
  EXPECT_GT(info["used_memory"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(info["maxmemory"], 0);
  ASSERT_EQ(info["warnings"].size(), 2u) << info;  // no limit, and the default noeviction
  EXPECT_NE(info["warnings"][0].get<std::string>().find("maxmemory is 0"), std::string::npos);
  admin.execute({"CONFIG", "SET", "maxmemory", "100mb"});
  admin.execute({"CONFIG", "SET", "maxmemory-policy", "allkeys-lru"});
  info = tool("info --json --remote " + redis.url(), kCleanEnv).parsed();
  EXPECT_EQ(info["maxmemory"], 100 << 20);
  EXPECT_EQ(info["maxmemory_policy"], "allkeys-lru");
  EXPECT_TRUE(info["warnings"].empty()) << info;
}

TEST(FleetTool, InfoHidesThePasswordAndToleratesAUserWithoutInfo) {
  CUJIT_SKIP_WITHOUT_TOOL();
  RedisServer redis({"--requirepass", "s3cret-pw"});
  CUJIT_REQUIRE_REDIS(redis);
  auto admin = connect_to(redis.url(":s3cret-pw@"));
  admin.set(remote_kernel_key(rkey("k")), entry_value("k", nullptr));
  admin.execute({"ACL", "SETUSER", "reader", "on", ">readerpw", "~cujit:*", "+@read", "-info"});
  ToolRun run = tool("info --remote " + redis.url(":s3cret-pw@"), "", true);
  ASSERT_EQ(run.status, 0) << run.out;
  EXPECT_EQ(run.out.find("s3cret-pw"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("***"), std::string::npos) << run.out;
  run = tool("info --json --remote " + redis.url("reader:readerpw@"));
  ASSERT_EQ(run.status, 0) << run.out;
  const json info = run.parsed();
  EXPECT_EQ(info["entries"], 1);
  EXPECT_TRUE(info["maxmemory"].is_null()) << info;
  ASSERT_EQ(info["warnings"].size(), 1u) << info;
  EXPECT_NE(info["warnings"][0].get<std::string>().find("not permitted"), std::string::npos);
  // A wrong password is an error that names the server, not the password.
  run = tool("info --remote " + redis.url(":wrong-pw@"), "", true);
  EXPECT_EQ(run.status, 2) << run.out;
  EXPECT_EQ(run.out.find("wrong-pw"), std::string::npos) << run.out;
}

TEST(FleetTool, SetManyStoresABatchAndAFailedBatchLeavesTheConnectionUsable) {
  RedisServer redis;
  CUJIT_REQUIRE_REDIS(redis);
  auto admin = connect_to(redis.url());
  std::vector<std::pair<std::string, std::string>> batch;
  for (int i = 0; i < 200; ++i) batch.emplace_back("k" + std::to_string(i), std::string(i, 'v'));
  admin.set_many(batch);
  EXPECT_EQ(admin.dbsize(), 200);
  EXPECT_EQ(admin.get_bounded("k199", 1000).value, std::string(199, 'v'));
  EXPECT_EQ(admin.strlen_many({"k5", "nothing", "k7"}), (std::vector<std::int64_t>{5, 0, 7}));
  admin.execute({"ACL", "SETUSER", "ro", "on", ">ropw", "~*", "+@read"});
  auto reader = connect_to(redis.url("ro:ropw@"));
  try {
    reader.set_many(batch);
    FAIL() << "a read-only user stored a batch";
  } catch (const RedisError& e) {
    EXPECT_EQ(e.failure(), RedisFailure::Denied) << e.what();
  }
  EXPECT_TRUE(reader.exists("k3"));  // every reply was read: the next command gets its own
}

// Issue 19 asks for the publication throughput of push: 1000 entries of 64 KiB on loopback.
TEST(FleetTool, PushThroughputOfAThousand64KiBEntries) {
  CUJIT_SKIP_WITHOUT_TOOL();
  RedisServer redis;
  CUJIT_REQUIRE_REDIS(redis);
  TempDir dir;
  const std::string db = dir.file("big.db");
  {
    auto store = SqliteStore::open_writable(db, StoreOptions{});
    for (int i = 0; i < 1000; ++i) {
      const auto k = fake_kernel("big" + std::to_string(i));
      CompiledProgram p;
      p.target = k.request.target;
      p.binary = std::string(64 << 10, static_cast<char>('a' + i % 26)) + std::to_string(i);
      p.lowered_names = {{"big", "_Zbig"}};
      store->put(
          make_record(content_key(k.source, p.target, "test"), "test", k.source, p, now_ms()),
          request_key("test", k.request.spec, p.target));
    }
  }
  const ToolRun run = push(redis.url(), db);
  ASSERT_EQ(run.status, 0) << run.out;
  const json j = run.parsed();
  EXPECT_EQ(j["pushed"], 1000);
  EXPECT_EQ(connect_to(redis.url()).dbsize(), 1000);
  std::cout << "push of 1000 x 64 KiB: " << j["seconds"] << " s, " << j["entries_per_s"]
            << " entries/s, " << j["mb_per_s"] << " MB/s\n";
  RecordProperty("entries_per_s", std::to_string(j["entries_per_s"].get<double>()));
  RecordProperty("mb_per_s", std::to_string(j["mb_per_s"].get<double>()));
}

}  // namespace
}  // namespace cujit::detail
