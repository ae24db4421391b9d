#!/usr/bin/python3
"""gpu_validate.py — the model against published GPU measurements.

Reads the validation set (bench/validation/points.csv: one row per published
median, each with its source — repository, file, commit, GPU, date, what the
benchmark computes and how it times it — and the membound variant, plan and
device that stand for it), asks `membound model` for each point, and prints:
every point, model against measured; the medians of |error| by class (eager or
fused x forward, backward or full x size band) and by device; the eager/fused
speedups against the measured ones; and one summary line. With --figure it
draws model against measured on log-log axes with the +-25% band (gnuplot).

The points' timing (Triton's do_bench: 256 MiB zeroed to clear the L2 before
each repetition, CUDA events around the Python call, host gaps included) is
passed to the model as what it is: --framework pytorch (the host issues every
kernel), --flush-mb 268.4 (256 MiB: the device is busy with the flush while
the host starts), --phase forward|backward|all (what the events bracket). A membound
without those options (an older build, --membound BIN) is asked for the plan's
kernels and their device times are summed by phase: the model before the
host and phase terms. Each point's last column is the side that bounds it
(device, host, compute), with ", spills" on a Liger point whose timed kernels
hold a row beyond the GPU's registers (the model's register_spills: Liger's
Triton kernels keep the whole row in registers, and the model's time does not
count the spill).

usage: bench/gpu_validate.py [--points FILE] [--membound BIN] [--bound 25]
                             [--flush-mb MB] [--figure OUT.png] [--min-within PCT] [--quiet]
                             [--kernels rms_norm,layer_norm,swiglu,geglu]
       bench/gpu_validate.py --make-points PUBLISHED.csv [-o points.csv]

Exit 0; 1 when --min-within is given and fewer points than that share are
within the bound; 2 on bad usage or when the model fails on a point.
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
ROOT = os.path.dirname(HERE)
VALIDATION = os.path.join(HERE, "validation")

# ---- the published set's points and what stands for each -----------------

# Triton's do_bench flushes the L2 by zeroing 256 MiB before each repetition
# (triton/testing.py; the driver's get_empty_cache_for_benchmark)
FLUSH_MB = 256 * 2**20 / 1e6

# Published files kept in bench/validation/ -> where they come from
PUBLISHED = {
    "liger-a100-pcie-80gb.csv": ("linkedin/Liger-Kernel", "benchmark/data/a100_all_benchmark_data.csv",
                                 "bdbfeadf9987bb7dcd4b0d54301dcdd5b935ebfe"),
}


class Refused(Exception):
    """Bad input or a failed model run: exit 2 with its message."""


# GPU names as the published files write them -> membound device ids
DEVICES = {"NVIDIA A100 80GB PCIe": "a100-pcie-80gb"}

DTYPE_BYTES = {"torch.bfloat16": 2, "torch.float16": 2, "torch.float32": 4}

TIMING = ("triton.testing.do_bench(rep=500, quantiles=[0.5, 0.2, 0.8]): each repetition "
          "zeroes a 256 MiB buffer (the L2 flush) and then times the Python call between two "
          "CUDA events on the current stream, host gaps included; x.grad set to None first")

MODES = {"forward": "forward: y = module(x)",
         "backward": "backward: y.backward(dy, retain_graph=True) on a y made once",
         "full": "full: y = module(x); y.backward(dy, retain_graph=True)"}

# (kernel, provider) -> (variant file, plan, class, what it computes, approximate)
SOURCES = {
    ("rms_norm", "huggingface"): (
        "llama_rmsnorm.mb", "eager", "eager",
        "LlamaRMSNorm, torch ops: x bf16 [M, H], weight f32 [H]; h = x.to(f32), "
        "v = h.pow(2).mean(-1), y = weight * (h * rsqrt(v + 1e-6)).to(bf16), y f32; dy bf16 "
        "(randn_like(x)), cast to y's f32 by autograd's engine first (backward grad bf16)",
        ""),
    ("rms_norm", "liger"): (
        "liger_rmsnorm.mb", "optimal", "fused",
        "LigerRMSNorm (casting mode llama): one Triton kernel forward (y bf16, rstd saved), "
        "one backward kernel with dW in per-SM partial sums, then _dW.sum(0)",
        "the forward saves rstd ([M] f32), the plan x and w only"),
    ("rms_norm", "torchcompile"): (
        "llama_rmsnorm.mb", "optimal", "fused",
        "torch.compile(LlamaRMSNorm): Inductor's generated kernels, its min-cut partition; "
        "in backward the dx and dw reductions two kernels with common inputs (before its "
        "mix-order reduction, pytorch/pytorch#165370)",
        "Inductor's kernels stood for by membound's optimal plan (min-cut, one fused kernel "
        "forward; backward the dx kernel and a dw kernel reading x and dy again: colsum "
        "reread); dy bf16 cast to f32 by the engine as for huggingface"),
    ("layer_norm", "huggingface"): (
        "torch_layernorm.mb", "eager", "eager",
        "torch.nn.LayerNorm(N), f32 [M, N]: native layer_norm forward, "
        "native_layer_norm_backward and gamma_beta_backward", ""),
    ("layer_norm", "liger"): (
        "liger_layernorm.mb", "optimal", "fused",
        "LigerLayerNorm: one Triton kernel forward (y, mean, rstd), one backward kernel with "
        "dW, dB in per-SM partial sums, then their sums",
        "the forward saves mean and rstd ([M] f32), the plan x, w and b only"),
    ("layer_norm", "torchcompile"): (
        "torch_layernorm.mb", "optimal", "fused",
        "torch.compile(nn.LayerNorm): Inductor's generated kernels, its min-cut partition; "
        "in backward the dx and dw/db reductions two kernels with common inputs (before its "
        "mix-order reduction, pytorch/pytorch#165370)",
        "Inductor's kernels stood for by membound's optimal plan (backward: the dx kernel and "
        "a dw/db kernel reading x and dy again, colsum reread)"),
    # whole MLPs: membound mlp (model/mlp.c), forward and backward, every
    # saved tensor stored; "mlp:LAYER" names the layer, the plan is mlp's
    ("swiglu", "huggingface"): (
        "mlp:llama", "eager", "mlp-eager",
        "LlamaMLP (Hugging Face), bf16: down(silu(gate(x)) * up(x)), nn.Linear without bias "
        "(mm), silu and mul eager kernels; weights' and x's gradients",
        ""),
    ("swiglu", "liger"): (
        "mlp:llama", "liger", "mlp-fused",
        "LigerSwiGLUMLP: the three nn.Linear (mm), silu(a) * b as one Triton kernel "
        "(LigerSiLUMulFunction, a and b saved, one backward kernel)", ""),
    ("swiglu", "torchcompile"): (
        "mlp:llama", "liger", "mlp-fused",
        "torch.compile(LlamaMLP): Inductor's generated kernels around cuBLAS mms",
        "Inductor's partition stood for by mlp's liger plan (the mms, one silu*mul kernel "
        "each way)"),
    ("geglu", "huggingface"): (
        "mlp:geglu", "eager", "mlp-eager",
        "LlamaMLP with hidden_act gelu_pytorch_tanh, bf16: down(gelu_tanh(gate(x)) * up(x)), "
        "F.gelu one kernel, mul, mms",
        "gelu(approximate='tanh') costed as the language's one-kernel gelu (erf)"),
    ("geglu", "liger"): (
        "mlp:geglu", "liger", "mlp-fused",
        "LigerGEGLUMLP: the three nn.Linear (mm), gelu_tanh(a) * b as one Triton kernel "
        "(LigerGELUMulFunction)", "gelu_tanh costed as erf's gelu"),
    ("geglu", "torchcompile"): (
        "mlp:geglu", "liger", "mlp-fused",
        "torch.compile(LlamaMLP, gelu_pytorch_tanh): Inductor's generated kernels around cuBLAS mms",
        "Inductor's partition stood for by mlp's liger plan; gelu_tanh costed as erf's gelu"),
}

# the dtypes' names for membound's --dtype
DTYPE_NAMES = {"torch.bfloat16": "bf16", "torch.float16": "f16", "torch.float32": "f32"}

POINT_FIELDS = ["id", "kernel", "provider", "mode", "class", "x_name", "x_value", "shape", "dtype",
                "input_mib", "measured_ms", "measured_p20_ms", "measured_p80_ms", "variant", "plan",
                "device", "approximate", "source_repo", "source_file", "source_commit", "gpu", "date",
                "library_version", "computation", "timing"]


def make_points(published, out):
    """The validation set's rows from a published Liger-Kernel benchmark CSV:
    its speed medians of the kernels SOURCES knows, with their provenance."""
    base = os.path.basename(published)
    if base not in PUBLISHED:
        raise Refused(f"no provenance for '{base}': add it to PUBLISHED (repository, file, commit)")
    repo, src_file, commit = PUBLISHED[base]
    rows = list(csv.DictReader(open(published, newline="")))
    points = []
    for r in rows:
        key = (r["kernel_name"], r["kernel_provider"])
        if r["metric_name"] != "speed" or key not in SOURCES:
            continue
        variant, plan, cls, what, approx = SOURCES[key]
        cfg = json.loads(r["extra_benchmark_config_str"])
        n = int(r["x_value"])
        dtype = cfg["dtype"]
        if variant.startswith("mlp:"):  # x is the sequence length: tokens = batch x seq
            tokens = cfg.get("B", cfg.get("bsz")) * n
            shape = f"tokens={tokens},d_model={cfg['hidden_size']},d_ff={cfg['intermediate_size']}"
            mib = tokens * cfg["hidden_size"] * DTYPE_BYTES[dtype] / 2**20
        else:
            m = cfg["M"]
            shape, mib = f"{m}x{n}", m * n * DTYPE_BYTES[dtype] / 2**20
        gpu = r["gpu_name"]
        if gpu not in DEVICES:
            raise Refused(f"no membound device for '{gpu}' (DEVICES)")
        pid = f"{r['kernel_name']}/{r['kernel_provider']}/{r['kernel_operation_mode']}/{n}/{DEVICES[gpu]}"
        points.append({
            "id": pid, "kernel": r["kernel_name"], "provider": r["kernel_provider"],
            "mode": r["kernel_operation_mode"], "class": cls, "x_name": r["x_name"], "x_value": n,
            "shape": shape, "dtype": dtype, "input_mib": f"{mib:g}",
            "measured_ms": r["y_value_50"], "measured_p20_ms": r["y_value_20"],
            "measured_p80_ms": r["y_value_80"], "variant": variant, "plan": plan,
            "device": DEVICES[gpu], "approximate": approx,
            "source_repo": repo, "source_file": src_file, "source_commit": commit,
            "gpu": gpu, "date": r["timestamp"], "library_version": "liger " + r["liger_version"],
            "computation": f"{what}; {MODES[r['kernel_operation_mode']]} "
                           f"(benchmark/scripts/benchmark_{r['kernel_name']}.py)",
            "timing": TIMING})
    with open(out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=POINT_FIELDS, lineterminator="\n")
        w.writeheader()
        w.writerows(points)
    print(f"gpu_validate: {len(points)} points written to {out}")


# ---- the model's time for each point ---------------------------------------

def supports(binary, option):
    got = subprocess.run([binary, "model", "--help"], capture_output=True, text=True)
    return option in got.stdout


class Model:
    def __init__(self, binary, flush_mb):
        self.binary, self.flush_mb = binary, flush_mb
        self.terms = supports(binary, "--phase")
        self.cache = {}

    def run(self, p):
        """(seconds, bound side or '') for point p."""
        if p["variant"].startswith("mlp:"):
            return self.run_mlp(p)
        variant = os.path.join(VALIDATION, "variants", p["variant"])
        phase = {"forward": "forward", "backward": "backward", "full": "all"}[p["mode"]]
        key = (variant, p["plan"], p["shape"], p["device"], phase)
        if key not in self.cache:
            cmd = [self.binary, "model", variant, "--plan", p["plan"], "--shape", p["shape"],
                   "--device", p["device"], "--json"]
            if self.terms:
                cmd += ["--framework", "pytorch", "--flush-mb", str(self.flush_mb), "--phase", phase]
            got = subprocess.run(cmd, capture_output=True, text=True)
            if got.returncode != 0:
                raise Refused(f"'{' '.join(cmd)}' failed: {got.stderr.strip()}")
            res = json.loads(got.stdout)["results"][0]
            # a timed kernel that would spill a Triton program's registers
            # (register_spills): Liger's kernels hold the row in registers
            # (BLOCK_SIZE = the row), and the model's time leaves that cost out
            want = {"forward": (False,), "backward": (True,), "all": (False, True)}[phase]
            spills = any(k.get("register_spills") for k in res["per_kernel"] if k.get("backward", False) in want)
            if self.terms:
                self.cache[key] = (res["time_s"], res.get("waits_on", ""), spills)
            else:  # before the phase term: the plan's kernels of the phase, summed
                t = sum(k["time_s"] for k in res["per_kernel"] if k.get("backward", False) in want)
                self.cache[key] = (t, "", spills)
        t, side, spills = self.cache[key]
        return t, f"{side}, spills" if spills and p["provider"] == "liger" else side


    def run_mlp(self, p):
        """A whole MLP (membound mlp): the plan's time, forward and backward (mode
        full), every saved tensor stored; its bound as the side. No host term:
        at these sizes (ms) a few dozen launches' host time is under 1%."""
        if p["mode"] != "full":
            raise Refused(f"point {p['id']}: mlp points are forward and backward ('full') only")
        cmd = [self.binary, "mlp", "--layer", p["variant"][4:], "--dims", p["shape"], "--dtype",
               DTYPE_NAMES[p["dtype"]], "--backward", "--checkpoint", "store", "--device", p["device"], "--json"]
        key = tuple(cmd) + (p["plan"],)
        if key not in self.cache:
            got = subprocess.run(cmd, capture_output=True, text=True)
            if got.returncode != 0:
                raise Refused(f"'{' '.join(cmd)}' failed: {got.stderr.strip()}")
            plans = json.loads(got.stdout)["results"][0]["plans"]
            pl = [x for x in plans if x["plan"] == p["plan"] and x["chosen"]]
            if not pl:
                raise Refused(f"'{' '.join(cmd)}': no plan '{p['plan']}'")
            self.cache[key] = (pl[0]["time_s"], pl[0]["bound"])
        return self.cache[key]


