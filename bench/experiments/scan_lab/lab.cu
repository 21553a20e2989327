// Scan lab (issue 36, session 21): the generated flat float sum scan (base.cuh, made from the
// golden tests/codegen/golden/scan_flat_f32.txt by make_headers.sh) against hand-written
// variants of its data path, on 2^28 float32. Prints us, the fraction of a device-to-device
// copy of the same bytes, and (variants with stamps) where a tile's time goes.
// Build: bash make_headers.sh && nvcc -O3 -arch=sm_90 -std=c++17 -o lab lab.cu
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "base.cuh"

#include "lab_common.cuh"
#include "lab_look_back.cuh"

__device__ __forceinline__ void cp16(void* smem, const void* g) {
  const unsigned s = (unsigned)__cvta_generic_to_shared(smem);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s), "l"(g) : "memory");
}
__device__ __forceinline__ void cp_wait_all() {
  asm volatile("cp.async.commit_group;\ncp.async.wait_group 0;" ::: "memory");
}
// 16-byte chunk c of the tile (row c >> 3 of 128 bytes) at its swizzled place: the chunks of a
// row rotate by the row's low bits, so 8 threads reading chunk j of 8 rows hit 8 bank groups.
__device__ __forceinline__ int swz(int c) { return (c & ~7) | ((c ^ (c >> 3)) & 7); }

__device__ __forceinline__ float comb_f(const _cj_V& p, float x) {
  return _cj_comb(p, _cj_make(x, 0)).v;
}

