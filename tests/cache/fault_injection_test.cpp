// Fault injection for the kernel cache: writers killed at random points, bytes flipped in
// stored binaries, truncated files, files of random bytes, unwritable directories, full
// disks, locks held by other processes, and the security checks on cache files. Every case
// ends in the documented fallback with exactly one warning (none where nothing is damaged)
// and the kernel still comes out right: a real NVRTC cubin (sm_90 without a GPU, the
// device's own architecture with one), launched and checked when a GPU is present.
//
// kernel_cache_test.cpp and sqlite_store_test.cpp cover the basic cases with a fake compiler
// (a corrupt file, truncation while open, lock held in this process, max_page_count,
// read-only directory); the cases here add other processes, real files and real kernels.
// The SIGKILL test draws its kill times at random; a failure prints CUJIT_FAULT_SEED=N, and
// setting that variable draws the same delays again.

#include "cache/database_admin.hpp"
#include "cache/database_transfer.hpp"
#include "cache/kernel_cache.hpp"
#include "cache/raw_replay.hpp"
#include "cache/record.hpp"
#include "cache/sqlite_store.hpp"
#include "cache_test_util.hpp"
#include "support/gpu.hpp"

#include <cujit/array.hpp>
#include <cujit/device.hpp>
#include <cujit/error.hpp>
#include <cujit/raw_module.hpp>

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <thread>

namespace cujit::detail {
namespace {

using test::fake_kernel;
using test::FakeCompiler;
using test::TempDir;
using test::WarningCapture;
namespace fs = std::filesystem;

// ---------------------------------------------------------------------------------------
// The kernel every case must still produce.

SourceProgram saxpy_program() {
  SourceProgram p;
  p.source = R"(
template <typename T>
__global__ void saxpy(T a, const T* x, T* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
)";
  p.name_expressions = {"saxpy<float>"};
  p.options = {"-std=c++17"};
  return p;
}

// sm_90 (a cubin, no GPU needed); the device's own target when a GPU is present, so that the
// kernel can be launched.
const Target& test_target() {
  static const Target target = Device::count() > 0
                                   ? target_for_arch(Device::get(0).compute_capability())
                                   : Target::parse("sm_90");
  return target;
}

// NVRTC's output for the kernel, compiled once outside any cache (NVRTC is deterministic:
// the same source and options give the same bytes).
const CompiledProgram& reference() {
  static const CompiledProgram program = compile(saxpy_program(), test_target());
  return program;
}

KernelRequest saxpy_request(const std::string& alias = "") {
  KernelRequest r = raw_kernel_request(saxpy_program(), test_target());
  // Another spelling of the same kernel: another request key, the same content key.
  if (!alias.empty()) r.spec += " " + alias;
  return r;
}

std::shared_ptr<const CompiledProgram> produce(KernelCache& cache, CacheOutcome* where = nullptr,
                                               const std::string& alias = "") {
  return cache.get_or_compile(
      saxpy_request(alias), [] { return saxpy_program(); },
      [](const SourceProgram& p) { return compile(p, test_target()); }, where);
}

// Launches the kernel on the GPU, when there is one, and checks y = a * x + y.
testing::AssertionResult launches_correctly(const CompiledProgram& program) {
  if (Device::count() == 0) return testing::AssertionSuccess() << "no GPU: not launched";
  const int n = 1000;
  auto x_host = test::random_vector<float>(n, -1, 1, 1);
  auto y_host = test::random_vector<float>(n, -1, 1, 2);
  Array x = Array::from_host(x_host);
  Array y = Array::from_host(y_host);
  RawKernel k = RawModule::from_binary(program).get_function("saxpy<float>", Device::get(0));
  k(Dim3((n + 127) / 128), Dim3(128), {2.5f, x, y, n});
  std::vector<float> out = y.to_host<float>();
  for (int i = 0; i < n; ++i) {
    if (std::abs(out[i] - (2.5f * x_host[i] + y_host[i])) > 1e-6f) {
      return testing::AssertionFailure() << "wrong result at " << i << ": " << out[i];
    }
  }
  return testing::AssertionSuccess();
}

// The produced kernel is NVRTC's, byte for byte, and (with a GPU) computes saxpy.
testing::AssertionResult kernel_ok(const std::shared_ptr<const CompiledProgram>& p) {
  if (!p) return testing::AssertionFailure() << "no program";
  if (!(p->target == test_target())) {
    return testing::AssertionFailure() << "target " << p->target.name();
  }
  if (p->binary != reference().binary) {
    return testing::AssertionFailure() << "binary differs from NVRTC's (" << p->binary.size()
                                       << " vs " << reference().binary.size() << " bytes)";
  }
  if (p->lowered_name("saxpy<float>") != reference().lowered_name("saxpy<float>")) {
    return testing::AssertionFailure() << "lowered name " << p->lowered_name("saxpy<float>");
  }
  return launches_correctly(*p);
}

CacheConfig config_at(const std::string& path) {
  CacheConfig c;
  c.database_path = path;
  return c;
}

// ---------------------------------------------------------------------------------------
// Files and processes.

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

std::string random_bytes(std::size_t n, std::mt19937_64& rng) {
  std::string out(n, '\0');
  for (auto& c : out) c = static_cast<char>(rng() & 0xff);
  return out;
}

std::vector<std::string> corrupt_copies(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().filename().string().find(".corrupt-") != std::string::npos) {
      out.push_back(e.path().string());
    }
  }
  return out;
}

