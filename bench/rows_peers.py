#!/usr/bin/python3
"""rows_peers.py — membound's fused row kernels (softmax, LayerNorm, RMSNorm) on
this CPU beside PyTorch's library kernels, in one run: the same threads and
shapes, rounds alternating between the peers.

Cases per shape (f32, x [rows, cols], w and b [cols]):
  F.softmax         F.softmax(x, -1): alloc, and prealloc (aten _softmax.out)
  F.layer_norm      F.layer_norm(x, (cols,), w, b, 1e-5): alloc, and prealloc
                    (aten native_layer_norm.out; its mean and rstd outputs,
                    [rows, 1] each, preallocated too)
  F.rms_norm        F.rms_norm(x, (cols,), w, 1e-6): alloc only (no out= form)
  RMSNorm torch ops x * rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w, the
                    Hugging Face Llama form: alloc, and prealloc (the same six
                    ops, each with out= into buffers allocated once)
  membound          `membound measure softmax softmax_op layernorm rmsnorm
                    --plan fused --warm` (at least --reps samples; then until
                    the CV is 2% or 1 s): the executors write preallocated
                    outputs (their default). softmax is the hand-written form
                    fused, softmax_op the library op (one kernel either way).
A round runs every case once (its own warm-up call, then --reps timed calls,
the median; membound's measure does the same in its own process), in an order
that rotates by one each round; a case's figure is the median of its round
medians. Two ratios, membound fused over the peer (< 1: membound is faster):
with output allocation counted the same (both preallocated) and as each runs
by default (the peer allocating, membound preallocated).

usage: bench/rows_peers.py [--bin build/bin/membound] [--shapes 2^12x2^12,2^14x2^10,2^10x2^14]
       [--threads 2] [--rounds 5] [--reps 10] [--json FILE]
Runs under bench/torch_env.py's venv (made on first use). Never run by tests.
Prints the load average before and after (the machine is shared). Writes no
file but --json.
"""
import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import lecture_demos  # noqa: E402
from lecture_demos import loadavg, timed_median  # noqa: E402
import torch_env  # noqa: E402

# membound variant -> the PyTorch peers it is set beside
PEERS = {"softmax": ("F.softmax",), "softmax_op": ("F.softmax",), "layernorm": ("F.layer_norm",),
         "rmsnorm": ("F.rms_norm", "RMSNorm torch ops")}
MB_VARIANTS = ("softmax", "softmax_op", "layernorm", "rmsnorm")


def parse_shape(s):
    """'2^12x2^10' -> (4096, 1024)."""
    parts = s.lower().split("x")
    if len(parts) != 2:
        raise ValueError(s)
    return lecture_demos.parse_size(parts[0]), lecture_demos.parse_size(parts[1])



def shape_cases(torch, rows, cols):
    """{(peer, mode): zero-argument call} at one shape, each checked against
    the allocating form once; inputs uniform in [-2, 2], w and b in [0.5, 2]."""
    F = torch.nn.functional
    aten = torch.ops.aten
    gen = torch.Generator().manual_seed(1)
    x = torch.rand(rows, cols, generator=gen) * 4 - 2
    w = torch.rand(cols, generator=gen) * 1.5 + 0.5
    b = torch.rand(cols, generator=gen) * 1.5 + 0.5
    out = torch.empty_like(x)
    tmp = torch.empty_like(x)
    mean, rstd, stat = torch.empty(rows, 1), torch.empty(rows, 1), torch.empty(rows, 1)

    def rms_ops(x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w

    def rms_ops_into():
        torch.pow(x, 2, out=tmp)
        torch.mean(tmp, -1, keepdim=True, out=stat)
        torch.add(stat, 1e-6, out=stat)
        torch.rsqrt(stat, out=stat)
        torch.mul(x, stat, out=tmp)
        return torch.mul(tmp, w, out=out)

    cases = {
        ("F.softmax", "alloc"): lambda: F.softmax(x, -1),
        ("F.softmax", "prealloc"): lambda: aten._softmax.out(x, -1, False, out=out),
        ("F.layer_norm", "alloc"): lambda: F.layer_norm(x, (cols,), w, b, 1e-5),
        ("F.layer_norm", "prealloc"): lambda: aten.native_layer_norm.out(x, [cols], w, b, 1e-5, out0=out,
                                                                          out1=mean, out2=rstd)[0],
        ("RMSNorm torch ops", "alloc"): lambda: rms_ops(x),
        ("RMSNorm torch ops", "prealloc"): rms_ops_into,
    }
    if hasattr(F, "rms_norm"):
        cases[("F.rms_norm", "alloc")] = lambda: F.rms_norm(x, (cols,), w, 1e-6)
    for (peer, mode), fn in cases.items():
        if mode != "prealloc":
            continue
        ref = cases[(peer, "alloc")]()
        if not torch.allclose(ref, fn(), rtol=1e-5, atol=1e-6):
            raise RuntimeError(f"{peer} prealloc at {rows}x{cols}: differs from its allocating form")
    return cases


def membound_round(a):
    """One `membound measure` of the four variants' fused plans at every
    shape: {(variant, 'RxC'): median s}."""
    times = {}
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "m.csv")
        cmd = [a.bin, "measure", *MB_VARIANTS, "--backend", "cpu", "--device", "h100-sxm", "--plan", "fused",
               "--sizes", ",".join(f"{r}x{c}" for r, c in a.shapes), "--threads", str(a.threads), "--reps",
               str(a.reps), "--timeout", "1", "--warm", "-q", "-o", path]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                if r["verified"] != "1":
                    print(f"warning: membound {r['variant']} at {r['shape']} failed its check", file=sys.stderr)
                times[(r["variant"], r["shape"])] = float(r["time_s_median"])
    return times


