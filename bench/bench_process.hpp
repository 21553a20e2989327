#pragma once
// Benchmark helpers around processes and host time: the host cost of a call, and a measurement
// taken in a fresh process of the same benchmark (cold and warm starts).

#include "bench/bench_util.hpp"
#include "bench/instruction_count.hpp"
#include "cache/entry_signature.hpp"
#include "cache/kernel_cache.hpp"
#include "cache/manifest.hpp"
#include "cache/redis_client.hpp"
#include "cache/remote_endpoint.hpp"

#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
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

// User-space instructions per call of the same three (records launch_instructions and
// launch_instructions_alloc, "us" holding instructions; ratio to the bare launch) and three
// table rows; "-" where the machine has no counter.
inline void report_instructions_per_call(const Device& device, const char* bench,
                                         const char* raw_bench, std::int64_t size,
                                         const std::string& what, const std::function<void()>& bare,
                                         const std::function<void()>& given,
                                         const std::function<void()>& alloc, JsonLines& json,
                                         Table& table) {
  const auto drain = [&device] { device.synchronize(); };
  const double b = instructions_per_call(bare, drain, 15, 1000);
  const std::string n = std::to_string(size);
  if (b <= 0) {
    table.add({"instr/call", n, "(no CPU counter)", "-", "-", "-", "-"});
    return;
  }
  const double g = instructions_per_call(given, drain, 15, 1000);
  const double a = instructions_per_call(alloc, drain, 15, 1000);
  const struct {
    const char* bench;
    const char* case_name;
    double count;
    const char* row;
  } rows[] = {{raw_bench, "launch_instructions", b, "cuLaunchKernel"},
              {bench, "launch_instructions", g, "cujit (out given)"},
              {bench, "launch_instructions_alloc", a, "cujit (out alloc)"}};
  for (const auto& row : rows) {
    Record r;
    r.bench = row.bench;
    r.case_name = row.case_name;
    r.size = size;
    r.us = row.count;
    r.ratio = row.count / b;
    r.note =
        "user-space instructions per call" + what + " (in \"us\"); ratio to bare cuLaunchKernel";
    json.write(r);
    table.add({"instr/call", n, row.row, "-", fixed(row.count, 0), fixed(r.ratio, 3), "-"});
  }
}

// Host time per call of a tiny kernel: a bare cuLaunchKernel (`bare`), cujit with the output
// given (`given`) and allocated (`alloc`). Measures the three, writes the records
// (launch_host, launch_host_alloc; `what` qualifies the notes) and three table rows.
inline void report_host_per_call(const Device& device, const char* bench, const char* raw_bench,
                                 std::int64_t size, const std::string& what, int batches,
                                 const std::function<void()>& bare,
                                 const std::function<void()>& given,
                                 const std::function<void()>& alloc, JsonLines& json,
                                 Table& table, const std::function<void()>& into = {}) {
  constexpr int kBatch = 1000;
  Record rb;
  rb.bench = raw_bench;
  rb.case_name = "launch_host";
  rb.size = size;
  rb.us = host_us_per_call(device, bare, batches, kBatch);
  rb.note = "host us per bare cuLaunchKernel";
  Record rg = rb;
  rg.bench = bench;
  rg.us = host_us_per_call(device, given, batches, kBatch);
  rg.ratio = rg.us / rb.us;
  rg.note = "host us per call" + what + ", output given; ratio to bare cuLaunchKernel";
  Record ra = rg;
  ra.case_name = "launch_host_alloc";
  ra.us = host_us_per_call(device, alloc, batches, kBatch);
  ra.ratio = ra.us / rb.us;
  ra.note = "host us per call" + what + ", output allocated; ratio to bare cuLaunchKernel";
  const std::string n = std::to_string(size);
  for (const Record* r : {&rb, &rg, &ra}) json.write(*r);
  table.add({"host/call", n, "cuLaunchKernel", "-", fixed(rb.us, 3), "1.000", "-"});
  table.add({"host/call", n, "cujit (out given)", "-", fixed(rg.us, 3), fixed(rg.ratio, 3), "-"});
  table.add({"host/call", n, "cujit (out alloc)", "-", fixed(ra.us, 3), fixed(ra.ratio, 3), "-"});
  if (into) {  // the output given through call_into: no output handle returned
    Record ri = rg;
    ri.case_name = "launch_host_into";
    ri.us = host_us_per_call(device, into, batches, kBatch);
    ri.ratio = ri.us / rb.us;
    ri.note = "host us per call" + what + ", call_into; ratio to bare cuLaunchKernel";
    json.write(ri);
    table.add({"host/call", n, "cujit (call_into)", "-", fixed(ri.us, 3), fixed(ri.ratio, 3), "-"});
  }
  report_instructions_per_call(device, bench, raw_bench, size, what, bare, given, alloc, json,
                               table);
}