// Flips one byte of `binary` (a stored kernel) where it lies in the database file `path`,
// at binary offset `pos`: finds a unique window of the binary around `pos` in the file (a
// blob is split across overflow pages, so the window must not cross a page boundary).
// Returns false when the bytes were not found.
bool flip_stored_byte(const std::string& path, const std::string& binary, std::size_t pos) {
  std::string file = read_bytes(path);
  constexpr std::size_t kWindow = 24;
  for (std::size_t back = 0; back < kWindow; ++back) {
    if (back > pos) break;
    std::size_t start = pos - back;
    if (start + kWindow > binary.size()) continue;
    std::string window = binary.substr(start, kWindow);
    std::size_t at = file.find(window);
    if (at == std::string::npos || file.find(window, at + 1) != std::string::npos) continue;
    file[at + back] = static_cast<char>(file[at + back] ^ 0x5a);
    write_bytes(path, file);
    return true;
  }
  return false;
}

// Runs `body` in a child process, as an unprivileged user when this process is root (root
// ignores file permissions). The child's exit status is the number of failed checks; a child
// killed by a signal reads as 200 + the signal.
int in_child(const std::function<int()>& body, bool unprivileged) {
  std::fflush(nullptr);
  pid_t pid = ::fork();
  if (pid == 0) {
    if (unprivileged && ::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) {
      ::_exit(100);
    }
    int failures = 0;
    try {
      failures = body();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "child: exception: %s\n", e.what());
      failures = 99;
    }
    std::fflush(nullptr);
    ::_exit(std::min(failures, 99));
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 200 + WTERMSIG(status);
}

