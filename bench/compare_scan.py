"""CuPy and PyTorch on the cases of bench/scan_bench.cpp.

Imported by compare.py (section "scans"), which times them with its Bench: the inclusive sum
scan of 2^28 float32, scans along axis 1 of (16384, 16384) and of (2^22, 64), and the nearest
peer equivalent of the user-operator scan (a linear recurrence, which neither library scans:
CuPy's nearest is cumprod and cumsum of the rescaled terms, two scans and three elementwise
kernels). Records use the C++ bench's case names (scan_sum, scan_sum_rows, scan_sum_short_rows,
scan_recurrence, select_positive: x[x > 0] with about half kept; segsum_short, segsum_long,
segsum_few: torch.segment_reduce and CuPy's nearest) with bench "cupy" and "torch".
"""

import numpy

from compare_expressions import _time_all


def _sum_case(b, case, shape, axis):
    cp = b.cp
    n = 1
    for extent in shape:
        n *= extent
    x = b.random(n, 11, shape)
    rows = [0, shape[0] // 2, shape[0] - 1] if axis is not None else [None]

    def close(y):
        y = cp.asarray(y)
        for row in rows:
            got = y[row] if row is not None else y
            want = cp.cumsum((x[row] if row is not None else x).astype(cp.float64), axis=-1)
            scale = cp.cumsum(cp.abs((x[row] if row is not None else x).astype(cp.float64)))
            if bool(cp.any(cp.abs(got - want) > 1e-5 * scale + 1e-4)):
                return False
        return True

    impls = [("cupy", "cupy.cumsum", lambda: cp.cumsum(x, axis=axis))]
    if b.torch is not None:
        b.check_torch_stream()
        tx = b.as_torch(x)
        dim = 0 if axis is None else axis
        flat = tx if axis is not None else tx.reshape(-1)
        impls.append(("torch", "torch.cumsum", lambda: b.torch.cumsum(flat, dim=dim)))
    label = "x".join(str(e) for e in shape) + (f" axis {axis}" if axis is not None else "")
    _time_all(b, case, n, 8 * n, label, impls, close)


def _recurrence_case(b, n):
    """h = m * h + c with m = 0.5: CuPy's nearest is h_i = m^i * cumsum(c_j / m^j), which
    overflows for long sequences; it is timed for its kernels, not checked."""
    cp = b.cp
    c = b.random(n, 21)
    m = cp.full(n, 0.5, dtype=cp.float32)

    def nearest():
        p = cp.cumprod(m)
        return p * cp.cumsum(c / p)

    impls = [("cupy", "cupy cumprod + cumsum (nearest; 2 scans, 2 elementwise)", nearest)]
    _time_all(b, "scan_recurrence", n, 12 * n, "", impls, lambda _: True)


def _select_case(b, n):
    """x[x > 0]: boolean-mask selection (about half kept); GB/s of the input and the output."""
    cp = b.cp
    x = b.random(n, 31)
    kept = int(cp.count_nonzero(x > 0))

    def right(y):
        return int(y.shape[0]) == kept

    impls = [("cupy", "x[x > 0] (cupy)", lambda: x[x > 0])]
    if b.torch is not None:
        b.check_torch_stream()
        tx = b.as_torch(x)
        impls.append(("torch", "x[x > 0] (torch)", lambda: tx[tx > 0]))
    _time_all(b, "select_positive", n, 4 * n + 4 * kept, "", impls, right)


def _segments_case(b, case, count, lo, hi):
    """Segmented sums over CSR offsets with the C++ bench's lengths (numpy's Mersenne twister
    differs from C++'s, so the lengths are drawn alike, not identical): torch.segment_reduce,
    and CuPy's nearest (it has no segmented reduction): the differences of a cumsum at the
    offsets, one scan and one gather."""
    cp = b.cp
    lengths = numpy.random.default_rng(5).integers(lo, hi + 1, size=count)
    offsets = cp.asarray(numpy.concatenate([[0], numpy.cumsum(lengths)]))
    n = int(offsets[-1])
    x = b.random(n, 41)

    def close(y):
        y = cp.asarray(y).astype(cp.float64)
        for k in (0, count // 2, count - 1):
            seg = x[int(offsets[k]):int(offsets[k + 1])].astype(cp.float64)
            if abs(float(y[k]) - float(seg.sum())) > 1e-5 * float(cp.abs(seg).sum()) + 1e-4:
                return False
        return True

    def nearest():
        cs = cp.concatenate([cp.zeros(1, dtype=cp.float64), cp.cumsum(x, dtype=cp.float64)])
        return (cs[offsets[1:]] - cs[offsets[:-1]]).astype(cp.float32)

    impls = [("cupy", "cupy cumsum at the offsets (nearest; a scan and a gather)", nearest)]
    if b.torch is not None:
        b.check_torch_stream()
        tx = b.as_torch(x)
        toff = b.as_torch(offsets.astype(cp.int64))
        impls.append(("torch", "torch.segment_reduce(sum, offsets)",
                      lambda: b.torch.segment_reduce(tx, "sum", offsets=toff)))
    _time_all(b, case, n, 4 * n + 8 * count + 4, f"{count} segments of {lo}-{hi}", impls, close)


def bench_scans(b):
    """The scan cases, each freeing its arrays before the next."""
    n = 1 << (24 if b.args.quick else 28)
    m = 4096 if b.args.quick else 16384
    for case, shape, axis in (("scan_sum", (n,), None), ("scan_sum_rows", (m, m), 1),
                              ("scan_sum_short_rows", (n // 64, 64), 1)):
        _sum_case(b, case, shape, axis)
        b.free()
    _recurrence_case(b, n // 4)
    b.free()
    _select_case(b, n)
    b.free()
    q = 16 if b.args.quick else 1
    for case, count, lo, hi in (("segsum_short", (1 << 20) // q, 1, 64),
                                ("segsum_long", 1024 // q, 3 << 16, 5 << 16),
                                ("segsum_few", 16, (1 << 24) // q, (1 << 24) // q)):
        _segments_case(b, case, count, lo, hi)
        b.free()
