#!/usr/bin/python3
"""cpu_peers.py — membound's CPU executors beside PyTorch 2.x and numexpr, in one
run: the same threads and sizes, rounds alternating between the peers.

Cases per variant (the lecture's functions from lecture_demos.py; f32):
  torch eager      the function op by op (sigmoid3: forward + backward, autograd),
                   allocating as it does (alloc), and the same ops each into a
                   buffer allocated once (prealloc: out=), so alloc - prealloc
                   is what its allocations cost
  torch.compile    Inductor's CPU backend, compiled and warmed up before any
                   round; as it runs by default it allocates its output on
                   every call (alloc), and written into a preallocated out
                   (prealloc: out.copy_(f(x)) compiled, which Inductor stores
                   straight into out)
  F.gelu           gelu_tanh only: PyTorch's library kernel, alloc and
                   prealloc (aten gelu.out)
  numexpr          the same formula, alloc and prealloc (out=)
  membound eager / fused   `membound measure --backend cpu --warm --timeout 1`
                   (at least --reps samples, as the peers' --reps calls; then
                   until the CV is 2% or 1 s): the executors write into
                   preallocated buffers (their default)
A round runs every case once (its own warm-up call, then --reps timed calls,
the median; membound's measure does the same in its own process), in an
order that rotates by one each round; a case's figure is the median of its
round medians. Two ratios, membound fused over the peer (< 1: membound is
faster): with allocation counted the same (both preallocated) and as each
runs by default (the peer allocating, membound preallocated).

With --spec FILE (a calibrated CPU spec with first_touch_gbs, from
`membound calibrate`), also `membound model --framework pytorch` beside the
measured PyTorch times: eager against torch eager, fused against
torch.compile as it runs by default. The first touch moves with a shared
host's state, so each round also runs membound's first-touch probe
(`membound calibrate --first-touch`, minima of its 7 rounds) as one more
case in the rotation: the model is given with the spec's first_touch_gbs and
with this run's probe (the fastest of the rounds' figures, as PyTorch's is the
quietest round), and a row whose spec figure is more than 25% off this run's
probe is flagged 'drifted'. Errors are against PyTorch's quietest round (its
minimum over rounds; the model predicts an uncontended machine), its median
beside it.

usage: bench/cpu_peers.py [--bin build/bin/membound] [--n 2^24] [--threads 2] [--rounds 5]
       [--reps 10] [--spec FILE.ini] [--variants LIST] [--inductor vector|as-installed] [--json FILE]
Runs under bench/torch_env.py's venv (made on first use). Byte counts and
model times come from membound; nothing here counts them. Prints the load
average before and after (the machine is shared). Writes no file but --json.
"""
import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import lecture_demos  # noqa: E402
from lecture_demos import loadavg, timed_median  # noqa: E402
import torch_env  # noqa: E402

VARIANTS = ("sin2_plus_cos2", "gelu_tanh", "sigmoid3_fwd", "copy", "sigmoid3")
# membound's names of the variants above; sigmoid3_fwd is the forward alone
MB_EXPR = {"sigmoid3_fwd": "name sigmoid3_fwd; y = sigmoid(sigmoid(sigmoid(x)))"}
NE_EXPR = {"sin2_plus_cos2": lecture_demos.EXPR["sin2_plus_cos2"], "gelu_tanh": lecture_demos.EXPR["gelu_tanh"],
           "sigmoid3_fwd": "1/(1+exp(-(1/(1+exp(-(1/(1+exp(-x))))))))", "copy": "x"}


def parse_n(s):
    return lecture_demos.parse_size(s)