// In a child, a failed check prints itself and counts.
#define CHILD_CHECK(failures, condition)                                                 \
  do {                                                                                   \
    if (!(condition)) {                                                                  \
      std::fprintf(stderr, "child check failed at line %d: %s\n", __LINE__, #condition); \
      ++(failures);                                                                      \
    }                                                                                    \
  } while (0)

// Counts warnings in a child (the parent's WarningCapture is not shared across fork).
struct ChildWarnings {
  std::vector<std::string> messages;
  ChildWarnings() {
    set_warning_sink([this](const std::string& m) {
      std::fprintf(stderr, "child warning: %s\n", m.c_str());
      messages.push_back(m);
    });
  }
  ~ChildWarnings() { set_warning_sink(nullptr); }
  bool contains(const std::string& text) const {
    for (const auto& m : messages)
      if (m.find(text) != std::string::npos) return true;
    return false;
  }
};

// A directory the unprivileged child can write to (owned by it when this process is root).
std::string child_writable_directory(const TempDir& dir, const std::string& name) {
  std::string path = dir.file(name);
  ::mkdir(path.c_str(), 0700);
  ::chmod(dir.path().c_str(), 0755);
  if (::geteuid() == 0 && ::chown(path.c_str(), 65534, 65534) != 0) std::abort();
  return path;
}

// ---------------------------------------------------------------------------------------
// 1. A writer killed with SIGKILL at random points.

constexpr int kWrites = 1000;
constexpr int kKilledRuns = 10;

// Binaries of 100 B to 12 KiB (many spill into overflow pages), derived from the source.
CompiledProgram varied_binary(const SourceProgram& p, const Target& target, std::size_t size) {
  CompiledProgram out;
  out.target = target;
  std::string seed = sha256(p.source);
  out.binary.reserve(size);
  while (out.binary.size() < size) out.binary += seed;
  out.binary.resize(size);
  out.lowered_names = {{"k", "_Zk"}};
  return out;
}

std::size_t write_size(int run, int i) {
  return 100 + static_cast<std::size_t>((i * 7919 + run * 31) % 12000);
}

test::FakeKernel killed_kernel(int run, int i) {
  return fake_kernel("r" + std::to_string(run) + "k" + std::to_string(i), Target{90});
}

// The child: kWrites kernels through a KernelCache; `done` counts the puts that returned.
[[noreturn]] void killed_writer(const std::string& db, int run, bool evicting,
                                std::atomic<int>* done) {
  int warnings = 0;
  set_warning_sink([&](const std::string& m) {
    std::fprintf(stderr, "writer warning: %s\n", m.c_str());
    ++warnings;
  });
  CacheConfig config = config_at(db);
  // Half the runs keep the database small, so that kills also land in evictions and
  // incremental vacuums.
  config.max_size = evicting ? 2u << 20 : 0;
  KernelCache cache(config);
  for (int i = 0; i < kWrites; ++i) {
    auto k = killed_kernel(run, i);
    std::size_t size = write_size(run, i);
    cache.get_or_compile(k.request, k.generator(), [&](const SourceProgram& p) {
      return varied_binary(p, Target{90}, size);
    });
    done->store(i + 1);
  }
  ::_exit(warnings == 0 ? 0 : 1);
}

TEST(FaultInjection, WriterKilledAtRandomPointsLeavesAnIntactDatabase) {
  TempDir dir;
  std::string db = dir.file("kernels.db");
  unsigned seed = std::random_device{}();
  if (const char* s = std::getenv("CUJIT_FAULT_SEED")) seed = static_cast<unsigned>(std::stoul(s));
  SCOPED_TRACE("CUJIT_FAULT_SEED=" + std::to_string(seed));
  std::mt19937 rng(seed);
  void* shared = ::mmap(nullptr, sizeof(std::atomic<int>), PROT_READ | PROT_WRITE,
                        MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(shared, MAP_FAILED);
  auto* done = new (shared) std::atomic<int>(0);
  double full_run_ms = 0;
  int killed_runs = 0;
  std::vector<int> kill_points;
  // Run 0 completes (and times a whole run); runs 1.. are killed at a random moment of it.
  for (int run = 0; run <= kKilledRuns; ++run) {
    SCOPED_TRACE("run " + std::to_string(run));
    const bool evicting = run % 2 == 1;
    done->store(0);
    auto start = std::chrono::steady_clock::now();
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) killed_writer(db, run, evicting, done);
    int status = 0;
    if (run == 0) {
      ASSERT_EQ(::waitpid(pid, &status, 0), pid);
      full_run_ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count();
      ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the writer failed";
    } else {
      // A random write, then a random moment within it (a write takes about full_run_ms /
      // kWrites): the kill lands while writing however much faster or slower this run goes
      // than run 0 (a fixed moment of run 0's length missed most runs on a loaded machine).
      const int target = std::uniform_int_distribution<int>(0, kWrites - 2)(rng);
      bool reaped = false;  // the writer ended on its own (it failed): checked below
      while (!reaped && done->load() < target) {
        reaped = ::waitpid(pid, &status, WNOHANG) == pid;
        std::this_thread::sleep_for(std::chrono::microseconds(20));
      }
      if (!reaped) {
        const double write_ms = full_run_ms / kWrites;
        std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(
            std::uniform_real_distribution<double>(0.0, write_ms)(rng)));
        ::kill(pid, SIGKILL);
        ASSERT_EQ(::waitpid(pid, &status, 0), pid);
      }
      // Finished before the signal arrived: not a killed run, but still checked.
      killed_runs += WIFSIGNALED(status) ? 1 : 0;
    }
    const int completed = done->load();
    kill_points.push_back(completed);

    WarningCapture warnings;
    auto store = SqliteStore::open_writable(db, {});
    EXPECT_EQ(store->integrity_check(), "ok");
    VerifyReport report = DatabaseAdmin(*store).verify(false);
    EXPECT_TRUE(report.damaged.empty()) << report.damaged.size() << " damaged entries";
    // Every kernel whose put returned is there (unless evicted), and every kernel served is
    // the one written (the lookup verified its checksum; the bytes are compared here too).
    int found = 0;
    for (int i = 0; i < std::min(completed + 1, kWrites); ++i) {
      auto k = killed_kernel(run, i);
      Lookup l = store->find_by_request(request_key("test", k.request.spec, Target{90}));
      if (l.status == Lookup::Status::Hit) {
        ++found;
        EXPECT_TRUE(l.record.checksum_ok());
        EXPECT_EQ(l.record.program.binary,
                  varied_binary(k.source, Target{90}, write_size(run, i)).binary)
            << "kernel " << i;
      } else {
        EXPECT_EQ(l.status, Lookup::Status::Miss) << "kernel " << i;
        if (!evicting && i < completed) ADD_FAILURE() << "kernel " << i << " was lost";
      }
    }
    if (completed > 0) EXPECT_GE(found, evicting ? 1 : completed);
    store.reset();
    // The cache still works on it: the real kernel is compiled, stored and found again.
    {
      KernelCache cache(config_at(db));
      EXPECT_TRUE(kernel_ok(produce(cache)));
    }
    {
      KernelCache cache(config_at(db));
      CacheOutcome where{};
      EXPECT_TRUE(kernel_ok(produce(cache, &where)));
      EXPECT_EQ(where, CacheOutcome::DiskHit);
    }
    EXPECT_EQ(warnings.count(), 0u) << warnings.joined();
  }
  std::string points;
  for (int p : kill_points) points += " " + std::to_string(p);
  std::printf("[ fault    ] %d runs of %d writes (%.0f ms each), %d killed, after writes:%s\n",
              kKilledRuns + 1, kWrites, full_run_ms, killed_runs, points.c_str());
  EXPECT_GE(killed_runs, kKilledRuns / 2) << "most kills should land during the writes";
  ::munmap(shared, sizeof(std::atomic<int>));
}

// ---------------------------------------------------------------------------------------
// 2. A byte flipped in a stored binary: served -> checksum mismatch -> deleted -> recompiled.