// The generated kernel with its load and store phases replaced: the tile comes in through
// cp.async (every byte in flight at once, no registers), each thread scans its 128-byte row
// with vector reads, and the results go out as 16-byte stores with the thread's prefix from
// shared memory.
template <int STAMP, int CLAIM>
__global__ void __launch_bounds__(_CJ_B + 64)
    scan_async(const float* __restrict__ x, float* y, const _cj_SL _cj_L,
               unsigned char* _cj_scratch, unsigned long long* stamps) {
  const _cj_SL& L = _cj_L;
  constexpr int _CJ_TILE = _CJ_B * _CJ_N;
  extern __shared__ __align__(16) unsigned char _lab_raw[];
  __shared__ _cj_V _cj_wsum[_CJ_B / 32];
  __shared__ _cj_V _cj_halves[2];
  __shared__ _cj_V _cj_pres[_CJ_B];
  float4* const sm4 = reinterpret_cast<float4*>(_lab_raw);
  const _cj_Indexer<int> _in_ind{L.n};
  const _cj_Indexer<int> _out_ind{L.n};
  const int _cj_t = threadIdx.x, _cj_lane = _cj_t & 31, _cj_warp = _cj_t >> 5;
  __shared__ int _lab_claim;
  if (CLAIM) {
    if (_cj_t == 0) _lab_claim = (int)atomicAdd(reinterpret_cast<unsigned*>(_cj_scratch), 1u);
    __syncthreads();
  }
  const int _cj_tile = CLAIM ? _lab_claim : (int)blockIdx.x;
  const long long _cj_base = (long long)_cj_tile * _CJ_TILE;
  const int g = _cj_tile >> 5;
  const int q = _cj_tile & 31;
  const bool last = q == 31;
  if (STAMP && _cj_t == 0) stamps[8 * _cj_tile] = now();
  _cj_V _cj_tex = _cj_make(_cj_identity(), 0);
  if (_cj_t < _CJ_B) {
    const float4* src = reinterpret_cast<const float4*>(x + _cj_base);
#pragma unroll
    for (int m = 0; m < _CJ_N / 4; ++m) {
      const int c = m * _CJ_B + _cj_t;
      cp16(sm4 + swz(c), src + c);
    }
    cp_wait_all();
    _cj_bar(1, _CJ_B);
    if (STAMP && _cj_t == 0) stamps[8 * _cj_tile + 1] = now();
    _cj_V _cj_run = _cj_make(_cj_identity(), 0);
#pragma unroll
    for (int j = 0; j < _CJ_N / 4; ++j) {
      float4 f = sm4[swz(_cj_t * (_CJ_N / 4) + j)];
      float* e = &f.x;
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const _cj_V v = _cj_make(_cj_map(e[i], 0, _in_ind, _out_ind), 0);
        _cj_run = (j == 0 && i == 0) ? v : _cj_comb(_cj_run, v);
        e[i] = _cj_run.v;
      }
      sm4[swz(_cj_t * (_CJ_N / 4) + j)] = f;
    }
    const _cj_V _cj_inc = _cj_warp_scan(_cj_run, _cj_lane);
    const _cj_V _cj_wex = _cj_shfl_up(_cj_inc, 1);
    if (_cj_lane == 31) _cj_wsum[_cj_warp] = _cj_inc;
    _cj_bar(1, _CJ_B);
    if (_cj_warp == 0) {
      _cj_V v = _cj_make(_cj_identity(), 0);
      if (_cj_lane < _CJ_B / 32) v = _cj_wsum[_cj_lane];
      v = _cj_warp_scan(v, _cj_lane);
      if (_cj_lane < _CJ_B / 32) _cj_wsum[_cj_lane] = v;
      if (_cj_lane == _CJ_B / 32 - 1) {
        _cj_publish(_cj_scratch, L.tile_values, 16, _cj_tile, v, _cj_agg_flag(v));
        if (STAMP) stamps[8 * _cj_tile + 4] = now();
      }
    }
    _cj_bar(1, _CJ_B);
    if (_cj_warp > 0) _cj_tex = _cj_wsum[_cj_warp - 1];
    if (_cj_lane > 0) _cj_tex = _cj_warp > 0 ? _cj_comb(_cj_tex, _cj_wex) : _cj_wex;
    _cj_bar(2, _CJ_B + 32);
  } else {
    lab_look_back(_cj_scratch, L, _cj_tile, g, q, last, _cj_lane, _cj_warp, _cj_wsum, _cj_halves,
                  STAMP ? stamps : nullptr);
  }
  __syncthreads();
  if (STAMP && _cj_t == 0) stamps[8 * _cj_tile + 2] = now();
  const _cj_V _cj_G = _cj_halves[1];
  if (last && _cj_t == 0) {
    _cj_publish(_cj_scratch, L.group_prefixes, L.group_flags, g,
                _cj_comb(_cj_G, _cj_comb(_cj_halves[0], _cj_wsum[_CJ_B / 32 - 1])), 2u);
  }
  if (_cj_t < _CJ_B) {
    const _cj_V _cj_tprefix = q > 0 ? _cj_comb(_cj_G, _cj_halves[0]) : _cj_G;
    _cj_pres[_cj_t] = _cj_comb(_cj_tprefix, _cj_tex);
  }
  __syncthreads();
  if (_cj_t < _CJ_B) {
    float4* dst = reinterpret_cast<float4*>(y + _cj_base);
#pragma unroll
    for (int m = 0; m < _CJ_N / 4; ++m) {
      const int c = m * _CJ_B + _cj_t;
      float4 f = sm4[swz(c)];
      const _cj_V p = _cj_pres[c >> 3];
      f.x = comb_f(p, f.x);
      f.y = comb_f(p, f.y);
      f.z = comb_f(p, f.z);
      f.w = comb_f(p, f.w);
      dst[c] = f;
    }
  }
  if (STAMP && _cj_t == 0) stamps[8 * _cj_tile + 3] = now();
}

__global__ void differ(const unsigned* a, const unsigned* b, long long n, unsigned long long* out) {
  unsigned long long c = 0;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    c += a[i] != b[i];
  }
  atomicAdd(out, c);
}

struct Setup {
  long long n, tiles;
  _cj_SL L;
  size_t cleared, total;
};

static Setup setup(long long n) {
  Setup s{};
  s.n = n;
  const long long tile = _CJ_B * _CJ_N;
  s.tiles = (n + tile - 1) / tile;
  const long long groups = (s.tiles + 31) / 32;
  std::memset(&s.L, 0, sizeof s.L);
  s.L.n = (int)n;
  s.L.row_len = (int)n;
  s.L.group_flags = (int)(16 + 8 * s.tiles);
  s.L.tile_values = 16;
  s.L.group_aggregates = s.L.group_prefixes = s.L.group_flags;
  s.cleared = s.total = 16 + 8 * s.tiles + 8 * groups;
  return s;
}