def inductor_vectorize(torch):
    """Lets Inductor's CPU backend emit its vector code (at::vec, SLEEF) here.
    torch 2.15.0 from PyPI decides it cannot: its ISA probe builds a kernel
    calling Sleef_expf16_u10 and dlopens it in a child process that has not
    loaded libtorch_cpu.so globally, so the symbol is missing and the probe
    says no vector ISA (pick_vec_isa() -> INVALID_VEC_ISA on this AVX-512
    guest): every kernel is a scalar loop of std::sin and the like. Forcing
    the ISA (config.cpp.vec_isa_ok) alone fails the same way in this process
    (undefined symbol Sleef_sinf16_u35 loading the kernel), so
    libtorch_cpu.so, which exports SLEEF, is loaded RTLD_GLOBAL first."""
    import ctypes
    import torch._inductor.config as cfg
    ctypes.CDLL(os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so"), mode=ctypes.RTLD_GLOBAL)
    cfg.cpp.vec_isa_ok = True


def python_cases(torch, ne, variants, n, threads):
    """{(variant, peer, mode): zero-argument call}, everything compiled and
    warmed up; inputs uniform in [-2, 2] (seeded), as membound's."""
    fns = lecture_demos.functions(torch)
    gen = torch.Generator().manual_seed(1)
    x = torch.rand(n, generator=gen) * 4 - 2
    g = torch.rand(n, generator=gen) * 2 - 1
    out = torch.empty_like(x)
    bufs = [torch.empty_like(x) for _ in range(8)]
    xn, outn = x.numpy(), out.numpy()
    cases = {}
    for v in variants:
        if v == "sigmoid3":
            step = lecture_demos.forward_backward(torch, fns["sigmoid3_eager"])
            cases[(v, "torch eager", "alloc")] = lambda s=step: s(x, g)
            continue
        f = fns["sigmoid3_eager" if v == "sigmoid3_fwd" else v]
        cases[(v, "torch eager", "alloc")] = lambda f=f: f(x)
        if v == "copy":
            cases[(v, "torch eager", "prealloc")] = lambda: out.copy_(x)
        else:  # the same ops, each into a buffer allocated once: eager less its allocations
            ef = lecture_demos.eager_into(torch, "sigmoid3_eager" if v == "sigmoid3_fwd" else v)
            cases[(v, "torch eager", "prealloc")] = lambda ef=ef: ef(x, bufs)
        cf = torch.compile(f, dynamic=False)
        ci = torch.compile(lecture_demos.into(f), dynamic=False)
        cases[(v, "torch.compile", "alloc")] = lambda cf=cf: cf(x)
        cases[(v, "torch.compile", "prealloc")] = lambda ci=ci: ci(x, out)
        if v == "gelu_tanh":
            F = torch.nn.functional
            cases[(v, "F.gelu", "alloc")] = lambda: F.gelu(x, approximate="tanh")
            cases[(v, "F.gelu", "prealloc")] = lambda: torch.ops.aten.gelu.out(x, approximate="tanh", out=out)
        e = NE_EXPR[v]
        cases[(v, "numexpr", "alloc")] = lambda e=e: ne.evaluate(e, local_dict={"x": xn})
        cases[(v, "numexpr", "prealloc")] = lambda e=e: ne.evaluate(e, local_dict={"x": xn}, out=outn)
    t0 = time.monotonic()
    for key, fn in cases.items():  # compiles the torch.compile cases (first call)
        r = fn()
        checked = key[1] == "torch.compile" or (key[1] == "torch eager" and key[2] == "prealloc")
        if checked and key[0] not in ("copy", "sigmoid3"):
            ref = fns["sigmoid3_eager" if key[0] == "sigmoid3_fwd" else key[0]](x)
            got = out if key[1] == "torch.compile" and key[2] == "prealloc" else r
            if not torch.allclose(ref, got, atol=1e-5):
                raise RuntimeError(f"{key}: the result differs from eager's")
    print(f"compiled and checked {len(cases)} cases in {time.monotonic() - t0:.1f} s", file=sys.stderr)
    return cases


def membound_round(binary, variants, n, threads, reps):
    """One `membound measure` per plan list (forward variants: eager and
    fused; sigmoid3 with its backward: eager): {(variant, plan): median s}."""
    fwd = [v for v in variants if v != "sigmoid3"]
    groups = [(fwd, "eager,fused")] + ([(["sigmoid3"], "eager")] if "sigmoid3" in variants else [])
    times = {}
    with tempfile.TemporaryDirectory() as d:
        for vs, plans in groups:
            if not vs:
                continue
            path = os.path.join(d, "m.csv")
            cmd = [binary, "measure", "--backend", "cpu", "--device", "h100-sxm", "--sizes", str(n),
                   "--threads", str(threads), "--reps", str(reps), "--timeout", "1", "--warm", "-q", "-o", path,
                   "--plan", plans]
            for v in vs:
                cmd += ["--expr", MB_EXPR[v]] if v in MB_EXPR else [v]
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
            with open(path, newline="") as f:
                for r in csv.DictReader(f):
                    if r["verified"] != "1":
                        print(f"warning: membound {r['variant']} {r['plan']} failed its check", file=sys.stderr)
                    times[(r["variant"], r["plan"])] = float(r["time_s_median"])
    return times


DRIFT = 0.25  # a spec's first_touch_gbs this far from the run's probe: its rows are flagged


def touch_probe(binary, threads):
    """membound's first-touch probe now: first_touch_gbs (1e9 B/s)."""
    out = subprocess.run([binary, "calibrate", "--first-touch", "--threads", str(threads), "-q"],
                         check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        if "first_touch_gbs" in line:
            return float(line.split("first_touch_gbs")[1].split()[0])
    raise RuntimeError("membound calibrate --first-touch printed no first_touch_gbs")


def spec_with_touch(spec, gbs, path):
    """A copy of spec at path with first_touch_gbs = gbs."""
    lines = [l for l in open(spec).read().splitlines() if not l.startswith("first_touch_gbs")]
    at = next((i + 1 for i, l in enumerate(lines) if l.strip() == "[device]"), len(lines))
    lines.insert(at, f"first_touch_gbs = {gbs:.4g}")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def spec_touch(spec):
    for l in open(spec).read().splitlines():
        if l.startswith("first_touch_gbs"):
            return float(l.split("=")[1])
    return None


def model_fw(binary, spec, variant, plan, n):
    """membound model --framework pytorch: time_s and alloc_s."""
    src = ["--expr", MB_EXPR[variant]] if variant in MB_EXPR else [variant]
    out = subprocess.run([binary, "model", *src, "--plan", plan, "--n", str(n), "--device", spec,
                          "--framework", "pytorch", "--json"], check=True, capture_output=True, text=True).stdout
    r = json.loads(out)["results"][0]
    return r["time_s"], r["alloc_s"]


def run_rounds(a, torch, ne, cases):
    """Every case once per round, in rotating order; returns {key: [round medians]}."""
    keys = list(cases) + ["membound"] + (["touch"] if a.spec else [])
    got = {k: [] for k in cases}
    mb = {}
    for r in range(a.rounds):
        order = keys[r % len(keys):] + keys[:r % len(keys)]
        for k in order:
            if k == "membound":
                for mk, t in membound_round(a.bin, a.variants, a.n, a.threads, a.reps).items():
                    mb.setdefault(mk, []).append(t)
            elif k == "touch":
                got.setdefault(("touch", "membound probe", "gbs"), []).append(touch_probe(a.bin, a.threads))
            else:
                got[k].append(timed_median(cases[k], a.reps))
        print(f"round {r + 1}/{a.rounds} done (load {loadavg()})", file=sys.stderr)
    for (v, p), ts in mb.items():
        got[(v, "membound " + p, "prealloc")] = ts
    return got


def report(a, got, torch, ne, load0):
    med = {k: statistics.median(ts) for k, ts in got.items()}
    print(f"\nn = {a.n} f32, {a.threads} threads, {a.rounds} alternating rounds of {a.reps} calls, medians "
          f"(torch {torch.__version__}, Inductor code: {a.inductor}, numexpr {ne.__version__}); load average "
          f"{load0} before, {loadavg()} after")
    print("ratio = membound fused / peer (< 1: membound faster); 'same' = both write preallocated "
          "outputs, 'default' = the peer allocating as it runs by default")
    print(f"{'variant':15s} {'peer':14s} {'prealloc ms':>12s} {'alloc ms':>10s} {'ratio same':>11s} "
          f"{'ratio default':>14s}")
    rows = []
    for v in a.variants:
        fused = med.get((v, "membound fused", "prealloc"))
        for peer in ("membound eager", "membound fused", "torch eager", "torch.compile", "F.gelu", "numexpr"):
            pre, alloc = med.get((v, peer, "prealloc")), med.get((v, peer, "alloc"))
            if pre is None and alloc is None:
                continue
            r_same = fused / pre if fused and pre and not peer.startswith("membound") else None
            r_def = fused / alloc if fused and alloc else None
            f = lambda t: f"{t * 1e3:.2f}" if t else "-"
            g = lambda r: f"{r:.2f}x" if r else "-"
            print(f"{v:15s} {peer:14s} {f(pre):>12s} {f(alloc):>10s} {g(r_same):>11s} {g(r_def):>14s}")
            rows.append({"variant": v, "peer": peer, "prealloc_s": pre, "alloc_s": alloc,
                         "ratio_same": r_same, "ratio_default": r_def})
    preds = report_model(a, got, med) if a.spec else []
    if a.json:
        doc = {"n": a.n, "threads": a.threads, "inductor": a.inductor, "rounds": a.rounds, "reps": a.reps, "torch": torch.__version__,
               "numexpr": ne.__version__, "load_before": load0, "load_after": loadavg(),
               "rounds_s": {" / ".join(k): ts for k, ts in got.items()}, "table": rows, "model": preds}
        with open(a.json + ".tmp", "w") as f:
            json.dump(doc, f, indent=1)
        os.replace(a.json + ".tmp", a.json)


def report_model(a, got, med):
    """The --framework pytorch model against PyTorch: with the spec's first
    touch and with this run's probe; rows flagged when the two disagree."""
    lo = {k: min(ts) for k, ts in got.items() if ts}
    probes = got.get(("touch", "membound probe", "gbs"), [])
    run_gbs, cal_gbs = max(probes), spec_touch(a.spec)
    drift = cal_gbs / run_gbs - 1 if cal_gbs else None
    drifted = drift is None or abs(drift) > DRIFT
    print(f"\nfirst touch: spec {a.spec} first_touch_gbs {cal_gbs}; this run's probe "
          f"{', '.join(f'{g:.3g}' for g in probes)} GB/s (rounds), fastest {run_gbs:.3g}: the spec "
          + (f"{100 * drift:+.0f}% off" if drift is not None else "has none")
          + (" -> rows 'drifted' (more than 25%: the spec's first touch is not this run's)" if drifted else ""))
    print("membound model --framework pytorch against PyTorch (error = model / measured - 1; measured = "
          "PyTorch's quietest round, its median over rounds beside it); model (spec) with the spec's "
          "first_touch_gbs, model (run) with this run's probe; touch = first touch: the model's with "
          "the probe, PyTorch's own (torch eager allocating - the same ops preallocated, quietest rounds)")
    print(f"{'variant':15s} {'plan':6s} {'vs':14s} {'min ms':>9s} {'median ms':>10s} {'model(spec)':>12s} "
          f"{'error':>7s} {'model(run)':>11s} {'error':>7s} {'touch model':>12s} {'touch torch':>12s}")
    preds = []
    with tempfile.TemporaryDirectory() as d:
        run_spec = os.path.join(d, "run.ini")
        spec_with_touch(a.spec, run_gbs, run_spec)
        for v in a.variants:
            pairs = [("eager", "torch eager")] + ([] if v in ("sigmoid3", "copy") else [("fused", "torch.compile")])
            for plan, peer in pairs:
                meas, mid = lo.get((v, peer, "alloc")), med.get((v, peer, "alloc"))
                if not meas:
                    continue
                t_spec = model_fw(a.bin, a.spec, v, plan, a.n)[0] if cal_gbs else None
                t_run, alloc = model_fw(a.bin, run_spec, v, plan, a.n)
                pre = lo.get((v, peer, "prealloc")) if plan == "eager" else None
                touch = meas - pre if pre else None
                ts = f"{touch * 1e3:12.2f}" if touch is not None else f"{'-':>12s}"
                e_spec, e_run = (t_spec / meas - 1 if t_spec else None), t_run / meas - 1
                sp = f"{t_spec * 1e3:12.2f} {100 * e_spec:+6.0f}%" if t_spec else f"{'-':>12s} {'-':>7s}"
                print(f"{v:15s} {plan:6s} {peer:14s} {meas * 1e3:9.2f} {mid * 1e3:10.2f} {sp} "
                      f"{t_run * 1e3:11.2f} {100 * e_run:+6.0f}% {alloc * 1e3:12.2f} {ts}"
                      + ("  drifted" if drifted else ""))
                preds.append({"variant": v, "plan": plan, "peer": peer, "measured_s": meas, "median_s": mid,
                              "model_s": t_spec, "error": e_spec, "model_run_s": t_run, "error_run": e_run,
                              "alloc_s": alloc, "torch_touch_s": touch, "drifted": drifted,
                              "spec_touch_gbs": cal_gbs, "run_touch_gbs": run_gbs, "run_touch_rounds": probes})
    return preds


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--bin", default=os.path.join(torch_env.default_build(), "bin", "membound"))
    ap.add_argument("--n", default="2^24")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--spec", default="", help="calibrated CPU spec for the --framework pytorch model")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--json", default="", help="also write every figure to this file")
    ap.add_argument("--inductor", choices=("vector", "as-installed"), default="vector",
                    help="vector (default): Inductor's vector code, which torch 2.15's own ISA probe "
                         "turns off here (see inductor_vectorize); as-installed: what its probe decides")
    a = ap.parse_args(argv)
    a.variants = [v for v in a.variants.split(",") if v]
    for v in a.variants:
        if v not in VARIANTS:
            ap.error(f"unknown variant '{v}' ({', '.join(VARIANTS)})")
    try:
        a.n = parse_n(a.n)
    except ValueError:
        ap.error(f"--n: cannot read '{a.n}'")
    if a.n < 1 or a.threads < 1 or a.rounds < 1:
        ap.error("--n, --threads and --rounds must be >= 1")
    if a.reps < 10:
        ap.error("--reps must be >= 10 (membound measure takes at least 10 samples)")
    if not os.access(a.bin, os.X_OK):
        ap.error(f"--bin: '{a.bin}' is not an executable (build first)")
    if a.spec and not os.path.isfile(a.spec):
        ap.error(f"--spec: '{a.spec}' is not a file")
    torch_env.ensure(__file__, argv)
    import numexpr as ne
    import torch
    torch.set_num_threads(a.threads)
    ne.set_num_threads(a.threads)
    load0 = loadavg()
    if a.inductor == "vector":
        inductor_vectorize(torch)
    cases = python_cases(torch, ne, a.variants, a.n, a.threads)
    got = run_rounds(a, torch, ne, cases)
    report(a, got, torch, ne, load0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
