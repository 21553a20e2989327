// Kernel-cache latency without a GPU: the in-process hit, SQLite put and get of a record of
// realistic size, and the first lookup of a kernel in a fresh cache (as a new process does)
// from a warm writable database and from a deployment database. Prints medians.
//
//   cache_bench [iterations]     (default 2000)

#include "cache/database_transfer.hpp"
#include "cache/kernel_cache.hpp"
#include "cache/record.hpp"
#include "cache/sqlite_store.hpp"

#include <cujit/cache.hpp>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace cujit;
using namespace cujit::detail;
using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[static_cast<std::size_t>(p * static_cast<double>(v.size() - 1))];
}

// Microseconds taken by `fn`, once per iteration.
std::vector<double> time_each(int iterations, const std::function<void(int)>& fn) {
  std::vector<double> out;
  out.reserve(iterations);
  for (int i = 0; i < iterations; ++i) {
    auto t0 = Clock::now();
    fn(i);
    out.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  return out;
}

void report(const char* what, const std::vector<double>& us) {
  std::printf("%-58s median %9.3f us   p90 %9.3f us   (n=%zu)\n", what, median(us),
              percentile(us, 0.9), us.size());
}

// An elementwise kernel's request as the elementwise family would spell it.
KernelRequest realistic_request(int i) {
  KernelRequest r;
  r.kind = "elementwise";
  r.spec =
      "in_params=float32 x, float32 y, raw T w\nout_params=float32 z\noperation=z = (x - y) * "
      "(x - y) * w[i % 7];\nname=squared_diff_" +
      std::to_string(i) +
      "\npreamble=\nloop_prep=\nafter_loop=\noptions=-use_fast_math\nargs=f32 c-contig "
      "1d,f32 c-contig 1d,f64 raw,f32 c-contig 1d\nindex=int32";
  r.target = Target{90};
  return r;
}

SourceProgram realistic_source(int i) {
  SourceProgram p;
  p.source = "#include <cuda_fp16.h>\n";
  for (int line = 0; line < 80; ++line) {
    p.source += "// generated elementwise kernel " + std::to_string(i) + " line " +
                std::to_string(line) + " with some typical text\n";
  }
  p.source += "extern \"C\" __global__ void squared_diff_" + std::to_string(i) + "() {}\n";
  p.options = {"-use_fast_math", "-std=c++17"};
  p.name_expressions = {"squared_diff_" + std::to_string(i)};
  return p;
}

CompiledProgram realistic_binary(const SourceProgram& p, const Target& t) {
  CompiledProgram c;
  c.target = t;
  c.binary.resize(24 * 1024);  // a small cubin: 10-40 KiB
  for (std::size_t k = 0; k < c.binary.size(); ++k) {
    c.binary[k] = static_cast<char>((k * 2654435761u) >> 13);
  }
  c.lowered_names = {{p.name_expressions[0], p.name_expressions[0]}};
  c.metadata = R"({"in":["float32","float32","float64"],"out":["float32"],"index":"int32"})";
  return c;
}

// Looks request `i` up in `cache`, which must hold it: no source is generated, nothing compiled.
CacheOutcome look_up_stored(KernelCache& cache, int i) {
  CacheOutcome where{};
  cache.get_or_compile(
      realistic_request(i), []() -> SourceProgram { std::abort(); },
      [](const SourceProgram&) -> CompiledProgram { std::abort(); }, &where);
  return where;
}

void bench_memory_hit(int iterations) {
  // 1. In-process hit: a hash lookup under a shared lock.
  {
    KernelCache cache(nullptr, {});
    KernelRequest r = realistic_request(0);
    GenerateFn gen = [] { return realistic_source(0); };
    CompileFn comp = [&](const SourceProgram& p) { return realistic_binary(p, r.target); };
    cache.get_or_compile(r, gen, comp);
    constexpr int kBatch = 1000;
    std::vector<double> per_hit;
    for (int b = 0; b < std::max(200, iterations / 5); ++b) {
      auto t0 = Clock::now();
      for (int i = 0; i < kBatch; ++i) cache.get_or_compile(r, gen, comp);
      per_hit.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count() /
                        kBatch);
    }
    report("in-process hit (get_or_compile, memory layer)", per_hit);
  }
}

void bench_keys(int iterations) {
  // 2. Keys.
  {
    KernelRequest r = realistic_request(1);
    report("request key (SHA-256 of kind, spec, target, versions)",
           time_each(iterations, [&](int) { request_key(r.kind, r.spec, r.target); }));
    SourceProgram p = realistic_source(1);
    report("content key (SHA-256 of a 5 KiB source and options)",
           time_each(iterations, [&](int) { content_key(p, Target{90}, "raw"); }));
  }
}

