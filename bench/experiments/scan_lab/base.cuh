#ifndef LAB_SLEEP_TILE
#define LAB_SLEEP_TILE 20
#endif
#ifndef LAB_SLEEP_GROUP
#define LAB_SLEEP_GROUP 32
#endif
#ifndef CUJIT_DEVICE_SUPPORT
#define CUJIT_DEVICE_SUPPORT
template <class T> struct complex {
  T re, im;
  __host__ __device__ complex() : re(0), im(0) {}
  __host__ __device__ complex(T r, T i = T(0)) : re(r), im(i) {}
  template <class U> __host__ __device__ explicit complex(const complex<U>& o) : re(T(o.re)), im(T(o.im)) {}
  __host__ __device__ T real() const { return re; }
  __host__ __device__ T imag() const { return im; }
  __host__ __device__ complex& operator+=(const complex& o) { re += o.re; im += o.im; return *this; }
  __host__ __device__ complex& operator-=(const complex& o) { re -= o.re; im -= o.im; return *this; }
  __host__ __device__ complex& operator*=(const complex& o) { *this = *this * o; return *this; }
  __host__ __device__ complex& operator/=(const complex& o) { *this = *this / o; return *this; }
  __host__ __device__ friend complex operator+(const complex& a, const complex& b) { return complex(a.re + b.re, a.im + b.im); }
  __host__ __device__ friend complex operator-(const complex& a, const complex& b) { return complex(a.re - b.re, a.im - b.im); }
  __host__ __device__ friend complex operator*(const complex& a, const complex& b) { return complex(a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re); }
  __host__ __device__ friend complex operator/(const complex& a, const complex& b) {
    const T s = (b.re < 0 ? -b.re : b.re) + (b.im < 0 ? -b.im : b.im);
    const T ar = a.re / s, ai = a.im / s, br = b.re / s, bi = b.im / s;
    const T d = br * br + bi * bi;
    return complex((ar * br + ai * bi) / d, (ai * br - ar * bi) / d);
  }
  __host__ __device__ friend complex operator+(const complex& a, T b) { return complex(a.re + b, a.im); }
  __host__ __device__ friend complex operator+(T a, const complex& b) { return complex(a + b.re, b.im); }
  __host__ __device__ friend complex operator-(const complex& a, T b) { return complex(a.re - b, a.im); }
  __host__ __device__ friend complex operator-(T a, const complex& b) { return complex(a - b.re, -b.im); }
  __host__ __device__ friend complex operator*(const complex& a, T b) { return complex(a.re * b, a.im * b); }
  __host__ __device__ friend complex operator*(T a, const complex& b) { return complex(a * b.re, a * b.im); }
  __host__ __device__ friend complex operator/(const complex& a, T b) { return complex(a.re / b, a.im / b); }
  __host__ __device__ friend complex operator/(T a, const complex& b) { return complex(a) / b; }
  __host__ __device__ friend complex operator-(const complex& a) { return complex(-a.re, -a.im); }
  __host__ __device__ friend bool operator==(const complex& a, const complex& b) { return a.re == b.re && a.im == b.im; }
  __host__ __device__ friend bool operator!=(const complex& a, const complex& b) { return !(a == b); }
};
template <class T> __device__ T real(const complex<T>& z) { return z.re; }
template <class T> __device__ T imag(const complex<T>& z) { return z.im; }
template <class T> __device__ complex<T> conj(const complex<T>& z) { return complex<T>(z.re, -z.im); }
template <class T> __device__ T norm(const complex<T>& z) { return z.re * z.re + z.im * z.im; }
template <class T> __device__ T abs(const complex<T>& z) { return hypot(z.re, z.im); }
template <class T> __device__ T arg(const complex<T>& z) { return atan2(z.im, z.re); }
template <class T> __device__ complex<T> exp(const complex<T>& z) { const T e = exp(z.re); return complex<T>(e * cos(z.im), e * sin(z.im)); }
template <class T> __device__ complex<T> log(const complex<T>& z) { return complex<T>(log(abs(z)), arg(z)); }
template <class T> __device__ complex<T> polar(T r, T theta) { return complex<T>(r * cos(theta), r * sin(theta)); }
template <class T> __device__ complex<T> sqrt(const complex<T>& z) { const T r = sqrt(abs(z)); const T t = arg(z) / T(2); return complex<T>(r * cos(t), r * sin(t)); }

