"""cProfile of a new process's first warm ElementwiseKernel call from Python (CuPy arrays):
which Python-visible calls (CuPy's, cujit's Python layer) its time goes to.
Usage: py_first_profile.py [child]   (needs a cache directory a first run filled)"""
import cProfile, os, pstats, subprocess, sys, tempfile, time

if len(sys.argv) > 1:
    import cupy as cp
    import cujit
    x = cp.linspace(1, 2, 1 << 20, dtype=cp.float32)
    z = cp.empty_like(x)
    cp.cuda.Device().synchronize()
    f = cujit.ElementwiseKernel("T x, T y", "T z", "z = (x - y) * (x - y)", "py_first_diff")
    time.sleep(0.01)
    prof = cProfile.Profile()
    t3 = time.perf_counter()
    prof.enable(); f(x, x, z); prof.disable()
    t4 = time.perf_counter()
    f(x, x, z)
    print("call %.3f ms (profiled)" % ((t4 - t3) * 1e3))
    pstats.Stats(prof).sort_stats("tottime").print_stats(3)
    sys.exit(0)
with tempfile.TemporaryDirectory() as cache:
    env = dict(os.environ, CUJIT_CACHE_DIR=cache)
    for _ in range(3):
        out = subprocess.run([sys.executable, __file__, "child"], env=env, capture_output=True, text=True)
        print(out.stdout[-3000:], out.stderr[-1000:])
