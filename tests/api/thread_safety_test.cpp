// Several host threads defining, compiling and launching kernels at once. Without a device:
// concurrent compiles through the kernel cache (RawModule::compile_for) and concurrent
// definitions and calls that fail validation. With a device: threads that define, compile and
// launch on their own streams and on one shared stream, with every result checked.
#include <cujit/cache.hpp>
#include <cujit/cujit.hpp>
#include <cujit/elementwise.hpp>
#include <cujit/reduction.hpp>

#include "runtime/module_preload.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "support/gpu.hpp"

namespace cujit {
namespace {

constexpr int kThreads = 8;

// Releases every waiting thread at once, so that the work really overlaps.
class StartLine {
 public:
  explicit StartLine(int count) : count_(count) {}
  void arrive_and_wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    if (--count_ == 0) {
      cv_.notify_all();
    } else {
      cv_.wait(lock, [this] { return count_ == 0; });
    }
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  int count_;
};

// Runs `body(thread index)` on kThreads threads started together; an exception in a thread
// is a test failure naming the thread.
template <class Body>
void run_threads(Body body, int threads = kThreads) {
  StartLine start(threads);
  std::vector<std::thread> pool;
  std::mutex errors_mutex;
  std::vector<std::string> errors;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      start.arrive_and_wait();
      try {
        body(t);
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(errors_mutex);
        errors.push_back("thread " + std::to_string(t) + ": " + e.what());
      }
    });
  }
  for (std::thread& thread : pool) thread.join();
  for (const std::string& e : errors) ADD_FAILURE() << e;
}

// A source no earlier run has compiled (the cache key is the content), so that compiles
// really happen even with a warm disk cache.
std::string fresh_source(int variant) {
  static const std::string run_id =
      std::to_string(::getpid()) + "_" +
      std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
  return "// run " + run_id + "\n" +
         "template <int K> __global__ void scale(float* x, int n) {\n"
         "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
         "  if (i < n) x[i] = x[i] * K + " +
         std::to_string(variant) + ";\n}\n";
}

Target newest_target() { return Target{nvrtc_supported_archs().back(), BinaryFormat::Cubin}; }

TEST(ThreadSafety, ThreadsCompilingOneNewSourceShareOneCompilation) {
  const RawModule shared(fresh_source(-1), {}, {"scale<3>"});
  const std::uint64_t compiles_before = nvrtc_compile_count();
  std::vector<std::shared_ptr<const CompiledProgram>> programs(kThreads);
  run_threads([&](int t) {
    if (t % 2 == 0) {
      programs[t] = shared.compile_for(newest_target());
    } else {
      // A module of its own with the same source and options: the same cache entry.
      programs[t] = RawModule(fresh_source(-1), {}, {"scale<3>"}).compile_for(newest_target());
    }
  });
  EXPECT_EQ(nvrtc_compile_count() - compiles_before, 1u)
      << "threads asking for one missing kernel at once must wait for one compilation";
  for (int t = 0; t < kThreads; ++t) {
    ASSERT_TRUE(programs[t]) << t;
    EXPECT_EQ(programs[t], programs[0]) << "thread " << t << " got another program";
  }
  EXPECT_EQ(programs[0]->lowered_name("scale<3>"), "_Z5scaleILi3EEvPfi");
}

