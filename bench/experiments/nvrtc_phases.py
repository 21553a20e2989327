# Issue 20 experiment: where NVRTC's time goes for cujit's generated kernels (golden corpus),
# and what -minimal saves. Medians of 5 compiles per variant in this process (NVRTC loaded and
# warmed up first), plus one -fdevice-time-trace per kernel summed by phase.
import ctypes, glob, json, os, statistics, sys, tempfile, time
lib = ctypes.CDLL(os.environ.get("NVRTC", "libnvrtc.so.13"))
def compile_ms(src, opts):
    prog = ctypes.c_void_p()
    lib.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), b"k.cu", 0, None, None)
    arr = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
    t = time.perf_counter(); r = lib.nvrtcCompileProgram(prog, len(opts), arr)
    dt = (time.perf_counter() - t) * 1e3
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
    if r: raise RuntimeError(f"nvrtc {r}")
    return dt
inc = os.environ.get("CUDA_INC", "/usr/local/cuda/include")
root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../tests/codegen/golden")
names = sys.argv[1:] or ["ew_vectorized_f32", "ew_tiled2d_transposed", "red_rows_block_per_row",
                         "red_segments_two_pass_vec", "red_columns_two_pass_vec"]
compile_ms('extern "C" __global__ void k(float* x) { x[0] = 1; }', ["-arch=sm_90"])
empty = 'extern "C" __global__ void k(float* x) { x[threadIdx.x] = 1.0f; }'
base = ["-arch=sm_90", "-std=c++17", "-default-device"]
for label, opts in (("empty kernel", base), ("empty kernel -minimal", base + ["-minimal"])):
    print(f"{label:40s} {statistics.median(compile_ms(empty, opts) for _ in range(5)):7.2f} ms")
for name in names:
    lines = open(f"{root}/{name}.txt").read().split("\n")
    extra = [o.replace("-I<cuda-include>", "-I" + inc) for o in lines[1][len("// options:"):].split()]
    src = "\n".join(lines[2:])
    row = []
    for opts in (base + extra, base + extra + ["-minimal"], ["-arch=compute_90"] + base[1:] + extra):
        row.append(statistics.median(compile_ms(src, opts) for _ in range(5)))
    with tempfile.TemporaryDirectory() as d:
        trace = f"{d}/t.json"
        compile_ms(src, base + extra + [f"-fdevice-time-trace={trace}"])
        phases = {}
        try:
            ev = json.load(open(trace + ".json" if os.path.exists(trace + ".json") else trace))
            ev = ev.get("traceEvents", ev) if isinstance(ev, dict) else ev
            for e in ev:
                if e.get("ph") == "X" and e.get("dur"):
                    phases[e["name"]] = phases.get(e["name"], 0) + e["dur"] / 1e3
        except Exception as ex:
            print("trace:", ex, os.listdir(d))
        top = sorted(phases.items(), key=lambda kv: -kv[1])[:8]
    print(f"{name:32s} cubin {row[0]:6.2f}  -minimal {row[1]:6.2f}  PTX only {row[2]:6.2f} ms; "
          + ", ".join(f"{k} {v:.1f}" for k, v in top))