def band(mib):
    return "<8MiB" if mib < 8 else "8-64MiB" if mib <= 64 else ">64MiB"


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def figure(rows, path, bound):
    """Model against measured, log-log, with the +-bound band (gnuplot)."""
    with tempfile.TemporaryDirectory() as tmp:
        data = {}
        for r in rows:
            data.setdefault(f"{r['class']} {r['mode']}", []).append((r["measured_us"], r["model_us"]))
        files = []
        for i, (name, pts) in enumerate(sorted(data.items())):
            fn = os.path.join(tmp, f"d{i}.dat")
            with open(fn, "w") as f:
                f.writelines(f"{a} {b}\n" for a, b in pts)
            files.append((fn, name))
        lo = min(min(r["measured_us"], r["model_us"]) for r in rows) / 1.5
        hi = max(max(r["measured_us"], r["model_us"]) for r in rows) * 1.5
        k = bound / 100
        plots = [f"x title 'model = measured' lc rgb 'black'",
                 f"{1 + k}*x title '+-{bound:g}%' dt 2 lc rgb 'gray'", f"{1 - k}*x notitle dt 2 lc rgb 'gray'"]
        plots += [f"'{fn}' using 1:2 with points pt {7 + j % 4} title '{name}'" for j, (fn, name) in enumerate(files)]
        script = (f"set terminal pngcairo size 900,700\nset output '{path}'\nset logscale xy\n"
                  f"set xrange [{lo}:{hi}]\nset yrange [{lo}:{hi}]\nset xlabel 'measured (us)'\n"
                  f"set ylabel 'model (us)'\nset key top left\nset grid\n"
                  f"set title 'membound model against published GPU medians'\nplot " + ", ".join(plots) + "\n")
        got = subprocess.run(["gnuplot"], input=script, capture_output=True, text=True)
        if got.returncode != 0:
            raise Refused(f"gnuplot failed: {got.stderr.strip()}")