TEST(FaultInjection, FlippedByteInAStoredBinaryIsDeletedAndRecompiled) {
  const std::string& binary = reference().binary;
  for (std::size_t pos :
       {std::size_t{0}, binary.size() / 3, binary.size() / 2, binary.size() - 1}) {
    SCOPED_TRACE("byte " + std::to_string(pos) + " of " + std::to_string(binary.size()));
    TempDir dir;
    std::string db = dir.file("kernels.db");
    {
      KernelCache cache(config_at(db));
      ASSERT_TRUE(kernel_ok(produce(cache)));
    }
    ASSERT_FALSE(fs::exists(db + "-wal"));  // checkpointed on close: the bytes are in the file
    ASSERT_TRUE(flip_stored_byte(db, binary, pos));
    WarningCapture warnings;
    {
      KernelCache cache(config_at(db));
      CacheOutcome where{};
      EXPECT_TRUE(kernel_ok(produce(cache, &where)));
      EXPECT_EQ(where, CacheOutcome::Compiled);
    }
    ASSERT_EQ(warnings.count(), 1u) << warnings.joined();
    EXPECT_TRUE(warnings.contains("failed its checksum")) << warnings.joined();
    EXPECT_TRUE(warnings.contains("deleted it, recompiling")) << warnings.joined();
    // The recompiled kernel replaced the damaged entry.
    KernelCache cache(config_at(db));
    CacheOutcome where{};
    EXPECT_TRUE(kernel_ok(produce(cache, &where)));
    EXPECT_EQ(where, CacheOutcome::DiskHit);
    EXPECT_TRUE(DatabaseAdmin(*SqliteStore::open_writable(db, {})).verify(false).damaged.empty());
    EXPECT_EQ(warnings.count(), 1u) << warnings.joined();
  }
}

// ---------------------------------------------------------------------------------------
// 3. A truncated database file (while no process has it open).

TEST(FaultInjection, TruncatedDatabaseIsMovedAsideWithOneWarning) {
  // Builds a database of 30 fake kernels and the real one (stored last, at the end of the
  // file), then truncates a copy at each length.
  TempDir source;
  std::string pristine = source.file("kernels.db");
  FakeCompiler compiler;
  std::vector<test::FakeKernel> kernels;
  for (int i = 0; i < 30; ++i) kernels.push_back(fake_kernel("t" + std::to_string(i), Target{90}));
  for (auto& k : kernels) k.source.source += std::string(6000, ' ') + "// " + k.request.spec;
  {
    KernelCache cache(config_at(pristine));
    for (auto& k : kernels) cache.get_or_compile(k.request, k.generator(), compiler.fn(Target{90}));
    ASSERT_TRUE(kernel_ok(produce(cache)));
  }
  const std::string bytes = read_bytes(pristine);
  const std::size_t size = bytes.size();
  ASSERT_EQ(size % 4096, 0u);
  struct Cut {
    const char* what;
    std::size_t length;
  };
  const std::vector<Cut> cuts = {
      {"inside the 100-byte header", 60}, {"after the header", 100},
      {"first page only", 4096},          {"inside page 2", 4096 + 1000},
      {"half", size / 2 / 4096 * 4096},   {"three quarters", size * 3 / 4 / 4096 * 4096},
      {"last page missing", size - 4096}, {"inside the last page", size - 2048},
  };
  for (const Cut& cut : cuts) {
    SCOPED_TRACE(std::string(cut.what) + ": " + std::to_string(cut.length) + " of " +
                 std::to_string(size) + " bytes");
    TempDir dir;
    std::string db = dir.file("kernels.db");
    write_bytes(db, bytes.substr(0, cut.length));
    WarningCapture warnings;
    {
      KernelCache cache(config_at(db));
      for (auto& k : kernels) {
        EXPECT_NO_THROW(cache.get_or_compile(k.request, k.generator(), compiler.fn(Target{90})));
      }
      EXPECT_TRUE(kernel_ok(produce(cache)));
      auto store = std::dynamic_pointer_cast<SqliteStore>(cache.writable_store());
      ASSERT_TRUE(store) << "the cache fell back to memory instead of starting a new database";
      EXPECT_EQ(store->integrity_check(), "ok");
    }
    EXPECT_EQ(warnings.count(), 1u) << warnings.joined();
    if (cut.length % 4096 == 0 || cut.length < 4096) {
      // Pages are missing: SQLite reports the file as damaged; it is moved aside.
      EXPECT_EQ(corrupt_copies(dir.path()).size(), 1u) << warnings.joined();
    } else {
      // Part of the last page is missing: SQLite reads it as zeros. Either a b-tree page
      // is damaged (the file is moved aside) or the zeros land in a stored binary (its
      // checksum fails; the entry is deleted and recompiled).
      EXPECT_NE(corrupt_copies(dir.path()).size() == 1u, warnings.contains("failed its checksum"))
          << warnings.joined();
    }
    // The new database holds the kernel.
    KernelCache cache(config_at(db));
    CacheOutcome where{};
    EXPECT_TRUE(kernel_ok(produce(cache, &where)));
    EXPECT_EQ(where, CacheOutcome::DiskHit);
    EXPECT_EQ(warnings.count(), 1u) << warnings.joined();
  }
  // A file cut to nothing, or to one byte, is an empty database to SQLite: there is nothing
  // to lose and no warning; the cache starts afresh in it.
  for (std::size_t length : {0, 1}) {
    SCOPED_TRACE(std::to_string(length) + " bytes left");
    TempDir dir;
    write_bytes(dir.file("kernels.db"), bytes.substr(0, length));
    WarningCapture warnings;
    {
      KernelCache cache(config_at(dir.file("kernels.db")));
      EXPECT_TRUE(kernel_ok(produce(cache)));
    }
    KernelCache cache(config_at(dir.file("kernels.db")));
    CacheOutcome where{};
    EXPECT_TRUE(kernel_ok(produce(cache, &where)));
    EXPECT_EQ(where, CacheOutcome::DiskHit);
    EXPECT_EQ(warnings.count(), 0u) << warnings.joined();
  }
}