TEST(ThreadSafety, ThreadsCompilingDifferentSourcesGetTheirOwnPrograms) {
  constexpr int kPerThread = 3;
  const std::uint64_t compiles_before = nvrtc_compile_count();
  std::vector<std::vector<std::shared_ptr<const CompiledProgram>>> programs(kThreads);
  run_threads([&](int t) {
    for (int k = 0; k < kPerThread; ++k) {
      const int variant = t * kPerThread + k;
      // Each thread defines its own module; the cache is shared.
      RawModule module(fresh_source(variant), {"-DVARIANT=" + std::to_string(variant)},
                       {"scale<" + std::to_string(variant + 1) + ">"});
      programs[t].push_back(module.compile_for(newest_target()));
    }
  });
  EXPECT_EQ(nvrtc_compile_count() - compiles_before,
            static_cast<std::uint64_t>(kThreads * kPerThread));
  std::set<std::string> binaries;
  for (int t = 0; t < kThreads; ++t) {
    ASSERT_EQ(programs[t].size(), static_cast<std::size_t>(kPerThread)) << t;
    for (int k = 0; k < kPerThread; ++k) {
      const int variant = t * kPerThread + k;
      const std::string expression = "scale<" + std::to_string(variant + 1) + ">";
      const std::string lowered = "_Z5scaleILi" + std::to_string(variant + 1) + "EEvPfi";
      EXPECT_EQ(programs[t][k]->lowered_name(expression), lowered) << t << " " << k;
      EXPECT_FALSE(programs[t][k]->binary.empty());
      binaries.insert(programs[t][k]->binary);
    }
  }
  EXPECT_EQ(binaries.size(), static_cast<std::size_t>(kThreads * kPerThread))
      << "every source must give its own binary";
}

TEST(ThreadSafety, ThreadsDefineKernelsAndShareOneWhileCallsFailValidation) {
  // Shared kernels whose type resolution caches fill from several threads at once; every call
  // fails before a device is needed, with the same typed error each time.
  static const ElementwiseKernel shared("T a, U b", "T z", "z = a + b", "ts_shared");
  static const ReductionKernel shared_sum("T x", "T y", "x", "a + b", "y = a", "0", "ts_sum");
  std::atomic<int> checked{0};
  run_threads([&](int t) {
    for (int k = 0; k < 50; ++k) {
      // Definitions: parsing and validation have no shared state.
      const std::string name = "ts_k" + std::to_string(t) + "_" + std::to_string(k);
      ElementwiseKernel own("T x", "T z", "z = x * " + std::to_string(k), name);
      EXPECT_EQ(own.name(), name);
      EXPECT_THROW(ElementwiseKernel("T x", "T z", "z = x", name + " bad"), ArgumentError);
      EXPECT_THROW(ReductionKernel("T x", "T y", "x", "a + b", "y = a", "0", name,
                                   [] {
                                     ReductionOptions o;
                                     o.reduce_type = "float;";
                                     return o;
                                   }()),
                   ArgumentError);
      // Calls on the shared kernels with scalars of varying dtypes: no size, so they fail
      // after resolving types (a cache shared by the threads).
      try {
        if ((t + k) % 3 == 0) shared(1.0f, 2);
        if ((t + k) % 3 == 1) shared(1.0, 2.0f);
        if ((t + k) % 3 == 2) shared(std::int64_t{1}, 2.0);
        ADD_FAILURE() << "no exception";
      } catch (const ArgumentError& e) {
        EXPECT_NE(std::string(e.what()).find("cujit::size"), std::string::npos) << e.what();
      }
      EXPECT_THROW(shared_sum(1.0f), ArgumentError);
      EXPECT_THROW(shared(1.0f, 2.0f, 3.0f), TypeError);
      checked.fetch_add(1);
    }
  });
  EXPECT_EQ(checked.load(), kThreads * 50);
}

// ---- With a GPU ---------------------------------------------------------------------------

constexpr std::int64_t kN = std::int64_t{1} << 20;

const ElementwiseKernel& shared_axpb() {
  static const ElementwiseKernel k("T x, T a, T b", "T z", "z = a * x + b", "ts_axpb");
  return k;
}
const ReductionKernel& shared_sum() {
  static const ReductionKernel k("T x", "T y", "x", "a + b", "y = a", "0", "ts_gpu_sum");
  return k;
}
const RawModule& shared_module() {
  static const RawModule module(R"(
extern "C" __global__ void add_one(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += 1.0f;
})");
  return module;
}

// Small integers, so float sums are exact and results compare with ==.
std::vector<float> ramp(std::int64_t n, int offset) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) v[i] = static_cast<float>((i + offset) % 7);
  return v;
}