template <class Launch>
static float time_it(Launch launch, unsigned char* scratch, size_t cleared, int reps = 15) {
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  std::vector<float> ms;
  for (int r = 0; r < reps + 3; ++r) {
    if (scratch) CK(cudaMemsetAsync(scratch, 0, cleared));
    CK(cudaEventRecord(a));
    launch();
    CK(cudaEventRecord(b));
    CK(cudaEventSynchronize(b));
    float t = 0;
    CK(cudaEventElapsedTime(&t, a, b));
    if (r >= 3) ms.push_back(t);
  }
  CK(cudaGetLastError());
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2] * 1000.0f;
}

static void stamp_report(const std::vector<unsigned long long>& st, long long tiles, float us) {
  std::vector<double> load, wait, store, life;
  unsigned long long t0 = ~0ull, t1 = 0;
  for (long long k = 0; k < tiles; ++k) {
    const unsigned long long* s = &st[8 * k];
    load.push_back((s[1] - s[0]) / 1000.0);
    wait.push_back((s[2] - s[1]) / 1000.0);
    store.push_back((s[3] - s[2]) / 1000.0);
    life.push_back((s[3] - s[0]) / 1000.0);
    t0 = std::min(t0, s[0]);
    t1 = std::max(t1, s[3]);
  }
  auto q = [](std::vector<double> v, double p) {
    std::sort(v.begin(), v.end());
    return v[(size_t)(p * (v.size() - 1))];
  };
  double sum = 0;
  for (double v : life) sum += v;
  // The true dependency: every earlier tile's aggregate. Excess: prefix known after it.
  std::vector<double> excess, tilefold, groupfold, aggdone;
  unsigned long long rmax = 0;
  for (long long k = 0; k < tiles; ++k) {
    const unsigned long long* s = &st[8 * k];
    const unsigned long long ready = std::max(rmax, s[4]);
    excess.push_back(((double)s[2] - (double)ready) / 1000.0);
    tilefold.push_back(((double)s[5] - (double)ready) / 1000.0);
    groupfold.push_back(((double)s[6] - (double)ready) / 1000.0);
    aggdone.push_back(((double)s[4] - (double)s[1]) / 1000.0);
    rmax = std::max(rmax, s[4]);
  }
  std::printf("  after the dependency: prefix known p50 %.2f p90 %.2f | tile fold p50 %.2f | group look-back p50 %.2f p90 %.2f | own scan %.2f\n",
              q(excess, .5), q(excess, .9), q(tilefold, .5), q(groupfold, .5), q(groupfold, .9), q(aggdone, .5));
  std::printf(
      "  stamps: load p50 %.2f p90 %.2f | scan+wait p50 %.2f p90 %.2f | store p50 %.2f p90 %.2f"
      " | life p50 %.2f | span %.1f us, mean resident %.0f tiles (kernel %.1f us)\n",
      q(load, .5), q(load, .9), q(wait, .5), q(wait, .9), q(store, .5), q(store, .9), q(life, .5),
      (t1 - t0) / 1000.0, sum / ((t1 - t0) / 1000.0), us);
}

