#pragma once
// Tests that need fresh processes run one of their own test cases again in a child: this
// binary, filtered to that case, with variables added to the environment.

#include <fcntl.h>
#include <spawn.h>
#include <sys/types.h>
#include <unistd.h>  // environ (g++ defines _GNU_SOURCE)

#include <string>
#include <vector>

namespace cujit::test {

/// Starts this test binary with --gtest_filter=`filter` and `env` ("NAME=value") added to the
/// environment (ahead of this process's own variables, so they win); its standard error goes
/// to the file `stderr_path` when one is given. Its pid, or -1 when it could not be started.
/// The caller waits for it.
inline pid_t spawn_test(const std::string& filter, const std::vector<std::string>& env,
                        const std::string& stderr_path = "") {
  std::vector<std::string> args = {"/proc/self/exe", "--gtest_filter=" + filter};
  std::vector<std::string> vars = env;
  for (char** e = environ; *e != nullptr; ++e) vars.emplace_back(*e);
  std::vector<char*> argv, envp;
  for (auto& a : args) argv.push_back(a.data());
  for (auto& v : vars) envp.push_back(v.data());
  argv.push_back(nullptr);
  envp.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  if (::posix_spawn_file_actions_init(&actions) != 0) return -1;
  if (!stderr_path.empty() &&
      ::posix_spawn_file_actions_addopen(&actions, 2, stderr_path.c_str(),
                                         O_WRONLY | O_CREAT | O_TRUNC, 0600) != 0) {
    ::posix_spawn_file_actions_destroy(&actions);
    return -1;
  }
  pid_t pid = 0;
  const int rc = ::posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
  ::posix_spawn_file_actions_destroy(&actions);
  return rc == 0 ? pid : -1;
}

}  // namespace cujit::test