def run_rounds(a, torch):
    cases = {}
    for rows, cols in a.shapes:
        for k, fn in shape_cases(torch, rows, cols).items():
            cases[(f"{rows}x{cols}",) + k] = fn
    keys = list(cases) + ["membound"]
    got = {k: [] for k in cases}
    for r in range(a.rounds):
        order = keys[r % len(keys):] + keys[:r % len(keys)]
        for k in order:
            if k == "membound":
                for (v, shape), t in membound_round(a).items():
                    got.setdefault((shape, "membound " + v, "prealloc"), []).append(t)
            else:
                got[k].append(timed_median(cases[k], a.reps))
        print(f"round {r + 1}/{a.rounds} done (load {loadavg()})", file=sys.stderr)
    return got


def report(a, got, torch, load0):
    med = {k: statistics.median(ts) for k, ts in got.items()}
    print(f"\nf32, {a.threads} threads, {a.rounds} alternating rounds of {a.reps} calls, medians (torch "
          f"{torch.__version__}); load average {load0} before, {loadavg()} after")
    print("ratio = membound fused / peer (< 1: membound faster); 'same' = both write preallocated outputs, "
          "'default' = the peer allocating as it runs by default")
    print(f"{'shape':12s} {'membound':11s} {'ms':>7s}  {'peer':18s} {'prealloc ms':>12s} {'alloc ms':>9s} "
          f"{'ratio same':>11s} {'ratio default':>14s}")
    rows = []
    f = lambda t: f"{t * 1e3:.2f}" if t else "-"
    g = lambda r: f"{r:.2f}x" if r else "-"
    for rws, cols in a.shapes:
        shape = f"{rws}x{cols}"
        for v in MB_VARIANTS:
            mine = med.get((shape, "membound " + v, "prealloc"))
            for peer in PEERS[v]:
                pre, alloc = med.get((shape, peer, "prealloc")), med.get((shape, peer, "alloc"))
                r_same = mine / pre if mine and pre else None
                r_def = mine / alloc if mine and alloc else None
                print(f"{shape:12s} {v:11s} {f(mine):>7s}  {peer:18s} {f(pre):>12s} {f(alloc):>9s} "
                      f"{g(r_same):>11s} {g(r_def):>14s}")
                rows.append({"shape": shape, "variant": v, "membound_s": mine, "peer": peer, "prealloc_s": pre,
                             "alloc_s": alloc, "ratio_same": r_same, "ratio_default": r_def})
    if a.json:
        doc = {"threads": a.threads, "rounds": a.rounds, "reps": a.reps, "torch": torch.__version__,
               "load_before": load0, "load_after": loadavg(),
               "rounds_s": {" / ".join(k): ts for k, ts in got.items()}, "table": rows}
        with open(a.json + ".tmp", "w") as fp:
            json.dump(doc, fp, indent=1)
        os.replace(a.json + ".tmp", a.json)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--bin", default=os.path.join(torch_env.default_build(), "bin", "membound"))
    ap.add_argument("--shapes", default="2^12x2^12,2^14x2^10,2^10x2^14")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--json", default="", help="also write every figure to this file")
    a = ap.parse_args(argv)
    try:
        a.shapes = [parse_shape(s) for s in a.shapes.split(",") if s]
    except ValueError as e:
        ap.error(f"--shapes: cannot read '{e}' (ROWSxCOLS, e.g. 2^12x2^10)")
    if not a.shapes or any(r < 1 or c < 1 for r, c in a.shapes):
        ap.error("--shapes: at least one shape, each side >= 1")
    if a.threads < 1 or a.rounds < 1:
        ap.error("--threads and --rounds must be >= 1")
    if a.reps < 10:
        ap.error("--reps must be >= 10 (membound measure takes at least 10 samples)")
    if not os.access(a.bin, os.X_OK):
        ap.error(f"--bin: '{a.bin}' is not an executable (build first)")
    torch_env.ensure(__file__, argv)
    import torch
    torch.set_num_threads(a.threads)
    load0 = loadavg()
    got = run_rounds(a, torch)
    report(a, got, torch, load0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
