#pragma once
// Running the built cujit-cache tool from a test: its path, its exit status and its output.

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <string>

// tests/CMakeLists.txt passes the path of the cujit-cache binary when the tool is built.
#ifndef CUJIT_CACHE_TOOL
#define CUJIT_CACHE_TOOL ""
#endif
#define CUJIT_SKIP_WITHOUT_TOOL()         \
  if (::cujit::test::tool_path().empty()) \
  GTEST_SKIP() << "cujit-cache is not built (CUJIT_BUILD_TOOLS=OFF)"

namespace cujit::test {

/// The built tool; where the build tree was copied elsewhere (the GPU host gets tests/ and
/// tools/ side by side), the tool next to this test binary's folder.
inline const std::string& tool_path() {
  static const std::string path = [] {
    const std::string built = CUJIT_CACHE_TOOL;
    if (built.empty() || std::filesystem::exists(built)) return built;
    std::error_code error;
    const auto self = std::filesystem::read_symlink("/proc/self/exe", error);
    const auto beside = self.parent_path().parent_path() / "tools" / "cujit-cache";
    return !error && std::filesystem::exists(beside) ? beside.string() : built;
  }();
  return path;
}

/// One run of the tool.
struct ToolRun {
  int status = -1;
  std::string out;
  nlohmann::json parsed() const { return nlohmann::json::parse(out, nullptr, false); }
};

/// Runs `env tool args` through the shell; stdout is captured, stderr too when
/// `with_stderr` (else discarded).
inline ToolRun tool(const std::string& args, const std::string& env = "",
                    bool with_stderr = false) {
  std::string command =
      env + " " + tool_path() + " " + args + (with_stderr ? " 2>&1" : " 2>/dev/null");
  ToolRun run;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return run;
  char buffer[4096];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;)
    run.out.append(buffer, n);
  int status = ::pclose(pipe);
  run.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

}  // namespace cujit::test