// What this process spent since `before`: page faults, context switches (voluntary: waits;
// involuntary: preemptions) and CPU time, for first-call children's traces.
inline std::string usage_since(const rusage& before) {
  rusage now{};
  getrusage(RUSAGE_SELF, &now);
  const auto ms = [](const timeval& a, const timeval& b) {
    return (a.tv_sec - b.tv_sec) * 1e3 + (a.tv_usec - b.tv_usec) * 1e-3;
  };
  char text[200];
  std::snprintf(text, sizeof(text),
                "faults %ld minor %ld major, switches %ld waiting %ld preempted, cpu %.1f ms "
                "user %.1f ms system",
                now.ru_minflt - before.ru_minflt, now.ru_majflt - before.ru_majflt,
                now.ru_nvcsw - before.ru_nvcsw, now.ru_nivcsw - before.ru_nivcsw,
                ms(now.ru_utime, before.ru_utime), ms(now.ru_stime, before.ru_stime));
  return text;
}

inline rusage usage_now() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage;
}

// Runs this program again with `mode` in a fresh process and reads the number it prints.
// `second`, when given, receives the second number the child prints.
inline double child_ms(const char* mode, const std::string& cache_dir, double* second = nullptr,
                       const std::vector<std::string>& extra_env = {}) {
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) return -1;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, pipe_fds[0]);
  // `extra_env` ahead of this process's variables, so that it wins (getenv takes the first):
  // a CUJIT_RECORD of the caller's must not take the recording child's.
  std::vector<std::string> env_strings = extra_env;
  env_strings.push_back("CUJIT_CACHE_DIR=" + cache_dir);
  for (char** e = environ; *e; ++e) {
    if (std::strncmp(*e, "CUJIT_CACHE", 11) != 0) env_strings.emplace_back(*e);
  }
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

