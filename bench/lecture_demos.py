#!/usr/bin/python3
"""lecture_demos.py — the lecture's three demos (lower precision, fusion,
recomputation) as runnable PyTorch, and the one place bench/ writes the
lecture's functions: torch_gpu.py and cpu_peers.py import them from here.

  lecture   (default) the lecture's script on this machine: its sizes and its
            bench loop (3 warm-up calls, 20 timed, the mean; the device
            synchronised after each loop), its torch.compile path, its figures
            printed; --json FILE also writes them (docs/pytorch.md's table).
  profile   each (variant, plan, n, dtype) run --warmup times, then --iters
            times inside one range named exactly
                membound:VARIANT:PLAN:n=N:DTYPE
            (e.g. membound:sin2_plus_cos2:fused:n=16777216:f32): an NVTX range
            on CUDA (torch.cuda.nvtx), and a torch.profiler record_function
            when --trace FILE.json is given (the Chrome trace is written there).
            Plans: eager = torch ops one by one; fused = torch.compile
            (compiled and warmed up before its range); sigmoid3 runs forward +
            backward (torch.autograd.grad of the input) with eager (autograd of
            three torch.sigmoid), store and recompute (the lecture's
            autograd.Functions), as torch_gpu.py does; copy has eager
            (x.clone()). A plan a variant does not have is skipped, one line
            says so. One line per range on stdout: its name, then the mean ms.

usage: bench/lecture_demos.py [lecture] [--device cpu|cuda] [--json FILE]
       bench/lecture_demos.py profile --device cuda|cpu [--sizes 2^24,...] [--dtype f32[,bf16]]
           [--variants copy,sin2_plus_cos2,gelu_tanh,sigmoid3] [--plans eager,fused]
           [--warmup 3] [--iters 20] [--trace FILE.json]
Runs under bench/torch_env.py's venv (made on first use) unless
MB_TORCH_SYSTEM=1 (then the python running it). Exit: 0, 2 bad usage, 3 no
usable PyTorch or device. It models and counts nothing (membound does).
"""
import argparse
import json
import os
import statistics
import sys
import time

VARIANTS = ("copy", "sin2_plus_cos2", "gelu_tanh", "sigmoid3")
# Plans each variant has here, in membound's names (sigmoid3: forward + backward).
PLANS = {"copy": ("eager",), "sin2_plus_cos2": ("eager", "fused"), "gelu_tanh": ("eager", "fused"),
         "sigmoid3": ("eager", "store", "recompute")}
LECTURE_N = {"copy": 1 << 25, "sin2_plus_cos2": 1 << 24, "gelu_tanh": 1 << 24, "sigmoid3": 1 << 20}
DTYPES = ("f32", "bf16", "f16")
# The lecture's bench loop (its bench(): 3 warm-up calls, 20 timed, the mean).
LECTURE_WARMUP = 3
LECTURE_REPEATS = 20
# The formulas, as the lecture writes them (numexpr spells them the same).
EXPR = {
    "sin2_plus_cos2": "sin(x)**2 + cos(x)**2",
    "gelu_tanh": "0.5*x*(1.0+tanh(0.7978845608*(x+0.044715*x**3)))",
    "sigmoid3": "sigmoid(sigmoid(sigmoid(x)))",
}



def loadavg():
    """The 1, 5 and 15 minute load averages, as text ("?" where unreadable)."""
    try:
        return " ".join(open("/proc/loadavg").read().split()[:3])
    except OSError:
        return "?"


def timed_median(fn, reps):
    """The median of reps timed calls of fn, after one warm-up call."""
    fn()  # the round's warm-up call
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def range_name(variant, plan, n, dtype):
    """The profiling range's name: membound:VARIANT:PLAN:n=N:DTYPE."""
    return f"membound:{variant}:{plan}:n={int(n)}:{dtype}"