def main():
    try:
        return run()
    except Refused as e:
        print(f"gpu_validate: {e}", file=sys.stderr)
        return 2


def run():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], add_help=True)
    ap.add_argument("--points", default=os.path.join(VALIDATION, "points.csv"))
    ap.add_argument("--membound", default=os.path.join(ROOT, "build", "bin", "membound"))
    ap.add_argument("--bound", type=float, default=25.0)
    ap.add_argument("--flush-mb", type=float, default=FLUSH_MB,
                    help="the L2 flush ahead of each timed call, MB (do_bench: 256 MiB)")
    ap.add_argument("--figure")
    ap.add_argument("--min-within", type=float, help="exit 1 when fewer than PCT%% of points are within the bound")
    ap.add_argument("--quiet", action="store_true", help="the summaries only")
    ap.add_argument("--kernels", help="only these kernels' points (comma-separated: rms_norm,layer_norm)")
    ap.add_argument("--make-points", metavar="PUBLISHED")
    ap.add_argument("-o", dest="out")
    try:
        a = ap.parse_args()
    except SystemExit as e:
        sys.exit(2 if e.code else 0)
    if a.make_points:
        make_points(a.make_points, a.out or a.points)
        return 0
    if not os.access(a.membound, os.X_OK):
        print(f"gpu_validate: no membound binary at {a.membound} (--membound BIN)", file=sys.stderr)
        return 2
    try:
        points = list(csv.DictReader(open(a.points, newline="")))
    except OSError as e:
        print(f"gpu_validate: {e}", file=sys.stderr)
        return 2
    if a.kernels:
        want = set(a.kernels.split(","))
        unknown = want - {p["kernel"] for p in points}
        if unknown:
            print(f"gpu_validate: --kernels: no points of {', '.join(sorted(unknown))}", file=sys.stderr)
            return 2
        points = [p for p in points if p["kernel"] in want]
    model = Model(a.membound, a.flush_mb)
    rows = []
    for p in points:
        t, side = model.run(p)
        measured = float(p["measured_ms"]) * 1e3
        r = dict(p, measured_us=measured, model_us=t * 1e6, side=side,
                 err=100 * (t * 1e6 - measured) / measured, band=band(float(p["input_mib"])))
        rows.append(r)
    within = [r for r in rows if abs(r["err"]) <= a.bound]
    if not a.quiet:
        print(f"| point | class | approx | measured us | model us | error | waits on |")
        print("|---|---|---|---:|---:|---:|---|")
        for r in rows:
            print(f"| {r['id']} | {r['class']} {r['mode']} {r['band']} | {'~' if r['approximate'] else ''} "
                  f"| {r['measured_us']:.1f} | {r['model_us']:.1f} | {r['err']:+.0f}% | {r['side']} |")
        print()
    print(f"terms: {f'host + phase + flush {a.flush_mb:g} MB' if model.terms else 'device kernels summed by phase'} "
          f"({a.membound})")
    print("| class | points | within | median abs error | median signed |")
    print("|---|---:|---:|---:|---:|")
    groups = {}
    for r in rows:
        groups.setdefault((r["class"], r["mode"], r["band"]), []).append(r)
    order = {"forward": 0, "backward": 1, "full": 2, "<8MiB": 0, "8-64MiB": 1, ">64MiB": 2}
    for k in sorted(groups, key=lambda k: (k[0], order[k[1]], order[k[2]])):
        g = groups[k]
        print(f"| {' '.join(k)} | {len(g)} | {sum(abs(r['err']) <= a.bound for r in g)} "
              f"| {median([abs(r['err']) for r in g]):.0f}% | {median([r['err'] for r in g]):+.0f}% |")
    for dev in sorted({r["device"] for r in rows}):
        g = [r for r in rows if r["device"] == dev]
        print(f"| device {dev} | {len(g)} | {sum(abs(r['err']) <= a.bound for r in g)} "
              f"| {median([abs(r['err']) for r in g]):.0f}% | {median([r['err'] for r in g]):+.0f}% |")
    # eager/fused speedups: huggingface against each fused provider at one size and mode
    by = {(r["kernel"], r["provider"], r["mode"], r["x_value"], r["device"]): r for r in rows}
    pairs = []
    for (kern, prov, mode, x, dev), r in by.items():
        if not r["class"].endswith("fused"):
            continue
        e = by.get((kern, "huggingface", mode, x, dev))
        if e:
            ms, mm = e["measured_us"] / r["measured_us"], e["model_us"] / r["model_us"]
            pairs.append((ms, mm, 100 * (mm - ms) / ms))
    good = sum(abs(p[2]) <= 20 for p in pairs)
    print(f"\nspeedups (eager / fused, same size and mode): {good} of {len(pairs)} within 20% "
          f"(median abs error {median([abs(p[2]) for p in pairs]):.0f}%)")
    share = 100 * len(within) / len(rows) if rows else 0
    print(f"within {a.bound:g}%: {len(within)} of {len(rows)} points ({share:.0f}%), "
          f"median abs error {median([abs(r['err']) for r in rows]):.0f}%, "
          f"median signed {median([r['err'] for r in rows]):+.0f}%")
    if a.figure:
        figure(rows, a.figure, a.bound)
        print(f"figure: {a.figure}")
    if a.min_within is not None and share < a.min_within:
        print(f"gpu_validate: {share:.1f}% of points within {a.bound:g}%, below {a.min_within:g}%",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
