"""Where a new process's warm first ElementwiseKernel call spends its time from Python.
Usage: py_first.py child LIB MODE   (LIB cujit|cupy; MODE alloc|given)
       py_first.py                  (runs the children: a cold one, then 4 warm of each mode)"""
import json, os, subprocess, sys, tempfile, time

if len(sys.argv) > 1 and sys.argv[1] == "child":
    lib, mode = sys.argv[2], sys.argv[3]
    t = {}
    import cupy as cp
    if lib == "cujit":
        import cujit as k
    else:
        k = cp
    x = cp.linspace(1, 2, 1 << 20, dtype=cp.float32)
    z = cp.empty_like(x)
    cp.cuda.Device().synchronize()
    s = time.perf_counter()
    f = k.ElementwiseKernel("T x, T y", "T z", "z = (x - y) * (x - y)", "py_first_diff")
    t["construct"] = time.perf_counter() - s
    s2 = time.perf_counter()
    r = f(x, x) if mode == "alloc" else f(x, x, z)
    t["call"] = time.perf_counter() - s2
    s3 = time.perf_counter()
    cp.cuda.Device().synchronize()
    t["sync"] = time.perf_counter() - s3
    t["total"] = time.perf_counter() - s
    s4 = time.perf_counter()
    r = f(x, x) if mode == "alloc" else f(x, x, z)
    cp.cuda.Device().synchronize()
    t["second"] = time.perf_counter() - s4
    print(json.dumps({key: round(v * 1e3, 3) for key, v in t.items()}))
    sys.exit(0)

for lib in ("cujit", "cupy"):
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, CUJIT_CACHE_DIR=cache, CUPY_CACHE_DIR=cache)
        run = lambda mode, e=env: subprocess.run(
            [sys.executable, __file__, "child", lib, mode], env=e, capture_output=True,
            text=True, timeout=120)
        print(lib, "cold", run("alloc").stdout.strip())
        for mode in ("alloc", "given"):
            for _ in range(4):
                print(lib, mode, run(mode).stdout.strip())
        if lib == "cujit":
            e = dict(env, CUJIT_LOG="info", CUJIT_TRACE_SPECIALIZE="1")
            out = run("alloc", e)
            print(out.stdout.strip()); print(out.stderr.strip()[-1500:])