def functions(torch):
    """The lecture's functions (lecture 5, code 3), by membound's names:
    copy, sin2_plus_cos2, gelu_tanh, and sigmoid3_eager / _store /
    _recompute (forward; the last two are the lecture's autograd.Functions,
    ThreeSigmoidsStore and ThreeSigmoidsRecompute, saving s1, s2, s3 or x)."""

    def copy(x):
        return x.clone()

    def sin2_plus_cos2(x):
        return torch.sin(x) ** 2 + torch.cos(x) ** 2

    def gelu_tanh(x):
        return 0.5 * x * (1.0 + torch.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))

    class ThreeSigmoidsStore(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            s1 = torch.sigmoid(x)
            s2 = torch.sigmoid(s1)
            s3 = torch.sigmoid(s2)
            ctx.save_for_backward(s1, s2, s3)
            return s3

        @staticmethod
        def backward(ctx, grad_out):
            s1, s2, s3 = ctx.saved_tensors
            g = grad_out * s3 * (1 - s3)
            g = g * s2 * (1 - s2)
            return g * s1 * (1 - s1)

    class ThreeSigmoidsRecompute(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return torch.sigmoid(torch.sigmoid(torch.sigmoid(x)))

        @staticmethod
        def backward(ctx, grad_out):
            (x,) = ctx.saved_tensors
            s1 = torch.sigmoid(x)
            s2 = torch.sigmoid(s1)
            s3 = torch.sigmoid(s2)
            g = grad_out * s3 * (1 - s3)
            g = g * s2 * (1 - s2)
            return g * s1 * (1 - s1)

    def sigmoid3_eager(x):
        return torch.sigmoid(torch.sigmoid(torch.sigmoid(x)))

    return {"copy": copy, "sin2_plus_cos2": sin2_plus_cos2, "gelu_tanh": gelu_tanh,
            "sigmoid3_eager": sigmoid3_eager, "sigmoid3_store": ThreeSigmoidsStore.apply,
            "sigmoid3_recompute": ThreeSigmoidsRecompute.apply,
            "ThreeSigmoidsStore": ThreeSigmoidsStore, "ThreeSigmoidsRecompute": ThreeSigmoidsRecompute}


def eager_into(torch, name):
    """The eager function name (sin2_plus_cos2, gelu_tanh, sigmoid3_eager)
    as the same torch ops one by one, each into a buffer of bufs (a list of
    at least 8 tensors like x, allocated once): PyTorch eager without its
    allocations, for the first touch they cost (cpu_peers.py)."""
    def sin2_plus_cos2(x, b):
        torch.sin(x, out=b[0]); torch.pow(b[0], 2, out=b[1])
        torch.cos(x, out=b[2]); torch.pow(b[2], 2, out=b[3])
        return torch.add(b[1], b[3], out=b[4])

    def gelu_tanh(x, b):  # 0.5*x*(1.0+tanh(0.7978845608*(x+0.044715*x**3))), left to right
        torch.mul(x, 0.5, out=b[0]); torch.pow(x, 3, out=b[1]); torch.mul(b[1], 0.044715, out=b[2])
        torch.add(x, b[2], out=b[3]); torch.mul(b[3], 0.7978845608, out=b[4]); torch.tanh(b[4], out=b[5])
        torch.add(b[5], 1.0, out=b[6])
        return torch.mul(b[0], b[6], out=b[7])

    def sigmoid3_eager(x, b):
        torch.sigmoid(x, out=b[0]); torch.sigmoid(b[0], out=b[1])
        return torch.sigmoid(b[1], out=b[2])

    return {"sin2_plus_cos2": sin2_plus_cos2, "gelu_tanh": gelu_tanh, "sigmoid3_eager": sigmoid3_eager}[name]


def into(fn):
    """fn writing into a preallocated out (out.copy_(fn(x))): compiled by
    torch.compile, Inductor stores the fused result straight into out (no
    temporary, no allocation), as membound's executors write theirs."""

    def f(x, out):
        out.copy_(fn(x))
        return out

    f.__name__ = getattr(fn, "__name__", "f") + "_into"
    return f


def forward_backward(torch, fwd):
    """A call of fwd(x) and its backward for incoming gradient g: returns
    dx (torch.autograd.grad), as torch_gpu.py times sigmoid3."""

    def step(x, g):
        xr = x.detach().requires_grad_(True)
        y = fwd(xr)
        return torch.autograd.grad(y, xr, g)[0]

    return step


def torch_dtype(torch, name):
    return {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}[name]


def sync(torch, device):
    if device == "cuda":
        torch.cuda.synchronize()


def lecture_bench(torch, fn, device, repeats=LECTURE_REPEATS):
    """The lecture's bench(): LECTURE_WARMUP calls, then repeats timed, the
    mean in seconds (perf_counter around the loop, synchronised)."""
    for _ in range(LECTURE_WARMUP):
        fn()
    sync(torch, device)
    t0 = time.perf_counter()
    for _ in range(repeats):
        fn()
    sync(torch, device)
    return (time.perf_counter() - t0) / repeats


def saved_bytes(torch, fn):
    """Bytes fn() saves for backward (saved_tensors_hooks, each tensor once), and its output."""
    seen = {}

    def pack(t):
        seen[t.data_ptr()] = t.numel() * t.element_size()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = fn()
    return sum(seen.values()), out


def demo_low_precision(torch, device, out):
    n = LECTURE_N["copy"]
    print(f"demo 1: lower precision, x.clone() of {n:,} elements")
    for name in ("f32", "bf16"):
        x = torch.randn(n, device=device).to(torch_dtype(torch, name))
        t = lecture_bench(torch, lambda: x.clone(), device)
        gbs = 2 * n * x.element_size() / t / 1e9
        out["copy_" + name] = {"ms": t * 1e3, "gbs": gbs}
        print(f"  copy {name:5s} {t * 1e3:8.2f} ms  {gbs:6.1f} GB/s")
        del x


def demo_fusion(torch, device, out):
    n = LECTURE_N["sin2_plus_cos2"]
    fns = functions(torch)
    x = torch.randn(n, device=device)
    print(f"demo 2: fusion, {n:,} elements on {device}")
    for name in ("sin2_plus_cos2", "gelu_tanh"):
        f = fns[name]
        rec = {}
        try:
            cf = torch.compile(f)
            t = time.perf_counter()
            got = cf(x)
            rec["compile_s"] = time.perf_counter() - t
            rec["same"] = bool(torch.allclose(f(x), got, atol=1e-5))
            rec["eager_ms"] = lecture_bench(torch, lambda: f(x), device) * 1e3
            rec["compiled_ms"] = lecture_bench(torch, lambda: cf(x), device) * 1e3
            rec["speedup"] = rec["eager_ms"] / rec["compiled_ms"]
            print(f"  {name:16s} eager {rec['eager_ms']:8.2f} ms, torch.compile {rec['compiled_ms']:8.2f} ms,"
                  f" {rec['speedup']:.1f}x (same result: {rec['same']}; first call {rec['compile_s']:.1f} s)")
        except Exception as e:  # the lecture's own fallback: torch.compile unusable here
            rec["error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            print(f"  {name:16s} torch.compile unusable here ({rec['error']})")
        out[name] = rec
    t = lecture_bench(torch, lambda: torch.nn.functional.gelu(x, approximate="tanh"), device)
    out["F.gelu_ms"] = t * 1e3
    print(f"  F.gelu(approximate='tanh') {t * 1e3:8.2f} ms (one library kernel)")


def demo_recompute(torch, out):
    n = LECTURE_N["sigmoid3"]
    fns = functions(torch)
    print(f"demo 3: recomputation, three sigmoids, {n:,} elements (CPU, as the lecture)")
    x1 = torch.randn(n, requires_grad=True)
    x2 = x1.detach().clone().requires_grad_(True)
    b1, y1 = saved_bytes(torch, lambda: fns["sigmoid3_store"](x1))
    b2, y2 = saved_bytes(torch, lambda: fns["sigmoid3_recompute"](x2))
    y1.sum().backward()
    y2.sum().backward()
    diff = (x1.grad - x2.grad).abs().max().item()
    ok = torch.autograd.gradcheck(fns["sigmoid3_recompute"],
                                  (torch.randn(8, dtype=torch.float64, requires_grad=True),))
    out.update({"saved_store_mb": b1 / 1e6, "saved_recompute_mb": b2 / 1e6, "grad_max_diff": diff,
                "gradcheck": bool(ok)})
    print(f"  saved for backward: store {b1 / 1e6:.2f} MB, recompute {b2 / 1e6:.2f} MB;"
          f" gradients differ by at most {diff:.1e}; gradcheck {ok}")


def run_lecture(torch, args):
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    out = {"torch": torch.__version__, "device": device, "threads": torch.get_num_threads(),
           "warmup": LECTURE_WARMUP, "repeats": LECTURE_REPEATS}
    print(f"torch {torch.__version__} on {device}, {torch.get_num_threads()} threads; each figure the "
          f"mean of {LECTURE_REPEATS} calls after {LECTURE_WARMUP} warm-up calls")
    demo_low_precision(torch, device, out)
    demo_fusion(torch, device, out)
    demo_recompute(torch, out)
    if args.json:
        tmp = args.json + ".tmp"
        with open(tmp, "w") as f:
            json.dump(out, f, indent=1)
        os.replace(tmp, args.json)
    return 0


def case_call(torch, fns, compiled, variant, plan, x, g):
    """The zero-argument call a profiling range repeats."""
    if variant == "sigmoid3":
        step = forward_backward(torch, fns["sigmoid3_" + plan])
        return lambda: step(x, g)
    f = fns[variant]
    if plan == "fused":
        if variant not in compiled:
            compiled[variant] = torch.compile(f, dynamic=False)
        f = compiled[variant]
    return lambda: f(x)


def run_profile(torch, args):
    if args.device == "cuda" and not torch.cuda.is_available():
        print("lecture_demos: no CUDA device visible to PyTorch", file=sys.stderr)
        return 3
    fns, compiled = functions(torch), {}
    gen = torch.Generator(device=args.device)
    gen.manual_seed(1)
    nvtx = torch.cuda.nvtx if args.device == "cuda" else None
    prof = None
    if args.trace:
        acts = [torch.profiler.ProfilerActivity.CPU]
        if args.device == "cuda":
            acts.append(torch.profiler.ProfilerActivity.CUDA)
        prof = torch.profiler.profile(activities=acts)
        prof.__enter__()
    try:
        for variant in args.variants:
            plans = [p for p in args.plans if p in PLANS[variant]]
            missing = [p for p in args.plans if p not in PLANS[variant]]
            if missing:
                print(f"lecture_demos: {variant} has no plan {', '.join(missing)} here: skipped", file=sys.stderr)
            for dname in args.dtypes:
                for n in args.sizes or [LECTURE_N[variant]]:
                    x = (torch.rand(n, device=args.device, generator=gen) * 4 - 2).to(torch_dtype(torch, dname))
                    g = torch.ones(n, dtype=x.dtype, device=args.device)
                    for plan in plans:
                        call = case_call(torch, fns, compiled, variant, plan, x, g)
                        for _ in range(args.warmup):
                            call()
                        sync(torch, args.device)
                        name = range_name(variant, plan, n, dname)
                        t0 = time.perf_counter()
                        if nvtx:
                            nvtx.range_push(name)
                        rf = torch.profiler.record_function(name) if prof else None
                        if rf:
                            rf.__enter__()
                        for _ in range(args.iters):
                            call()
                        sync(torch, args.device)
                        if rf:
                            rf.__exit__(None, None, None)
                        if nvtx:
                            nvtx.range_pop()
                        ms = (time.perf_counter() - t0) / args.iters * 1e3
                        print(f"{name} {ms:.4f} ms", flush=True)
                    del x, g
    finally:
        if prof:
            prof.__exit__(None, None, None)
    if prof:
        prof.export_chrome_trace(args.trace)
        print(f"lecture_demos: wrote {args.trace}", file=sys.stderr)
    return 0


def parse_size(s):
    """'16777216', '2^24', '16M' (binary K/M/G)."""
    s = s.strip()
    if "^" in s:
        b, e = s.split("^", 1)
        return int(b) ** int(e)
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    if s and s[-1].upper() in mult:
        return int(s[:-1]) * mult[s[-1].upper()]
    return int(s)


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("mode", nargs="?", default="lecture", choices=("lecture", "profile"))
    ap.add_argument("--device", choices=("cpu", "cuda"), default=None,
                    help="lecture: default cuda when available; profile: required")
    ap.add_argument("--json", default="", help="lecture: also write its figures to this file")
    ap.add_argument("--sizes", default="", help="profile: 2^20,2^24 (default: each variant's lecture size)")
    ap.add_argument("--dtype", default="f32", help="profile: f32, bf16, f16 (comma-separated)")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--plans", default="eager,fused", help="profile: eager, fused, store, recompute")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--trace", default="", help="profile: write a Chrome trace (record_function ranges)")
    a = ap.parse_args(argv)
    if a.mode == "profile" and not a.device:
        ap.error("profile needs --device cuda|cpu")
    a.variants = [v for v in a.variants.split(",") if v]
    a.plans = [p for p in a.plans.split(",") if p]
    a.dtypes = [d for d in a.dtype.split(",") if d]
    for v in a.variants:
        if v not in VARIANTS:
            ap.error(f"unknown variant '{v}' ({', '.join(VARIANTS)})")
    for p in a.plans:
        if p not in ("eager", "fused", "store", "recompute"):
            ap.error(f"unknown plan '{p}' (eager, fused, store, recompute)")
    for d in a.dtypes:
        if d not in DTYPES:
            ap.error(f"unknown dtype '{d}' ({', '.join(DTYPES)})")
    if not a.variants or not a.plans or not a.dtypes:
        ap.error("--variants, --plans and --dtype need at least one entry")
    if a.warmup < 0 or a.iters < 1:
        ap.error("--warmup must be >= 0 and --iters >= 1")
    try:
        a.sizes = [parse_size(s) for s in a.sizes.split(",") if s] if a.sizes else []
    except ValueError:
        ap.error(f"--sizes: cannot read '{a.sizes}' (16777216, 2^24, 16M)")
    if any(n < 1 for n in a.sizes):
        ap.error("--sizes: sizes must be >= 1")
    return a


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import torch_env
    torch_env.ensure(__file__, argv)
    try:
        import torch
    except Exception as e:
        print(f"lecture_demos: PyTorch is not usable here ({type(e).__name__}: {e})", file=sys.stderr)
        return 3
    return run_profile(torch, args) if args.mode == "profile" else run_lecture(torch, args)


if __name__ == "__main__":
    sys.exit(main())
