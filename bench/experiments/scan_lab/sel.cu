// Select lab (issue 36, session 21): `x > 0` of 2^28 float32 with ballot masks. The tile's
// values wait in shared memory (read once from global), the counts are ballots (a word per 32
// elements) scanned a word per thread, and each kept value goes to its rank directly. The
// look-back is the generated one (sel.cuh: base.cuh with int counts). Prints us and the
// fraction of a copy of the bytes read and written.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define _CJ_B 256
#define _CJ_N 32
__device__ __forceinline__ void _cj_bar(int id, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
#include "sel.cuh"

#include "lab_common.cuh"
#include "lab_look_back.cuh"

constexpr int kTile = _CJ_B * _CJ_N;
constexpr int kWords = kTile / 32;  // == _CJ_B for 32 items

template <int VEC>
__global__ void __launch_bounds__(_CJ_B + 64)
    select_masks(const float* __restrict__ x, float* out, long long* count, const _cj_SL _cj_L,
                 unsigned char* _cj_scratch) {
  const _cj_SL& L = _cj_L;
  extern __shared__ __align__(16) float _sel_vals[];
  __shared__ unsigned masks[kWords];
  __shared__ _cj_T wpre[kWords];
  __shared__ _cj_V _cj_wsum[_CJ_B / 32];
  __shared__ _cj_V _cj_halves[2];
  const int _cj_t = threadIdx.x, _cj_lane = _cj_t & 31, _cj_warp = _cj_t >> 5;
  const int _cj_tile = (int)blockIdx.x;
  const long long _cj_base = (long long)_cj_tile * kTile;
  const int g = _cj_tile >> 5;
  const int q = _cj_tile & 31;
  const bool last = q == 31;
  if (_cj_t < _CJ_B) {
    {
#pragma unroll
      for (int i = 0; i < _CJ_N; ++i) {
        const int k = i * _CJ_B + _cj_t;
        const long long e = _cj_base + k;
        float v = 0.0f;
        if (e < L.n) v = x[e];
        _sel_vals[k] = v;
        const unsigned b = __ballot_sync(0xffffffffu, e < L.n && v > 0.0f);
        if (_cj_lane == 0) masks[k >> 5] = b;
      }
    }
    _cj_bar(1, _CJ_B);
    const unsigned m = masks[_cj_t];
    const _cj_V mine = _cj_make((_cj_T)__popc(m), 0);
    const _cj_V _cj_inc = _cj_warp_scan(mine, _cj_lane);
    if (_cj_lane == 31) _cj_wsum[_cj_warp] = _cj_inc;
    _cj_bar(1, _CJ_B);
    if (_cj_warp == 0) {
      _cj_V v = _cj_make(_cj_identity(), 0);
      if (_cj_lane < _CJ_B / 32) v = _cj_wsum[_cj_lane];
      v = _cj_warp_scan(v, _cj_lane);
      if (_cj_lane < _CJ_B / 32) _cj_wsum[_cj_lane] = v;
      if (_cj_lane == _CJ_B / 32 - 1) {
        _cj_publish(_cj_scratch, L.tile_values, 16, _cj_tile, v, _cj_agg_flag(v));
      }
    }
    _cj_bar(1, _CJ_B);
    _cj_T ex = _cj_inc.v - (_cj_T)__popc(m);
    if (_cj_warp > 0) ex += _cj_wsum[_cj_warp - 1].v;
    wpre[_cj_t] = ex;
    _cj_bar(2, _CJ_B + 32);
  } else {
    lab_look_back(_cj_scratch, L, _cj_tile, g, q, last, _cj_lane, _cj_warp, _cj_wsum, _cj_halves,
                  nullptr);
  }
  __syncthreads();
  const _cj_V _cj_G = _cj_halves[1];
  if (last && _cj_t == 0) {
    _cj_publish(_cj_scratch, L.group_prefixes, L.group_flags, g,
                _cj_comb(_cj_G, _cj_comb(_cj_halves[0], _cj_wsum[_CJ_B / 32 - 1])), 2u);
  }
  if (_cj_t < _CJ_B) {
    const _cj_T P = (q > 0 ? _cj_comb(_cj_G, _cj_halves[0]) : _cj_G).v;
    const unsigned below = (1u << _cj_lane) - 1u;
#pragma unroll 8
    for (int i = 0; i < _CJ_N; ++i) {
      const int k = i * _CJ_B + _cj_t;
      const unsigned m = masks[k >> 5];
      if (m >> _cj_lane & 1u) out[P + wpre[k >> 5] + __popc(m & below)] = _sel_vals[k];
    }
    if (_cj_base + kTile >= L.n && _cj_t == 0) {
      *count = (long long)(P + _cj_wsum[_CJ_B / 32 - 1].v);
    }
  }
}


int main(int argc, char** argv) {
  const long long n = argc > 1 ? atoll(argv[1]) : (1ll << 28);
  const long long tiles = (n + kTile - 1) / kTile, groups = (tiles + 31) / 32;
  _cj_SL L;
  std::memset(&L, 0, sizeof L);
  L.n = (int)n;
  L.row_len = (int)n;
  L.group_flags = (int)(16 + 8 * tiles);
  L.tile_values = 16;
  L.group_aggregates = L.group_prefixes = L.group_flags;
  const size_t cleared = 16 + 8 * tiles + 8 * groups;
  float *x, *out, *y;
  long long* count;
  unsigned char* scratch;
  CK(cudaMalloc(&x, n * 4));
  CK(cudaMalloc(&out, n * 4));
  CK(cudaMalloc(&y, n * 4));
  CK(cudaMalloc(&count, 8));
  CK(cudaMalloc(&scratch, cleared));
  fill<<<1024, 256>>>(x, n, 777u);
  CK(cudaFuncSetAttribute(select_masks<0>, cudaFuncAttributeMaxDynamicSharedMemorySize, kTile * 4));
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  auto median = [&](auto launch) {
    std::vector<float> ms;
    for (int r = 0; r < 18; ++r) {
      CK(cudaMemsetAsync(scratch, 0, cleared));
      CK(cudaEventRecord(a));
      launch();
      CK(cudaEventRecord(b));
      CK(cudaEventSynchronize(b));
      float t = 0;
      CK(cudaEventElapsedTime(&t, a, b));
      if (r >= 3) ms.push_back(t * 1000.0f);
    }
    CK(cudaGetLastError());
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
  };
  const float copy = median([&] { CK(cudaMemcpyAsync(y, x, n * 4, cudaMemcpyDeviceToDevice)); });
  const float us = median(
      [&] { select_masks<0><<<(unsigned)tiles, _CJ_B + 64, kTile * 4>>>(x, out, count, L, scratch); });
  // Check against the host.
  std::vector<float> hx(n), ho(n);
  long long hc = 0;
  CK(cudaMemcpy(hx.data(), x, n * 4, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(ho.data(), out, n * 4, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(&hc, count, 8, cudaMemcpyDeviceToHost));
  long long kept = 0, bad = 0;
  for (long long i = 0; i < n; ++i) {
    if (hx[i] > 0.0f) {
      if (kept < n && ho[kept] != hx[i]) ++bad;
      ++kept;
    }
  }
  // Bytes: the input read and the kept values written; the copy moves 2 n * 4.
  const double bytes = 4.0 * n + 4.0 * kept;
  std::printf("select masks: %.1f us, %.3f of copy (copy %.1f us); kept %lld (device %lld), %lld wrong\n",
              us, (bytes / us) / (8.0 * n / copy), copy, kept, hc, bad);
  return 0;
}
