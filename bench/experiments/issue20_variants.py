# Issue 20 experiment: transposed tiles and vocabulary-row reductions, hand-written variants.
import cupy as cp, numpy as np, sys, itertools
def timeit(f, reps=30, warm=5):
    for _ in range(warm): f()
    s = [cp.cuda.Event() for _ in range(reps+1)]
    s[0].record()
    for i in range(reps):
        f(); s[i+1].record()
    s[-1].synchronize()
    ts = [cp.cuda.get_elapsed_time(s[i], s[i+1]) for i in range(reps)]
    return float(np.median(ts))
m = 8192
nb = 4.0 * m * m
x0 = cp.random.rand(m, m, dtype=cp.float32); y0 = cp.random.rand(m, m, dtype=cp.float32)
z = cp.empty((m, m), cp.float32)
src = cp.random.rand(m*m, dtype=cp.float32); dst = cp.empty_like(src)
tc = timeit(lambda: cp.copyto(dst, src))
copy = 2*nb/tc/1e6
d2d = timeit(lambda: cp.cuda.runtime.memcpyAsync(dst.data.ptr, src.data.ptr, int(nb), 3, cp.cuda.get_current_stream().ptr))
print(f"copy {copy:.1f} GB/s (cupy.copyto); memcpy D2D {2*nb/d2d/1e6:.1f} GB/s")
def rep(name, ms, bytes_):
    g = bytes_/ms/1e6
    print(f"{name:50s} {g:8.1f} GB/s {g/copy:6.3f}", flush=True)

