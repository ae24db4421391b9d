#!/usr/bin/env python3
"""torch_gpu.py — the lecture's variants in PyTorch on a GPU, timed with the
same protocol as `membound measure --backend cuda`, written as a membound
measurement CSV (the design's columns), so `membound report` takes it beside
measure.csv.

Cases (plan names as membound's, backend column says which PyTorch path):
  copy            torch-eager: x.clone()
  sin2_plus_cos2  torch-eager: torch ops one by one; fused: torch-compile
  gelu_tanh       torch-eager: the tanh formula op by op; fused: torch-compile
  sigmoid3        forward + backward: eager = autograd of three
                  torch.sigmoid; store / recompute = the lecture's
                  autograd.Functions (ThreeSigmoidsStore / Recompute)

Protocol: warm-up (3 runs, after torch.compile's first call), before every
sample the same clean L2 flush as membound's CUDA backend (write a 2x L2
buffer, then read another 2x L2 buffer, so no dirty line of the flush is
written back inside the timed region; then synchronize), torch.cuda.Event
around the call only, >= 10 samples, stop once the coefficient of variation
is <= 2% after 0.2 s, or at 200 samples or --timeout; median, min, p90, CV.

Check: every case's result (the input gradient for sigmoid3) against a
float64 reference computed with PyTorch in float64 from the same (rounded)
inputs: max_rel_err = max |got - ref| / max(|ref|, 1e-3 max|ref|), as
membound's mb_kern_verify; verified = 1 when it is within membound's
tolerance for the dtype (f32 1e-4, f16 1e-2, bf16 6e-2).

Model columns (kernels stays empty: PyTorch's launches are not counted):
with --bin MEMBOUND, read_bytes / write_bytes (the lecture's count),
model_dram_* and model_time_s come from `membound model --json` on --device;
without it they are empty. dram_* are empty, counters = none-torch. The
device column is PyTorch's device name; a '# model_device: ... (--device
SPEC)' line names the spec for `membound report` (SPEC relative to the CSV's
folder when it is a file).

Needs PyTorch with CUDA; without it --help, --list and --selftest work.
--selftest FILE writes a CSV through the same writer with mocked timings
(no PyTorch, no GPU), to check the columns against `membound report`.
"""
import argparse
import datetime
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time

COLUMNS = ["device", "backend", "variant", "plan", "dtype", "n", "kernels", "reps", "time_s_median",
           "time_s_min", "time_s_p90", "time_cv", "model_time_s", "read_bytes", "write_bytes",
           "model_dram_read_bytes", "model_dram_write_bytes", "dram_read_bytes", "dram_write_bytes",
           "counters", "max_rel_err", "verified"]

# (variant, plan); the backend is torch-compile for fused, torch-eager otherwise
CASES = [
    ("copy", "eager"),
    ("sin2_plus_cos2", "eager"),
    ("sin2_plus_cos2", "fused"),
    ("gelu_tanh", "eager"),
    ("gelu_tanh", "fused"),
    ("sigmoid3", "eager"),
    ("sigmoid3", "store"),
    ("sigmoid3", "recompute"),
]
LECTURE_N = {"copy": 1 << 25, "sin2_plus_cos2": 1 << 24, "gelu_tanh": 1 << 24, "sigmoid3": 1 << 20}
# membound's mb_kern_default_tol (kernels/reference.c)
TOL = {"f32": 1e-4, "f16": 1e-2, "bf16": 6e-2}
ELEM_BYTES = {"f32": 4, "bf16": 2, "f16": 2}
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def backend_of(plan):
    return "torch-compile" if plan == "fused" else "torch-eager"


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
    """Evicts L2 between samples, as membound's CUDA backend does (clean_l2 in
    measure/cuda_backend.cu): writes a 2x L2 buffer, then reads another 2x L2
    buffer (so no dirty line of the flush is written back inside the timed
    region), then synchronizes."""

    def __init__(self, torch, l2_bytes):
        self.torch = torch
        n = max(2 * l2_bytes, 1 << 20) // 4
        self.w = torch.empty(n, dtype=torch.float32, device="cuda")
        self.r = torch.ones(n, dtype=torch.float32, device="cuda")

    def __call__(self):
        self.w.fill_(1.5)  # non-zero: no write can be elided
        self.r.sum()
        self.torch.cuda.synchronize()


