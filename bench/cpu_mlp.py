#!/usr/bin/python3
"""cpu_mlp.py — the CPU MLP executor's eager and fused plans (kernels/mlp_cpu.c,
through build/bin/cpu_mlp_bench) against PyTorch eager and torch.compile of the
same MLP, f32 forward, on the same threads.

GPT-2's gelu(x @ w1 + b1) @ w2 + b2 (gelu exact, F.gelu's default) and Llama's
(silu(x @ wg) * (x @ wu)) @ wd. PyTorch's side is F.linear (addmm with the bias,
mm without) and F.gelu / F.silu and a multiply, under torch.no_grad(), as eager
runs it and as torch.compile (Inductor's CPU backend, default mode) compiles it;
torch.set_num_threads(--threads). Each side: a warm-up (the compile included),
then --rounds rounds of --reps calls; medians and minima. The load average is
printed before and after: a shared host moves every figure. Prints a table:
  fused/eager      our two plans (below 1: fusing the epilogue saved time)
  fused/torch      ours fused over PyTorch eager (issue target: below 1)
  fused/compile    ours fused over torch.compile (issue target: at most 1.1)
--backward times the backward instead: ours after one eager forward (both plans read
its saved tensors), PyTorch's y.backward(dy) after a forward run each call, untimed (the
column is the backward alone; the gradients set to None between calls, as
optimizer.zero_grad() leaves them). Nothing is
asserted. PyTorch runs under bench/torch_env.py's venv when one
exists under --torch-build (never made here), else under this python's torch,
else the PyTorch columns are left out.

usage: bench/cpu_mlp.py [--bench build/bin/cpu_mlp_bench] [--threads N] [--rounds R] [--reps N]
                        [--tokens T] [--cache-bytes B] [--no-compile] [--backward] [--torch-build DIR]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_env  # noqa: E402

# (kind, d_model, d_ff): GPT-2 small's MLP; a Llama MLP of TinyLlama's
# proportions at half its width (2048 x 5632 halved)
MLPS = [("gpt2", 768, 3072), ("llama", 1024, 2816)]


def load():
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def ours(o, kind, d, f):
    cmd = [o.bench, "--kind", kind, "--tokens", str(o.tokens), "--d-model", str(d), "--d-ff", str(f),
           "--threads", str(o.threads), "--rounds", str(o.rounds), "--reps", str(o.reps)]
    if o.cache_bytes:
        cmd += ["--cache-bytes", str(o.cache_bytes)]
    if o.backward:
        cmd += ["--backward"]
    r = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if r.returncode:
        sys.exit(f"cpu_mlp.py: error: {' '.join(cmd)}: {r.stderr.strip()}")
    return json.loads(r.stdout)


def torch_times(torch, o, kind, d, f, compiled):
    F = torch.nn.functional
    g = torch.Generator().manual_seed(1)
    x = torch.rand(o.tokens, d, generator=g) * 2 - 1
    if kind == "gpt2":
        w1, b1 = (torch.rand(f, d, generator=g) * 2 - 1) / d ** 0.5, (torch.rand(f, generator=g) * 2 - 1) / d ** 0.5
        w2, b2 = (torch.rand(d, f, generator=g) * 2 - 1) / f ** 0.5, (torch.rand(d, generator=g) * 2 - 1) / f ** 0.5

        def fn(x):
            return F.linear(F.gelu(F.linear(x, w1, b1)), w2, b2)
    else:
        wg, wu = ((torch.rand(f, d, generator=g) * 2 - 1) / d ** 0.5 for _ in range(2))
        wd = (torch.rand(d, f, generator=g) * 2 - 1) / f ** 0.5

        def fn(x):
            return F.linear(F.silu(F.linear(x, wg)) * F.linear(x, wu), wd)
    run = torch.compile(fn) if compiled else fn
    times = []
    if not o.backward:
        with torch.no_grad():
            t0 = time.perf_counter()
            run(x)
            warm = time.perf_counter() - t0
            for _ in range(o.rounds * o.reps):
                t0 = time.perf_counter()
                run(x)
                times.append(time.perf_counter() - t0)
        return statistics.median(times), min(times), warm
    # the backward: every tensor a leaf that wants its gradient, as in training
    leaves = [x] + [c.cell_contents for c in fn.__closure__ if isinstance(c.cell_contents, torch.Tensor)]
    for t in leaves:
        t.requires_grad_(True)
    dy = torch.rand(o.tokens, d, generator=g) * 2 - 1
    t0 = time.perf_counter()
    run(x).backward(dy)
    warm = time.perf_counter() - t0
    for _ in range(o.rounds * o.reps):
        for t in leaves:  # as optimizer.zero_grad() leaves them: no accumulation
            t.grad = None
        y = run(x)
        t1 = time.perf_counter()
        y.backward(dy)
        times.append(time.perf_counter() - t1)
    return statistics.median(times), min(times), warm


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bench", default=os.path.join(here, "..", "build", "bin", "cpu_mlp_bench"))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--tokens", type=int, default=2048)
    ap.add_argument("--cache-bytes", type=int, default=0,
                    help="the cache the fused plan's panel fills half of (default: the LLC sysconf reports)")
    ap.add_argument("--no-compile", action="store_true", help="leave torch.compile out")
    ap.add_argument("--backward", action="store_true", help="time the backward instead of the forward")
    ap.add_argument("--torch-build", default=torch_env.default_build())
    o = ap.parse_args()
    if min(o.threads, o.rounds, o.reps, o.tokens) < 1:
        ap.error("--threads, --rounds, --reps and --tokens are at least 1")
    torch_env.ensure(__file__, sys.argv[1:], required=False, build=o.torch_build)
    try:
        import torch
        torch.set_num_threads(o.threads)
        print(f"PyTorch {torch.__version__} ({sys.executable}), {torch.get_num_threads()} threads")
    except ImportError:
        torch = None
        print(f"no torch under {sys.executable}: the PyTorch columns are left out")
    print(f"{o.tokens} tokens, f32 {'backward' if o.backward else 'forward'}, {o.threads} threads; "
          f"load average before: {load()}")
    print(f"{'mlp':6} {'d x ff':>11} {'panel':>5} {'eager':>9} {'fused':>9} {'torch':>9} {'compile':>9} "
          f"{'fused/eager':>11} {'fused/torch':>11} {'fused/compile':>13}  (medians; minima below)")
    for kind, d, f in MLPS:
        r = ours(o, kind, d, f)
        e, fu = r["eager"], r["fused"]
        tt = torch_times(torch, o, kind, d, f, False) if torch else None
        tc = torch_times(torch, o, kind, d, f, True) if torch and not o.no_compile else None
        cell = (lambda t, i: f"{t[i] * 1e3:7.2f}ms" if t else f"{'-':>9}")
        ratio = (lambda a, t: f"{a / t[0]:.3f}" if t else "-")
        print(f"{kind:6} {f'{d}x{f}':>11} {r['panel_rows']:5d} {e['median_s'] * 1e3:7.2f}ms "
              f"{fu['median_s'] * 1e3:7.2f}ms {cell(tt, 0)} {cell(tc, 0)} {fu['median_s'] / e['median_s']:11.3f} "
              f"{ratio(fu['median_s'], tt):>11} {ratio(fu['median_s'], tc):>13}")
        print(f"{'':6} {'min':>11} {'':5} {e['min_s'] * 1e3:7.2f}ms {fu['min_s'] * 1e3:7.2f}ms {cell(tt, 1)} "
              f"{cell(tc, 1)}   GFLOP/s fused {r['flops'] / fu['median_s'] / 1e9:.1f}"
              + (f"; compile's first call {tc[2]:.1f} s" if tc else ""), flush=True)
    print(f"load average after: {load()}")


if __name__ == "__main__":
    main()
