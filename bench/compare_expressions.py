"""PyTorch (eager and torch.compile) and CuPy on the cases of bench/expression_bench.cpp.

Imported by compare.py (section "expressions"), which times them with its Bench: the tanh-GELU
of 2^28 float32, sum((x - y)^2) per row of 8192 x 8192, and a row softmax of (4096, 50257).
Records use the C++ bench's case names (expr_gelu, expr_sqdiff_rows, expr_softmax_rows) with
bench "torch" (eager), "torch_compile", "torch_fused" (a one-kernel library call:
F.gelu(approximate="tanh"), torch.softmax) and "cupy" (the same operators on cupy arrays).
"""


def _gelu(lib_tanh):
    def gelu(x):
        return 0.5 * x * (1.0 + lib_tanh(0.7978845608 * (x + 0.044715 * x * x * x)))

    return gelu


def _compiled(b, fn):
    """torch.compile(fn), or None where Inductor cannot run here (reported, not fatal)."""
    try:
        return b.torch.compile(fn, dynamic=False)
    except Exception as error:  # noqa: BLE001 - a missing Triton or compiler is reported
        print(f"  torch.compile unavailable: {error}")
        return None


def _time_all(b, case, size, nbytes, shape, impls, check):
    """Times each (bench, label, call) of `impls`; `check(result)` says whether it is right."""
    for bench, label, call in impls:
        try:
            result = call()
        except Exception as error:  # noqa: BLE001 - torch.compile may fail at its first call
            print(f"  {bench} {case}: {error.__class__.__name__}: {str(error)[:200]}")
            continue
        timing = b.time_device(lambda _: call())
        ok = check(call())
        b.record(bench, case, size, nbytes, timing, shape=shape,
                 note=b.verdict(ok, f"{bench} {case}") or label)
        result = None  # noqa: F841 - released before the next implementation


def bench_gelu(b):
    cp = b.cp
    n = 1 << (24 if b.args.quick else 28)
    x = b.random(n, 11)
    ref = _gelu(cp.tanh)(x.astype(cp.float64))

    def close(y):
        return bool(cp.max(cp.abs(cp.asarray(y, dtype=cp.float64) - ref)) < 1e-5)

    impls = [("cupy", "cupy operators (one kernel per operator)", lambda: _gelu(cp.tanh)(x))]
    if b.torch is not None:
        b.check_torch_stream()
        torch = b.torch
        tx = b.as_torch(x)
        eager = _gelu(torch.tanh)
        impls.append(("torch", "torch eager operators", lambda: eager(tx)))
        compiled = _compiled(b, eager)
        if compiled is not None:
            impls.append(("torch_compile", "torch.compile (Inductor)", lambda: compiled(tx)))
        impls.append(("torch_fused", "torch.nn.functional.gelu(approximate='tanh')",
                      lambda: torch.nn.functional.gelu(tx, approximate="tanh")))
    _time_all(b, "expr_gelu", n, 8 * n, "", impls, close)


def bench_sqdiff_rows(b):
    cp = b.cp
    m = 2048 if b.args.quick else 8192
    x, y = b.random(m * m, 21, (m, m)), b.random(m * m, 22, (m, m))
    d = x.astype(cp.float64) - y.astype(cp.float64)
    ref = cp.sum(d * d, axis=1)

    def close(v):
        return bool(cp.max(cp.abs(cp.asarray(v, dtype=cp.float64) - ref) / ref) < 1e-5)

    impls = [("cupy", "cupy operators and sum", lambda: cp.sum((x - y) * (x - y), axis=1))]
    if b.torch is not None:
        b.check_torch_stream()
        torch = b.torch
        tx, ty = b.as_torch(x), b.as_torch(y)

        def eager(a, c):
            return ((a - c) * (a - c)).sum(dim=1)

        impls.append(("torch", "torch eager operators and sum", lambda: eager(tx, ty)))
        compiled = _compiled(b, eager)
        if compiled is not None:
            impls.append(("torch_compile", "torch.compile (Inductor)", lambda: compiled(tx, ty)))
    _time_all(b, "expr_sqdiff_rows", m * m, 8 * m * m + 4 * m, f"{m}x{m} axis 1", impls, close)