def time_case(torch, fn, flush, min_reps=10, max_reps=200, max_cv=0.02, min_time=0.2, timeout=10.0):
    """(median, min, p90, cv) and the sample count of fn() between CUDA events, cold."""
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


def rel_err(torch, got, ref):
    """max |got - ref| / max(|ref|, 1e-3 max|ref|), ref in float64 (mb_kern_verify's error)."""
    g = got.detach().double()
    r = ref.detach().double()
    scale = r.abs().max().item()
    floor = max(1e-3 * scale, 1e-300)
    den = torch.clamp(r.abs(), min=floor)
    e = ((g - r).abs() / den).max().item()
    return e if math.isfinite(e) else float("inf")


class Model:
    """Model columns from `membound model --json` (one call per size and dtype)."""

    def __init__(self, binary, device):
        self.binary, self.device, self.cache = binary, device, {}

    def get(self, variant, plan, dname, n):
        if not self.binary:
            return None
        key = (n, dname)
        if key not in self.cache:
            env = dict(os.environ)
            if "MEMBOUND_VARIANTS" not in env and os.path.isdir(os.path.join(REPO, "model", "variants")):
                env["MEMBOUND_VARIANTS"] = os.path.join(REPO, "model", "variants")
            cmd = [self.binary, "model", *sorted(LECTURE_N), "--n", str(n), "--dtype", dname,
                   "--device", self.device, "--json"]
            try:
                res = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env)
                self.cache[key] = json.loads(res.stdout)["results"] if res.returncode == 0 else []
                if res.returncode != 0:
                    print(f"torch_gpu: {' '.join(cmd)}: {res.stderr.strip()}", file=sys.stderr)
            except (OSError, subprocess.SubprocessError, ValueError, KeyError) as e:
                print(f"torch_gpu: membound model failed: {e}", file=sys.stderr)
                self.cache[key] = []
        for r in self.cache[key]:
            if r.get("variant") == variant and r.get("plan") == plan:
                return r
        return None


def make_row(device, variant, plan, dname, n, st, reps, model, err):
    """One CSV row (a list in COLUMNS order); st = (median, min, p90, cv)."""
    med, mn, p90, cv = st
    m = model or {}

    def opt(key, fmt="{}"):
        return fmt.format(m[key]) if key in m and m[key] is not None else ""

    verified = 1 if err <= TOL[dname] else 0
    return [device, backend_of(plan), variant, plan, dname, n, "", reps, f"{med:.9g}", f"{mn:.9g}",
            f"{p90:.9g}", f"{cv:.6g}", opt("time_s", "{:.9g}"), opt("read_bytes"), opt("write_bytes"),
            opt("dram_read_bytes"), opt("dram_write_bytes"), "", "", "none-torch",
            f"{err:.6g}" if math.isfinite(err) else "inf", verified]


def spec_for_csv(device, output):
    """The --device SPEC as the CSV should name it: a file relative to the CSV's folder."""
    if os.path.isfile(device):
        return os.path.relpath(os.path.abspath(device), os.path.dirname(os.path.abspath(output)) or ".")
    return device


def write_csv(path, rows, prov):
    """Writes '#' provenance lines, the header and rows to path (temporary file, then rename)."""
    tmp = path + ".tmp"
    with open(tmp, "w") as fp:
        for line in prov:
            fp.write(f"# {line}\n")
        fp.write(",".join(COLUMNS) + "\n")
        for r in rows:
            fp.write(",".join('"' + str(v).replace('"', '""') + '"' if any(c in str(v) for c in ',"\n')
                              else str(v) for v in r) + "\n")
    os.replace(tmp, path)