// A raw array parameter: flat element indexing, stride in bytes (sizeof(T) when contiguous).
template <class T, class I, bool Contiguous> struct _cj_RawArray {
  T* data; long long n; long long stride;
  __device__ T& operator[](I j) const {
    if (Contiguous) return data[j];
    return *reinterpret_cast<T*>(reinterpret_cast<char*>(data) + (long long)j * stride);
  }
  __device__ long long size() const { return n; }
};

template <class I> struct _cj_Indexer {
  I n;
  __device__ I size() const { return n; }
};

// n / d for 0 <= n < 2^31 with a precomputed magic number (Granlund-Montgomery, as in
// PyTorch's IntDivider): a multiply-high, an add and a shift instead of a division.
__device__ __forceinline__ unsigned _cj_div(unsigned n, unsigned magic, unsigned shift) {
  return (__umulhi(n, magic) + n) >> shift;
}

template <class T, int N> struct __align__(sizeof(T) * N) _cj_Vec { T v[N]; };
#endif
typedef float T;
typedef float _cj_T;
typedef int _cj_I;
#define _CJ_SW 1
__device__ __forceinline__ _cj_T _cj_identity() {
  return _cj_T(
#line 1 "identity"
0
#line 80 "cumsum.cu"
  );
}
__device__ __forceinline__ _cj_T _cj_op(const _cj_T& a, const _cj_T& b) {
  return (
#line 1 "scan_expr"
a + b
#line 87 "cumsum.cu"
  );
}
struct _cj_V { _cj_T v; };
__device__ __forceinline__ _cj_V _cj_make(const _cj_T& v, int) {
  _cj_V r; r.v = v; return r;
}
__device__ __forceinline__ bool _cj_headed(const _cj_V&) { return false; }
__device__ __forceinline__ _cj_V _cj_comb(const _cj_V& x, const _cj_V& y) {
  _cj_V r; r.v = _cj_op(x.v, y.v); return r;
}
__device__ __forceinline__ _cj_T _cj_map(const float& x, const int _J, const _cj_Indexer<int> _in_ind, const _cj_Indexer<int> _out_ind) {
  return (
#line 1 "map_expr"
x
#line 102 "cumsum.cu"
  );
}
__device__ __forceinline__ void _cj_post(const _cj_T& a, float& y, const _cj_Indexer<int> _in_ind, const _cj_Indexer<int> _out_ind) {
#line 1 "post_map_expr"
y = a;
#line 108 "cumsum.cu"
}

template <class X> __device__ __forceinline__ X _cj_shfl_up(const X& v, int d) {
  constexpr int W = (sizeof(X) + 3) / 4;
  unsigned w[W] = {};
  memcpy(w, &v, sizeof(X));
#pragma unroll
  for (int i = 0; i < W; ++i) w[i] = __shfl_up_sync(0xffffffffu, w[i], d);
  X r;
  memcpy(&r, w, sizeof(X));
  return r;
}
template <class X> __device__ __forceinline__ X _cj_shfl(const X& v, int lane) {
  constexpr int W = (sizeof(X) + 3) / 4;
  unsigned w[W] = {};
  memcpy(w, &v, sizeof(X));
#pragma unroll
  for (int i = 0; i < W; ++i) w[i] = __shfl_sync(0xffffffffu, w[i], lane);
  X r;
  memcpy(&r, w, sizeof(X));
  return r;
}
// Inclusive scan over the warp's lanes: lane l ends with lanes 0..l combined in order.
__device__ __forceinline__ _cj_V _cj_warp_scan(_cj_V x, int lane) {
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    const _cj_V y = _cj_shfl_up(x, d);
    if (lane >= d) x = _cj_comb(y, x);
  }
  return x;
}