int main(int argc, char** argv) {
  const long long n = argc > 1 ? atoll(argv[1]) : (1ll << 28);
  const Setup s = setup(n);
  float *x, *y0, *y1;
  unsigned char* scratch;
  unsigned long long *stamps, *diff;
  CK(cudaMalloc(&x, n * 4));
  CK(cudaMalloc(&y0, n * 4));
  CK(cudaMalloc(&y1, n * 4));
  CK(cudaMalloc(&scratch, s.total));
  CK(cudaMalloc(&stamps, s.tiles * 64));
  CK(cudaMalloc(&diff, 8));
  fill<<<1024, 256>>>(x, n, 12345u);
  const int base_smem = (_CJ_B * _CJ_N + _CJ_B * _CJ_N / 32) * 4;
  const int async_smem = _CJ_B * _CJ_N * 4;
  CK(cudaFuncSetAttribute(scan_base, cudaFuncAttributeMaxDynamicSharedMemorySize, base_smem));
  CK(cudaFuncSetAttribute(scan_async<0, 0>, cudaFuncAttributeMaxDynamicSharedMemorySize, async_smem));
  CK(cudaFuncSetAttribute(scan_async<1, 0>, cudaFuncAttributeMaxDynamicSharedMemorySize, async_smem));
  CK(cudaFuncSetAttribute(scan_async<0, 1>, cudaFuncAttributeMaxDynamicSharedMemorySize, async_smem));
  CK(cudaFuncSetAttribute(scan_async<1, 1>, cudaFuncAttributeMaxDynamicSharedMemorySize, async_smem));
  const float copy = time_it([&] { CK(cudaMemcpyAsync(y1, x, n * 4, cudaMemcpyDeviceToDevice)); },
                             nullptr, 0);
  std::printf("n %lld, tiles %lld; copy %.1f us\n", n, s.tiles, copy);
  const dim3 grid((unsigned)s.tiles), block(_CJ_B + 64);
  auto report = [&](const char* name, float us) {
    std::printf("%-28s %8.1f us  %.3f of copy\n", name, us, copy / us);
  };
  report("base (generated)", time_it([&] {
           scan_base<<<grid, block, base_smem>>>((const char*)x, (char*)y0, s.L, scratch);
         }, scratch, s.cleared));
  report("async rows", time_it([&] {
           scan_async<0, 0><<<grid, block, async_smem>>>(x, y1, s.L, scratch, stamps);
         }, scratch, s.cleared));
  CK(cudaMemset(diff, 0, 8));
  differ<<<1024, 256>>>((const unsigned*)y0, (const unsigned*)y1, n, diff);
  unsigned long long nd = 0;
  CK(cudaMemcpy(&nd, diff, 8, cudaMemcpyDeviceToHost));
  std::printf("  async vs base: %llu differing elements\n", nd);
  const float us = time_it([&] {
    scan_async<1, 0><<<grid, block, async_smem>>>(x, y1, s.L, scratch, stamps);
  }, scratch, s.cleared, 3);
  report("async rows (stamped)", us);
  std::vector<unsigned long long> st(8 * s.tiles);
  CK(cudaMemcpy(st.data(), stamps, st.size() * 8, cudaMemcpyDeviceToHost));
  stamp_report(st, s.tiles, us);
  report("async rows, claimed tiles", time_it([&] {
           scan_async<0, 1><<<grid, block, async_smem>>>(x, y1, s.L, scratch, stamps);
         }, scratch, s.cleared));
  CK(cudaMemset(diff, 0, 8));
  differ<<<1024, 256>>>((const unsigned*)y0, (const unsigned*)y1, n, diff);
  CK(cudaMemcpy(&nd, diff, 8, cudaMemcpyDeviceToHost));
  std::printf("  claimed vs base: %llu differing elements\n", nd);
  const float us2 = time_it([&] {
    scan_async<1, 1><<<grid, block, async_smem>>>(x, y1, s.L, scratch, stamps);
  }, scratch, s.cleared, 3);
  report("claimed (stamped)", us2);
  CK(cudaMemcpy(st.data(), stamps, st.size() * 8, cudaMemcpyDeviceToHost));
  stamp_report(st, s.tiles, us2);
  // The base's result against a double-precision prefix at sampled places.
  std::vector<float> hx(n), hy(n);
  CK(cudaMemcpy(hx.data(), x, n * 4, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(hy.data(), y0, n * 4, cudaMemcpyDeviceToHost));
  double acc = 0, worst = 0;
  for (long long i = 0; i < n; ++i) {
    acc += hx[i];
    if ((i & 65535) == 65535 || i == n - 1) worst = std::max(worst, std::fabs(acc - hy[i]));
  }
  std::printf("  base vs double prefix: worst abs error %.3g at sampled places\n", worst);
  return 0;
}