def common_prov(args, device_label, extra):
    spec = spec_for_csv(args.device, args.output)
    return ["torch_gpu.py: the lecture's variants in PyTorch (eager, torch.compile, autograd.Function)",
            f"device: {device_label}", *extra,
            f"git_commit: {git_commit()}",
            f"date: {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')}",
            "settings: cold (2x L2 write + 2x L2 read before each sample, as membound's CUDA backend), "
            f"warm-up 3, >= 10 samples, cv <= 0.02 after 0.2 s, <= 200 samples, timeout {args.timeout} s",
            "backend: torch",
            f"model_device: {os.path.basename(spec)} (--device {spec})",
            f"model_columns: {'membound model --json (' + args.bin + ')' if args.bin else 'none (no --bin)'}"]


def selftest(args):
    """The writer with mocked timings and errors (no PyTorch, no GPU)."""
    model = Model(args.bin, args.device)
    rows = []
    for i, (variant, plan) in enumerate(CASES):
        for dname in args.dtypes:
            for n in args.sizes or [LECTURE_N[variant]]:
                m = model.get(variant, plan, dname, n)
                base = (m or {}).get("time_s") or 1e-5 * (1 + i)
                st = (base * 1.1, base * 1.05, base * 1.2, 0.01)
                rows.append(make_row("mock GPU", variant, plan, dname, n, st, 10, m, 0.5 * TOL[dname]))
    write_csv(args.output, rows, common_prov(args, "mock GPU (selftest: timings are made up)",
                                             ["torch: none (selftest)"]))
    print(f"torch_gpu: selftest: wrote {args.output} ({len(rows)} rows)", file=sys.stderr)
    return 0


