// cujit-cache for people and CI logs (issue 21): --version, kernel names in ls and --kernel,
// ls before any cache exists, precompile's progress lines and failures on stderr, no output
// left behind by a failed precompile, logs without a trailing NUL, clear asking for --yes on a
// terminal, and CUJIT_LOG seen through the tool.

#include "cache/raw_replay.hpp"
#include "cache/record.hpp"
#include "cache/sqlite_store.hpp"
#include "cache_test_util.hpp"
#include "tool_test_util.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>

namespace cujit::detail {
namespace {

using nlohmann::json;
using test::TempDir;
using test::tool;
using test::ToolRun;

SourceProgram templated(const std::string& name) {
  SourceProgram p;
  p.source = "template <class T> __global__ void " + name + "(T* x) { x[0] += 1; }\n";
  p.name_expressions = {name + "<float>"};
  return p;
}

SourceProgram plain(const std::string& name) {  // no name expressions: named by its source
  SourceProgram p;
  p.source =
      "extern \"C\" __global__ void __launch_bounds__(128) " + name + "(float* x) { x[0] = 2; }\n";
  return p;
}

class ToolOps : public ::testing::Test {
 protected:
  void SetUp() override {
    CUJIT_SKIP_WITHOUT_TOOL();
    manifest_ = dir_.file("m.jsonl");
    std::ofstream(manifest_) << raw_manifest_entry(templated("twice")) << "\n"
                             << raw_manifest_entry(plain("plain_one")) << "\n";
    db_ = dir_.file("app.db");
  }
  ToolRun precompile_db() {
    return tool("precompile " + manifest_ + " --arch sm_80 -o " + db_, "", true);
  }
  TempDir dir_;
  std::string manifest_;
  std::string db_;
};

TEST_F(ToolOps, VersionNamesCujitCodegenAndNvrtc) {
  ToolRun run = tool("--version");
  EXPECT_EQ(run.status, 0) << run.out;
  EXPECT_TRUE(std::regex_search(run.out, std::regex(R"(cujit \d+\.\d+\.\d+)"))) << run.out;
  EXPECT_TRUE(std::regex_search(run.out, std::regex(R"(codegen version \d+, record format \d+)")))
      << run.out;
  EXPECT_TRUE(std::regex_search(run.out, std::regex(R"(NVRTC \d+\.\d+\s*$)"))) << run.out;
  ToolRun hidden = tool("--version", "CUJIT_NVRTC_PATH=/nonexistent/libnvrtc.so.13");
  EXPECT_EQ(hidden.status, 0) << hidden.out;
  EXPECT_NE(hidden.out.find("NVRTC not available here"), std::string::npos) << hidden.out;
}

TEST_F(ToolOps, PrecompilePrintsProgressLinesOffATerminalAndLsNamesKernels) {
  ToolRun pre = precompile_db();  // stderr is a pipe here, as in CI
  ASSERT_EQ(pre.status, 0) << pre.out;
  EXPECT_NE(pre.out.find("cujit-cache: precompile: 2/2 done"), std::string::npos) << pre.out;

  ToolRun ls = tool("--db " + db_ + " ls");
  EXPECT_NE(ls.out.find("KERNEL"), std::string::npos) << ls.out;
  EXPECT_NE(ls.out.find("twice"), std::string::npos) << ls.out;
  EXPECT_NE(ls.out.find("plain_one"), std::string::npos) << ls.out;
  json all = tool("--db " + db_ + " ls --json").parsed();
  ASSERT_EQ(all.size(), 2u);
  std::set<std::string> names;
  for (const json& e : all) names.insert(e["name"].get<std::string>());
  EXPECT_EQ(names, (std::set<std::string>{"twice", "plain_one"}));
  json only = tool("--db " + db_ + " ls --kernel plain_one --json").parsed();
  ASSERT_EQ(only.size(), 1u) << only.dump();
  EXPECT_EQ(only[0]["name"], "plain_one");
  EXPECT_EQ(tool("--db " + db_ + " ls --kernel plain --json").parsed().size(), 0u);  // whole names
}

TEST_F(ToolOps, LsBeforeAnyCacheExistsListsNothing) {
  const std::string env = "CUJIT_CACHE_DIR=" + dir_.file("never-used");
  ToolRun text = tool("ls", env, true);
  EXPECT_EQ(text.status, 0) << text.out;
  EXPECT_NE(text.out.find("0 entries"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("(no cache yet)"), std::string::npos) << text.out;
  ToolRun js = tool("ls --json", env);
  EXPECT_EQ(js.status, 0);
  EXPECT_EQ(js.parsed(), json::array());
  EXPECT_FALSE(std::filesystem::exists(dir_.file("never-used")));     // ls creates nothing
  EXPECT_EQ(tool("--db " + dir_.file("typo.db") + " ls").status, 2);  // a named one must exist
}

TEST_F(ToolOps, FailuresGoToStderrAndAFailedPrecompileLeavesNoFile) {
  const std::string junk = dir_.file("junk.jsonl");
  std::ofstream(junk) << "not json\n{\"kind\":\"raw\",\"source\":5}\n";
  const std::string out = dir_.file("new.db");
  ToolRun stdout_only = tool("precompile " + junk + " --arch sm_80 -o " + out);
  EXPECT_EQ(stdout_only.status, 1) << stdout_only.out;
  EXPECT_EQ(stdout_only.out.find("line 1"), std::string::npos) << stdout_only.out;
  EXPECT_NE(stdout_only.out.find("2 failed"), std::string::npos) << stdout_only.out;
  for (const char* suffix : {"", "-wal", "-shm", "-journal", ".leases"}) {
    EXPECT_FALSE(std::filesystem::exists(out + suffix)) << out << suffix;
  }
  ToolRun both = tool("precompile " + junk + " --arch sm_80 -o " + out, "", true);
  EXPECT_NE(both.out.find("cujit-cache: failed: line 1"), std::string::npos) << both.out;
  EXPECT_NE(both.out.find(out + " was not created"), std::string::npos) << both.out;

  // An existing database is never removed, whatever fails.
  ASSERT_EQ(precompile_db().status, 0);
  EXPECT_EQ(tool("precompile " + junk + " --arch sm_80 -o " + db_).status, 1);
  EXPECT_EQ(tool("--db " + db_ + " ls --json").parsed().size(), 2u);
  // An unknown target is an error (exit 2) before anything is created.
  EXPECT_EQ(tool("precompile " + manifest_ + " --arch not_an_arch -o " + out).status, 2);
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST_F(ToolOps, StoredLogsShowWithoutTrailingNul) {
  ASSERT_EQ(precompile_db().status, 0);
  {
    auto store = SqliteStore::open_existing(db_, {});
    store->exec("UPDATE kernels SET log = 'a warning' || char(0)");  // as older entries were
  }
  json shown =
      tool("--db " + db_ + " show " +
           tool("--db " + db_ + " ls --json").parsed()[0]["key"].get<std::string>() + " --json")
          .parsed();
  EXPECT_EQ(shown["log"], "a warning");
  EXPECT_EQ(shown["intact"], true);  // the log is not part of the checksum
}

// Runs the tool with stdin on a pseudo-terminal.
ToolRun on_terminal(const std::string& args) {
  const int master = ::posix_openpt(O_RDWR | O_NOCTTY);
  if (master < 0 || ::grantpt(master) != 0 || ::unlockpt(master) != 0) return {};
  const std::string slave = ::ptsname(master);
  ToolRun run = tool(args + " < " + slave, "", true);
  ::close(master);
  return run;
}

TEST_F(ToolOps, ClearOnATerminalNeedsYes) {
  ASSERT_EQ(precompile_db().status, 0);
  ToolRun refused = on_terminal("--db " + db_ + " clear");
  ASSERT_NE(refused.status, -1) << "no pseudo-terminal here";
  EXPECT_EQ(refused.status, 2) << refused.out;
  EXPECT_NE(refused.out.find("pass --yes to confirm"), std::string::npos) << refused.out;
  EXPECT_EQ(tool("--db " + db_ + " ls --json").parsed().size(), 2u);
  ToolRun confirmed = on_terminal("--db " + db_ + " clear --yes");
  EXPECT_EQ(confirmed.status, 0) << confirmed.out;
  EXPECT_EQ(tool("--db " + db_ + " ls --json").parsed().size(), 0u);
  ASSERT_EQ(precompile_db().status, 0);
  EXPECT_EQ(tool("--db " + db_ + " clear < /dev/null").status, 0);  // scripts, as before
  EXPECT_EQ(tool("--db " + db_ + " ls --json").parsed().size(), 0u);
}

TEST_F(ToolOps, LogLevelsComeFromTheEnvironment) {
  ToolRun debug = tool("precompile " + manifest_ + " --arch sm_80 -o " + db_ + " -j 1",
                       "CUJIT_LOG=debug", true);
  ASSERT_EQ(debug.status, 0) << debug.out;
  EXPECT_NE(debug.out.find("cujit: debug: NVRTC compiles cujit_program.cu for sm_80: -arch=sm_80"),
            std::string::npos)
      << debug.out;
  EXPECT_NE(debug.out.find("cujit: info: kernel 'twice' (raw, sm_80): compiled in"),
            std::string::npos)
      << debug.out;
  ToolRun bogus = tool("--db " + db_ + " ls", "CUJIT_LOG=chatty", true);
  EXPECT_EQ(bogus.status, 0);
  EXPECT_NE(
      bogus.out.find("cujit: warning: CUJIT_LOG='chatty' is not one of off, warn, info, debug"),
      std::string::npos)
      << bogus.out;
}

// One convention for every command (issue 32): exit status 0 done, 1 done but something was
// wrong, 2 an error, usage errors included (CLI11's own codes were 106 and 109); with --json
// even a usage error is a JSON object on stdout.
TEST_F(ToolOps, UsageErrorsExitTwoAndSpeakJsonWhenAsked) {
  for (const char* bad :
       {"no-such-command", "ls --no-such-flag", "show", "prune --max-size", "--db"}) {
    ToolRun run = tool(bad, "", true);
    EXPECT_EQ(run.status, 2) << bad << ": " << run.out;
    EXPECT_NE(run.out.find("cujit-cache: error: "), std::string::npos) << bad << ": " << run.out;
  }
  ToolRun js = tool("ls --json --no-such-flag");
  EXPECT_EQ(js.status, 2) << js.out;
  EXPECT_TRUE(js.parsed().is_object() && js.parsed().contains("error")) << js.out;
  ToolRun js_first = tool("--json show");
  EXPECT_EQ(js_first.status, 2) << js_first.out;
  EXPECT_TRUE(js_first.parsed().contains("error")) << js_first.out;
  EXPECT_EQ(tool("--help").status, 0);
  EXPECT_EQ(tool("ls --help").status, 0);
}

TEST_F(ToolOps, SharedOptionsGoBeforeOrAfterTheCommand) {
  ASSERT_EQ(precompile_db().status, 0);
  ToolRun before = tool("--db " + db_ + " ls --json");
  ToolRun after = tool("ls --db " + db_ + " --json");
  EXPECT_EQ(after.status, 0) << after.out;
  EXPECT_EQ(after.out, before.out);
  EXPECT_EQ(tool("info --json --db " + db_).parsed()["entries"], 2) << "info after its options";
  EXPECT_EQ(tool("verify --db " + db_).status, 0);
}

TEST_F(ToolOps, InfoBeforeAnyCacheExistsSaysSoAsLsDoes) {
  const std::string env = "CUJIT_CACHE_DIR=" + dir_.file("never-used");
  ToolRun text = tool("info", env, true);
  EXPECT_EQ(text.status, 0) << text.out;
  EXPECT_NE(text.out.find("no cache yet"), std::string::npos) << text.out;
  ToolRun js = tool("info --json", env);
  EXPECT_EQ(js.status, 0) << js.out;
  EXPECT_EQ(js.parsed()["entries"], 0) << js.out;
  EXPECT_FALSE(std::filesystem::exists(dir_.file("never-used")));       // info creates nothing
  EXPECT_EQ(tool("--db " + dir_.file("typo.db") + " info").status, 2);  // a named one must exist
}

TEST_F(ToolOps, CountsOfOneAreSingular) {
  std::ofstream(manifest_) << raw_manifest_entry(plain("plain_one")) << "\n";
  ToolRun pre = tool("precompile " + manifest_ + " --arch sm_80 -o " + db_ + " -j 1");
  ASSERT_EQ(pre.status, 0) << pre.out;
  EXPECT_NE(pre.out.find("precompiled 1 entry x 1 target (sm_80)"), std::string::npos) << pre.out;
  EXPECT_NE(pre.out.find("with 1 job in"), std::string::npos) << pre.out;
  EXPECT_NE(tool("--db " + db_ + " ls").out.find("1 entry in"), std::string::npos);
  EXPECT_NE(tool("--db " + db_ + " verify").out.find("1 entry checked"), std::string::npos);
  const std::string info = tool("--db " + db_ + " info").out;
  EXPECT_NE(info.find(" stored, 1 request key)"), std::string::npos) << info;
}

// A deployment built where the headers are serves targets that do not have them: precompile
// stores a kernel whose program includes headers from -I directories under its request key
// with their digest and under the one without (what a target without the headers asks).
TEST_F(ToolOps, PrecompileServesTargetsWithoutTheHeadersToo) {
  const std::string inc = dir_.file("inc");
  std::filesystem::create_directories(inc);
  std::ofstream(inc + "/scale.h") << "#define SCALE 2.0f\n";
  SourceProgram p;
  p.source = "#include \"scale.h\"\nextern \"C\" __global__ void k(float* x) { x[0] *= SCALE; }\n";
  p.options = {"-I" + inc};
  std::ofstream(manifest_) << raw_manifest_entry(p) << "\n";
  ASSERT_EQ(precompile_db().status, 0);
  const KernelRequest with = raw_kernel_request(p, Target{80});
  ASSERT_EQ(with.include_digest.size(), 64u);
  std::filesystem::remove_all(inc);  // the target has no headers
  const KernelRequest without = raw_kernel_request(p, Target{80});
  EXPECT_EQ(without.include_digest, "");
  auto store = SqliteStore::open_existing(db_, {});
  for (const KernelRequest* r : {&with, &without}) {
    const std::string key =
        request_key(r->kind, r->spec, r->target, compiler_identity(), r->include_digest);
    EXPECT_EQ(store->find_by_request(key).status, Lookup::Status::Hit) << key;
  }
}

// The tool and the API name keys and sizes alike (issue 32): ls lists entries by content key
// with the binary's size, as show and Specialization::binary_size give it; show names the
// kernel, lists the request keys that map to the entry and labels the record's checksum.
TEST_F(ToolOps, LsAndShowAgreeOnKeysSizesAndNames) {
  ASSERT_EQ(precompile_db().status, 0);
  const json all = tool("--db " + db_ + " ls --json").parsed();
  ASSERT_EQ(all.size(), 2u);
  SourceProgram p = plain("plain_one");
  const KernelRequest request = raw_kernel_request(p, Target{80});
  const std::string rkey = request_key(request.kind, request.spec, request.target);
  const json shown = tool("--db " + db_ + " show " + rkey + " --json").parsed();
  ASSERT_TRUE(shown.is_object()) << shown.dump();
  EXPECT_EQ(shown["name"], "plain_one");
  EXPECT_NE(std::find(shown["request_keys"].begin(), shown["request_keys"].end(), rkey),
            shown["request_keys"].end());
  for (const json& e : all) {
    if (e["content_key"] != shown["content_key"]) continue;
    EXPECT_EQ(e["binary_size"], shown["binary_size"]);
    EXPECT_EQ(e["key"], e["content_key"]);
  }
  ToolRun text = tool("--db " + db_ + " show " + rkey.substr(0, 12));
  EXPECT_NE(text.out.find("kernel:       plain_one"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("request key:  " + rkey), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("record checksum"), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("xxh64"), std::string::npos) << text.out;
  // The NVRTC identity reads as a version and a build label, not as a file size and time.
  EXPECT_TRUE(
      std::regex_search(text.out, std::regex(R"(nvrtc: +\d+\.\d+ \(build [0-9a-f]{8}\)\n)")))
      << text.out;
  EXPECT_NE(tool("--db " + db_ + " ls").out.find("CONTENT KEY"), std::string::npos);
}

}  // namespace
}  // namespace cujit::detail
