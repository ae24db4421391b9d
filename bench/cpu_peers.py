#!/usr/bin/python3
"""cpu_peers.py — our CPU executors against numexpr and PyTorch eager on the CPU.

Runs the lecture's expressions at one size (default n = 2^24, f32) with the same
thread count everywhere, and prints medians and time ratios:
  fused (ours, blocked)   vs numexpr        (both evaluate in cache-sized blocks)
  eager (ours, op-at-a-time) vs torch eager (one pass per op, autograd for sigmoid3)
Byte counts are never written here: they come from `membound model --json`.
Our times come from `membound measure` (same protocol as the CSVs: warm-up,
>= 10 samples, median; --warm, as the Python loops below are warm too).

usage: bench/cpu_peers.py [--bin build/bin/membound] [--n 2^24] [--threads N] [--reps 10]
Needs: python3-numpy, python3-numexpr; python3-torch optional (skipped if absent).
Does not write files other than a temporary CSV.
"""
import argparse
import csv
import io
import json
import os
import subprocess
import sys
import tempfile
import time

# The lecture's expressions, as each peer writes them. sigmoid3 runs forward
# and backward (torch autograd; numexpr has no autograd: forward only).
EXPRS = {
    "sin2_plus_cos2": "sin(x)**2 + cos(x)**2",
    "gelu_tanh": "0.5*x*(1.0+tanh(0.7978845608*(x+0.044715*x**3)))",
    "copy": None,
    "sigmoid3": None,
}


def parse_n(s):
    s = s.strip()
    if "^" in s:
        b, e = s.split("^")
        return int(b) ** int(e)
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    if s[-1] in mult:
        return int(s[:-1]) * mult[s[-1]]
    return int(s)


def median(xs):
    xs = sorted(xs)
    m = len(xs) // 2
    return xs[m] if len(xs) % 2 else 0.5 * (xs[m - 1] + xs[m])


def bench(fn, reps):
    fn()  # warm-up
    fn()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return median(ts)


def model_bytes(binary, variant, n):
    out = subprocess.run([binary, "model", variant, "--n", str(n), "--json"],
                         check=True, capture_output=True, text=True).stdout
    res = json.loads(out)["results"]
    return {r["plan"]: r["read_bytes"] + r["write_bytes"] for r in res}


def ours(binary, variants, n, threads, reps):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "ours.csv")
        cmd = [binary, "measure", "--backend", "cpu", "--device", "h100-sxm", "--sizes", str(n),
               "--threads", str(threads), "--reps", str(reps), "--warm", "-q", "-o", path] + variants
        return run_ours(cmd, path)