def run(args):
    try:
        import torch
    except ImportError:
        print("torch_gpu: PyTorch is not installed here: nothing measured", file=sys.stderr)
        return 3
    if not torch.cuda.is_available():
        print("torch_gpu: no CUDA device visible to PyTorch: nothing measured", file=sys.stderr)
        return 3
    t_start = time.monotonic()
    dev = torch.cuda.get_device_properties(0)
    l2 = getattr(dev, "L2_cache_size", 0) or (60 << 20)
    fns = build_functions(torch)
    compiled = {}
    flush = Flusher(torch, l2)
    model = Model(args.bin, args.device)
    dtypes = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}
    rows, skipped, failed = [], [], 0
    wanted = set(args.variants) if args.variants else None
    gen = torch.Generator(device="cuda")
    gen.manual_seed(1)
    for variant, plan in CASES:
        if wanted and variant not in wanted:
            continue
        for dname in args.dtypes:
            dt = dtypes[dname]
            for n in args.sizes or [LECTURE_N[variant]]:
                if args.budget_s > 0 and time.monotonic() - t_start > args.budget_s:
                    skipped.append(f"{variant}/{plan}/{dname}/{n}")
                    continue
                x = (torch.rand(n, device="cuda", generator=gen, dtype=torch.float32) * 4 - 2).to(dt)
                if variant == "sigmoid3":
                    x.requires_grad_(True)
                    g = (torch.rand(n, device="cuda", generator=gen, dtype=torch.float32) * 2 - 1).to(dt)
                    f = fns["sigmoid3_" + plan]

                    def call(f=f, x=x, g=g):
                        x.grad = None
                        y = f(x)
                        y.backward(g)
                        return x.grad

                    x64 = x.detach().double().requires_grad_(True)
                    fns["sigmoid3_eager"](x64).backward(g.double())
                    ref = x64.grad
                elif variant == "copy":
                    def call(x=x):
                        return x.clone()
                    ref = x.double()
                else:
                    base = fns[variant]
                    if plan == "fused":
                        if variant not in compiled:
                            # dynamic shapes: one compilation per dtype, not per size
                            compiled[variant] = torch.compile(base, dynamic=True)
                        f = compiled[variant]
                    else:
                        f = base

                    def call(f=f, x=x):
                        return f(x)

                    ref = base(x.double())
                try:
                    got = call()
                    err = rel_err(torch, got, ref)
                    del got, ref
                    st, reps = time_case(torch, call, flush, timeout=args.timeout)
                except Exception as e:  # torch.compile can fail where no compiler is usable
                    print(f"torch_gpu: {variant} {plan} {dname} n={n}: {type(e).__name__}: {e}", file=sys.stderr)
                    failed += 1
                    continue
                m = model.get(variant, plan, dname, n)
                row = make_row(dev.name, variant, plan, dname, n, st, reps, m, err)
                rows.append(row)
                gbs = ""
                if m:
                    gbs = f" ({(m['read_bytes'] + m['write_bytes']) / st[0] / 1e9:7.1f} GB/s lecture bytes)"
                print(f"{variant:15s} {plan:9s} {dname:5s} n={n:>10d} {backend_of(plan):13s} median "
                      f"{st[0] * 1e6:10.2f} us{gbs}, max rel err {err:.2g}{'' if row[-1] else ' NOT VERIFIED'}",
                      file=sys.stderr)
                del x
    extra = [f"device_detail: {dev.name}, {dev.multi_processor_count} SMs, L2 {l2 / 1048576:.1f} MiB",
             f"torch: {torch.__version__}, cuda {torch.version.cuda}, python {platform.python_version()}"]
    if skipped:
        extra.append(f"skipped (budget {args.budget_s} s): {' '.join(skipped)}")
    write_csv(args.output, rows, common_prov(args, dev.name, extra))
    print(f"torch_gpu: wrote {args.output} ({len(rows)} rows, {time.monotonic() - t_start:.0f} s"
          f"{', ' + str(len(skipped)) + ' cases skipped for the budget' if skipped else ''})", file=sys.stderr)
    not_verified = sum(1 for r in rows if not r[-1])
    return 1 if failed or not_verified or skipped else 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("variants", nargs="*", help="variants (default: all): " +
                    ", ".join(sorted(LECTURE_N)))
    ap.add_argument("--sizes", default="", help="2^20,2^24 or 2^16..2^28[:STEP]; default: lecture sizes")
    ap.add_argument("--dtype", default="f32,bf16", help="f32, bf16, f16 (comma-separated)")
    ap.add_argument("--timeout", type=float, default=10.0, help="seconds of sampling per case at most")
    ap.add_argument("--budget-s", type=float, default=0.0,
                    help="start no case after this many seconds (0: no limit); skipped cases are named")
    ap.add_argument("--device", default="h100-sxm",
                    help="model device: a table id or an INI spec (default h100-sxm)")
    ap.add_argument("--bin", default="", help="membound binary for the model columns (default: none)")
    ap.add_argument("-o", "--output", default="torch_gpu.csv", help="CSV path (default torch_gpu.csv)")
    ap.add_argument("--list", action="store_true", help="print the cases and exit (no PyTorch needed)")
    ap.add_argument("--selftest", action="store_true",
                    help="write the CSV with mocked timings (no PyTorch, no GPU) and exit")
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
    if args.bin and not os.access(args.bin, os.X_OK):
        ap.error(f"--bin: '{args.bin}' is not an executable")
    if args.list:
        for variant, plan in CASES:
            if args.variants and variant not in args.variants:
                continue
            ns = args.sizes or [LECTURE_N[variant]]
            print(f"{variant} {plan} {backend_of(plan)} dtypes={','.join(args.dtypes)} "
                  f"n={','.join(str(n) for n in ns)}")
        return 0
    if args.selftest:
        return selftest(args)
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