def bench_softmax_rows(b):
    cp = b.cp
    rows, cols = (512, 50257) if b.args.quick else (4096, 50257)
    x = b.random(rows * cols, 31, (rows, cols))

    def close(p):
        p = cp.asarray(p)
        return bool(cp.max(cp.abs(cp.sum(p, axis=1, dtype=cp.float64) - 1.0)) < 1e-4)

    impls = []
    if b.torch is not None:
        b.check_torch_stream()
        torch = b.torch
        tx = b.as_torch(x)

        def eager(a):
            return torch.exp(a - torch.logsumexp(a, dim=1, keepdim=True))

        impls.append(("torch_fused", "torch.softmax(dim=1)", lambda: torch.softmax(tx, dim=1)))
        impls.append(("torch", "torch eager exp(x - logsumexp(x, 1, keepdim))", lambda: eager(tx)))
        compiled = _compiled(b, eager)
        if compiled is not None:
            impls.append(("torch_compile", "torch.compile (Inductor)", lambda: compiled(tx)))
    try:
        import cupyx.scipy.special as special

        impls.append(("cupy", "cupyx.scipy.special.softmax(axis=1)",
                      lambda: special.softmax(x, axis=1)))
    except ImportError:
        pass
    _time_all(b, "expr_softmax_rows", rows * cols, 8 * rows * cols, f"{rows}x{cols} axis 1",
              impls, close)


def bench_expressions(b):
    """The three expression cases, each freeing its arrays before the next."""
    for case in (bench_gelu, bench_sqdiff_rows, bench_softmax_rows):
        case(b)
        b.free()


SUMMARY_CASES = [("GELU 2^28", "expr_gelu"), ("sum (x-y)^2 rows", "expr_sqdiff_rows"),
                 ("softmax rows", "expr_softmax_rows")]
SUMMARY_COLUMNS = [("cujit", "cujit_expression"), ("twin", "cujit_"),
                   ("raw", "raw_gelu_f32x4"), ("torch", "torch"), ("compile", "torch_compile"),
                   ("fused", "torch_fused"), ("cupy", "cupy")]


def summary(records):
    """Prints the expression cases: median us per implementation, cujit's ratio to the copy
    and how many times faster cujit is than each PyTorch variant."""
    def find(bench, case):
        if bench == "cujit_":  # the snippet twin: cujit's elementwise or reduction bench
            found = [r for r in records if r.get("case") == case
                     and r.get("bench") in ("cujit_elementwise", "cujit_reduction")]
        else:
            found = [r for r in records if r.get("case") == case and r.get("bench") == bench]
        return found[-1] if found else None

    rows = [(label, case) for label, case in SUMMARY_CASES if find("cujit_expression", case)]
    if not rows:
        return
    print(f"\n{'expressions (median us)':24s}" + "".join(f"{c[0]:>9s}" for c in SUMMARY_COLUMNS)
          + f"{'x copy':>8s}{'/torch':>8s}{'/compile':>9s}{'/fused':>8s}")
    for label, case in rows:
        cells, us = "", {}
        for name, bench in SUMMARY_COLUMNS:
            r = find(bench, case)
            us[name] = r.get("us") if r else None
            cells += f"{us[name]:9.1f}" if us[name] else f"{'-':>9s}"
        mine = find("cujit_expression", case)
        ratio = f"{mine['ratio']:8.3f}" if mine.get("ratio") else f"{'-':>8s}"
        speedups = "".join(
            (f"{us[k] / us['cujit']:{w}.2f}" if us.get(k) and us["cujit"] else f"{'-':>{w}s}")
            for k, w in (("torch", 8), ("compile", 9), ("fused", 8)))
        print(f"{label:24s}{cells}{ratio}{speedups}")
    host = [r for r in records if r.get("case") == "expr_host_call_1elem"]
    for r in host:
        print(f"  host per 1-element call, {r['bench']}: {r['us']:.3f} us ({r['ratio']:.2f} x the kernel)")