// ---------------------------------------------------------------------------------------
// 4. A file of random bytes where a database should be.

TEST(FaultInjection, RandomBytesInsteadOfADatabase) {
  std::mt19937_64 rng(20261122);
  struct Garbage {
    const char* what;
    std::string bytes;
  };
  std::vector<Garbage> files = {
      {"2 random bytes", random_bytes(2, rng)},
      {"100 random bytes", random_bytes(100, rng)},
      {"4 KiB of random bytes", random_bytes(4096, rng)},
      {"100 KB of random bytes", random_bytes(100000, rng)},
      {"SQLite magic, then random bytes",
       std::string("SQLite format 3\0", 16) + random_bytes(65536 - 16, rng)},
  };
  // A valid header (page size 4096, ...) over random pages: passes every header check.
  {
    TempDir dir;
    {
      KernelCache cache(config_at(dir.file("h.db")));
      produce(cache);
    }
    files.push_back({"a valid header, then random pages",
                     read_bytes(dir.file("h.db")).substr(0, 100) + random_bytes(65536 - 100, rng)});
  }
  for (const Garbage& g : files) {
    SCOPED_TRACE(g.what);
    // As the writable database: moved aside (kept for inspection), a new one started.
    {
      TempDir dir;
      std::string db = dir.file("kernels.db");
      write_bytes(db, g.bytes);
      WarningCapture warnings;
      {
        KernelCache cache(config_at(db));
        EXPECT_TRUE(kernel_ok(produce(cache)));
        EXPECT_TRUE(cache.writable_store());
      }
      EXPECT_EQ(warnings.count(), 1u) << warnings.joined();
      EXPECT_TRUE(warnings.contains("moved it to")) << warnings.joined();
      auto aside = corrupt_copies(dir.path());
      ASSERT_EQ(aside.size(), 1u);
      EXPECT_EQ(read_bytes(aside[0]), g.bytes);  // untouched
      KernelCache cache(config_at(db));
      CacheOutcome where{};
      EXPECT_TRUE(kernel_ok(produce(cache, &where)));
      EXPECT_EQ(where, CacheOutcome::DiskHit);
      EXPECT_EQ(warnings.count(), 1u) << warnings.joined();
    }
    // As a deployment database: skipped, never modified.
    {
      TempDir dir;
      std::string app = dir.file("app.db");
      write_bytes(app, g.bytes);
      CacheConfig config;
      config.writable = false;
      config.deployment_databases = {app};
      WarningCapture warnings;
      KernelCache cache(config);
      CacheOutcome where{};
      EXPECT_TRUE(kernel_ok(produce(cache, &where)));
      EXPECT_EQ(where, CacheOutcome::Compiled);
      EXPECT_EQ(warnings.count(), 1u) << warnings.joined();
      EXPECT_TRUE(warnings.contains("deployment database skipped")) << warnings.joined();
      EXPECT_EQ(read_bytes(app), g.bytes);
      EXPECT_TRUE(corrupt_copies(dir.path()).empty());
    }
  }
}

// ---------------------------------------------------------------------------------------
// 5. A directory or database without write permission (in a child process that is not
// root: root ignores permissions).