def ours_expr(binary, expr, plan, n, threads, reps):
    """Our time for one --expr and plan (forward-only sigmoid3 for numexpr)."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "ours.csv")
        cmd = [binary, "measure", "--backend", "cpu", "--device", "h100-sxm", "--sizes", str(n),
               "--threads", str(threads), "--reps", str(reps), "--warm", "-q", "-o", path,
               "--expr", expr, "--plan", plan]
        return run_ours(cmd, path)[("expr", plan)]


def run_ours(cmd, path):
    if True:
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        with open(path) as f:
            rows = [r for r in csv.DictReader(l for l in f if not l.startswith("#"))]
    times = {}
    for r in rows:
        if r["verified"] != "1":
            print(f"warning: {r['variant']} {r['plan']} failed its check", file=sys.stderr)
        times[(r["variant"], r["plan"])] = float(r["time_s_median"])
    return times


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--bin", default=os.path.join(here, "..", "build", "bin", "membound"))
    ap.add_argument("--n", default="2^24")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--reps", type=int, default=10)
    a = ap.parse_args()
    n = parse_n(a.n)

    import numpy as np
    import numexpr as ne
    ne.set_num_threads(a.threads)
    try:
        import torch
        torch.set_num_threads(a.threads)
    except ImportError:
        torch = None
        print("note: PyTorch not installed (apt-get install python3-torch): torch columns skipped",
              file=sys.stderr)

    variants = list(EXPRS)
    mine = ours(a.bin, variants, n, a.threads, a.reps)
    sig3_fwd = ours_expr(a.bin, "y = sigmoid(sigmoid(sigmoid(x)))", "fused", n, a.threads, a.reps)
    rng = np.random.default_rng(1)
    x = rng.uniform(-2, 2, n).astype(np.float32)
    g = rng.uniform(-1, 1, n).astype(np.float32)

    peer = {}
    peer[("sin2_plus_cos2", "numexpr")] = bench(lambda: ne.evaluate(EXPRS["sin2_plus_cos2"], local_dict={"x": x}), a.reps)
    peer[("gelu_tanh", "numexpr")] = bench(lambda: ne.evaluate(EXPRS["gelu_tanh"], local_dict={"x": x}), a.reps)
    peer[("copy", "numexpr")] = bench(lambda: ne.evaluate("x", local_dict={"x": x}), a.reps)
    peer[("sigmoid3", "numexpr")] = bench(
        lambda: ne.evaluate("1/(1+exp(-(1/(1+exp(-(1/(1+exp(-x))))))))", local_dict={"x": x}), a.reps)
    if torch is not None:
        tx = torch.from_numpy(x)
        tg = torch.from_numpy(g)
        peer[("sin2_plus_cos2", "torch")] = bench(lambda: torch.sin(tx) ** 2 + torch.cos(tx) ** 2, a.reps)
        peer[("gelu_tanh", "torch")] = bench(
            lambda: 0.5 * tx * (1.0 + torch.tanh(0.7978845608 * (tx + 0.044715 * tx ** 3))), a.reps)
        peer[("copy", "torch")] = bench(lambda: tx.clone(), a.reps)

        def sig3():
            xr = tx.detach().requires_grad_(True)
            y = torch.sigmoid(torch.sigmoid(torch.sigmoid(xr)))
            y.backward(tg)
            return xr.grad
        peer[("sigmoid3", "torch")] = bench(sig3, a.reps)

    print(f"n = {n}, f32, {a.threads} threads, medians of {a.reps} (numexpr {ne.__version__}"
          + (f", torch {torch.__version__}" if torch is not None else "") + ")")
    print(f"{'variant':16s} {'ours eager':>11s} {'ours fused':>11s} {'numexpr':>11s} {'torch':>11s}"
          f" {'numexpr/fused':>14s} {'torch/eager':>12s} {'eager GB/s':>11s}")
    for v in variants:
        eager = mine.get((v, "eager"))
        fused = mine.get((v, "fused")) or mine.get((v, "recompute"))
        nx = peer.get((v, "numexpr"))
        tt = peer.get((v, "torch"))
        b = model_bytes(a.bin, v, n).get("eager")
        f = lambda t: f"{t * 1e3:9.2f}ms" if t else f"{'-':>11s}"
        r1 = f"{nx / fused:13.2f}x" if nx and fused else f"{'-':>14s}"
        r2 = f"{tt / eager:11.2f}x" if tt and eager else f"{'-':>12s}"
        gbs = f"{b / eager / 1e9:11.2f}" if b and eager else f"{'-':>11s}"
        print(f"{v:16s} {f(eager)} {f(fused)} {f(nx)} {f(tt)} {r1} {r2} {gbs}")
    nx = peer[("sigmoid3", "numexpr")]
    print(f"{'sigmoid3 fwd':16s} {'-':>11s} {sig3_fwd * 1e3:9.2f}ms {nx * 1e3:9.2f}ms {'-':>11s}"
          f" {nx / sig3_fwd:13.2f}x {'-':>12s} {'-':>11s}")
    print("ratios > 1: ours is faster. sigmoid3: forward + backward (ours fused column = recompute "
          "plan; torch = autograd); sigmoid3 fwd: the forward alone, fused, against numexpr.")


if __name__ == "__main__":
    main()
