#pragma once
// Tests that need fresh processes run one of their own test cases again in a child: this
// binary, filtered to that case, with variables added to the environment.

#include <spawn.h>
#include <sys/types.h>
#include <unistd.h>  // environ (g++ defines _GNU_SOURCE)

#include <string>
#include <vector>

namespace cujit::test {

/// Starts this test binary with --gtest_filter=`filter` and `env` ("NAME=value") added to the
/// environment; its pid, or -1 when it could not be started. The caller waits for it.
inline pid_t spawn_test(const std::string& filter, const std::vector<std::string>& env) {
  std::vector<std::string> args = {"/proc/self/exe", "--gtest_filter=" + filter};
  std::vector<std::string> vars = env;
  for (char** e = environ; *e != nullptr; ++e) vars.emplace_back(*e);
  std::vector<char*> argv, envp;
  for (auto& a : args) argv.push_back(a.data());
  for (auto& v : vars) envp.push_back(v.data());
  argv.push_back(nullptr);
  envp.push_back(nullptr);
  pid_t pid = 0;
  return ::posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), envp.data()) == 0 ? pid : -1;
}

}  // namespace cujit::test