TEST(FaultInjection, UnwritableDirectoryOrDatabaseFallsBackWithOneWarning) {
  (void)reference();  // compiled before forking, so that the children compare against it
  enum class Fault { DirectoryReadOnly, DatabaseReadOnly, DirectoryAndDatabaseReadOnly };
  for (Fault fault :
       {Fault::DirectoryReadOnly, Fault::DatabaseReadOnly, Fault::DirectoryAndDatabaseReadOnly}) {
    SCOPED_TRACE("fault " + std::to_string(static_cast<int>(fault)));
    TempDir dir;
    std::string cache_dir = child_writable_directory(dir, "cache");
    std::string db = cache_dir + "/kernels.db";
    auto filler = fake_kernel("filler", Target{90});
    // A database with one kernel, written by the user who will read it.
    ASSERT_EQ(in_child(
                  [&] {
                    FakeCompiler compiler;
                    KernelCache cache(config_at(db));
                    cache.get_or_compile(filler.request, filler.generator(),
                                         compiler.fn(Target{90}));
                    return 0;
                  },
                  true),
              0);
    if (fault != Fault::DirectoryReadOnly) ASSERT_EQ(::chmod(db.c_str(), 0400), 0);
    if (fault != Fault::DatabaseReadOnly) ASSERT_EQ(::chmod(cache_dir.c_str(), 0500), 0);
    const std::string before = read_bytes(db);
    int failures = in_child(
        [&] {
          int bad = 0;
          ChildWarnings warnings;
          KernelCache cache(config_at(db));
          auto p = produce(cache);
          CHILD_CHECK(bad, p && p->binary == reference().binary);
          // A second new kernel: no second warning.
          FakeCompiler compiler;
          auto other = fake_kernel("other", Target{90});
          cache.get_or_compile(other.request, other.generator(), compiler.fn(Target{90}));
          CHILD_CHECK(bad, compiler.calls == 1);
          CacheOutcome where{};
          cache.get_or_compile(other.request, other.generator(), compiler.fn(Target{90}), &where);
          CHILD_CHECK(bad, where == CacheOutcome::MemoryHit);
          cache.flush();
          CHILD_CHECK(bad, warnings.messages.size() == 1);
          CHILD_CHECK(bad, warnings.contains("in-process cache only"));
          return bad;
        },
        true);
    EXPECT_EQ(failures, 0) << "see the child's messages above";
    EXPECT_EQ(read_bytes(db), before);
    ::chmod(cache_dir.c_str(), 0700);
  }
}

// ---------------------------------------------------------------------------------------
// 6. A full disk.

// The database may not grow (PRAGMA max_page_count, per connection: set on the cache's own
// connection): new kernels stay in memory with one warning; stored ones are still served.
TEST(FaultInjection, FullDatabaseKeepsServingStoredKernels) {
  TempDir dir;
  std::string db = dir.file("kernels.db");
  FakeCompiler compiler;
  auto stored = fake_kernel("stored", Target{90});
  {
    KernelCache cache(config_at(db));
    cache.get_or_compile(stored.request, stored.generator(), compiler.fn(Target{90}));
  }
  WarningCapture warnings;
  KernelCache cache(config_at(db));
  auto store = std::dynamic_pointer_cast<SqliteStore>(cache.writable_store());
  ASSERT_TRUE(store);
  store->exec("PRAGMA max_page_count = " + std::to_string(fs::file_size(db) / 4096));
  CacheOutcome where{};
  EXPECT_TRUE(kernel_ok(produce(cache, &where)));
  EXPECT_EQ(where, CacheOutcome::Compiled);
  ASSERT_EQ(warnings.count(), 1u) << warnings.joined();
  EXPECT_TRUE(warnings.contains("full")) << warnings.joined();
  EXPECT_TRUE(warnings.contains("in-process cache only")) << warnings.joined();
  cache.get_or_compile(stored.request, stored.generator(), compiler.fn(Target{90}), &where);
  EXPECT_EQ(where, CacheOutcome::DiskHit);
  EXPECT_EQ(compiler.calls, 1);
  auto more = fake_kernel("more", Target{90});
  cache.get_or_compile(more.request, more.generator(), compiler.fn(Target{90}));
  produce(cache, &where);
  EXPECT_EQ(where, CacheOutcome::MemoryHit);
  cache.flush();
  EXPECT_EQ(warnings.count(), 1u) << warnings.joined();
  EXPECT_EQ(store->integrity_check(), "ok");
}

// A real write failure from the operating system: the file size limit (RLIMIT_FSIZE, EFBIG)
// stops the database and its WAL from growing, in a child process.
TEST(FaultInjection, FileSizeLimitFallsBackWithOneWarning) {
  (void)reference();
  TempDir dir;
  std::string db = dir.file("kernels.db");
  {
    FakeCompiler compiler;
    KernelCache cache(config_at(db));
    auto k = fake_kernel("stored", Target{90});
    cache.get_or_compile(k.request, k.generator(), compiler.fn(Target{90}));
  }
  const std::string before_db = read_bytes(db);
  int failures = in_child(
      [&] {
        int bad = 0;
        ::signal(SIGXFSZ, SIG_IGN);  // a write past the limit fails with EFBIG instead
        struct rlimit limit {};
        limit.rlim_cur = limit.rlim_max = fs::file_size(db) + 65536;
        CHILD_CHECK(bad, ::setrlimit(RLIMIT_FSIZE, &limit) == 0);
        ChildWarnings warnings;
        KernelCache cache(config_at(db));
        // Large kernels, so that the database and its WAL outgrow the limit.
        int compiled = 0;
        for (int i = 0; i < 8; ++i) {
          auto k = fake_kernel("big" + std::to_string(i), Target{90});
          cache.get_or_compile(k.request, k.generator(), [&](const SourceProgram& s) {
            ++compiled;
            return varied_binary(s, Target{90}, 30000);
          });
        }
        CHILD_CHECK(bad, compiled == 8);
        FakeCompiler compiler;
        auto p = produce(cache);
        CHILD_CHECK(bad, p && p->binary == reference().binary);
        auto stored = fake_kernel("stored", Target{90});
        cache.get_or_compile(stored.request, stored.generator(), compiler.fn(Target{90}));
        cache.flush();
        CHILD_CHECK(bad, warnings.messages.size() == 1);
        return bad;
      },
      false);
  EXPECT_EQ(failures, 0) << "see the child's messages above";
  // What the child committed before the failure is intact.
  WarningCapture warnings;
  auto store = SqliteStore::open_writable(db, {});
  EXPECT_EQ(store->integrity_check(), "ok");
  EXPECT_TRUE(DatabaseAdmin(*store).verify(false).damaged.empty());
  auto k = fake_kernel("stored", Target{90});
  EXPECT_EQ(store->find_by_request(request_key("test", k.request.spec, Target{90})).status,
            Lookup::Status::Hit);
  EXPECT_EQ(warnings.count(), 0u) << warnings.joined();
}

