#pragma once
// Benchmark helpers around processes and host time: the host cost of a call, and a measurement
// taken in a fresh process of the same benchmark (cold and warm starts).

#include "bench/bench_util.hpp"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

extern char** environ;

namespace cujit::bench {

// Host microseconds per call, median over batches of `batch` calls (the GPU drains between
// batches, so the launch queue never fills and blocks the host).
inline double host_us_per_call(const Device& device, const std::function<void()>& call, int batches,
                               int batch) {
  for (int i = 0; i < 200; ++i) call();
  device.synchronize();
  std::vector<double> samples;
  for (int b = 0; b < batches; ++b) {
    const double start = host_seconds();
    for (int i = 0; i < batch; ++i) call();
    samples.push_back((host_seconds() - start) * 1e6 / batch);
    device.synchronize();
  }
  return summarize(samples).median_us;
}

// Runs this program again with `mode` in a fresh process and reads the number it prints.
// `second`, when given, receives the second number the child prints.
inline double child_ms(const char* mode, const std::string& cache_dir, double* second = nullptr) {
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) return -1;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, pipe_fds[0]);
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    if (std::strncmp(*e, "CUJIT_CACHE", 11) != 0) env_strings.emplace_back(*e);
  }
  env_strings.push_back("CUJIT_CACHE_DIR=" + cache_dir);
  std::vector<char*> env;
  for (auto& s : env_strings) env.push_back(s.data());
  env.push_back(nullptr);
  char self[] = "/proc/self/exe";
  std::string mode_arg = mode;
  char* argv[] = {self, mode_arg.data(), nullptr};
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, argv, env.data());
  posix_spawn_file_actions_destroy(&actions);
  close(pipe_fds[1]);
  if (rc != 0) {
    close(pipe_fds[0]);
    return -1;
  }
  std::string out;
  char buffer[256];
  ssize_t got;
  while ((got = read(pipe_fds[0], buffer, sizeof(buffer))) > 0) out.append(buffer, got);
  close(pipe_fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (second != nullptr) {
    const std::size_t space = out.find(' ');
    *second = space == std::string::npos ? -1 : std::atof(out.c_str() + space + 1);
  }
  return out.empty() ? -1 : std::atof(out.c_str());
}

}  // namespace cujit::bench
