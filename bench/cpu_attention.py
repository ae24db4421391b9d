#!/usr/bin/python3
"""cpu_attention.py — membound's CPU attention (`membound attention --measure`:
the standard plan through OpenBLAS and the FlashAttention-2 tiled kernel,
kernels/attn_cpu.c) side by side with PyTorch on the same CPU: the fused
`F.scaled_dot_product_attention` (PyTorch's CPU flash kernel where it takes
it) and the eager formula softmax(q @ k^T * scale [+ mask]) @ v, at the same
shapes (batch, heads, seq, head_dim; f32) and threads (torch.set_num_threads,
membound --threads). Forward, or forward and backward with --backward (the
gradient of o given, as membound's plans take it).

Each PyTorch case: one warm-up call, then calls until --min-s and at least
--reps have run; the median and the minimum. membound's rows are its own
protocol's (the cache evicted before each sample; PyTorch's samples run
warm, which favours PyTorch a little at the smaller seqs). Also printed: the
model's time for each plan on the spec (model / measured), and the load
average before and after each seq, as a shared host's load moves every
figure. Prints ratios; asserts nothing.

  bench/cpu_attention.py [--seqs 512,1024,2048,4096] [--batch 1] [--heads 8]
      [--head-dim 64] [--causal] [--backward] [--threads N] [--min-s S]
      [--reps N] [--membound BIN] [--spec FILE.ini] [--no-membound]

Runs under bench/torch_env.py's venv when one exists (never makes one: it
would download), else this interpreter's torch (Debian's python3-torch)."""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import torch_env  # noqa: E402


def load():
    try:
        return os.getloadavg()
    except OSError:
        return (float("nan"),) * 3


def timed(fn, reps, min_s):
    fn()
    ts = []
    start = time.perf_counter()
    while len(ts) < reps or time.perf_counter() - start < min_s:
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
        if len(ts) >= 200:
            break
    return statistics.median(ts), min(ts)


def torch_cases(torch, args, seq):
    F = torch.nn.functional
    g = torch.Generator().manual_seed(1)
    shape = (args.batch, args.heads, seq, args.head_dim)
    q, k, v = ((torch.rand(shape, generator=g) * 4 - 2) for _ in range(3))
    do = torch.rand(shape, generator=g) * 2 - 1
    scale = 1.0 / math.sqrt(args.head_dim)
    mask = None
    if args.causal:
        mask = torch.full((seq, seq), float("-inf")).triu(1)
    if args.backward:
        for t in (q, k, v):
            t.requires_grad_(True)

    def sdpa():
        return F.scaled_dot_product_attention(q, k, v, is_causal=bool(args.causal))

    def eager():
        s = (q @ k.transpose(-2, -1)) * scale
        if mask is not None:
            s = s + mask
        return torch.softmax(s, -1) @ v

    def run(f):
        def go():
            if args.backward:
                for t in (q, k, v):
                    t.grad = None
                f().backward(do)
            else:
                with torch.no_grad():
                    f()
        return go

    # the same o from both, as a sanity check of the comparison (not a verdict)
    with torch.no_grad():
        diff = (sdpa() - eager()).abs().max().item()
    backend = "?"
    try:
        backend = str(torch._fused_sdp_choice(q, k, v, is_causal=bool(args.causal)))
    except Exception:  # an older torch has no such call
        pass
    return {"sdpa": timed(run(sdpa), args.reps, args.min_s), "eager": timed(run(eager), args.reps, args.min_s),
            "max_diff": diff, "backend": backend}


