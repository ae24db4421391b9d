#!/usr/bin/env python3
"""torch_gpu.py — the lecture's variants in PyTorch on a GPU, timed with the
same protocol as `membound measure --backend cuda`, for side-by-side CSVs.

Cases (plan names as membound's, backend column says which PyTorch path):
  copy            eager: x.clone()                                 (f32, bf16)
  sin2_plus_cos2  eager: torch ops one by one; fused: torch.compile
  gelu_tanh       eager: the tanh formula op by op; fused: torch.compile
  sigmoid3        forward + backward: eager = autograd of three
                  torch.sigmoid; store / recompute = the lecture's
                  autograd.Functions (ThreeSigmoidsStore / Recompute)

Protocol: warm-up (3 runs, after torch.compile's first call), before every
sample an L2 flush outside the timed region (zero_() of a 2x L2 buffer, then a
read of another, then synchronize), torch.cuda.Event around the call only,
>= 10 samples, stop once the coefficient of variation is <= 2% after 0.2 s,
or at 200 samples or 10 s; median, min, p90, CV. Results of every compiled
or Function path are checked against eager PyTorch (max abs error column).

Writes one CSV (header below, '#' provenance lines first). Needs PyTorch with
CUDA; without it, --help and --list still work.
"""
import argparse
import datetime
import math
import os
import platform
import statistics
import subprocess
import sys

COLUMNS = ["device", "backend", "variant", "plan", "dtype", "n", "reps", "time_s_median",
           "time_s_min", "time_s_p90", "time_cv", "bytes_lecture", "gbs_lecture",
           "max_abs_err", "torch_version"]

# (variant, plan, lecture's traffic in elements of n (read + write))
CASES = [
    ("copy", "eager", 2),
    ("sin2_plus_cos2", "eager", 11),
    ("sin2_plus_cos2", "fused", 2),
    ("gelu_tanh", "eager", 18),
    ("gelu_tanh", "fused", 2),
    ("sigmoid3", "eager", 15),
    ("sigmoid3", "store", 9),
    ("sigmoid3", "recompute", 5),
]
LECTURE_N = {"copy": 1 << 25, "sin2_plus_cos2": 1 << 24, "gelu_tanh": 1 << 24, "sigmoid3": 1 << 20}


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


def parse_sizes(s):
    """'2^16,2^20' or '2^16..2^28[:STEP]' (every STEP-th power of two)."""
    if ".." in s:
        lo, hi = s.split("..", 1)
        step = 1
        if ":" in hi:
            hi, st = hi.split(":", 1)
            step = int(st)
        lo, hi = parse_size(lo), parse_size(hi)
        if lo < 1 or hi < lo or lo & (lo - 1) or hi & (hi - 1):
            raise ValueError(f"range ends must be powers of two, low <= high: {s}")
        out, e = [], lo.bit_length() - 1
        while (1 << e) <= hi:
            out.append(1 << e)
            e += step
        return out
    return [parse_size(p) for p in s.split(",") if p]


def stats(samples):
    xs = sorted(samples)
    n = len(xs)
    med = statistics.median(xs)
    p90 = xs[min(n - 1, int(math.ceil(0.9 * n)) - 1)]
    mean = sum(xs) / n
    cv = statistics.stdev(xs) / mean if n > 1 and mean > 0 else 0.0
    return med, xs[0], p90, cv