// Child (`--cold-nvrtc`): NVRTC alone in a fresh process on the very source a cold call
// compiles. The call's specialisation, as a cold child recorded it (CUJIT_RECORD, in the file
// CUJIT_BENCH_MANIFEST names), is rebuilt and generated here, then compiled: the timed part,
// NVRTC loaded and run, as in the cold call. (Until 2026-11-28 the target came from
// target_for_arch, which loaded NVRTC before the timed part: 3-5 ms of library loading were
// left out, the "NVRTC slower inside cujit" of runs 193 and 196.)
// `set_up`, when given (`--cold-nvrtc-setup`): first the set-up a cold child does before its
// call (arrays made on the device), its arrays kept while NVRTC runs.
inline int cold_nvrtc(const std::function<std::vector<Array>()>& set_up = {}) {
  const char* manifest = std::getenv("CUJIT_BENCH_MANIFEST");
  if (manifest == nullptr) {
    std::fprintf(stderr, "--cold-nvrtc: CUJIT_BENCH_MANIFEST names no recorded call\n");
    return 2;
  }
  const Device device = Device::get(0);
  std::vector<Array> arrays;
  if (set_up) {
    arrays = set_up();
    device.synchronize();
  }
  // The target as a call makes it, without NVRTC (target_for_arch would load NVRTC here, outside
  // the timed part: the cold call loads it inside).
  const Target target{device.compute_capability(), BinaryFormat::Cubin};
  const std::vector<std::string> entries = detail::read_manifest(manifest);
  if (entries.empty()) return 2;
  const SourceProgram program = detail::replay(entries.back(), target).generate();
  const rusage before = usage_now();
  const auto start = std::chrono::steady_clock::now();
  compile(program, target);
  if (std::getenv("CUJIT_TRACE_SPECIALIZE") != nullptr) {
    std::fprintf(stderr, "NVRTC alone%s: %s\n", set_up ? " after set-up" : "",
                 usage_since(before).c_str());
  }
  std::printf(
      "%.3f\n",
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  return 0;
}

// First calls in fresh processes, `rounds` times over: NVRTC alone on the cold call's source
// (`--cold-nvrtc`), a cold call on an empty cache directory and a warm call on the directory
// the cold call filled (`--cold-cujit` twice). Each round has its own directory; a cold call
// before the rounds, not counted, records the call's specialisation for NVRTC alone. Single fresh
// processes vary a lot (the first one on a freshly booted host reads NVRTC from disk; others meet
// background work), so benchmarks report medians, with the first round and the range alongside.
struct FirstCalls {
  std::vector<double> nvrtc_ms, cold_ms, warm_ms, warm_call_ms;
  // With CUJIT_BENCH_REMOTE: a cold call that also publishes to the fleet tier, then a new
  // "host" (an empty cache directory) whose first call finds the kernel only in Redis.
  std::vector<double> publish_ms, remote_ms;
};

inline std::string fresh_dir() {
  char dir_template[] = "/tmp/cujit-cold.XXXXXX";
  return mkdtemp(dir_template) ? dir_template : "/tmp";
}

// The fleet tier's part of a round: empties the server, then a publishing cold call and a
// first call served by Redis, in new processes with a key pair made for the benchmark.
inline void measure_fleet_round(const std::string& url, FirstCalls& f) {
  static const std::string keys = [] {
    const std::string prefix = fresh_dir() + "/bench";
    detail::write_key_pair(prefix, detail::generate_signing_key(), false);
    return prefix;
  }();
  const std::vector<std::string> env = {"CUJIT_CACHE_REMOTE=" + url,
                                        "CUJIT_CACHE_SIGNING_KEY=" + keys + ".key",
                                        "CUJIT_CACHE_TRUSTED_KEYS=" + keys + ".pub"};
  try {
    auto endpoint = detail::parse_remote_url(url, nullptr);
    if (!endpoint) return;
    detail::RedisConnection(*endpoint, std::chrono::seconds(1), std::chrono::seconds(5))
        .execute({"FLUSHDB"});
  } catch (const Error& e) {
    std::fprintf(stderr, "CUJIT_BENCH_REMOTE: %s\n", e.what());
    return;
  }
  f.publish_ms.push_back(child_ms("--cold-cujit", fresh_dir(), nullptr, env));
  f.remote_ms.push_back(child_ms("--cold-cujit", fresh_dir(), nullptr, env));
}

inline FirstCalls measure_first_calls(int rounds) {
  FirstCalls f;
  const char* remote = std::getenv("CUJIT_BENCH_REMOTE");
  const std::string manifest = fresh_dir() + "/calls.jsonl";
  child_ms("--cold-cujit", fresh_dir(), nullptr, {"CUJIT_RECORD=" + manifest});
  for (int i = 0; i < rounds; ++i) {
    const std::string dir = fresh_dir();
    f.nvrtc_ms.push_back(
        child_ms("--cold-nvrtc", dir, nullptr, {"CUJIT_BENCH_MANIFEST=" + manifest}));
    f.cold_ms.push_back(child_ms("--cold-cujit", dir));
    double call_ms = -1;
    f.warm_ms.push_back(child_ms("--cold-cujit", dir, &call_ms));  // a disk hit
    f.warm_call_ms.push_back(call_ms);
    if (remote != nullptr && *remote != '\0') measure_fleet_round(remote, f);
  }
  return f;
}

// "median (first X, min-max)" of millisecond samples, for notes and tables.
inline std::string describe_ms(const std::vector<double>& ms, int digits) {
  const Stats s = summarize(ms);
  return fixed(s.median_us, digits) + " ms median of " + std::to_string(s.samples) + " (first " +
         fixed(ms.empty() ? -1 : ms.front(), digits) + ", " + fixed(s.min_us, digits) + "-" +
         fixed(s.max_us, digits) + ")";
}

// Rows and records of the fleet tier's first calls, when they were measured.
inline void report_fleet_first_calls(const char* bench, const FirstCalls& f, JsonLines& json,
                                     Table& table) {
  if (f.remote_ms.empty()) return;
  Record r;
  r.bench = bench;
  r.case_name = "remote_first_call";
  r.size = 1 << 20;
  r.us = summarize(f.remote_ms).median_us * 1e3;
  r.note =
      "fresh process, empty local cache, kernel only in Redis on loopback (signed, "
      "verified): " +
      describe_ms(f.remote_ms, 3) + "; the publishing cold call " + describe_ms(f.publish_ms, 1);
  json.write(r);
  table.add({"first call", "2^20", "cujit cold, publishing", "-",
             fixed(summarize(f.publish_ms).median_us * 1e3, 0), "-", "-"});
  table.add({"first call", "2^20", "cujit fleet hit (Redis)", "-", fixed(r.us, 0), "-", "-"});
  std::printf("first calls: fleet hit %s\n", describe_ms(f.remote_ms, 3).c_str());
}

// Measures first calls (measure_first_calls) and reports their medians: JSON records
// cold_first_call and warm_first_call, rows of `table` (case, size, impl, GB/s, us, ratio,
// check) and a summary line. `cold_call` and `warm_call` say what the child's call does;
// `cold_limit_ms` > 0 adds a check of the cold median against it.
inline void report_first_calls(const char* bench, int rounds, const std::string& cold_call,
                               const std::string& warm_call, double cold_limit_ms, JsonLines& json,
                               Table& table) {
  const FirstCalls f = measure_first_calls(rounds);
  const double nvrtc_ms = summarize(f.nvrtc_ms).median_us;
  const double cold_ms = summarize(f.cold_ms).median_us;
  const double warm_ms = summarize(f.warm_ms).median_us;
  const double warm_call_ms = summarize(f.warm_call_ms).median_us;
  Record r;
  r.bench = bench;
  r.case_name = "cold_first_call";
  r.size = 1 << 20;
  r.us = cold_ms * 1e3;
  r.ratio = cold_ms / nvrtc_ms;
  r.note = "fresh process, empty cache: " + cold_call + "; " + describe_ms(f.cold_ms, 1) +
           "; NVRTC alone in a fresh process " + describe_ms(f.nvrtc_ms, 1);
  Record w = r;
  w.case_name = "warm_first_call";
  w.us = warm_ms * 1e3;
  w.ratio = std::numeric_limits<double>::quiet_NaN();
  w.note = "fresh process, warm disk cache: construction, " + warm_call + " and synchronisation; " +
           describe_ms(f.warm_ms, 3) + "; the call alone " + describe_ms(f.warm_call_ms, 3);
  json.write(r);
  json.write(w);
  const std::string check = cold_limit_ms <= 0         ? "-"
                            : cold_ms <= cold_limit_ms ? "<= " + fixed(cold_limit_ms, 0) + " ms"
                                                       : "> " + fixed(cold_limit_ms, 0) + " ms";
  table.add({"first call", "2^20", "NVRTC alone", "-", fixed(nvrtc_ms * 1e3, 0), "1.000", "-"});
  table.add(
      {"first call", "2^20", "cujit cold", "-", fixed(cold_ms * 1e3, 0), fixed(r.ratio, 3), check});
  table.add(
      {"first call", "2^20", "  first round", "-", fixed(f.cold_ms.front() * 1e3, 0), "-", "-"});
  table.add({"first call", "2^20", "cujit warm disk", "-", fixed(warm_ms * 1e3, 0), "-", "-"});
  table.add(
      {"first call", "2^20", "  of which the call", "-", fixed(warm_call_ms * 1e3, 0), "-", "-"});
  std::printf("first calls: cold %s; NVRTC alone %s; warm %s\n", describe_ms(f.cold_ms, 1).c_str(),
              describe_ms(f.nvrtc_ms, 1).c_str(), describe_ms(f.warm_ms, 3).c_str());
  report_fleet_first_calls(bench, f, json, table);
}

}  // namespace cujit::bench