def membound(args, seq):
    cmd = [args.membound, "attention", "--dims",
           f"batch={args.batch},heads={args.heads},seq={seq},head_dim={args.head_dim}",
           "--measure", "--json", "--threads", str(args.threads), "--min-time", str(args.min_s)]
    if args.causal:
        cmd.append("--causal")
    if args.backward:
        cmd.append("--backward")
    if args.spec:
        cmd += ["--device", args.spec]
    p = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if p.returncode not in (0, 1) or not p.stdout.strip():
        print(f"cpu_attention.py: membound failed ({p.returncode}): {p.stderr.strip()[-400:]}", file=sys.stderr)
        return None
    out = json.loads(p.stdout)
    res = {r["plan"]: r for r in out["results"]}
    now = [r[k] for r in out["results"] for k in ("host_gemm_gflops_before", "host_gemm_gflops_after") if r.get(k)]
    res["gemm_ratio"] = statistics.median(now) / out["spec_gemm_gflops"] if now else float("nan")
    return res


def ms(x):
    return f"{1e3 * x:9.2f}" if x == x else "        -"


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seqs", default="512,1024,2048,4096")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--head-dim", type=int, default=64)
    ap.add_argument("--causal", action="store_true")
    ap.add_argument("--backward", action="store_true")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--min-s", type=float, default=1.0)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--membound", default=os.path.join(torch_env.default_build(), "bin", "membound"))
    ap.add_argument("--spec", help="the CPU spec for the model (membound calibrate -o FILE)")
    ap.add_argument("--no-membound", action="store_true", help="PyTorch only")
    ap.add_argument("--build", default="/work/main/build" if os.path.isdir("/work/main/build/bench-venv")
                    else torch_env.default_build(), help="where bench/torch_env.py's venv is")
    args = ap.parse_args(argv)
    torch_env.ensure(__file__, argv, required=False, build=args.build)
    import torch
    torch.set_num_threads(args.threads)
    seqs = [int(s) for s in args.seqs.split(",")]
    mode = "forward and backward" if args.backward else "forward"
    print(f"attention batch {args.batch}, heads {args.heads}, head_dim {args.head_dim}, f32"
          f"{', causal' if args.causal else ''}, {mode}; {args.threads} threads; torch {torch.__version__}")
    print(f"{'seq':>6} {'sdpa':>9} {'eager':>9} {'mb flash':>9} {'mb std':>9} {'fl/sdpa':>8} {'fl/eager':>8} "
          f"{'std/eager':>9} {'mod/fl':>7} {'mod/std':>7} {'gemm':>5}  load before -> after   (medians, ms)")
    for seq in seqs:
        l0 = load()
        t = torch_cases(torch, args, seq)
        mb = None if args.no_membound else membound(args, seq)
        l1 = load()
        fl = mb["flash"]["median_s"] if mb else float("nan")
        st = mb["standard"]["median_s"] if mb else float("nan")
        mfl = mb["flash"]["model_over_measured"] if mb else float("nan")
        mst = mb["standard"]["model_over_measured"] if mb else float("nan")
        sd, eg = t["sdpa"][0], t["eager"][0]
        ok = "" if not mb or (mb["flash"]["verified"] and mb["standard"]["verified"]) else "  CHECK FAILED"
        print(f"{seq:>6} {ms(sd)} {ms(eg)} {ms(fl)} {ms(st)} {fl / sd:8.2f} {fl / eg:8.2f} {st / eg:9.2f} "
              f"{mfl:7.2f} {mst:7.2f} {mb['gemm_ratio'] if mb else float('nan'):5.2f}  {l0[0]:.2f} -> {l1[0]:.2f}{ok}")
        print(f"{'':>6} min: {ms(t['sdpa'][1])} {ms(t['eager'][1])} "
              f"{ms(mb['flash']['min_s'] if mb else float('nan'))} {ms(mb['standard']['min_s'] if mb else float('nan'))}"
              f"   sdpa backend {t['backend']}, |sdpa - eager| {t['max_diff']:.2g}")
    print("fl/sdpa: membound's flash over PyTorch's fused SDPA (the issue's target: <= 1.2 at seq 4096);\n"
          "fl/eager: over the eager formula (target: < 1 from seq 1024); mod/*: the model over the median;\n"
          "gemm: the host's 1024^3 sgemm rate beside membound's runs over the spec's gemm_gflops (the\n"
          "model assumes 1: below it the host is slower now than when it was calibrated).")


if __name__ == "__main__":
    main(sys.argv[1:])
