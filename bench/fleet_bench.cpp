// The fleet tier's costs without a GPU (issue 19): a first lookup served by Redis on loopback
// against one served by the local database; the time a miss pays when Redis is gone (connection
// refused) or hangs (a server that accepts and never answers), first and within the back-off;
// and the background publisher's throughput. Starts its own redis-server (Debian's package;
// CUJIT_REDIS_SERVER names another binary). Prints medians.
//
//   fleet_bench [iterations | --quick]     (default 200; --quick 20)

#include "cache/entry_signature.hpp"
#include "cache/kernel_cache.hpp"
#include "cache/record.hpp"
#include "tests/support/redis_server.hpp"

#include <cujit/cache.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace {

using namespace cujit;
using namespace cujit::detail;
using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

void report(const char* what, const std::vector<double>& us) {
  std::printf("%-64s median %10.3f us  (n=%zu)\n", what, median(us), us.size());
}

// A realistic elementwise kernel: 24 KiB binary, 5 KiB of source.
struct Kernel {
  KernelRequest request;
  SourceProgram source;
};

Kernel kernel(int i) {
  Kernel k;
  k.request.kind = "elementwise";
  k.request.spec = "squared_diff spec " + std::to_string(i);
  k.request.target = Target{90};
  k.request.name = "squared_diff_" + std::to_string(i);
  for (int line = 0; line < 80; ++line) {
    k.source.source += "// generated elementwise kernel " + std::to_string(i) + " line " +
                       std::to_string(line) + " with some typical text\n";
  }
  k.source.name_expressions = {k.request.name};
  return k;
}

CompiledProgram compiled(const SourceProgram& p) {
  CompiledProgram c;
  c.target = Target{90};
  c.binary.resize(24 * 1024);
  for (std::size_t k = 0; k < c.binary.size(); ++k) {
    c.binary[k] = static_cast<char>(((k + p.source.size()) * 2654435761u) >> 13);
  }
  c.lowered_names = {{p.name_expressions[0], p.name_expressions[0]}};
  c.metadata = R"({"in":["float32","float32"],"out":["float32"],"index":"int32"})";
  return c;
}

// Microseconds of one get_or_compile of `k` through `cache`.
double lookup_us(KernelCache& cache, const Kernel& k) {
  const auto t0 = Clock::now();
  cache.get_or_compile(
      k.request, [&] { return k.source; }, [](const SourceProgram& p) { return compiled(p); });
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

struct Fixture {
  std::string dir;
  std::string keys;
  CacheConfig config(const std::string& host, const std::string& url) const {
    CacheConfig c;
    c.database_path = dir + "/" + host + "/kernels.db";
    c.preload_records = 0;
    c.remote_url = url;
    c.signing_key_path = keys + ".key";
    c.trusted_keys_path = keys + ".pub";
    return c;
  }
};

// Publishes `n` kernels from host "builder", then reads each from a fresh host: the remote
// hit (fresh KernelCache, empty local directory) and, for comparison, the same host's second
// process (fresh KernelCache, the kernel now in its local database).
void remote_against_local(const Fixture& f, const std::string& url, int n) {
  {
    KernelCache builder(f.config("builder", url));
    for (int i = 0; i < n; ++i) lookup_us(builder, kernel(i));
    builder.flush();
  }
  std::vector<double> remote, remote_part, local;
  for (int i = 0; i < n; ++i) {
    const std::string host = "reader" + std::to_string(i);
    {
      KernelCache fresh(f.config(host, url));
      // As in a process, where cujit prefetches when a device is first used: the empty local
      // database opened, and the tier warmed up (keys read, libsodium ready, connected).
      fresh.prefetch().wait();
      remote.push_back(lookup_us(fresh, kernel(i)));
      remote_part.push_back(static_cast<double>(fresh.stats().remote_lookup_us));
      if (fresh.stats().remote_hits != 1) std::abort();
    }
    KernelCache again(f.config(host, url));
    again.writable_store();
    local.push_back(lookup_us(again, kernel(i)));
    if (again.stats().disk_hits != 1) std::abort();
  }
  report("new host, after prefetch: first lookup served by Redis", remote);
  report("  of which the Redis read, decode and verify", remote_part);
  report("same host, next process: first lookup served by the local DB", local);
}

// The time misses pay with the tier configured at `url` (gone or silent), first and later.
void misses_with(const Fixture& f, const std::string& url, const char* what, int n) {
  std::vector<double> with, without;
  for (int round = 0; round < 5; ++round) {
    const std::string host = std::string(what) + std::to_string(round);
    KernelCache plain(f.config(host + "-plain", ""));
    KernelCache tier(f.config(host, url));
    plain.writable_store();  // both databases created and open before any timing
    tier.writable_store();
    for (int i = 0; i < n; ++i) {
      without.push_back(lookup_us(plain, kernel(1000 + 100 * round + i)));
      with.push_back(lookup_us(tier, kernel(1000 + 100 * round + i)));
    }
  }
  std::vector<double> first, later;
  for (std::size_t i = 0; i < with.size(); ++i) {
    (i % n == 0 ? first : later).push_back(with[i] - without[i]);
  }
  std::printf("misses with Redis %s (fake compiler; a miss without the tier: %.1f us):\n", what,
              median(without));
  report("  added to the first miss (then the tier backs off)", first);
  report("  added to each later miss within the back-off", later);
}

void publication_rate(const Fixture& f, const std::string& url, int n) {
  CacheConfig config = f.config("publisher", url);
  config.writable = false;  // callers as fast as possible: the publisher is what is measured
  KernelCache cache(config);
  const auto t0 = Clock::now();
  for (int i = 0; i < n; ++i) lookup_us(cache, kernel(5000 + i));
  const auto compiled_at = Clock::now();
  cache.flush();
  const double total = std::chrono::duration<double>(Clock::now() - t0).count();
  const double callers = std::chrono::duration<double>(compiled_at - t0).count();
  std::printf(
      "background publication: %d kernels of 24 KiB signed and published in %.3f s "
      "(%.0f kernels/s); the callers' part %.3f s\n",
      n, total, n / total, callers);
}

}  // namespace

int main(int argc, char** argv) {
  // gpu_run.sh passes --json FILE [--quick] to every benchmark: this one prints only.
  int n = 200;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--quick") n = 20;
    if (argv[i][0] >= '0' && argv[i][0] <= '9') n = std::max(5, std::atoi(argv[i]));
  }
  test::RedisServer redis;
  if (!redis.running()) {
    std::printf("fleet_bench: no redis-server here (install it, or set CUJIT_REDIS_SERVER)\n");
    return 0;
  }
  Fixture f;
  f.dir =
      (std::filesystem::temp_directory_path() / ("cujit-fleet-bench-" + std::to_string(::getpid())))
          .string();
  std::filesystem::create_directories(f.dir);
  f.keys = f.dir + "/builder";
  write_key_pair(f.keys, generate_signing_key(), false);
  set_warning_sink([](const std::string&) {});
  std::printf("cujit fleet benchmark: %d kernels, redis-server on 127.0.0.1:%d\n\n", n,
              redis.port());
  remote_against_local(f, redis.url(), n);
  publication_rate(f, redis.url(), n);
  misses_with(f, "redis://127.0.0.1:" + std::to_string(test::free_port()), "gone", 20);
  test::SilentServer silent;
  misses_with(f, silent.url(), "silent", 20);
  std::filesystem::remove_all(f.dir);
  return 0;
}