# z[r][c] = X[r][c] + Y[r][c]; X logical r,c at xm[c*m + r] (transposed); Y either transposed or C.
tmpl = r'''
template<int TR, int TC, int V, bool YT>
__device__ void body(const float* __restrict__ xm, const float* __restrict__ ym, float* __restrict__ zm, int R, int C, int r0, int c0) {
  // threads: 256 = (TC/V) x (256/(TC/V))
  constexpr int TX = TC / V;            // threads along c for C-order accesses
  constexpr int TY = 256 / TX;
  __shared__ float tx[TC][TR + 1];
  __shared__ float ty[YT ? TC : 1][YT ? TR + 1 : 1];
  // Load transposed X: memory contiguous along r. Threads: along r with V-vectors: TR/V threads.
  constexpr int LX = TR / V, LY = 256 / LX;
  const int t = threadIdx.x;
  #pragma unroll
  for (int cc = t / LX; cc < TC; cc += LY) {
    const int rr = (t % LX) * V;
    if (V == 4) { float4 v = *reinterpret_cast<const float4*>(xm + (size_t)(c0 + cc) * R + r0 + rr);
      tx[cc][rr] = v.x; tx[cc][rr+1] = v.y; tx[cc][rr+2] = v.z; tx[cc][rr+3] = v.w; }
    else if (V == 2) { float2 v = *reinterpret_cast<const float2*>(xm + (size_t)(c0 + cc) * R + r0 + rr);
      tx[cc][rr] = v.x; tx[cc][rr+1] = v.y; }
    else tx[cc][rr] = xm[(size_t)(c0 + cc) * R + r0 + rr];
    if (YT) {
      if (V == 4) { float4 v = *reinterpret_cast<const float4*>(ym + (size_t)(c0 + cc) * R + r0 + rr);
        ty[cc][rr] = v.x; ty[cc][rr+1] = v.y; ty[cc][rr+2] = v.z; ty[cc][rr+3] = v.w; }
      else if (V == 2) { float2 v = *reinterpret_cast<const float2*>(ym + (size_t)(c0 + cc) * R + r0 + rr);
        ty[cc][rr] = v.x; ty[cc][rr+1] = v.y; }
      else ty[cc][rr] = ym[(size_t)(c0 + cc) * R + r0 + rr];
    }
  }
  // Y (C order) prefetch into registers before the barrier.
  constexpr int PER = TR / TY;
  float yv[YT ? 1 : PER][V];
  const int cx = (t % TX) * V, ry = t / TX;
  if (!YT) {
    #pragma unroll
    for (int k = 0; k < PER; ++k) {
      const float* p = ym + (size_t)(r0 + ry + k * TY) * C + c0 + cx;
      if (V == 4) { float4 v = *reinterpret_cast<const float4*>(p); yv[k][0]=v.x; yv[k][1]=v.y; yv[k][2]=v.z; yv[k][3]=v.w; }
      else if (V == 2) { float2 v = *reinterpret_cast<const float2*>(p); yv[k][0]=v.x; yv[k][1]=v.y; }
      else yv[k][0] = *p;
    }
  }
  __syncthreads();
  #pragma unroll
  for (int k = 0; k < PER; ++k) {
    const int r = ry + k * TY;
    float o[V];
    #pragma unroll
    for (int v = 0; v < V; ++v) o[v] = tx[cx + v][r] + (YT ? ty[cx + v][r] : yv[YT ? 0 : k][v]);
    float* p = zm + (size_t)(r0 + r) * C + c0 + cx;
    if (V == 4) *reinterpret_cast<float4*>(p) = make_float4(o[0], o[1], o[2], o[3]);
    else if (V == 2) *reinterpret_cast<float2*>(p) = make_float2(o[0], o[1]);
    else *p = o[0];
  }
}
extern "C" __global__ void __launch_bounds__(256) K_NAME(const float* xm, const float* ym, float* zm, int R, int C) {
  const int tcs = C / TC_V;
  for (int tile = blockIdx.x; tile < (R / TR_V) * tcs; tile += gridDim.x) {
    body<TR_V, TC_V, V_V, YT_V>(xm, ym, zm, R, C, (tile / tcs) * TR_V, (tile % tcs) * TC_V);
    __syncthreads();
  }
}
'''
xT = x0.T; yT = y0.T
configs = []
for yt in (True, False):
    for (tr, tc, v) in [(32,32,1),(64,32,1),(32,64,2),(64,64,2),(64,64,4),(32,128,4),(128,32,4),(64,128,4),(128,64,4),(32,64,1),(64,64,1)]:
        tx_threads = tc // v
        if 256 % tx_threads or (256 // tx_threads) > tr: continue
        if 256 % (tr // v) or 256 // (tr // v) > tc: continue
        smem = 4*tc*(tr+1)*(2 if yt else 1)
        if smem > 48*1024: continue
        configs.append((yt, tr, tc, v))
sm = cp.cuda.Device().attributes['MultiProcessorCount']
for yt, tr, tc, v in (configs if 'rows' not in sys.argv else []):
    name = f"k_{int(yt)}_{tr}_{tc}_{v}"
    code = tmpl.replace("K_NAME", name).replace("TR_V", str(tr)).replace("TC_V", str(tc)).replace("V_V", str(v)).replace("YT_V", "true" if yt else "false")
    k = cp.RawKernel(code, name, options=("-std=c++17",))
    yy = yT if yt else y0
    ntiles = (m // tr) * (m // tc)
    for grid_name, grid in (("all", ntiles), ("8/sm", sm * 8), ("16/sm", sm*16)):
        f = lambda: k((grid,), (256,), (x0, y0, z, np.int32(m), np.int32(m)))
        ms = timeit(f)
        ok = bool(cp.allclose(z, xT + yy)) if grid_name == "all" else True
        rep(f"{'xT+yT' if yt else 'xT+y '} tile {tr}x{tc} v{v} grid {grid_name}{'' if ok else ' WRONG'}", ms, 3*nb)
# x.T + y.T written through a tile of the output: x and y read in their own (column-major)
# order, z transposed through shared memory. One array through the tile instead of two.
otmpl = r"""
extern "C" __global__ void __launch_bounds__(256) K_NAME(const float* __restrict__ xm, const float* __restrict__ ym, float* __restrict__ zm, int R, int C) {
  // Iteration space: rows of memory (c) x columns of memory (r): xm[c*R + r].
  __shared__ float t[TC_V][TR_V + 1];     // [c][r]
  const int tcs = R / TR_V;               // tiles along r
  for (int tile = blockIdx.x; tile < (C / TC_V) * tcs; tile += gridDim.x) {
    const int c0 = (tile / tcs) * TC_V, r0 = (tile % tcs) * TR_V;
    // read: threads along r (contiguous), TR_V/V_V threads per memory row
    constexpr int LX = TR_V / V_V, LY = 256 / LX;
    const int tr = (threadIdx.x % LX) * V_V;
    #pragma unroll
    for (int cc = threadIdx.x / LX; cc < TC_V; cc += LY) {
      const size_t o = (size_t)(c0 + cc) * R + r0 + tr;
      if (V_V == 4) { float4 a = *reinterpret_cast<const float4*>(xm + o), b = *reinterpret_cast<const float4*>(ym + o);
        t[cc][tr] = a.x + b.x; t[cc][tr+1] = a.y + b.y; t[cc][tr+2] = a.z + b.z; t[cc][tr+3] = a.w + b.w; }
      else if (V_V == 2) { float2 a = *reinterpret_cast<const float2*>(xm + o), b = *reinterpret_cast<const float2*>(ym + o);
        t[cc][tr] = a.x + b.x; t[cc][tr+1] = a.y + b.y; }
      else t[cc][tr] = xm[o] + ym[o];
    }
    __syncthreads();
    // write z[r][c] (C order): threads along c
    constexpr int WX = TC_V / V_V, WY = 256 / WX;
    const int wc = (threadIdx.x % WX) * V_V;
    #pragma unroll
    for (int rr = threadIdx.x / WX; rr < TR_V; rr += WY) {
      float* p = zm + (size_t)(r0 + rr) * C + c0 + wc;
      if (V_V == 4) *reinterpret_cast<float4*>(p) = make_float4(t[wc][rr], t[wc+1][rr], t[wc+2][rr], t[wc+3][rr]);
      else if (V_V == 2) *reinterpret_cast<float2*>(p) = make_float2(t[wc][rr], t[wc+1][rr]);
      else *p = t[wc][rr];
    }
    __syncthreads();
  }
}
"""
for tr, tc, v in [(32, 32, 1), (64, 32, 1), (32, 64, 1), (64, 64, 1), (64, 64, 2), (64, 64, 4), (128, 32, 4), (32, 128, 4)]:
    if 'rows' in sys.argv: break
    name = f"o_{tr}_{tc}_{v}"
    code = otmpl.replace("K_NAME", name).replace("TR_V", str(tr)).replace("TC_V", str(tc)).replace("V_V", str(v))
    k = cp.RawKernel(code, name)
    ntiles = (m // tr) * (m // tc)
    for grid_name, grid in (("all", ntiles), ("16/sm", sm * 16)):
        ms = timeit(lambda: k((grid,), (256,), (x0, y0, z, np.int32(m), np.int32(m))))
        ok = bool(cp.allclose(z, xT + yT)) if grid_name == "all" else True
        rep(f"xT+yT output-tiled {tr}x{tc} v{v} grid {grid_name}{'' if ok else ' WRONG'}", ms, 3*nb)
# Reference: contiguous add
ms = timeit(lambda: cp.add(x0, y0, out=z)); rep("cupy add contiguous", ms, 3*nb)

# Vocabulary rows: max over rows of (4096, 50257)
R2, N2 = 4096, 50257
a = cp.random.rand(R2, N2, dtype=cp.float32); out = cp.empty(R2, cp.float32)
vb = 4.0 * R2 * N2
import torch
ta = torch.as_tensor(a, device='cuda')
ms = timeit(lambda: torch.amax(ta, dim=1)); rep("torch amax rows", ms, vb)
ms = timeit(lambda: cp.max(a, axis=1, out=out)); rep("cupy max rows", ms, vb)
ref = a.max(axis=1)
rtmpl = r'''
extern "C" __global__ void __launch_bounds__(B) K_NAME(const float* __restrict__ a, float* out, int R, long long N) {
  __shared__ float sh[32];
  for (int row = blockIdx.x; row < R; row += gridDim.x) {
    const float* p = a + (size_t)row * N;
    float acc = __int_as_float(0xff800000);
    if (PEEL) {
      long long h = ((16 - ((unsigned long long)p & 15)) & 15) / 4; if (h > N) h = N;
      if (threadIdx.x < h) acc = fmaxf(acc, p[threadIdx.x]);
      const float4* q = reinterpret_cast<const float4*>(p + h);
      const long long nv = (N - h) / 4;
      long long j = threadIdx.x;
      for (; j + (U-1) * B < nv; j += U * B) {
        float4 v[U];
        #pragma unroll
        for (int u = 0; u < U; ++u) v[u] = q[j + u * B];
        #pragma unroll
        for (int u = 0; u < U; ++u) acc = fmaxf(acc, fmaxf(fmaxf(v[u].x, v[u].y), fmaxf(v[u].z, v[u].w)));
      }
      for (; j < nv; j += B) { float4 v = q[j]; acc = fmaxf(acc, fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w))); }
      for (long long t = h + nv * 4 + threadIdx.x; t < N; t += B) acc = fmaxf(acc, p[t]);
    } else {
      long long j = threadIdx.x;
      for (; j + (U-1) * B < N; j += U * B) {
        float v[U];
        #pragma unroll
        for (int u = 0; u < U; ++u) v[u] = p[j + u * B];
        #pragma unroll
        for (int u = 0; u < U; ++u) acc = fmaxf(acc, v[u]);
      }
      for (; j < N; j += B) acc = fmaxf(acc, p[j]);
    }
    for (int o = 16; o; o >>= 1) acc = fmaxf(acc, __shfl_xor_sync(0xffffffff, acc, o));
    if (B > 32) {
      if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = acc;
      __syncthreads();
      if (threadIdx.x < 32) {
        acc = threadIdx.x < B / 32 ? sh[threadIdx.x] : __int_as_float(0xff800000);
        for (int o = 16; o; o >>= 1) acc = fmaxf(acc, __shfl_xor_sync(0xffffffff, acc, o));
      }
      __syncthreads();
    }
    if (threadIdx.x == 0) out[row] = acc;
  }
}
'''
for peel in (0, 1):
    for B in (256, 512, 1024):
        for U in ((4, 8, 16) if not peel else (2, 4, 8)):
            name = f"r_{peel}_{B}_{U}"
            code = f"#define B {B}\n#define U {U}\n#define PEEL {peel}\n" + rtmpl.replace("K_NAME", name)
            k = cp.RawKernel(code, name)
            for grid_name, grid in (("rows", R2), ("4/sm", sm*4), ("8/sm", sm * 8)):
                ms = timeit(lambda: k((grid,), (B,), (a, out, np.int32(R2), np.int64(N2))))
                ok = bool((out == ref).all())
                rep(f"rows max peel={peel} B={B} U={U} grid {grid_name}{'' if ok else ' WRONG'}", ms, vb)