def git_commit():
    try:
        here = os.path.dirname(os.path.abspath(__file__))
        return subprocess.run(["git", "-C", here, "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=10).stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def build_functions(torch):
    """The lecture's functions (seed code, lecture 5), PyTorch side."""

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

    return {
        "sin2_plus_cos2": sin2_plus_cos2,
        "gelu_tanh": gelu_tanh,
        "sigmoid3_eager": sigmoid3_eager,
        "sigmoid3_store": ThreeSigmoidsStore.apply,
        "sigmoid3_recompute": ThreeSigmoidsRecompute.apply,
    }


class Flusher:
    """Evicts L2 between samples: writes a 2x L2 buffer, then reads another
    (so no dirty line of the flush is written back inside the timed region)."""

    def __init__(self, torch, l2_bytes):
        self.torch = torch
        n = max(2 * l2_bytes, 1 << 20) // 4
        self.w = torch.empty(n, dtype=torch.float32, device="cuda")
        self.r = torch.ones(n, dtype=torch.float32, device="cuda")

    def __call__(self):
        self.w.zero_()
        self.r.sum()
        self.torch.cuda.synchronize()


def time_case(torch, fn, flush, min_reps=10, max_reps=200, max_cv=0.02, min_time=0.2, timeout=10.0):
    """Median/min/p90/CV of fn() between CUDA events, cold."""
    import time
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    samples = []
    t0 = time.monotonic()
    while True:
        flush()
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        samples.append(start.elapsed_time(stop) * 1e-3)
        el = time.monotonic() - t0
        if len(samples) >= min_reps:
            cv = stats(samples)[3]
            if (cv <= max_cv and el >= min_time) or len(samples) >= max_reps or el >= timeout:
                break
    return stats(samples), len(samples)


def run(args):
    try:
        import torch
    except ImportError:
        print("torch_gpu: PyTorch is not installed here: nothing measured", file=sys.stderr)
        return 3
    if not torch.cuda.is_available():
        print("torch_gpu: no CUDA device visible to PyTorch: nothing measured", file=sys.stderr)
        return 3
    dev = torch.cuda.get_device_properties(0)
    l2 = getattr(dev, "L2_cache_size", 0) or (60 << 20)
    fns = build_functions(torch)
    compiled = {}
    flush = Flusher(torch, l2)
    dtypes = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}
    rows = []
    wanted = set(args.variants) if args.variants else None
    gen = torch.Generator(device="cuda")
    gen.manual_seed(1)
    for variant, plan, traffic in CASES:
        if wanted and variant not in wanted:
            continue
        for dname in args.dtypes:
            dt = dtypes[dname]
            sizes = args.sizes or [LECTURE_N[variant]]
            for n in sizes:
                x = (torch.rand(n, device="cuda", generator=gen, dtype=torch.float32) * 4 - 2).to(dt)
                backends = ["torch-eager"]
                if plan == "fused":
                    backends = ["torch-compile"]
                if variant == "sigmoid3":
                    x.requires_grad_(True)
                    g = (torch.rand(n, device="cuda", generator=gen, dtype=torch.float32) * 2 - 1).to(dt)
                    f = fns["sigmoid3_" + plan]

                    def call(f=f, x=x, g=g):
                        x.grad = None
                        y = f(x)
                        y.backward(g)
                        return x.grad

                    xr = x.detach().clone().requires_grad_(True)
                    fns["sigmoid3_eager"](xr).backward(g)
                    ref = xr.grad
                elif variant == "copy":
                    def call(x=x):
                        return x.clone()
                    ref = x
                else:
                    base = fns[variant]
                    if plan == "fused":
                        if variant not in compiled:
                            compiled[variant] = torch.compile(base)
                        f = compiled[variant]
                    else:
                        f = base

                    def call(f=f, x=x):
                        return f(x)

                    ref = base(x)
                try:
                    got = call()
                    err = (got.float() - ref.float()).abs().max().item()
                    (med, mn, p90, cv), reps = time_case(torch, call, flush, timeout=args.timeout)
                except Exception as e:  # torch.compile can fail where no compiler is usable
                    print(f"torch_gpu: {variant} {plan} {dname} n={n}: {type(e).__name__}: {e}", file=sys.stderr)
                    continue
                nbytes = traffic * n * x.element_size()
                for be in backends:
                    rows.append([dev.name, be, variant, plan, dname, n, reps, f"{med:.9g}", f"{mn:.9g}",
                                 f"{p90:.9g}", f"{cv:.6g}", nbytes, f"{nbytes / med / 1e9:.6g}", f"{err:.3g}",
                                 torch.__version__])
                print(f"{variant:15s} {plan:9s} {dname:5s} n={n:>10d} {be:13s} median {med * 1e6:10.2f} us "
                      f"({nbytes / med / 1e9:7.1f} GB/s lecture bytes), max abs err {err:.2g}", file=sys.stderr)
                del x
    tmp = args.output + ".tmp"
    with open(tmp, "w") as fp:
        fp.write("# torch_gpu.py: the lecture's variants in PyTorch (eager, torch.compile, autograd.Function)\n")
        fp.write(f"# device: {dev.name}, {dev.multi_processor_count} SMs, L2 {l2 / 1048576:.1f} MiB\n")
        fp.write(f"# torch: {torch.__version__}, cuda {torch.version.cuda}, python {platform.python_version()}\n")
        fp.write(f"# git_commit: {git_commit()}\n")
        fp.write(f"# date: {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')}\n")
        fp.write("# settings: cold (2x L2 zero_ + read before each sample), warm-up 3, >= 10 samples, "
                 "cv <= 0.02 after 0.2 s, <= 200 samples\n")
        fp.write(",".join(COLUMNS) + "\n")
        for r in rows:
            fp.write(",".join(f'"{v}"' if "," in str(v) else str(v) for v in r) + "\n")
    os.replace(tmp, args.output)
    print(f"torch_gpu: wrote {args.output} ({len(rows)} rows)", file=sys.stderr)
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("variants", nargs="*", help="variants (default: all): " +
                    ", ".join(sorted(LECTURE_N)))
    ap.add_argument("--sizes", default="", help="2^20,2^24 or 2^16..2^28[:STEP]; default: lecture sizes")
    ap.add_argument("--dtype", default="f32,bf16", help="f32, bf16, f16 (comma-separated)")
    ap.add_argument("--timeout", type=float, default=10.0, help="seconds of sampling per case at most")
    ap.add_argument("-o", "--output", default="torch_gpu.csv", help="CSV path (default torch_gpu.csv)")
    ap.add_argument("--list", action="store_true", help="print the cases and exit (no PyTorch needed)")
    args = ap.parse_args(argv)
    for v in args.variants:
        if v not in LECTURE_N:
            ap.error(f"unknown variant '{v}' (variants: {', '.join(sorted(LECTURE_N))})")
    args.dtypes = [d for d in args.dtype.split(",") if d]
    for d in args.dtypes:
        if d not in ("f32", "bf16", "f16"):
            ap.error(f"unknown dtype '{d}' (f32, bf16, f16)")
    try:
        args.sizes = parse_sizes(args.sizes) if args.sizes else []
    except ValueError as e:
        ap.error(f"--sizes: {e}")
    if args.list:
        for variant, plan, traffic in CASES:
            if args.variants and variant not in args.variants:
                continue
            ns = args.sizes or [LECTURE_N[variant]]
            print(f"{variant} {plan} dtypes={','.join(args.dtypes)} n={','.join(str(n) for n in ns)} "
                  f"traffic={traffic}n")
        return 0
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
