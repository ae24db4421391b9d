#!/usr/bin/python3
"""cpu_fused.py — the fused CPU executor against hand-written SLEEF loops and numexpr, one run.

For sin2_plus_cos2, gelu_tanh and sigmoid3 (forward) at n f32 elements (default 2^24):
rounds alternate between cpu_fused_bench (the executor compiled and interpreted, three
hand-written SLEEF loops, samples alternating inside it) and numexpr
on the same expressions and thread count, so the drift of a shared machine falls on
all of them. Prints the medians over every sample and the ratios:
  fused/hand   the compiled executor over the fastest hand-written loop (target <= 1.15)
  interp/hand  the same for the interpreter
  numexpr/fused  how many times faster than numexpr (target >= 12)
and the spread (CV) of each column, to say how noisy the machine was.

usage: bench/cpu_fused.py [--bench build/bin/cpu_fused_bench] [--n 2^24] [--threads N]
                          [--rounds 5] [--reps 5]
Needs: python3-numpy, python3-numexpr (Debian). Writes no files.
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

from cpu_peers import parse_n  # the same size syntax as membound (beside this file)

VARIANTS = {
    "sin2_plus_cos2": ("sin(x)**2 + cos(x)**2",
                       lambda x: __import__("numpy").sin(x) ** 2 + __import__("numpy").cos(x) ** 2),
    "gelu_tanh": ("0.5*x*(1.0+tanh(0.7978845608*(x+0.044715*x**3)))",
                  lambda x: 0.5 * x * (1.0 + __import__("numpy").tanh(0.7978845608 * (x + 0.044715 * x ** 3)))),
    "sigmoid3_fwd": ("1/(1+exp(-(1/(1+exp(-(1/(1+exp(-x))))))))",
                     lambda x: 1 / (1 + __import__("numpy").exp(-(1 / (1 + __import__("numpy").exp(
                         -(1 / (1 + __import__("numpy").exp(-x))))))))),
}
IMPLS = ["fused", "interpreted", "plain", "group4", "group8", "numexpr"]


def cv(xs):
    return statistics.pstdev(xs) / statistics.mean(xs) if len(xs) > 1 else 0.0


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bench", default=os.path.join(here, "..", "build", "bin", "cpu_fused_bench"))
    ap.add_argument("--n", default="2^24")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    if not os.access(a.bench, os.X_OK):
        print(f"cpu_fused.py: error: no benchmark binary {a.bench} (build the cpu_fused_bench target)",
              file=sys.stderr)
        return 2
    try:
        import numpy as np
        import numexpr as ne
    except ImportError:
        print("cpu_fused.py: error: needs python3-numpy and python3-numexpr (apt-get install "
              "python3-numexpr)", file=sys.stderr)
        return 2
    n = parse_n(a.n)
    ne.set_num_threads(a.threads)
    x = np.random.default_rng(1).uniform(-2, 2, n).astype(np.float32)
    for v, (expr, ref) in VARIANTS.items():  # numexpr computes what the others do
        got = ne.evaluate(expr, local_dict={"x": x[:100000]})
        want = ref(x[:100000].astype(np.float64))
        err = float(np.max(np.abs(got - want) / np.maximum(np.abs(want), 1e-3)))
        if not err <= 1e-5:
            print(f"cpu_fused.py: error: numexpr {v} differs from float64 by {err:.3g}", file=sys.stderr)
            return 1

    samples = {(v, i): [] for v in VARIANTS for i in IMPLS}
    for _ in range(a.rounds):
        out = subprocess.run([a.bench, "--raw", "--n", str(n), "--reps", str(a.reps),
                              "--threads", str(a.threads)], check=True, capture_output=True,
                             text=True).stdout
        for line in out.splitlines():
            v, impl, s = line.split(",")
            samples[(v, impl)].append(float(s))
        for v, (expr, _) in VARIANTS.items():
            ne.evaluate(expr, local_dict={"x": x})  # warm-up
            for _ in range(a.reps):
                t0 = time.perf_counter()
                ne.evaluate(expr, local_dict={"x": x})
                samples[(v, "numexpr")].append(time.perf_counter() - t0)

    print(f"n = {n} f32, {a.threads} threads, {a.rounds} rounds x {a.reps} samples per column "
          f"(numexpr {ne.__version__}); medians in ms, CV in brackets")
    print(f"{'variant':15s}" + "".join(f" {i:>15s}" for i in IMPLS)
          + f" {'fused/hand':>10s} {'interp/hand':>11s} {'numexpr/fused':>13s}")
    for v in VARIANTS:
        med = {i: statistics.median(samples[(v, i)]) for i in IMPLS}
        cells = "".join(f" {med[i] * 1e3:8.2f} ({cv(samples[(v, i)]) * 100:3.0f}%)" for i in IMPLS)
        hand = min(med["plain"], med["group4"], med["group8"])
        print(f"{v:15s}{cells} {med['fused'] / hand:10.3f} {med['interpreted'] / hand:11.3f}"
              f" {med['numexpr'] / med['fused']:13.2f}")
    print("hand = the fastest of the hand-written SLEEF loops (plain, grouped by 4, by 8); "
          "fused/hand <= 1.15 and numexpr/fused >= 12 are the targets")
    return 0


if __name__ == "__main__":
    sys.exit(main())
