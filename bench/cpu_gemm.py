#!/usr/bin/python3
"""cpu_gemm.py — the model of a GEMM on this CPU against OpenBLAS's
cblas_sgemm timed on it, over fixed shapes (square, skinny, a GEMV, batched).

The model is `membound gemm --device SPEC --json` on a spec that `membound
calibrate` wrote: its gemm_gflops is one f32 product at the declared shape
(1024^3, calibrate/cal_int.h), so every other shape here judges it. The
measured side calls OpenBLAS's cblas_sgemm through ctypes (the library
kernels/gemm_cpu.c loads: pkg-config's `openblas64`, else `openblas`), row-major, f32,
on as many BLAS threads as the spec's sm_count (calibrate's threads); a
batched shape is that many calls in a loop (PyTorch's CPU bmm loops over
the batch too). Each shape: one warm-up call, then calls until --min-s and at
least --reps have run; the median and the minimum. Prints model / measured
for both (a ratio, not a verdict: nothing is asserted) and the load average
before and after, as a shared host's state moves every figure.

A peer column: PyTorch's CPU torch.matmul (torch.bmm for a batch) at the same
shapes on the same threads (torch.set_num_threads), timed the same way, and
ours / torch. It runs under bench/torch_env.py's venv when one exists under
--torch-build (never made here: that downloads), else under this python's
torch, else the column is left out. --compare BIN adds the model of another
membound binary (the model before a change) on the same spec, beside the same
measurements.

  bench/cpu_gemm.py [--spec FILE.ini] [--membound BIN] [--compare BIN] [--reps N] [--min-s S]
                    [--torch-build DIR] [--no-torch]

Without --spec it runs `membound calibrate -o` into a temporary file first."""
import argparse
import ctypes
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_env  # noqa: E402

# (name, m, n, k, batch): the calibration's 1024^3 is among them, as a check
SHAPES = [
    ("square", 512, 512, 512, 1),
    ("square", 1024, 1024, 1024, 1),
    ("square", 2048, 2048, 2048, 1),
    ("square", 4096, 4096, 4096, 1),
    ("skinny k", 4096, 4096, 64, 1),
    ("skinny n", 4096, 64, 4096, 1),
    ("tall m", 16384, 512, 512, 1),
    ("gemv", 8192, 1, 8192, 1),
    ("batched", 256, 256, 256, 64),
    ("batched", 512, 512, 64, 32),
]

CBLAS_ROW_MAJOR, CBLAS_NO_TRANS = 101, 111


def openblas():
    """OpenBLAS as kernels/gemm_cpu.c loads it: the 64-bit build (openblas64,
    64-bit indices) first, else the usual one."""
    for pc, index in (("openblas64", ctypes.c_int64), ("openblas", ctypes.c_int)):
        libdir = subprocess.run(["pkg-config", "--variable=libdir", pc], capture_output=True, text=True,
                                check=False).stdout.strip()
        if libdir:
            break
    else:
        sys.exit("cpu_gemm.py: error: no OpenBLAS (apt-get install libopenblas64-openmp-dev)")
    path = os.path.join(libdir, f"lib{pc}.so.0")
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        sys.exit(f"cpu_gemm.py: error: cannot load OpenBLAS ({path}): {e}")
    f = ctypes.POINTER(ctypes.c_float)
    i = index
    lib.cblas_sgemm.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, i, i, i,
                                ctypes.c_float, f, i, f, i, ctypes.c_float, f, i]
    lib.cblas_sgemm.restype = None
    lib.openblas_set_num_threads.argtypes = [ctypes.c_int]
    lib.openblas_get_config.restype = ctypes.c_char_p
    return lib