// ---------------------------------------------------------------------------------------
// 7. A lock held by another process past the busy timeout.

// A child that opens `db`, takes `lock_sql`'s lock, reports through `ready` and holds the
// lock until `release` is written to.
pid_t lock_holder(const std::string& db, const std::string& lock_sql, bool rollback_journal,
                  int ready[2], int release[2]) {
  std::fflush(nullptr);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(ready[0]);
    ::close(release[1]);
    StoreOptions o;
    if (rollback_journal) o.network_fs = StoreOptions::NetworkFs::Yes;  // journal_mode=DELETE
    auto store = SqliteStore::open_writable(db, o);
    store->exec(lock_sql);
    (void)!::write(ready[1], "x", 1);
    char c;
    (void)!::read(release[0], &c, 1);
    store->exec("ROLLBACK");
    ::_exit(0);
  }
  ::close(ready[1]);
  ::close(release[0]);
  char c;
  if (::read(ready[0], &c, 1) != 1) return -1;
  return pid;
}

TEST(FaultInjection, LockHeldByAnotherProcessFallsBackWithOneWarning) {
  (void)reference();
  struct Case {
    const char* what;
    const char* lock;
    bool rollback_journal;
  };
  // In WAL mode readers go on while another process writes: lookups work, the write times
  // out. In rollback-journal mode an exclusive lock stops the open itself.
  for (const Case& c :
       {Case{"WAL database, write lock", "BEGIN IMMEDIATE", false},
        Case{"rollback-journal database, exclusive lock", "BEGIN EXCLUSIVE", true}}) {
    SCOPED_TRACE(c.what);
    TempDir dir;
    std::string db = dir.file("kernels.db");
    int ready[2], release[2];
    ASSERT_EQ(::pipe(ready), 0);
    ASSERT_EQ(::pipe(release), 0);
    pid_t holder = lock_holder(db, c.lock, c.rollback_journal, ready, release);
    ASSERT_GT(holder, 0);
    CacheConfig config = config_at(db);
    config.busy_timeout_ms = 200;
    WarningCapture warnings;
    auto start = std::chrono::steady_clock::now();
    {
      KernelCache cache(config);
      CacheOutcome where{};
      EXPECT_TRUE(kernel_ok(produce(cache, &where)));
      EXPECT_EQ(where, CacheOutcome::Compiled);
      auto waited = std::chrono::steady_clock::now() - start;
      EXPECT_GE(waited, std::chrono::milliseconds(200));
      EXPECT_LT(waited, std::chrono::seconds(10));
      // Later kernels do not wait again, nor warn again.
      FakeCompiler compiler;
      auto later = std::chrono::steady_clock::now();
      for (int i = 0; i < 5; ++i) {
        auto k = fake_kernel("later" + std::to_string(i), Target{90});
        cache.get_or_compile(k.request, k.generator(), compiler.fn(Target{90}));
      }
      EXPECT_LT(std::chrono::steady_clock::now() - later,
                std::chrono::milliseconds(500));  // 5 waits: 1 s
      produce(cache, &where);
      EXPECT_EQ(where, CacheOutcome::MemoryHit);
    }
    ASSERT_EQ(warnings.count(), 1u) << warnings.joined();
    EXPECT_TRUE(warnings.contains("locked")) << warnings.joined();
    EXPECT_TRUE(warnings.contains("in-process cache only")) << warnings.joined();
    (void)!::write(release[1], "x", 1);
    int status = 0;
    ::waitpid(holder, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    ::close(ready[0]);
    ::close(release[1]);
    // With the lock gone, the database works again.
    KernelCache cache(config);
    EXPECT_TRUE(kernel_ok(produce(cache)));
    EXPECT_EQ(warnings.count(), 1u) << warnings.joined();
  }
}

// ---------------------------------------------------------------------------------------
// 8. Security: checksums before every load, private directories, foreign files refused.

// Every way from a database file to a program the runtime loads (writable or deployment
// database; by request key or by content key) verifies the checksum first: a damaged binary
// is never handed out.
TEST(CacheSecurity, EveryRouteFromAFileToALoadChecksTheChecksum) {
  const std::string& binary = reference().binary;
  struct Route {
    const char* what;
    bool deployment;
    bool by_content;
  };
  for (const Route& r : {Route{"writable, by request key", false, false},
                         Route{"writable, by content key", false, true},
                         Route{"deployment, by request key", true, false},
                         Route{"deployment, by content key", true, true}}) {
    SCOPED_TRACE(r.what);
    TempDir dir;
    std::string db = dir.file(r.deployment ? "app.db" : "kernels.db");
    {
      KernelCache cache(config_at(db));
      ASSERT_TRUE(kernel_ok(produce(cache)));
      if (r.deployment) {
        DatabaseTransfer(*std::dynamic_pointer_cast<SqliteStore>(cache.writable_store()))
            .finalize_for_deployment();
      }
    }
    ASSERT_TRUE(flip_stored_byte(db, binary, binary.size() / 2));
    CacheConfig config = config_at(db);
    if (r.deployment) {
      config.writable = false;
      config.deployment_databases = {db};
    }
    const std::string damaged = read_bytes(db);
    WarningCapture warnings;
    KernelCache cache(config);
    CacheOutcome where{};
    // By content key: a request spelled differently (a miss by request key) whose generated
    // source is the stored one.
    auto p = produce(cache, &where, r.by_content ? "alias" : "");
    EXPECT_TRUE(kernel_ok(p));
    EXPECT_EQ(where, CacheOutcome::Compiled);
    EXPECT_EQ(warnings.count(), 1u) << warnings.joined();
    EXPECT_TRUE(warnings.contains("failed its checksum")) << warnings.joined();
    if (r.deployment) EXPECT_EQ(read_bytes(db), damaged);  // deployment files are never written
  }
}

TEST(CacheSecurity, CacheDirectoriesAreCreatedPrivatelyWhateverTheUmask) {
  TempDir dir;
  mode_t old_umask = ::umask(0);
  CacheConfig config;
  config.directory = dir.file("x/y/cujit");
  {
    KernelCache cache(config);
    EXPECT_TRUE(kernel_ok(produce(cache)));
  }
  ::umask(old_umask);
  for (const char* sub : {"x", "x/y", "x/y/cujit"}) {
    struct stat st {};
    ASSERT_EQ(::stat(dir.file(sub).c_str(), &st), 0) << sub;
    EXPECT_EQ(st.st_mode & 0777, 0700u) << sub;
  }
  for (const auto& e : fs::directory_iterator(config.directory)) {
    struct stat st {};
    ASSERT_EQ(::stat(e.path().c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & (S_IWGRP | S_IWOTH), 0u) << e.path() << " is writable by others";
  }
}

TEST(CacheSecurity, DatabasesWritableByGroupOrOthersAreRefused) {
  for (mode_t mode : {0620, 0602, 0666}) {
    SCOPED_TRACE("mode " + std::to_string(mode));
    for (bool deployment : {false, true}) {
      SCOPED_TRACE(deployment ? "deployment database" : "writable database");
      TempDir dir;
      std::string db = dir.file("kernels.db");
      {
        KernelCache cache(config_at(db));
        ASSERT_TRUE(kernel_ok(produce(cache)));
      }
      ASSERT_EQ(::chmod(db.c_str(), mode), 0);
      const std::string before = read_bytes(db);
      CacheConfig config = config_at(db);
      if (deployment) {
        config.writable = false;
        config.deployment_databases = {db};
      }
      WarningCapture warnings;
      KernelCache cache(config);
      CacheOutcome where{};
      EXPECT_TRUE(kernel_ok(produce(cache, &where)));
      EXPECT_EQ(where, CacheOutcome::Compiled);  // the stored kernel was not loaded
      EXPECT_EQ(warnings.count(), 1u) << warnings.joined();
      EXPECT_TRUE(warnings.contains("writable by group or others")) << warnings.joined();
      EXPECT_EQ(read_bytes(db), before);
      EXPECT_TRUE(corrupt_copies(dir.path()).empty());
      // Allowed explicitly, it is used.
      config.allow_foreign_owner = true;
      KernelCache allowed(config);
      produce(allowed, &where);
      EXPECT_EQ(where, deployment ? CacheOutcome::DeploymentHit : CacheOutcome::DiskHit);
    }
  }
}

TEST(CacheSecurity, DatabasesOwnedByAnotherUserAreRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "giving a file to another user needs root";
  for (bool deployment : {false, true}) {
    SCOPED_TRACE(deployment ? "deployment database" : "writable database");
    TempDir dir;
    std::string db = dir.file("kernels.db");
    {
      KernelCache cache(config_at(db));
      ASSERT_TRUE(kernel_ok(produce(cache)));
    }
    ASSERT_EQ(::chown(db.c_str(), 12345, 12345), 0);
    CacheConfig config = config_at(db);
    if (deployment) {
      config.writable = false;
      config.deployment_databases = {db};
    }
    WarningCapture warnings;
    KernelCache cache(config);
    CacheOutcome where{};
    EXPECT_TRUE(kernel_ok(produce(cache, &where)));
    EXPECT_EQ(where, CacheOutcome::Compiled);
    EXPECT_EQ(warnings.count(), 1u) << warnings.joined();
    EXPECT_TRUE(warnings.contains("owned by uid 12345")) << warnings.joined();
  }
}

}  // namespace
}  // namespace cujit::detail