double ramp_sum(std::int64_t n, int offset) {
  double s = 0;
  for (std::int64_t i = 0; i < n; ++i) s += static_cast<double>((i + offset) % 7);
  return s;
}

TEST(ThreadSafetyGpu, ThreadsDefineCompileAndLaunchOnTheirOwnStreams) {
  CUJIT_REQUIRE_GPU();
  const Device device = Device::get(0);
  // Warm the shared kernels once, so that the memory check below sees only per-thread work.
  {
    Array x = Array::from_host(ramp(kN, 0));
    shared_axpb()(x, 2.0f, 1.0f);
    shared_sum()(x);
    shared_module().get_function("add_one")(Dim3(kN / 256), Dim3(256), {x, int(kN)});
    device.synchronize();
  }
  detail::wait_module_preload();  // modules loaded ahead in the background take memory too
  device.release_cached_memory();
  const std::size_t free_before = device.memory_info().first;

  run_threads([&](int t) {
    Stream stream(device);
    // A kernel only this thread defines: it is specialised, compiled and loaded while other
    // threads do the same with theirs.
    ElementwiseKernel own("T x", "T z", "z = x * " + std::to_string(t + 2),
                          "ts_own_" + std::to_string(t));
    const std::vector<float> host = ramp(kN, t);
    Array x = Array::from_host(host);
    for (int round = 0; round < 20; ++round) {
      Array y = own(x, cujit::on(stream));                            // y = x * (t + 2)
      Array z = shared_axpb()(y, 0.5f, float(t), cujit::on(stream));  // z = y / 2 + t
      Array s = shared_sum()(z, cujit::on(stream));
      shared_module().get_function("add_one")(Dim3(kN / 256), Dim3(256), {z, int(kN)}, 0, stream);
      if (round % 5 != 4) continue;
      std::vector<float> z_host(static_cast<std::size_t>(kN));
      z.to_host(z_host.data(), stream);
      float sum = 0;
      s.to_host(&sum, stream);
      for (std::int64_t i = 0; i < kN; ++i) {
        const float expected = host[i] * (t + 2) * 0.5f + t + 1.0f;
        if (z_host[i] != expected) {
          ADD_FAILURE() << "thread " << t << " round " << round << " element " << i << ": "
                        << z_host[i] << " != " << expected;
          return;
        }
      }
      const double expected_sum = ramp_sum(kN, t) * (t + 2) * 0.5 + double(t) * kN;
      EXPECT_EQ(sum, static_cast<float>(expected_sum)) << "thread " << t << " round " << round;
    }
    stream.synchronize();
  });

  // Each thread's stream is gone: the blocks cujit cached for it must have gone back too.
  device.release_cached_memory();
  const std::size_t free_after = device.memory_info().first;
  EXPECT_LE(free_before - std::min(free_before, free_after), std::size_t{16} << 20)
      << "free memory fell from " << free_before << " to " << free_after;
}

TEST(ThreadSafetyGpu, ThreadsLaunchOnOneSharedStream) {
  CUJIT_REQUIRE_GPU();
  const Device device = Device::get(0);
  Stream stream(device);
  std::vector<Array> inputs, outputs;
  for (int t = 0; t < kThreads; ++t) {
    inputs.push_back(Array::from_host(ramp(kN, t)));
    outputs.push_back(Array::empty({kN}, DType::Float32, device));
  }
  device.synchronize();
  run_threads([&](int t) {
    // Launches from all threads interleave on one stream; each writes its own output.
    for (int round = 0; round < 50; ++round) {
      shared_axpb()(inputs[t], float(round), float(t), outputs[t], cujit::on(stream));
    }
  });
  stream.synchronize();
  for (int t = 0; t < kThreads; ++t) {
    const std::vector<float> host = ramp(kN, t);
    const std::vector<float> out = outputs[t].to_host<float>();
    for (std::int64_t i = 0; i < kN; ++i) {
      ASSERT_EQ(out[i], host[i] * 49.0f + t) << "thread " << t << " element " << i;
    }
  }
}

}  // namespace
}  // namespace cujit