def measure(lib, m, n, k, batch, reps, min_s):
    rng = np.random.default_rng(1)
    a = [rng.standard_normal((m, k), dtype=np.float32) for _ in range(batch)]
    b = [rng.standard_normal((k, n), dtype=np.float32) for _ in range(batch)]
    c = [np.zeros((m, n), dtype=np.float32) for _ in range(batch)]
    fp = ctypes.POINTER(ctypes.c_float)
    args = [(x.ctypes.data_as(fp), y.ctypes.data_as(fp), z.ctypes.data_as(fp)) for x, y, z in zip(a, b, c)]

    def call():
        for pa, pb, pc in args:
            lib.cblas_sgemm(CBLAS_ROW_MAJOR, CBLAS_NO_TRANS, CBLAS_NO_TRANS, m, n, k, 1.0, pa, k, pb, n, 0.0, pc, n)

    call()
    # the product checked on sampled entries against float64 (a wrong
    # layout would time the wrong product)
    for i, j in [(0, 0), (m - 1, n - 1), (m // 2, n // 3)]:
        ref = float(np.dot(a[-1][i, :].astype(np.float64), b[-1][:, j].astype(np.float64)))
        if abs(c[-1][i, j] - ref) > 1e-3 * (1 + abs(ref)) * max(1.0, k ** 0.5):
            sys.exit(f"cpu_gemm.py: error: sgemm {m}x{n}x{k}: C[{i},{j}] = {c[-1][i, j]} against {ref}")
    times = []
    t_end = time.perf_counter() + min_s
    while len(times) < reps or time.perf_counter() < t_end:
        t0 = time.perf_counter()
        call()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), min(times)


def measure_torch(torch, m, n, k, batch, reps, min_s):
    """torch.matmul (bmm for a batch) timed as measure() times the BLAS."""
    g = torch.Generator().manual_seed(1)
    shape_a, shape_b = ((batch, m, k), (batch, k, n)) if batch > 1 else ((m, k), (k, n))
    a = torch.randn(shape_a, generator=g, dtype=torch.float32)
    b = torch.randn(shape_b, generator=g, dtype=torch.float32)
    c = torch.matmul(a, b)
    a64, b64, c64 = (a.double(), b.double(), c.double())
    for i, j in [(0, 0), (m - 1, n - 1), (m // 2, n // 3)]:
        ref = float((a64[..., i, :] * b64[..., :, j]).sum(-1).flatten()[-1])
        got = float(c64[..., i, j].flatten()[-1])
        if abs(got - ref) > 1e-3 * (1 + abs(ref)) * max(1.0, k ** 0.5):
            sys.exit(f"cpu_gemm.py: error: torch.matmul {m}x{n}x{k}: C[{i},{j}] = {got} against {ref}")
    times = []
    t_end = time.perf_counter() + min_s
    while len(times) < reps or time.perf_counter() < t_end:
        t0 = time.perf_counter()
        torch.matmul(a, b, out=c)
        times.append(time.perf_counter() - t0)
    return statistics.median(times), min(times)


def model(membound, spec, m, n, k, batch):
    r = subprocess.run([membound, "gemm", "--mnk", f"{m}x{n}x{k}", "--batch", str(batch), "--device", spec,
                        "--json"], capture_output=True, text=True, check=False)
    if r.returncode:
        sys.exit(f"cpu_gemm.py: error: membound gemm: {r.stderr.strip()}")
    return json.loads(r.stdout)["results"][0]


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--spec", help="a CPU spec from membound calibrate (default: calibrate now)")
    ap.add_argument("--membound", default=os.path.join(here, "..", "build", "bin", "membound"))
    ap.add_argument("--compare", help="another membound binary: its model too (before a change)")
    ap.add_argument("--torch-build", default=torch_env.default_build(),
                    help="the build folder whose bench-venv holds PyTorch (default: this checkout's)")
    ap.add_argument("--no-torch", action="store_true", help="leave the PyTorch column out")
    ap.add_argument("--reps", type=int, default=5, help="timed calls per shape, at least (default 5)")
    ap.add_argument("--min-s", type=float, default=0.3, help="seconds of timed calls per shape, at least")
    o = ap.parse_args()
    if o.reps < 1 or o.min_s < 0:
        ap.error("--reps is at least 1 and --min-s at least 0")
    if not o.no_torch:
        torch_env.ensure(__file__, sys.argv[1:], required=False, build=o.torch_build)
    torch = None
    if not o.no_torch:
        try:
            import torch  # noqa: F811
        except ImportError:
            print(f"no torch under {sys.executable}: the PyTorch column is left out")
    tmp = None
    spec = o.spec
    if not spec:
        tmp = tempfile.NamedTemporaryFile(suffix=".ini", delete=False)
        tmp.close()
        spec = tmp.name
        print(f"calibrating: {o.membound} calibrate -o {spec}", flush=True)
        r = subprocess.run([o.membound, "calibrate", "-o", spec], capture_output=True, text=True, check=False)
        if r.returncode:
            sys.exit(f"cpu_gemm.py: error: calibrate: {r.stderr.strip()}")
    try:
        dev = json.loads(subprocess.run([o.membound, "devices", "--device", spec, "--json"], capture_output=True,
                                        text=True, check=True).stdout)["devices"][0]
        if dev["kind"] != "cpu":
            sys.exit(f"cpu_gemm.py: error: {spec} is a {dev['kind']} spec, not a CPU's")
        threads = int(dev["sm_count"]) or os.cpu_count()
        lib = openblas()
        lib.openblas_set_num_threads(threads)
        print(f"spec {spec}: gemm_gflops {dev.get('gemm_gflops')}, fp32_tflops {dev['fp32_tflops']}, "
              f"{threads} threads; {lib.openblas_get_config().decode()}")
        if torch is not None:
            torch.set_num_threads(threads)
            print(f"PyTorch {torch.__version__} ({sys.executable}), {torch.get_num_threads()} threads, "
                  f"BLAS {torch.backends.mkl.is_available() and 'MKL' or 'not MKL'}")
        print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        print(f"{'shape':10} {'MxNxK':>18} {'batch':>5} {'measured':>10} {'min':>10} {'GFLOP/s':>8} "
              f"{'model':>10} {'bound':>7} {'model/med':>9} {'model/min':>9}"
              + (f" {'before':>10} {'bef/med':>8}" if o.compare else "")
              + (f" {'torch':>10} {'torch min':>10} {'ours/torch':>10}" if torch is not None else ""))
        ratios, before = [], []
        for name, m, n, k, batch in SHAPES:
            med, mn = measure(lib, m, n, k, batch, o.reps, o.min_s)
            e = model(o.membound, spec, m, n, k, batch)
            flops = 2.0 * m * n * k * batch
            ratios.append(e["time_s"] / med)
            line = (f"{name:10} {f'{m}x{n}x{k}':>18} {batch:5d} {med * 1e3:8.3f}ms {mn * 1e3:8.3f}ms "
                    f"{flops / med / 1e9:8.1f} {e['time_s'] * 1e3:8.3f}ms {e['bound']:>7} {e['time_s'] / med:9.3f} "
                    f"{e['time_s'] / mn:9.3f}")
            if o.compare:
                b = model(o.compare, spec, m, n, k, batch)
                before.append(b["time_s"] / med)
                line += f" {b['time_s'] * 1e3:8.3f}ms {b['time_s'] / med:8.3f}"
            if torch is not None:
                tmed, tmin = measure_torch(torch, m, n, k, batch, o.reps, o.min_s)
                line += f" {tmed * 1e3:8.3f}ms {tmin * 1e3:8.3f}ms {med / tmed:10.3f}"
            print(line, flush=True)
        print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        for label, r in (("model", ratios), ("before", before)):
            if r:
                big = [x for x, s in zip(r, SHAPES) if min(s[1:4]) >= 512]
                print(f"{label} / measured median: geometric mean {statistics.geometric_mean(r):.3f}, "
                      f"range {min(r):.3f}-{max(r):.3f} over {len(r)} shapes; within 15% on "
                      f"{sum(abs(x - 1) <= 0.15 for x in r)} of {len(r)} "
                      f"({sum(abs(x - 1) <= 0.15 for x in big)} of {len(big)} with every size >= 512)")
    finally:
        if tmp:
            os.unlink(tmp.name)


if __name__ == "__main__":
    main()