typedef unsigned long long _cj_S;
__device__ __forceinline__ void _cj_publish(unsigned char* scratch, long long values, long long,
                                            _cj_I k, const _cj_V& v, unsigned flag) {
  unsigned bits = 0u;
  memcpy(&bits, &v.v, sizeof(_cj_T));
  reinterpret_cast<volatile unsigned long long*>(scratch + values)[k] =
      (unsigned long long)flag << 32 | bits;
}
__device__ __forceinline__ _cj_S _cj_poll(const unsigned char* scratch, long long flags, _cj_I k) {
  return reinterpret_cast<const volatile unsigned long long*>(scratch + flags)[k];
}
__device__ __forceinline__ unsigned _cj_flag_of(_cj_S s) { return (unsigned)(s >> 32); }
__device__ __forceinline__ void _cj_acquire() {}
__device__ __forceinline__ _cj_V _cj_value_of(_cj_S s, const unsigned char*, long long, _cj_I) {
  const unsigned bits = (unsigned)s;
  _cj_T v;
  memcpy(&v, &bits, sizeof(_cj_T));
  return _cj_make(v, _cj_flag_of(s) == 3u);
}

__device__ __forceinline__ unsigned _cj_agg_flag(const _cj_V& v) {
  return _cj_headed(v) ? 3u : 1u;
}
// The aggregates of tiles first .. first + count - 1 (0 < count < 32) combined, by the whole
// warp, in the warp scan's fixed order: waits for each to be published.
__device__ _cj_V _cj_fold_tiles(const unsigned char* scratch, long long flags, long long values,
                                _cj_I first, int count, int lane) {
  _cj_S st = 0;
  if (lane < count) {
    while (_cj_flag_of(st = _cj_poll(scratch, flags, first + lane)) == 0u) __nanosleep(LAB_SLEEP_TILE);
  }
  __syncwarp();
  _cj_acquire();
  _cj_V x = _cj_make(_cj_identity(), 0);
  if (lane < count) x = _cj_value_of(st, scratch, values, first + lane);
  return _cj_shfl(_cj_warp_scan(x, lane), count - 1);
}
// The aggregate of a group from its 32 tiles' statuses `st` (lane l: tile l), in the order the
// group's last tile combines it: the warp scan of the first 31, then the last one.
__device__ _cj_V _cj_group_of_tiles(_cj_S st, const unsigned char* scratch, long long values,
                                    _cj_I tile, int lane) {
  const _cj_V x = _cj_value_of(st, scratch, values, tile);
  const _cj_V first = _cj_warp_scan(lane < 31 ? x : _cj_make(_cj_identity(), 0), lane);
  return _cj_comb(_cj_shfl(first, 30), _cj_shfl(x, 31));
}
// The exclusive prefix of group g > 0, by the whole warp: lane l watches group g - 32 + l, and
// tile l of group g - 1 (whose aggregate it combines itself while the group's last tile has
// not published it). Waits until some group has its inclusive prefix (2) or an aggregate that
// starts a row (3) and every later one its aggregate, then folds them in order from that one:
// the value of the chain of inclusive prefixes, whichever statuses were there.
__device__ _cj_V _cj_group_look_back(const unsigned char* scratch, long long flags,
                                     long long aggregates, long long prefixes,
                                     long long tile_values, _cj_I g, int lane) {
  const _cj_I p = g - 32 + lane, tp = (g - 1) * 32 + lane;
  _cj_S st = 0, ts = 0;
  unsigned f = 2u;
  int from = 0;
  bool from_tiles = false;
  _cj_V previous = _cj_make(_cj_identity(), 0);
  while (true) {
    if (p >= 0) f = _cj_flag_of(st = _cj_poll(scratch, flags, p));
    const unsigned tf = _cj_flag_of(ts = _cj_poll(scratch, 16, tp));
    from_tiles = __shfl_sync(0xffffffffu, f, 31) == 0u && __all_sync(0xffffffffu, tf != 0u);
    if (from_tiles) {
      _cj_acquire();
      previous = _cj_group_of_tiles(ts, scratch, tile_values, tp, lane);
      if (lane == 31) f = _cj_agg_flag(previous);
    }
    const unsigned ready = __ballot_sync(0xffffffffu, f != 0u);
    const unsigned stop = __ballot_sync(0xffffffffu, f >= 2u);
    if (stop != 0u) {
      from = 31 - __clz(stop);
      const unsigned later = from == 31 ? 0u : 0xffffffffu << (from + 1);
      if ((ready & later) == later) break;
    }
    __nanosleep(LAB_SLEEP_GROUP);
  }
  _cj_acquire();
  _cj_V x = _cj_make(_cj_identity(), 0);
  if (lane == 31 && from_tiles) {
    x = previous;
  } else if (p >= 0 && lane >= from) {
    x = _cj_value_of(st, scratch, f == 2u ? prefixes : aggregates, p);
  }
  _cj_V acc = _cj_shfl(x, from);
  for (int l = from + 1; l < 32; ++l) acc = _cj_comb(acc, _cj_shfl(x, l));
  return acc;
}
struct _cj_SL {
  int n;
  int row_len;
  int group_flags;
  int tile_values;
  int group_aggregates;
  int group_prefixes;
  int kept_shape;
  int scan_shape;
  int kept_strides[2][1];
  int scan_strides[2][1];
};
#define _CJ_B 256
#define _CJ_N 32
__device__ __forceinline__ void _cj_bar(int id, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
extern "C" __global__ void __launch_bounds__(_CJ_B + 64) scan_base(const char* __restrict__ _cj_p0, char* _cj_p1, const _cj_SL _cj_L, unsigned char* _cj_scratch) {
  const _cj_SL& L = _cj_L;
  const _cj_Indexer<int> _in_ind{L.n};
  const _cj_Indexer<int> _out_ind{L.n};
  constexpr int _CJ_TILE = _CJ_B * _CJ_N;
  extern __shared__ __align__(16) unsigned char _cj_tile_raw[];
  __shared__ __align__(16) unsigned char _cj_ws_raw[_CJ_B / 32 * sizeof(_cj_V)];
  __shared__ __align__(16) unsigned char _cj_hv_raw[2 * sizeof(_cj_V)];
  _cj_T* const _cj_sm = reinterpret_cast<_cj_T*>(_cj_tile_raw);
  _cj_V* const _cj_wsum = reinterpret_cast<_cj_V*>(_cj_ws_raw);
  _cj_V* const _cj_halves = reinterpret_cast<_cj_V*>(_cj_hv_raw);
  const int _cj_t = threadIdx.x, _cj_lane = _cj_t & 31, _cj_warp = _cj_t >> 5;
  const int _cj_tile = (int)blockIdx.x;
  const int _cj_base = _cj_tile * _CJ_TILE;
  const int g = _cj_tile >> 5;
  const int q = (int)(_cj_tile & 31);
  const bool last = q == 31;
  _cj_V _cj_run;
  _cj_V _cj_tex = _cj_make(_cj_identity(), 0);
  unsigned _cj_hm = 0u;
  (void)_cj_hm;
  if (_cj_t < _CJ_B) {
    if (_cj_base + _CJ_TILE <= L.n) {
      #pragma unroll
      for (int i = 0; i < _CJ_N; ++i) {
        const int k = i * _CJ_B + _cj_t;
        const int _cj_e = _cj_base + k;
        _cj_sm[k + (k >> 5)] = _cj_map(reinterpret_cast<const float*>(_cj_p0)[_cj_e], (int)(0), _in_ind, _out_ind);
      }
    } else {
      #pragma unroll
      for (int i = 0; i < _CJ_N; ++i) {
        const int k = i * _CJ_B + _cj_t;
        const int _cj_e = _cj_base + k;
        if (_cj_e >= L.n) {
          _cj_sm[k + (k >> 5)] = _cj_identity();
        } else {
          _cj_sm[k + (k >> 5)] = _cj_map(reinterpret_cast<const float*>(_cj_p0)[_cj_e], (int)(0), _in_ind, _out_ind);
        }
      }
    }
    _cj_bar(1, _CJ_B);
#pragma unroll
    for (int i = 0; i < _CJ_N; ++i) {
      const int k = _cj_t * _CJ_N + i;
      const int h = 0;
      const _cj_V v = _cj_make(_cj_sm[k + (k >> 5)], h);
      _cj_run = i == 0 ? v : _cj_comb(_cj_run, v);
      _cj_sm[k + (k >> 5)] = _cj_run.v;
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
      }
    }
    _cj_bar(1, _CJ_B);
    if (_cj_warp > 0) _cj_tex = _cj_wsum[_cj_warp - 1];
    if (_cj_lane > 0) _cj_tex = _cj_warp > 0 ? _cj_comb(_cj_tex, _cj_wex) : _cj_wex;
    _cj_bar(2, _CJ_B + 32);
  } else {
    if (_cj_warp == _CJ_B / 32) {
      _cj_V inpre = _cj_make(_cj_identity(), 0);
      if (q > 0) {
        inpre = _cj_fold_tiles(_cj_scratch, 16, L.tile_values, _cj_tile - q, q, _cj_lane);
      }
      if (_cj_lane == 0) _cj_halves[0] = inpre;
      _cj_bar(2, _CJ_B + 32);
      if (last && _cj_lane == 0) {
        const _cj_V gagg = _cj_comb(inpre, _cj_wsum[_CJ_B / 32 - 1]);
        _cj_publish(_cj_scratch, L.group_aggregates, L.group_flags, g, gagg, _cj_agg_flag(gagg));
      }
    } else {
      const int gbase = (_cj_tile - q) * _CJ_TILE;
      (void)gbase;
      _cj_V G = _cj_make(_cj_identity(), 0);
      if (g > 0) {
        G = _cj_group_look_back(_cj_scratch, L.group_flags, L.group_aggregates, L.group_prefixes, L.tile_values, g, _cj_lane);
      }
      if (_cj_lane == 0) _cj_halves[1] = G;
    }
  }
  __syncthreads();
  const _cj_V _cj_G = _cj_halves[1];
  if (last && _cj_t == 0) {
    _cj_publish(_cj_scratch, L.group_prefixes, L.group_flags, g,
                _cj_comb(_cj_G, _cj_comb(_cj_halves[0], _cj_wsum[_CJ_B / 32 - 1])), 2u);
  }
  if (_cj_t < _CJ_B) {
    const _cj_V _cj_tprefix = q > 0 ? _cj_comb(_cj_G, _cj_halves[0]) : _cj_G;
    const _cj_V _cj_pre = _cj_comb(_cj_tprefix, _cj_tex);
#pragma unroll
    for (int i = _CJ_N - 1; i >= 0; --i) {
      const int k = _cj_t * _CJ_N + i;
      _cj_sm[k + (k >> 5)] = _cj_comb(_cj_pre, _cj_make(_cj_sm[k + (k >> 5)], 0)).v;
    }
  }
  __syncthreads();
  if (_cj_t < _CJ_B) {
    #pragma unroll
    for (int i = 0; i < _CJ_N; ++i) {
      const int k = i * _CJ_B + _cj_t;
      const int _cj_e = _cj_base + k;
      if (_cj_e < L.n) {
        _cj_post(_cj_sm[k + (k >> 5)], reinterpret_cast<float*>(_cj_p1)[_cj_e], _in_ind, _out_ind);
      }
    }
  }
}