void bench_sqlite(const std::string& db, int iterations) {
  // 3. SQLite put and get of a record of realistic size.
  {
    std::vector<std::string> request_keys;
    auto store = SqliteStore::open_writable(db, {});
    std::vector<CacheRecord> records;
    for (int i = 0; i < iterations; ++i) {
      SourceProgram p = realistic_source(i);
      CacheRecord rec = make_record(content_key(p, Target{90}, "elementwise"), "elementwise", p,
                                    realistic_binary(p, Target{90}), now_ms());
      records.push_back(std::move(rec));
      request_keys.push_back(request_key("elementwise", realistic_request(i).spec, Target{90}));
    }
    std::printf("record: %zu B binary, %zu B compressed source (%llu B raw), %llu B total\n",
                records[0].program.binary.size(), records[0].source_zstd.size(),
                static_cast<unsigned long long>(records[0].source_size),
                static_cast<unsigned long long>(records[0].size()));
    report("SQLite put (one transaction, WAL, synchronous=NORMAL)",
           time_each(iterations, [&](int i) { store->put(records[i], request_keys[i]); }));
    report("SQLite get by request key (open store, checksum included)",
           time_each(iterations, [&](int i) {
             if (store->find_by_request(request_keys[i]).status != Lookup::Status::Hit)
               std::abort();
           }));
    store->flush();
  }
}

void bench_fresh_writable(const std::string& db, int iterations) {
  // 4. First lookup in a fresh cache, as in a new process: open the database, find the
  //    request, verify the checksum. The file is in the OS page cache (a warm disk cache).
  {
    CacheConfig config;
    config.database_path = db;
    int n = std::min(iterations, 500);
    std::vector<double> open_and_hit;
    for (int i = 0; i < n; ++i) {
      // Construction and the first lookup are timed; closing (at process exit) is not.
      auto t0 = Clock::now();
      auto cache = std::make_unique<KernelCache>(config);
      const CacheOutcome where = look_up_stored(*cache, i);
      open_and_hit.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
      if (where != CacheOutcome::DiskHit) std::abort();
    }
    report("fresh KernelCache: open writable DB + first hit", open_and_hit);

    // With prefetch() called early (cujit calls it when a device is first used, and creating
    // the CUDA context takes far longer), the first lookup finds the database open and the
    // most recently used kernels read ahead. Request n - 1 is always among those (each round
    // uses it again); with preload_records = 0 the lookup goes to SQLite.
    for (const std::size_t preload : {config.preload_records, std::size_t{0}}) {
      CacheConfig c = config;
      c.preload_records = preload;
      std::vector<double> prefetched;
      for (int i = 0; i < std::min(n, 200); ++i) {
        auto cache = std::make_unique<KernelCache>(c);
        cache->prefetch().wait();
        auto t0 = Clock::now();
        const CacheOutcome where = look_up_stored(*cache, n - 1);
        prefetched.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
        if (where != CacheOutcome::DiskHit) std::abort();
      }
      report(preload > 0 ? "fresh KernelCache after prefetch(): first hit, read ahead"
                         : "same with preload_records = 0 (an SQLite lookup)",
             prefetched);
    }

    KernelCache cache(config);
    cache.writable_store();  // opened beforehand: the lookup alone
    std::vector<double> hit_only = time_each(n, [&](int i) {
      if (look_up_stored(cache, i) != CacheOutcome::DiskHit) std::abort();
    });
    report("KernelCache first hit of a kernel, DB already open", hit_only);
  }
}

void bench_deployment(const std::string& dir, const std::string& db, int iterations) {
  // 5. The same from an immutable deployment database.
  {
    const std::string app = dir + "/app.db";
    {
      auto from = SqliteStore::open_existing(db, {});
      auto to = SqliteStore::open_writable(app, {});
      DatabaseTransfer source(*from);
      DatabaseTransfer destination(*to);
      source.for_each_record([&](const CacheRecord& r, const std::vector<std::string>& keys) {
        destination.import_record(r, keys);
      });
      destination.finalize_for_deployment();
    }
    CacheConfig config;
    config.writable = false;
    config.deployment_databases = {app};
    int n = std::min(iterations, 500);
    std::vector<double> open_and_hit;
    for (int i = 0; i < n; ++i) {
      auto t0 = Clock::now();
      auto cache = std::make_unique<KernelCache>(config);
      const CacheOutcome where = look_up_stored(*cache, i);
      open_and_hit.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
      if (where != CacheOutcome::DeploymentHit) std::abort();
    }
    report("fresh KernelCache: open deployment DB + first hit", open_and_hit);
    std::vector<double> open_only;
    for (int i = 0; i < n; ++i) {
      auto t0 = Clock::now();
      auto store = SqliteStore::open_read_only(app, {});  // closed outside the timing
      open_only.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    }
    report("open deployment DB alone (SqliteStore::open_read_only)", open_only);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int iterations = argc > 1 ? std::max(10, std::atoi(argv[1])) : 2000;
  std::string dir =
      (std::filesystem::temp_directory_path() / ("cujit-cache-bench-" + std::to_string(::getpid())))
          .string();
  std::filesystem::create_directories(dir);
  set_warning_sink([](const std::string& m) { std::fprintf(stderr, "warning: %s\n", m.c_str()); });
  std::printf("cujit cache benchmark: %d iterations, database in %s\n\n", iterations, dir.c_str());
  const std::string db = dir + "/kernels.db";
  bench_memory_hit(iterations);
  bench_keys(iterations);
  bench_sqlite(db, iterations);
  bench_fresh_writable(db, iterations);
  bench_deployment(dir, db, iterations);
  std::filesystem::remove_all(dir);
  return 0;
}
