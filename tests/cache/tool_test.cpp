// cujit-cache end to end: record a manifest, precompile it, run from the deployment database
// with zero NVRTC compilations, and maintain databases with the other subcommands.

#include "cache/database_admin.hpp"
#include "cache/database_transfer.hpp"
#include "cache/entry_signature.hpp"
#include "cache/kernel_cache.hpp"
#include "cache/raw_replay.hpp"
#include "cache/sqlite_store.hpp"
#include "cache_test_util.hpp"
#include "support/json_text.hpp"
#include "tool_test_util.hpp"

#include <cujit/elementwise.hpp>
#include <cujit/reduction.hpp>
#include <cujit/scan.hpp>

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

namespace cujit::detail {
namespace {

using nlohmann::json;
using test::TempDir;
using test::tool;
using test::ToolRun;

SourceProgram program(const std::string& name, const std::string& op) {
  SourceProgram p;
  p.source = "template <class T> __global__ void " + name +
             "(T* x, int n) {\n"
             "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
             "  if (i < n) x[i] = " +
             op + ";\n}\n";
  p.name_expressions = {name + "<float>"};
  return p;
}

std::shared_ptr<const CompiledProgram> compile_through(KernelCache& cache, const SourceProgram& p,
                                                       const Target& t, CacheOutcome* where) {
  return cache.get_or_compile(
      raw_kernel_request(p, t), [p] { return p; },
      [t](const SourceProgram& s) { return compile(s, t); }, where);
}

TEST(Tool, RecordPrecompileAndRunWithoutCompiling) {
  CUJIT_SKIP_WITHOUT_TOOL();
  TempDir dir;
  const Target sm80 = Target::parse("sm_80");
  std::vector<SourceProgram> programs = {program("twice", "2 * x[i]"),
                                         program("square", "x[i] * x[i]")};
  std::string manifest = dir.file("manifest.jsonl");
  {
    // A run with CUJIT_RECORD set and no disk cache.
    CacheConfig record;
    record.writable = false;
    record.record_path = manifest;
    KernelCache cache(record);
    for (int round = 0; round < 2; ++round) {
      for (const auto& p : programs) compile_through(cache, p, sm80, nullptr);
    }
  }
  {
    std::ifstream in(manifest);
    int lines = 0;
    for (std::string line; std::getline(in, line);) ++lines;
    EXPECT_EQ(lines, 2);
  }
  std::ofstream(manifest, std::ios::app) << R"({"kind":"raw","source":"this is not CUDA"})"
                                         << "\n"
                                         << R"({"kind":"no-such-family"})"
                                         << "\n";

  ToolRun pre = tool("precompile " + manifest + " --arch sm_80,sm_86 --ptx -o " +
                     dir.file("app.db") + " -j 2 --json");
  EXPECT_EQ(pre.status, 1) << pre.out;  // some entries failed, the rest were built
  json j = pre.parsed();
  ASSERT_TRUE(j.is_object()) << pre.out;
  EXPECT_EQ(j["compiled"], 8);  // 2 entries x (sm_80, compute_80, sm_86, compute_86)
  EXPECT_EQ(j["failed"].size(), 8u);
  EXPECT_EQ(j["targets"], json({"sm_80", "compute_80", "sm_86", "compute_86"}));
  bool saw_compile_error = false;
  for (const auto& f : j["failed"]) {
    if (f["entry"] == 3)
      saw_compile_error = f["error"].get<std::string>().find("error") != std::string::npos;
    if (f["entry"] == 4)
      EXPECT_NE(f["error"].get<std::string>().find("no-such-family"), std::string::npos);
  }
  EXPECT_TRUE(saw_compile_error);
  EXPECT_FALSE(std::filesystem::exists(dir.file("app.db-wal")));

  ToolRun again = tool("precompile " + manifest + " --arch sm_80,sm_86 --ptx -o " +
                       dir.file("app.db") + " -j 2 --threads --json");
  EXPECT_EQ(again.parsed()["compiled"], 0);
  EXPECT_EQ(again.parsed()["already_present"], 8);

  // A run with the deployment database: zero NVRTC compilations.
  CacheConfig run;
  run.writable = false;
  run.deployment_databases = {dir.file("app.db")};
  KernelCache cache(run);
  std::uint64_t before = nvrtc_compile_count();
  for (const auto& p : programs) {
    for (const Target& t : {sm80, Target::parse("sm_86"), Target::parse("compute_86")}) {
      CacheOutcome where{};
      auto compiled = compile_through(cache, p, t, &where);
      EXPECT_EQ(where, CacheOutcome::DeploymentHit);
      EXPECT_EQ(compiled->target, t);
      EXPECT_NE(compiled->lowered_name(p.name_expressions[0]), p.name_expressions[0]);
    }
  }
  EXPECT_EQ(nvrtc_compile_count(), before);
  EXPECT_EQ(cache.stats().deployment_hits, 6u);
  EXPECT_EQ(cache.stats().misses, 0u);
}

TEST(Tool, KeygenWritesAKeyPairAndNeverReplacesOneByAccident) {
  CUJIT_SKIP_WITHOUT_TOOL();
  TempDir dir;
  ToolRun made = tool("keygen " + dir.file("builder") + " --json");
  ASSERT_EQ(made.status, 0) << made.out;
  const json j = made.parsed();
  const SigningKey key = read_signing_key(dir.file("builder.key"));
  EXPECT_EQ(j["key_id"], key_id(key.public_key));
  EXPECT_EQ(read_trusted_keys(dir.file("builder.pub")).at(0).public_key, key.public_key);
  EXPECT_EQ(tool("keygen " + dir.file("builder")).status, 2);
  EXPECT_EQ(read_signing_key(dir.file("builder.key")).secret, key.secret);
  EXPECT_EQ(tool("keygen " + dir.file("builder") + " --force").status, 0);
  EXPECT_NE(read_signing_key(dir.file("builder.key")).secret, key.secret);
}

// Arch-specific targets: precompile builds sm_90a cubins (NVRTC's -arch=sm_90a), which serve a
// 9.0 device and no other.
TEST(Tool, PrecompilesArchSpecificTargets) {
  CUJIT_SKIP_WITHOUT_TOOL();
  TempDir dir;
  const SourceProgram p = program("twice", "2 * x[i]");
  const std::string manifest = dir.file("manifest.jsonl");
  {
    CacheConfig record;
    record.writable = false;
    record.record_path = manifest;
    KernelCache cache(record);
    compile_through(cache, p, Target::parse("sm_90"), nullptr);
  }
  ToolRun pre =
      tool("precompile " + manifest + " --arch sm_90a -o " + dir.file("app.db") + " --json");
  ASSERT_EQ(pre.status, 0) << pre.out;
  EXPECT_EQ(pre.parsed()["targets"], json({"sm_90a"}));
  CacheConfig run;
  run.writable = false;
  run.deployment_databases = {dir.file("app.db")};
  KernelCache cache(run);
  const std::uint64_t before = nvrtc_compile_count();
  CacheOutcome where{};
  auto compiled = compile_through(cache, p, Target::parse("sm_90a"), &where);
  EXPECT_EQ(where, CacheOutcome::DeploymentHit);
  EXPECT_EQ(compiled->target.name(), "sm_90a");
  EXPECT_EQ(nvrtc_compile_count(), before);
}

// Kernels specialised without a GPU are recorded like a call's; the manifest precompiles into
// a deployment database that serves the same specialisations with no compilation.
TEST(Tool, OfflineSpecialisationsRecordPrecompileAndServeFromDeployment) {
  CUJIT_SKIP_WITHOUT_TOOL();
  TempDir dir;
  const CacheConfig previous = cache_config();
  const ElementwiseKernel diff("T x, T y", "T z", "z = (x - y) * (x - y)", "squared_diff");
  const ReductionKernel sum("T x", "T y", "x", "a + b", "y = a", "0", "row_sum");
  const ScanKernel running("T x", "T y", "x", "a + b", "y = a", "0", "row_cumsum");
  const Target sm90 = Target::parse("sm_90");
  const std::vector<ArgSpec> diff_args = {ArgSpec::array(DType::Float32, {1024, 1024}),
                                          ArgSpec::array(DType::Float32, {1024})};
  const std::vector<ArgSpec> sum_args = {ArgSpec::array(DType::Float32, {4096, 50257})};
  ReduceOptions rows;
  rows.axes = axis{1};
  auto specialize_both = [&] {
    return std::vector<Specialization>{diff.specialize(diff_args, sm90),
                                       sum.specialize(sum_args, rows, sm90),
                                       running.specialize(sum_args, rows, sm90)};
  };
  const std::string manifest = dir.file("kernels.jsonl");
  CacheConfig record;
  record.writable = false;
  record.record_path = manifest;
  configure_cache(record);
  const std::vector<Specialization> recorded = specialize_both();

  ToolRun pre =
      tool("precompile " + manifest + " --arch sm_90 -o " + dir.file("app.db") + " --json");
  EXPECT_EQ(pre.status, 0) << pre.out;
  // The three recorded kernels, and the elementwise and reduction ones' generic
  // specialisations (issue 32; scans have none yet).
  EXPECT_EQ(pre.parsed()["compiled"], 5) << pre.out;
  EXPECT_EQ(pre.parsed()["generic"], 2) << pre.out;

  CacheConfig deployed;
  deployed.writable = false;
  deployed.deployment_databases = {dir.file("app.db")};
  configure_cache(deployed);
  reset_cache_stats();
  const std::uint64_t before = nvrtc_compile_count();
  const std::vector<Specialization> served = specialize_both();
  configure_cache(previous);
  ASSERT_EQ(served.size(), recorded.size());
  for (std::size_t k = 0; k < served.size(); ++k) {
    EXPECT_EQ(recorded[k].origin, CacheOrigin::Compiled);
    EXPECT_EQ(served[k].origin, CacheOrigin::Deployment) << served[k].kernel;
    EXPECT_EQ(served[k].request_key, recorded[k].request_key);
  }
  EXPECT_EQ(nvrtc_compile_count(), before);
}

class ToolDatabase : public ::testing::Test {
 protected:
  void SetUp() override {
    CUJIT_SKIP_WITHOUT_TOOL();
    db_ = dir_.file("app.db");
    std::ofstream(dir_.file("m.jsonl"))
        << raw_manifest_entry(program("twice", "2 * x[i]")) << "\n"
        << raw_manifest_entry(program("square", "x[i] * x[i]")) << "\n";
    ASSERT_EQ(tool("precompile " + dir_.file("m.jsonl") + " --arch sm_80 --ptx -o " + db_).status,
              0);
  }
  TempDir dir_;
  std::string db_;
};

TEST_F(ToolDatabase, LsInfoShow) {
  ToolRun ls = tool("--db " + db_ + " ls --json");
  ASSERT_EQ(ls.status, 0);
  json entries = ls.parsed();
  ASSERT_EQ(entries.size(), 4u);
  EXPECT_EQ(entries[0]["kind"], "raw");
  ToolRun text = tool("--db " + db_ + " ls");
  EXPECT_NE(text.out.find("4 entries"), std::string::npos) << text.out;

  json info = tool("--db " + db_ + " info --json").parsed();
  EXPECT_EQ(info["entries"], 4);
  EXPECT_EQ(info["per_target"]["sm_80"], 2);
  EXPECT_EQ(info["per_target"]["compute_80"], 2);
  EXPECT_EQ(info["per_kind"]["raw"], 4);
  EXPECT_EQ(info["misses"], 4);
  EXPECT_EQ(info["journal_mode"], "delete");  // shippable as is

  std::string key = entries[0]["key"];
  ToolRun show = tool("--db " + db_ + " show " + key.substr(0, 10) + " --source --json");
  ASSERT_EQ(show.status, 0) << show.out;
  json s = show.parsed();
  EXPECT_EQ(s["key"], key);
  EXPECT_EQ(s["intact"], true);
  EXPECT_NE(s["source"].get<std::string>().find("__global__"), std::string::npos);
  EXPECT_EQ(s["lowered_names"].size(), 1u);
  ToolRun text_show = tool("--db " + db_ + " show " + key + " --source");
  EXPECT_NE(text_show.out.find("__global__"), std::string::npos);
  EXPECT_EQ(tool("--db " + db_ + " show 0000000000").status, 1);
}

TEST_F(ToolDatabase, VerifyFindsAndFixesDamage) {
  EXPECT_EQ(tool("--db " + db_ + " verify").status, 0);
  {
    auto store = SqliteStore::open_existing(db_, {});
    store->exec(
        "UPDATE kernels SET binary = CAST(upper(binary) AS BLOB) WHERE target = 'compute_80' "
        "AND content_key = (SELECT min(content_key) FROM kernels WHERE target = 'compute_80')");
  }
  ToolRun bad = tool("--db " + db_ + " verify --json");
  EXPECT_EQ(bad.status, 1);
  EXPECT_EQ(bad.parsed()["damaged"].size(), 1u);
  EXPECT_EQ(bad.parsed()["integrity"], "ok");
  EXPECT_EQ(tool("--db " + db_ + " verify --fix").status, 0);
  EXPECT_EQ(tool("--db " + db_ + " verify").status, 0);
  EXPECT_EQ(tool("--db " + db_ + " ls --json").parsed().size(), 3u);
}

TEST_F(ToolDatabase, PruneExportImportClear) {
  std::string copy = dir_.file("copy.db");
  json exported = tool("--db " + db_ + " export " + copy + " --json").parsed();
  EXPECT_EQ(exported["copied"], 4);
  json pruned = tool("--db " + copy + " prune --arch compute_80 --json").parsed();
  EXPECT_EQ(pruned["removed"], 2);
  EXPECT_EQ(pruned["entries"], 2);
  EXPECT_EQ(tool("--db " + copy + " prune --older-than 1d --json").parsed()["removed"], 0);
  EXPECT_EQ(tool("--db " + copy + " prune --max-size 1 --json").parsed()["removed"], 2);
  EXPECT_EQ(tool("--db " + copy + " prune --stale --json").parsed()["removed"], 0);
  EXPECT_EQ(tool("--db " + copy + " prune").status, 2);  // nothing to prune by
  EXPECT_EQ(tool("--db " + copy + " prune --older-than soon").status, 2);

  // The user cache by default, found through CUJIT_CACHE_DIR.
  std::string env = "CUJIT_CACHE_DIR=" + dir_.file("user");
  json imported = tool("import " + db_ + " --json", env).parsed();
  EXPECT_EQ(imported["copied"], 4);
  EXPECT_EQ(imported["to"], dir_.file("user") + "/kernels.db");
  EXPECT_EQ(tool("import " + db_ + " --json", env).parsed()["already_present"], 4);
  EXPECT_EQ(tool("info --json", env).parsed()["entries"], 4);
  EXPECT_EQ(tool("clear --json", env).parsed()["removed"], 4);
  EXPECT_EQ(tool("ls --json", env).parsed().size(), 0u);
}

// Issue 16: verify finds swapped records, import skips them and never redirects a request the
// destination answers (before the fix: verify said healthy, a swapped record was served for
// the other's request, and import redirected the request).
TEST_F(ToolDatabase, VerifyAndImportCatchSwappedAndRedirectedRecords) {
  const std::string swapped = dir_.file("swapped.db"), redirected = dir_.file("redirected.db");
  const std::string dest = dir_.file("dest.db");
  ASSERT_EQ(tool("--db " + db_ + " export " + swapped).status, 0);
  ASSERT_EQ(tool("--db " + db_ + " export " + redirected).status, 0);
  ASSERT_EQ(tool("--db " + db_ + " export " + dest).status, 0);
  std::map<std::string, std::string> request_to_binary;  // as the original database has them
  std::vector<std::string> keys;
  DatabaseTransfer(*SqliteStore::open_existing(db_, {}))
      .for_each_record([&](const CacheRecord& r, const std::vector<std::string>& requests) {
        keys.push_back(r.content_key);
        for (const auto& q : requests) request_to_binary[q] = r.program.binary;
      });
  ASSERT_EQ(keys.size(), 4u);
  std::string request_a;
  DatabaseTransfer(*SqliteStore::open_existing(db_, {}))
      .for_each_record([&](const CacheRecord& r, const std::vector<std::string>& requests) {
        if (r.content_key == keys[0] && !requests.empty()) request_a = requests[0];
      });
  ASSERT_FALSE(request_a.empty());
  test::swap_columns(*SqliteStore::open_existing(swapped, {}), keys[0], keys[1],
                     "binary,checksum,binary_size,lowered_names,target");
  SqliteStore::open_existing(redirected, {})
      ->exec("UPDATE requests SET content_key = '" + keys[1] + "' WHERE request_key = '" +
             request_a + "'");

  ToolRun verify = tool("--db " + swapped + " verify --json");
  EXPECT_EQ(verify.status, 1) << verify.out;
  EXPECT_EQ(verify.parsed()["damaged"].size(), 2u) << verify.out;

  const std::string fresh = "CUJIT_CACHE_DIR=" + dir_.file("fresh");
  ToolRun from_swapped = tool("import " + swapped + " --json", fresh);
  EXPECT_EQ(from_swapped.parsed()["copied"], 2) << from_swapped.out;
  EXPECT_EQ(from_swapped.parsed()["damaged_skipped"], 2) << from_swapped.out;
  ToolRun from_redirected = tool("--db " + dest + " import " + redirected + " --json");
  EXPECT_EQ(from_redirected.status, 0) << from_redirected.out;
  EXPECT_EQ(from_redirected.parsed()["requests_kept"], 1) << from_redirected.out;

  // Every request either database answers gets the binary it was stored for, or nothing.
  for (const std::string db : {dest, dir_.file("fresh") + "/kernels.db"}) {
    auto store = SqliteStore::open_existing(db, {});
    for (const auto& [request, binary] : request_to_binary) {
      Lookup l = store->find_by_request(request);
      if (l.status == Lookup::Status::Hit) {
        EXPECT_EQ(l.record.program.binary, binary) << db;
      } else {
        EXPECT_EQ(l.status, Lookup::Status::Miss) << db;
      }
    }
  }
}

// Signed deployment databases (issue 19): precompile --sign signs every entry and request
// mapping, verify --trusted-keys checks them, and a reader requiring signatures is served.
class SignedToolDatabase : public ToolDatabase {
 protected:
  void SetUp() override {
    ToolDatabase::SetUp();
    if (IsSkipped()) return;
    ASSERT_EQ(tool("keygen " + dir_.file("builder")).status, 0);
    ASSERT_EQ(tool("keygen " + dir_.file("stranger")).status, 0);
    builder_id_ = key_id(read_signing_key(dir_.file("builder.key")).public_key);
    signed_ = dir_.file("signed.db");
    ToolRun pre = tool("precompile " + dir_.file("m.jsonl") + " --arch sm_80 --ptx -o " + signed_ +
                       " --sign " + dir_.file("builder.key") + " --json");
    ASSERT_EQ(pre.status, 0) << pre.out;
    precompiled_ = pre.parsed();
  }
  // verify --trusted-keys KEYS --json on `db`.
  ToolRun verify(const std::string& db, const std::string& keys) {
    return tool("--db " + db + " verify --trusted-keys " + keys + " --json");
  }
  std::string builder_id_;
  std::string signed_;
  json precompiled_;
};

TEST_F(SignedToolDatabase, PrecompileSignsEverythingVerifyPassesAndAReaderRequiringItIsServed) {
  EXPECT_EQ(precompiled_["signed"]["entries"], 4) << precompiled_;
  EXPECT_EQ(precompiled_["signed"]["requests"], 4) << precompiled_;
  EXPECT_EQ(precompiled_["signed"]["key_id"], builder_id_) << precompiled_;
  ToolRun ok = verify(signed_, dir_.file("stranger.pub") + ":" + dir_.file("builder.pub"));
  EXPECT_EQ(ok.status, 0) << ok.out;
  const json sig = ok.parsed()["signatures"];
  EXPECT_EQ(sig["valid"], 8) << ok.out;
  EXPECT_EQ(sig["unsigned"], 0) << ok.out;
  EXPECT_EQ(sig["problems"].size(), 0u) << ok.out;
  EXPECT_EQ(sig["trusted_keys"].size(), 2u) << ok.out;
  EXPECT_EQ(tool("--db " + signed_ + " info --json").parsed()["signatures"], 8);
  EXPECT_EQ(tool("--db " + signed_ + " info --json").parsed()["journal_mode"], "delete");
  // Without --trusted-keys, verify is what it was: checksums only, no signature report.
  ToolRun plain = tool("--db " + signed_ + " verify --json");
  EXPECT_EQ(plain.status, 0) << plain.out;
  EXPECT_FALSE(plain.parsed().contains("signatures")) << plain.out;
  ToolRun text = tool("--db " + signed_ + " verify --trusted-keys " + dir_.file("builder.pub"));
  EXPECT_NE(text.out.find("signatures: 8 valid"), std::string::npos) << text.out;

  CacheConfig run;
  run.writable = false;
  run.deployment_databases = {signed_};
  run.require_signed_deployments = true;
  run.trusted_keys_path = dir_.file("builder.pub");
  KernelCache cache(run);
  const std::uint64_t before = nvrtc_compile_count();
  for (const SourceProgram& p : {program("twice", "2 * x[i]"), program("square", "x[i] * x[i]")}) {
    for (const Target& t : {Target::parse("sm_80"), Target::parse("compute_80")}) {
      CacheOutcome where{};
      compile_through(cache, p, t, &where);
      EXPECT_EQ(where, CacheOutcome::DeploymentHit);
    }
  }
  EXPECT_EQ(nvrtc_compile_count(), before);
  EXPECT_EQ(cache.stats().deployment_refused, 0u);
}

TEST_F(SignedToolDatabase, VerifyReportsUnsignedUntrustedAndTamperedEntries) {
  // Unsigned: the database ToolDatabase built without --sign.
  ToolRun unsigned_run = verify(db_, dir_.file("builder.pub"));
  EXPECT_EQ(unsigned_run.status, 1) << unsigned_run.out;
  EXPECT_EQ(unsigned_run.parsed()["signatures"]["unsigned"], 8) << unsigned_run.out;
  EXPECT_EQ(unsigned_run.parsed()["ok"], false) << unsigned_run.out;

  // Untrusted: only the stranger's key is trusted; the builder is named by its key id.
  ToolRun untrusted = verify(signed_, dir_.file("stranger.pub"));
  EXPECT_EQ(untrusted.status, 1) << untrusted.out;
  const json u = untrusted.parsed()["signatures"];
  EXPECT_EQ(u["untrusted"], 8) << untrusted.out;
  EXPECT_EQ(u["problems"][0]["signer"], builder_id_) << untrusted.out;
  EXPECT_EQ(u["problems"][0]["verdict"], "untrusted") << untrusted.out;

  // A request remapped to another intact entry: checksums cannot tell, the signature can.
  std::string request, other_entry;
  DatabaseTransfer(*SqliteStore::open_existing(signed_, {}))
      .for_each_record([&](const CacheRecord& r, const std::vector<std::string>& requests) {
        if (request.empty() && !requests.empty()) {
          request = requests[0];
        } else if (other_entry.empty()) {
          other_entry = r.content_key;
        }
      });
  ASSERT_FALSE(request.empty());
  ASSERT_FALSE(other_entry.empty());
  const std::string remapped = dir_.file("remapped.db");
  ASSERT_EQ(tool("--db " + signed_ + " export " + remapped).status, 0);
  ToolRun exported = verify(remapped, dir_.file("builder.pub"));  // export keeps signatures
  ASSERT_EQ(exported.status, 0) << exported.out;
  SqliteStore::open_existing(remapped, {})
      ->exec("UPDATE requests SET content_key = '" + other_entry + "' WHERE request_key = '" +
             request + "'");
  EXPECT_EQ(tool("--db " + remapped + " verify").status, 0);  // checksums only: looks healthy
  ToolRun bad = verify(remapped, dir_.file("builder.pub"));
  EXPECT_EQ(bad.status, 1) << bad.out;
  const json b = bad.parsed()["signatures"];
  EXPECT_EQ(b["bad"], 1) << bad.out;
  EXPECT_EQ(b["valid"], 7) << bad.out;
  ASSERT_EQ(b["problems"].size(), 1u) << bad.out;
  EXPECT_EQ(b["problems"][0]["key"], request) << bad.out;
  EXPECT_EQ(b["problems"][0]["content_key"], other_entry) << bad.out;
  EXPECT_EQ(b["problems"][0]["what"], "request") << bad.out;
  ToolRun text = tool("--db " + remapped + " verify --trusted-keys " + dir_.file("builder.pub"));
  EXPECT_NE(text.out.find(to_string(SignatureVerdict::BadSignature)), std::string::npos)
      << text.out;

  // Re-signed with an untrusted key: every signature now names the stranger.
  ASSERT_EQ(tool("--db " + signed_ + " sign --key " + dir_.file("stranger.key")).status, 0);
  ToolRun resigned = verify(signed_, dir_.file("builder.pub"));
  EXPECT_EQ(resigned.status, 1) << resigned.out;
  EXPECT_EQ(resigned.parsed()["signatures"]["untrusted"], 8) << resigned.out;

  // A changed binary fails its checksum (damaged), signatures or not.
  SqliteStore::open_existing(signed_, {})
      ->exec("UPDATE kernels SET binary = CAST(upper(binary) AS BLOB) WHERE content_key = '" +
             other_entry + "'");
  ToolRun damaged = verify(signed_, dir_.file("stranger.pub"));
  EXPECT_EQ(damaged.status, 1) << damaged.out;
  EXPECT_EQ(damaged.parsed()["damaged"].size(), 1u) << damaged.out;
}

TEST_F(SignedToolDatabase, SigningIsExplicitAndAnUnusableKeyFailsBeforeCompiling) {
  // CUJIT_CACHE_SIGNING_KEY signs what a process publishes, never a precompiled database.
  const std::string env = "CUJIT_CACHE_SIGNING_KEY=" + dir_.file("builder.key");
  const std::string out = dir_.file("env.db");
  ToolRun pre =
      tool("precompile " + dir_.file("m.jsonl") + " --arch sm_80 -o " + out + " --json", env);
  ASSERT_EQ(pre.status, 0) << pre.out;
  EXPECT_FALSE(pre.parsed().contains("signed")) << pre.out;
  EXPECT_EQ(tool("--db " + out + " info --json").parsed()["signatures"], 0);
  // `sign` makes it verify.
  ToolRun signed_now = tool("--db " + out + " sign --key " + dir_.file("builder.key") + " --json");
  ASSERT_EQ(signed_now.status, 0) << signed_now.out;
  EXPECT_EQ(signed_now.parsed()["entries"], 2) << signed_now.out;
  EXPECT_EQ(verify(out, dir_.file("builder.pub")).status, 0);
  EXPECT_FALSE(std::filesystem::exists(out + "-wal"));  // still shippable as it is

  const std::string never = dir_.file("never.db");
  ToolRun missing = tool("precompile " + dir_.file("m.jsonl") + " --arch sm_80 -o " + never +
                         " --sign " + dir_.file("nope.key") + " --json");
  EXPECT_EQ(missing.status, 2) << missing.out;
  EXPECT_NE(missing.parsed()["error"].get<std::string>().find("nope.key"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(never));
  ToolRun public_as_secret =
      tool("--db " + out + " sign --key " + dir_.file("builder.pub") + " --json");
  EXPECT_EQ(public_as_secret.status, 2) << public_as_secret.out;
  ToolRun bad_trust = tool("--db " + out + " verify --trusted-keys " + dir_.file("nope.pub"));
  EXPECT_EQ(bad_trust.status, 2) << bad_trust.out;
}

// Issue 16, finding 3: with --json, a path that is not UTF-8 is written as {"base64": ...}
// and every error is a JSON object (before the fix: std::terminate, exit 134).
TEST_F(ToolDatabase, PathsThatAreNotUtf8NeverTerminateTheTool) {
  const std::string latin1 = dir_.file("caf\xe9.db");
  ASSERT_EQ(tool("--db " + db_ + " export '" + latin1 + "'").status, 0);
  for (const std::string command : {"info", "verify", "prune --stale", "ls", "clear"}) {
    ToolRun run = tool("--db '" + latin1 + "' " + command + " --json");
    EXPECT_EQ(run.status, 0) << command << ": " << run.out;
    EXPECT_FALSE(run.parsed().is_discarded()) << command << ": " << run.out;
  }
  EXPECT_EQ(json_text(tool("--db '" + latin1 + "' info --json").parsed()["path"]).value(), latin1);
  ToolRun missing = tool("--db '" + dir_.file("nope\xe9.db") + "' info --json");
  EXPECT_EQ(missing.status, 2) << missing.out;
  EXPECT_TRUE(missing.parsed().contains("error")) << missing.out;
}

// Bounds a run that, were the bug back, would read /dev/zero forever: 20 s, and 4 GB of address
// space (not under AddressSanitizer, whose shadow memory alone reserves terabytes).
#if defined(__SANITIZE_ADDRESS__)
constexpr const char* kBoundedRun = "timeout 20";
#else
constexpr const char* kBoundedRun = "ulimit -v 4000000; timeout 20";
#endif

// Issue 16, findings 3 and 5: junk manifest lines fail alone, with their line number, in
// worker processes and in threads (before: -j 2 failed every entry); a device or a FIFO is
// refused at once (before: /dev/zero grew to gigabytes, a FIFO waited forever).
TEST_F(ToolDatabase, JunkManifestLinesFailAloneWithTheirLineNumbers) {
  const std::string good = raw_manifest_entry(program("good", "x[i] + 1"));
  const std::string other = raw_manifest_entry(program("other", "x[i] * 3"));
  const std::string manifest = dir_.file("junk.jsonl");
  std::ofstream(manifest, std::ios::binary) << good << "\n\xe9\xff not json \xfe\n\n"
                                            << other << "\n{\"kind\":\"raw\",\"source\":5}\n";
  for (const std::string mode : {"-j 2", "-j 2 --threads"}) {
    const std::string out = dir_.file("junk" + std::to_string(mode.size()) + ".db");
    ToolRun run = tool("precompile " + manifest + " --arch sm_80 -o " + out + " --json " + mode);
    EXPECT_EQ(run.status, 1) << mode << ": " << run.out;
    json r = run.parsed();
    EXPECT_EQ(r["compiled"], 2) << mode << ": " << run.out;
    ASSERT_EQ(r["failed"].size(), 2u) << mode << ": " << run.out;
    EXPECT_EQ(r["failed"][0]["line"], 2) << run.out;
    EXPECT_EQ(r["failed"][1]["line"], 5) << run.out;
  }
  const std::string fifo = dir_.file("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& bad : {std::string("/dev/zero"), fifo, dir_.path()}) {
    ToolRun run = tool("precompile " + bad + " --arch sm_80 -o " + dir_.file("x.db") + " --json",
                       kBoundedRun);
    EXPECT_EQ(run.status, 2) << bad << ": " << run.out;
    EXPECT_NE(run.out.find("not a regular file"), std::string::npos) << bad << ": " << run.out;
  }
}

// Issue 16, finding 5: an output that is not a cujit database is never replaced without
// --force (before: the manifest named by a typo was moved aside); show --json with no match
// prints a JSON error (before: nothing).
TEST_F(ToolDatabase, OutputsThatAreNotDatabasesAreKeptAndMissesAreReported) {
  const std::string precious = dir_.file("notes.txt");
  std::ofstream(precious) << "my notes\n";
  ToolRun exported = tool("--db " + db_ + " export " + precious + " --json");
  EXPECT_EQ(exported.status, 2) << exported.out;
  EXPECT_NE(exported.out.find("--force"), std::string::npos) << exported.out;
  ToolRun pre = tool("precompile " + dir_.file("m.jsonl") + " --arch sm_80 -o " + precious);
  EXPECT_EQ(pre.status, 2);
  std::ifstream in(precious);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "my notes\n");
  EXPECT_EQ(tool("--db " + db_ + " export " + precious + " --force --json").status, 0);
  EXPECT_EQ(tool("--db " + db_ + " export " + precious + " --json").status, 0);  // a database now
  ToolRun show = tool("--db " + db_ + " show 00000000 --json");
  EXPECT_EQ(show.status, 1);
  EXPECT_TRUE(show.parsed().contains("error")) << show.out;
}

TEST_F(ToolDatabase, ErrorsNameTheDatabase) {
  ToolRun missing = tool("--db " + dir_.file("nope.db") + " info --json");
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.parsed()["error"].get<std::string>().find("nope.db"), std::string::npos);
  std::ofstream(dir_.file("junk.db")) << std::string(5000, 'j');
  ToolRun junk = tool("--db " + dir_.file("junk.db") + " ls --json");
  EXPECT_EQ(junk.status, 2);
  EXPECT_NE(junk.parsed()["error"].get<std::string>().find("junk.db"), std::string::npos);
  EXPECT_NE(tool("--db " + db_ + " show zz").status, 0);
  EXPECT_NE(tool("bogus-command").status, 0);
}

// Issue 29, item 3: two precompiles into one new path. Before the fix (d3d7b1e) one of them
// said "0 compiled, 4 already present" while the other failed ("database is locked") and removed
// the file, or left it empty; now both succeed and every entry either reports is in the file.
TEST_F(ToolDatabase, ConcurrentPrecompilesIntoOneNewPathBothLand) {
  for (int round = 0; round < 4; ++round) {
    const std::string out = dir_.file("race" + std::to_string(round) + ".db");
    ToolRun runs[2];
    std::thread first([&] {
      runs[0] =
          tool("precompile " + dir_.file("m.jsonl") + " --arch sm_80 --ptx -j 2 --json -o " + out);
    });
    runs[1] =
        tool("precompile " + dir_.file("m.jsonl") + " --arch sm_80 --ptx -j 2 --json -o " + out);
    first.join();
    for (const ToolRun& run : runs) {
      ASSERT_EQ(run.status, 0) << "round " << round << ": " << run.out;
      const json r = run.parsed();
      EXPECT_EQ(r["compiled"].get<int>() + r["already_present"].get<int>(), 4) << run.out;
    }
    ToolRun ls = tool("--db " + out + " ls --json");
    ASSERT_EQ(ls.status, 0) << "round " << round << ": " << ls.out;
    EXPECT_EQ(ls.parsed().size(), 4u) << "round " << round << ": " << ls.out;
    // No temporary file is left beside the output.
    for (const auto& e : std::filesystem::directory_iterator(dir_.path())) {
      EXPECT_EQ(e.path().filename().string().find(".precompile"), std::string::npos) << e.path();
    }
  }
}

}  // namespace
}  // namespace cujit::detail
