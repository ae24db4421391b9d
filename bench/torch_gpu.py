#!/usr/bin/env python3
"""torch_gpu.py — the lecture's variants in PyTorch on a GPU, timed with the
same protocol as `membound measure --backend cuda`, written as a membound
measurement CSV (the design's columns), so `membound report` takes it beside
measure.csv. It models nothing itself (model columns come from `membound
model --json`) and counts no DRAM bytes.

Cases (plan names as membound's, backend column says which PyTorch path):
  copy            torch-eager: x.clone()
  sin2_plus_cos2  torch-eager: torch ops one by one; fused: torch-compile
  gelu_tanh       torch-eager: the tanh formula op by op; fused: torch-compile
  sigmoid3        forward + backward (torch.autograd.grad of the input):
                  eager = autograd of three torch.sigmoid; store / recompute
                  = the lecture's autograd.Functions (ThreeSigmoidsStore /
                  Recompute)

A run, in order:
  1. the CSV is opened and its header is written (its last column,
     provenance, carries the provenance lines and notes, on every row);
  2. torch.compile: every fused case is compiled and warmed up at every size
     and dtype before anything is timed, the lecture's headline case
     (sin2_plus_cos2 f32) first, the largest size first; static shapes
     (dynamic=False: one compilation per size and dtype, and Triton may assume
     the size divides its block, so its loads are 16 bytes wide, as ours are);
     the time it took goes into provenance lines. --budget-s counts from the end of
     this step, so the budget is spent on measuring (--compile-budget-s
     bounds this step: what it leaves out is named);
  3. the cases, largest n first, each (n, dtype) group whole (eager beside
     fused), each in its own try: a case that fails writes a note and the
     run goes on. The file is written whole again (a temporary renamed over
     it) as soon as a row is measured or a note added, so a run killed mid-way
     leaves a valid CSV of the rows so far, each with every line so far in
     its provenance column (`membound report` keeps them as provenance).

Protocol, per sample: the same clean L2 flush as membound's CUDA backend
(write a 2x L2 buffer, then read another 2x L2 buffer, so no dirty line of the
flush is written back inside the timed region; synchronize), outside the
timed region; then a blocking kernel (torch.cuda._sleep: one GPU thread spins
for a number of clock cycles) and, queued behind it, a start event, the
case's launches and a stop event, so the time is the GPU's and not Python's
dispatch (membound's backend uses a spin kernel on a host-mapped flag for the
same end). The sleep must outlast the host's enqueueing: every sample checks
it (host enqueue time < the sleep's time between events), a sample that fails
is dropped and the sleep doubled (200 us .. 20 ms). The launches are a CUDA
graph replay (torch.cuda.CUDAGraph capture of one call: eager ops, the
compiled function, forward + backward) where capture works and the replayed
result passes the check, else the eager calls themselves. The counters
column says which, per row, and a provenance line counts them:
  none-torch; protocol=cuda-graph            graph replay behind the sleep
  none-torch; protocol=blocking-sleep        the calls behind the sleep (no graph)
  none-torch; protocol=cuda-graph-unblocked  graph replay, no usable sleep:
                                             the graph's launch latency is inside
  none-torch; protocol=direct                the calls, no usable sleep: Python
                                             dispatch is inside the time
Warm-up 3 launches; >= 10 samples, stop once the coefficient of variation is
<= 2% after 0.2 s, or at 200 samples or --timeout; median, min, p90, CV.

Check: every case's result (the input gradient for sigmoid3; for a graph, the
replayed output, poisoned with NaN first) against a float64 reference
computed with PyTorch in float64 from the same (rounded) inputs: max_rel_err
= max |got - ref| / max(|ref|, 1e-3 max|ref|), as membound's mb_kern_verify;
verified = 1 when it is within membound's tolerance for the dtype (f32 1e-4,
f16 1e-2, bf16 6e-2). A case that fails the check is still timed, with
verified = 0.

Model columns (kernels stays empty: PyTorch's launches are not counted):
with --bin MEMBOUND, read_bytes / write_bytes (the lecture's count),
model_dram_* and model_time_s come from `membound model --json` on --device;
without it they are empty. dram_* are empty. The device column is PyTorch's
device name; a 'model_device: ... (--device SPEC)' provenance line names the spec for
`membound report` (SPEC relative to the CSV's folder when it is a file).

Needs PyTorch with CUDA: a run re-executes itself under bench/torch_env.py's
venv (build/bench-venv) when it has been made, else goes on with the running
python's torch (MB_TORCH_SYSTEM=1: always that one). The
lecture's functions come from lecture_demos.py. Without PyTorch --help,
--list and --selftest work.
--selftest [FILE] writes a CSV (FILE, else -o) through the same writer with
mocked timings (no PyTorch, no GPU), re-reading it after every row. Exit
codes: 0 all cases measured and verified; 1 a case failed, was skipped, was
not verified, or the run was stopped; 2 bad usage; 3 no PyTorch or no GPU.
"""
import argparse
import csv
import datetime
import json
import math
import os
import platform
import signal
import statistics
import subprocess
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lecture_demos  # noqa: E402  (the lecture's functions, written once)
import torch_env  # noqa: E402  (the bench venv)

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
LECTURE_N = lecture_demos.LECTURE_N
DTYPES = ("f32", "bf16", "f16")
# membound's mb_kern_default_tol (kernels/exec_common.c)
TOL = {"f32": 1e-4, "f16": 1e-2, "bf16": 6e-2}
ELEM_BYTES = {"f32": 4, "bf16": 2, "f16": 2}
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The timing protocols, as the counters column names them (after "none-torch; protocol=").
PROTOCOLS = {
    "cuda-graph": "CUDA graph replay behind a torch.cuda._sleep kernel",
    "blocking-sleep": "the case's calls behind a torch.cuda._sleep kernel (no CUDA graph)",
    "cuda-graph-unblocked": "CUDA graph replay, no blocking kernel (graph launch latency inside)",
    "direct": "the case's calls, no blocking kernel (Python dispatch inside the time)",
}
WARMUP = 3
# The blocking sleep: at least 200 us (a graph replay enqueues in ~10 us, an
# eager op in ~10 us of Python; the rest is margin), at most 20 ms (an eager
# autograd step enqueues in well under 1 ms: a host that still outlasts 20 ms
# is blocked by something else, and the case is then timed without the sleep,
# saying so). MAX_DROPS dropped samples in a row give the sleep up.
SLEEP_MIN_S = 200e-6
SLEEP_MAX_S = 20e-3
MAX_DROPS = 8


class Stopped(BaseException):
    """SIGTERM (e.g. from timeout(1)): ends the run between two Python steps;
    the rows written so far stay, a '#' line says the run was stopped."""


def _on_signal(signum, _frame):
    raise Stopped(f"signal {signum}")


def short(e, limit=300):
    """An exception as one short line: 'Type: first line of the message'."""
    msg = str(e).strip().splitlines()
    text = f"{type(e).__name__}: {msg[0] if msg else ''}"
    return text if len(text) <= limit else text[:limit - 3] + "..."


def backend_of(plan):
    return "torch-compile" if plan == "fused" else "torch-eager"


def counters_of(protocol):
    return f"none-torch; protocol={protocol}"


parse_size = lecture_demos.parse_size  # one size syntax for every bench


def parse_sizes(s):
    """'2^16,2^20' or '2^16..2^28[:STEP]' (every STEP-th power of two)."""
    if ".." in s:
        lo, hi = s.split("..", 1)
        step = 1
        if ":" in hi:
            hi, st = hi.split(":", 1)
            step = int(st)
        lo, hi = parse_size(lo), parse_size(hi)
        if lo < 1 or hi < lo or lo & (lo - 1) or hi & (hi - 1) or step < 1:
            raise ValueError(f"range ends must be powers of two, low <= high, step >= 1: {s}")
        out, e = [], lo.bit_length() - 1
        while (1 << e) <= hi:
            out.append(1 << e)
            e += step
        return out
    out = [parse_size(p) for p in s.split(",") if p]
    if any(n < 1 for n in out):
        raise ValueError(f"sizes must be >= 1: {s}")
    return out


def make_jobs(args):
    """The cases to run, (variant, plan, dtype, n), in run order: largest n
    first (the cold-memory sizes the validation needs), then dtype, then
    CASES' order, so a run cut short by the budget still has whole (n, dtype)
    groups (eager beside fused) for the sizes it got to."""
    jobs = []
    for ci, (variant, plan) in enumerate(CASES):
        if args.variants and variant not in args.variants:
            continue
        for di, dname in enumerate(args.dtypes):
            for n in args.sizes or [LECTURE_N[variant]]:
                jobs.append(((-n, di, ci), (variant, plan, dname, n)))
    return [j for _, j in sorted(jobs)]


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
    """The lecture's functions, from the one shared script (lecture_demos.py)."""
    return lecture_demos.functions(torch)


class Flusher:
    """Evicts L2 between samples, as membound's CUDA backend does (mb_gpu_clean_l2 in
    measure/cuda_session.cu): writes a 2x L2 buffer, then reads another 2x L2
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


class Blocker:
    """The blocking kernel: torch.cuda._sleep(cycles) spins one GPU thread for
    about that many SM clock cycles. Queued ahead of a sample's launches, it
    holds them back until the host has enqueued them all. Its rate (cycles
    per second) is measured once here; ok() is False, with why set, when
    torch.cuda._sleep is missing or its rate is implausible."""

    def __init__(self, torch):
        self.torch = torch
        self.sleep = getattr(torch.cuda, "_sleep", None)
        self.cycles_per_s = 0.0
        self.why = ""
        if self.sleep is None:
            self.why = "torch.cuda._sleep is missing"
            return
        try:
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            rate = 0.0
            for cycles in (100000, 2000000, 2000000):  # the first one warms up
                torch.cuda.synchronize()
                a.record()
                self.sleep(cycles)
                b.record()
                b.synchronize()
                s = a.elapsed_time(b) * 1e-3
                rate = cycles / s if s > 0 else 0.0
            # an SM clock between 10 MHz and 100 GHz: anything else is a broken measurement
            if not 1e7 < rate < 1e11:
                raise ValueError(f"implausible rate {rate:.3g} cycles/s")
            self.cycles_per_s = rate
        except Exception as e:
            self.sleep = None
            self.why = f"torch.cuda._sleep unusable: {short(e)}"

    def ok(self):
        return self.sleep is not None

    def __call__(self, seconds):
        self.sleep(max(1000, int(seconds * self.cycles_per_s)))


def time_case(torch, launch, flush, blocker, min_reps=10, max_reps=200, max_cv=0.02, min_time=0.2,
              timeout=10.0):
    """Times launch() cold: WARMUP launches, then per sample flush() and the
    GPU time between two events around launch(), behind the blocking sleep
    when blocker is usable (see the file comment). Returns (stats, reps,
    blocked, dropped): stats = (median, min, p90, cv), times in s; blocked:
    whether the kept samples were taken behind the sleep; dropped: samples
    thrown away because the host's enqueueing outlasted the sleep."""
    host_s = 0.0
    for _ in range(WARMUP):
        t = time.perf_counter()
        launch()
        host_s = max(host_s, time.perf_counter() - t)
    torch.cuda.synchronize()
    mark, start, stop = (torch.cuda.Event(enable_timing=True) for _ in range(3))
    blocked = blocker is not None and blocker.ok()
    sleep_s = min(SLEEP_MAX_S, max(SLEEP_MIN_S, 3 * host_s + 100e-6))
    samples, dropped, in_a_row = [], 0, 0
    t0 = time.monotonic()
    while True:
        el = time.monotonic() - t0
        if len(samples) >= min_reps:
            cv = stats(samples)[3]
            if (cv <= max_cv and el >= min_time) or len(samples) >= max_reps or el >= timeout:
                break
        elif blocked and el >= timeout:
            blocked, samples = False, []  # the sleep never covered: time without it
        flush()
        if blocked:
            h0 = time.perf_counter()
            mark.record()
            blocker(sleep_s)
            start.record()
            launch()
            stop.record()
            host = time.perf_counter() - h0
            stop.synchronize()
            slept = mark.elapsed_time(start) * 1e-3
            if host >= slept:
                # the host was still enqueueing when the sleep ended: launch
                # latency and dispatch may be inside this sample; drop it
                dropped += 1
                in_a_row += 1
                sleep_s = min(SLEEP_MAX_S, max(2 * sleep_s, 2 * host))
                if in_a_row >= MAX_DROPS:
                    blocked, samples = False, []
                continue
            in_a_row = 0
        else:
            start.record()
            launch()
            stop.record()
            stop.synchronize()
        samples.append(start.elapsed_time(stop) * 1e-3)
    return stats(samples), len(samples), blocked, dropped


def capture_graph(torch, call):
    """A CUDA graph of one call() and that call's output (static: every
    replay writes it). Warm-up on a side stream first, as PyTorch's CUDA
    graph notes ask (autograd and the allocator set up outside the capture),
    and capture on that same stream, as torch.cuda.make_graphed_callables
    does. Raises when capture fails."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(WARMUP):
            call()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=side):
        out = call()
    torch.cuda.synchronize()
    return graph, out


def cuda_usable(torch):
    """Whether CUDA still works after a failure. A failed capture can leave a
    non-sticky error behind that the first try here clears; a sticky one
    (the context is lost) fails all three."""
    for _ in range(3):
        try:
            torch.cuda.synchronize()
            if torch.ones(4, device="cuda").sum().item() == 4.0:
                return True
        except Exception:
            pass
    return False


def rel_err(torch, got, ref):
    """max |got - ref| / max(|ref|, 1e-3 max|ref|), ref in float64 (mb_kern_verify's error)."""
    g = got.detach().double()
    r = ref.detach().double()
    scale = r.abs().max().item()
    floor = max(1e-3 * scale, 1e-300)
    den = torch.clamp(r.abs(), min=floor)
    e = ((g - r).abs() / den).max().item()
    return e if math.isfinite(e) else float("inf")


def build_case(torch, fns, compiled, variant, plan, dt, n, gen):
    """(call, ref): call() runs the case once and returns its result (for
    sigmoid3 the input gradient); ref is the float64 reference."""
    x = (torch.rand(n, device="cuda", generator=gen, dtype=torch.float32) * 4 - 2).to(dt)
    if variant == "sigmoid3":
        x.requires_grad_(True)
        g = (torch.rand(n, device="cuda", generator=gen, dtype=torch.float32) * 2 - 1).to(dt)
        f = fns["sigmoid3_" + plan]

        # torch.autograd.grad, not .backward(): the same kernels (a first
        # gradient is handed over, not copied), and no .grad to reset, as
        # torch.cuda.make_graphed_callables captures backward passes
        def call(f=f, x=x, g=g):
            return torch.autograd.grad(f(x), x, g)[0]

        x64 = x.detach().double().requires_grad_(True)
        return call, torch.autograd.grad(fns["sigmoid3_eager"](x64), x64, g.double())[0]
    if variant == "copy":
        def call(x=x):
            return x.clone()

        return call, x.double()
    base = fns[variant]
    f = compiled[variant] if plan == "fused" else base

    def call(f=f, x=x):
        return f(x)

    return call, base(x.double())


def measure_one(torch, ctx, variant, plan, dname, n, notes):
    """One case: build, capture a CUDA graph, check, time. Returns (stats,
    reps, protocol, err); appends what went differently from the plan
    (capture failed, samples dropped) to notes. Raises when the case cannot
    be measured at all."""
    tol = TOL[dname]
    call, ref = build_case(torch, ctx["fns"], ctx["compiled"], variant, plan, ctx["dtypes"][dname], n,
                           ctx["gen"])
    graph = out = None
    err = float("inf")
    try:
        graph, out = capture_graph(torch, call)
        out.detach().fill_(float("nan"))  # poison: the replay must write every element
        graph.replay()
        torch.cuda.synchronize()
        err = rel_err(torch, out, ref)
    except Exception as e:
        graph = out = None
        notes.append(f"CUDA graph capture failed ({short(e)}): timed as calls")
        if not cuda_usable(torch):
            raise RuntimeError("CUDA is not usable after the failed capture") from e
    if graph is not None and not err <= tol:
        got = call()
        err_eager = rel_err(torch, got, ref)
        del got
        if err_eager <= tol:
            notes.append(f"the graph replay's result failed the check (max rel err {err:.3g}) where the "
                         f"call's passed ({err_eager:.3g}): timed as calls")
            graph = out = None
    timed = protocol = None
    if graph is not None:
        try:
            timed = time_case(torch, graph.replay, ctx["flush"], ctx["blocker"], timeout=ctx["timeout"])
            protocol = "cuda-graph" if timed[2] else "cuda-graph-unblocked"
        except Exception as e:
            graph = out = timed = None
            notes.append(f"timing the graph replay failed ({short(e)}): timed as calls")
            if not cuda_usable(torch):
                raise RuntimeError("CUDA is not usable after the failed replay") from e
    if graph is None:
        got = call()
        torch.cuda.synchronize()
        err = rel_err(torch, got, ref)
        del got
        timed = time_case(torch, call, ctx["flush"], ctx["blocker"], timeout=ctx["timeout"])
        protocol = "blocking-sleep" if timed[2] else "direct"
    st, reps, blocked, dropped = timed
    if dropped:
        notes.append(f"{dropped} samples dropped (the host's enqueueing outlasted the sleep; "
                     f"{'the sleep was lengthened' if blocked else 'then timed without it'})")
    elif not blocked and ctx["blocker"].ok():
        notes.append("timed without the blocking sleep (it never covered the enqueueing)")
    del graph, out, ref, call
    return st, reps, protocol, err


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




def make_row(device, variant, plan, dname, n, st, reps, model, err, protocol):
    """One CSV row (a list in COLUMNS order); st = (median, min, p90, cv)."""
    med, mn, p90, cv = st
    m = model or {}

    def opt(key, fmt="{}"):
        return fmt.format(m[key]) if key in m and m[key] is not None else ""

    verified = 1 if err <= TOL[dname] else 0
    return [device, backend_of(plan), variant, plan, dname, n, "", reps, f"{med:.9g}", f"{mn:.9g}",
            f"{p90:.9g}", f"{cv:.6g}", opt("time_s", "{:.9g}"), opt("read_bytes"), opt("write_bytes"),
            opt("dram_read_bytes"), opt("dram_write_bytes"), "", "", counters_of(protocol),
            f"{err:.6g}" if math.isfinite(err) else "inf", verified]


def spec_for_csv(device, output):
    """The --device SPEC as the CSV should name it: a file relative to the CSV's folder."""
    if os.path.isfile(device):
        return os.path.relpath(os.path.abspath(device), os.path.dirname(os.path.abspath(output)) or ".")
    return device


def csv_line(values):
    """One CSV line: a field with a comma, quote or line break is quoted."""
    out = []
    for v in values:
        s = str(v)
        if any(c in s for c in ',"\r\n'):
            s = '"' + s.replace('"', '""') + '"'
        out.append(s)
    return ",".join(out) + "\n"


class CsvWriter:
    """The measurement CSV, plain (header, one row per line, no comment
    lines): the design's columns and provenance, where every row carries the
    provenance lines and notes so far ("key: value" lines, a newline written
    as \\n and a backslash as \\\\, as membound measure writes them). The
    file is written whole again, to a temporary renamed over PATH, after each
    row and note, so a run killed at any point leaves a valid CSV of the rows
    measured so far. Raises OSError when PATH cannot be written."""

    def __init__(self, path, prov):
        folder = os.path.dirname(os.path.abspath(path))
        os.makedirs(folder, exist_ok=True)
        self.path, self.rows, self.lines, self.kept = path, 0, [], []
        for line in prov:
            self.lines += self._split(line)
        self._flush()

    @staticmethod
    def _split(text):
        # report keeps provenance lines of up to 511 bytes with the file's
        # name in front: long text goes on several lines
        out = []
        for line in str(text).splitlines() or [""]:
            while True:
                out.append(line[:400])
                line = line[400:]
                if not line:
                    break
        return out

    def _flush(self):
        prov = "\n".join(self.lines).replace("\\", "\\\\").replace("\n", "\\n")
        tmp = f"{self.path}.tmp.{os.getpid()}"
        with open(tmp, "w", encoding="utf-8", newline="") as fp:
            fp.write(csv_line(COLUMNS + ["provenance"]))
            for values in self.kept:
                fp.write(csv_line(values + [prov]))
            fp.flush()
            try:
                os.fsync(fp.fileno())
            except OSError:
                pass  # a file system without fsync: flushed is enough
        os.replace(tmp, self.path)

    def comment(self, text):
        self.lines += self._split(text)
        self._flush()

    def row(self, values):
        if len(values) != len(COLUMNS):
            raise ValueError(f"a row of {len(values)} fields, the header has {len(COLUMNS)}")
        self.kept.append(list(values))
        self.rows += 1
        self._flush()

    def close(self):
        pass


def read_csv(path):
    """The rows of a measurement CSV as dicts ('#' lines skipped), checking
    the header against COLUMNS and each row's fields. Raises ValueError."""
    with open(path, newline="", encoding="utf-8") as fp:
        lines = [ln for ln in fp if ln.strip() and not ln.lstrip().startswith("#")]
    recs = list(csv.reader(lines))
    if recs and recs[0] == COLUMNS + ["provenance"]:
        recs = [r[:-1] for r in recs]
    if not recs or recs[0] != COLUMNS:
        raise ValueError(f"{path}: the header is not the measurement columns: {recs[0] if recs else 'none'}")
    rows = []
    for i, r in enumerate(recs[1:], 1):
        if len(r) != len(COLUMNS):
            raise ValueError(f"{path}: row {i}: {len(r)} fields, not {len(COLUMNS)}")
        d = dict(zip(COLUMNS, r))
        if int(d["n"]) < 1 or not float(d["time_s_median"]) > 0 or d["verified"] not in ("0", "1"):
            raise ValueError(f"{path}: row {i}: n, time_s_median or verified out of range: {r}")
        if d["counters"].split("=", 1)[-1] not in PROTOCOLS or not d["counters"].startswith("none-torch; protocol="):
            raise ValueError(f"{path}: row {i}: counters '{d['counters']}' names no protocol")
        rows.append(d)
    return rows


def common_prov(args, device_label, extra):
    spec = spec_for_csv(args.device, args.output)
    return ["torch_gpu.py: the lecture's variants in PyTorch (eager, torch.compile, autograd.Function)",
            f"device: {device_label}", *extra,
            f"git_commit: {git_commit()}",
            f"date: {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')}",
            "settings: cold (2x L2 write + 2x L2 read before each sample, as membound's CUDA backend), "
            f"warm-up {WARMUP}, >= 10 samples, cv <= 0.02 after 0.2 s, <= 200 samples, timeout {args.timeout} s, "
            f"budget {args.budget_s} s after compilation (0: none)",
            "protocol: each sample's launches queued behind torch.cuda._sleep (checked to outlast the host's "
            "enqueueing), as a CUDA graph replay where capture works, else as calls; per row in counters:",
            *(f"protocol={k}: {v}" for k, v in PROTOCOLS.items()),
            "backend: torch",
            f"model_device: {os.path.basename(spec)} (--device {spec})",
            f"model_columns: {'membound model --json (' + args.bin + ')' if args.bin else 'none (no --bin)'}"]


def protocol_summary(counts):
    return "protocols: " + (", ".join(f"{p} {counts[p]} rows" for p in PROTOCOLS if counts.get(p)) or "no rows")


def selftest(args):
    """The writer with mocked timings, errors and protocols (no PyTorch, no
    GPU), the file re-read after every row as a run killed there would leave it."""
    rt = [["a,b", 'c"d', "e\nf", 1]]
    if list(csv.reader(csv_line(rt[0]).splitlines(keepends=True))) != [[str(v) for v in rt[0]]]:
        print("torch_gpu: selftest: csv_line does not round-trip", file=sys.stderr)
        return 1
    model = Model(args.bin, args.device)
    writer = CsvWriter(args.output, common_prov(args, "mock GPU (selftest: timings are made up)",
                                                ["torch: none (selftest)"]))
    counts = {}
    try:
        if read_csv(args.output):
            raise ValueError("rows before any was written")
        writer.comment("torch_compile_s: 0.0 (selftest: nothing compiled)")
        for i, (variant, plan, dname, n) in enumerate(make_jobs(args)):
            m = model.get(variant, plan, dname, n)
            base = (m or {}).get("time_s") or 1e-5 * (1 + i)
            st = (base * 1.1, base * 1.05, base * 1.2, 0.01)
            protocol = list(PROTOCOLS)[i % len(PROTOCOLS)]
            counts[protocol] = counts.get(protocol, 0) + 1
            writer.row(make_row("mock GPU", variant, plan, dname, n, st, 10, m, 0.5 * TOL[dname], protocol))
            if i % 3 == 1:
                writer.comment(f"note: {variant} {plan} {dname} n={n}: a mocked note between rows")
            got = read_csv(args.output)
            if len(got) != i + 1 or got[-1]["variant"] != variant or got[-1]["plan"] != plan:
                raise ValueError(f"after row {i + 1} the file holds {len(got)} rows")
        writer.comment(protocol_summary(counts))
    except (OSError, ValueError) as e:
        print(f"torch_gpu: selftest: {e}", file=sys.stderr)
        return 1
    finally:
        writer.close()
    print(f"torch_gpu: selftest: wrote {args.output} ({writer.rows} rows, valid after each)", file=sys.stderr)
    return 0


def compile_phase(torch, ctx, jobs, args, writer):
    """torch.compile of every fused case, its first call (the compilation) and
    WARMUP calls at every size and dtype, before anything is timed. Returns
    {(variant, dtype, n): reason} for the cases that could not be compiled."""
    # the headline case first (sin2_plus_cos2, the first dtype asked for), then
    # the others; within each the largest size first, as they are measured
    order = {d: i for i, d in enumerate(args.dtypes)}
    fused = sorted({(v, d, n) for v, p, d, n in jobs if p == "fused"},
                   key=lambda c: (c[0] != "sin2_plus_cos2" or order[c[1]] != 0, order[c[1]], -c[2], c[0]))
    failed, bad = {}, {}
    if not fused:
        return failed
    t0 = time.monotonic()
    for variant, dname, n in fused:
        if (variant, dname) in bad:  # one failure per variant and dtype: do not pay for it again
            failed[(variant, dname, n)] = bad[(variant, dname)]
            continue
        if args.compile_budget_s > 0 and time.monotonic() - t0 > args.compile_budget_s:
            failed[(variant, dname, n)] = f"not compiled: --compile-budget-s {args.compile_budget_s:g} spent"
            writer.comment(f"torch_compile: {variant} {dname} n={n}: {failed[(variant, dname, n)]}")
            continue
        t = time.monotonic()
        try:
            if variant not in ctx["compiled"]:
                # static shapes: a recompilation per size and dtype, each
                # specialised to its size (16-byte loads where it divides)
                ctx["compiled"][variant] = torch.compile(ctx["fns"][variant], dynamic=False)
            f = ctx["compiled"][variant]
            x = (torch.rand(n, device="cuda", generator=ctx["gen"], dtype=torch.float32) * 4 - 2).to(
                ctx["dtypes"][dname])
            f(x)
            torch.cuda.synchronize()
            t1 = time.monotonic()
            for _ in range(WARMUP):
                f(x)
            torch.cuda.synchronize()
            del x
            line = f"{variant} {dname} n={n}: first call {t1 - t:.2f} s, warm-up {time.monotonic() - t1:.2f} s"
        except Exception as e:
            bad[(variant, dname)] = failed[(variant, dname, n)] = f"torch.compile failed: {short(e)}"
            line = f"{variant} {dname} n={n}: {failed[(variant, dname, n)]} ({time.monotonic() - t:.1f} s)"
            traceback.print_exc(file=sys.stderr)
            if not cuda_usable(torch):
                writer.comment(f"torch_compile: {line}")
                raise RuntimeError("CUDA is not usable after the failed compilation") from e
        writer.comment(f"torch_compile: {line}")
        print(f"torch_gpu: torch.compile {line}", file=sys.stderr)
    total = time.monotonic() - t0
    writer.comment(f"torch_compile_s: {total:.1f} (compilation and warm-up of {len(fused)} fused cases, "
                   f"{len(failed)} failed; before the --budget-s clock)")
    print(f"torch_gpu: torch.compile: {total:.1f} s for {len(fused)} fused cases, {len(failed)} failed",
          file=sys.stderr)
    return failed


def measure_all(torch, ctx, jobs, args, writer, state):
    """The measuring step: every job in its own try; rows and notes go to
    writer as they come; state collects rows, failures, skips, protocols."""
    model = Model(args.bin, args.device)
    compile_failed = compile_phase(torch, ctx, jobs, args, writer)
    ctx["flush"] = Flusher(torch, ctx["l2"])
    ctx["blocker"] = blocker = Blocker(torch)
    if blocker.ok():
        writer.comment(f"blocking_kernel: torch.cuda._sleep, {blocker.cycles_per_s / 1e9:.3f} Gcycles/s measured")
    else:
        writer.comment(f"blocking_kernel: none ({blocker.why}): launch latency is inside the times")
    t_budget = time.monotonic()
    state["measure_t0"] = t_budget
    for variant, plan, dname, n in jobs:
        name = f"{variant}/{plan}/{dname}/{n}"
        if args.budget_s > 0 and time.monotonic() - t_budget > args.budget_s:
            state["skipped"].append(name)
            continue
        if plan == "fused" and (variant, dname, n) in compile_failed:
            state["failed"].append(name)
            continue
        notes = []
        try:
            st, reps, protocol, err = measure_one(torch, ctx, variant, plan, dname, n, notes)
        except Exception as e:
            state["failed"].append(name)
            writer.comment(f"failed: {variant} {plan} {dname} n={n}: {short(e)}")
            print(f"torch_gpu: {variant} {plan} {dname} n={n}: {short(e, 2000)}", file=sys.stderr)
            if not cuda_usable(torch):
                writer.comment("CUDA is no longer usable: the remaining cases are not run")
                raise RuntimeError("CUDA is no longer usable") from e
            continue
        finally:
            try:
                torch.cuda.empty_cache()
            except Exception:
                pass
        try:
            m = model.get(variant, plan, dname, n)
        except Exception as e:  # the model columns are a bonus: never lose a row for them
            print(f"torch_gpu: membound model: {short(e)}", file=sys.stderr)
            m = None
        row = make_row(ctx["device"], variant, plan, dname, n, st, reps, m, err, protocol)
        writer.row(row)
        state["rows"] += 1
        state["protocols"][protocol] = state["protocols"].get(protocol, 0) + 1
        if not row[-1]:
            state["not_verified"].append(name)
        for note in notes:
            writer.comment(f"note: {variant} {plan} {dname} n={n}: {note}")
        gbs = ""
        try:
            if m and st[0] > 0:
                gbs = f" ({(m['read_bytes'] + m['write_bytes']) / st[0] / 1e9:7.1f} GB/s lecture bytes)"
        except (KeyError, TypeError):
            pass
        print(f"{variant:15s} {plan:9s} {dname:5s} n={n:>10d} {backend_of(plan):13s} median "
              f"{st[0] * 1e6:10.2f} us{gbs}, {reps} samples, {protocol}, max rel err {err:.2g}"
              f"{'' if row[-1] else ' NOT VERIFIED'}", file=sys.stderr)


def run(args):
    # the bench venv when it was made (bench/torch_env.py), else this
    # interpreter's torch: a GPU machine may carry its own
    torch_env.ensure(__file__, args.argv, required=False)
    try:
        import torch
    except Exception as e:  # ImportError, or a broken install (OSError from a missing library)
        print(f"torch_gpu: PyTorch is not usable here ({short(e)}): nothing measured", file=sys.stderr)
        return 3
    try:
        if not torch.cuda.is_available():
            print("torch_gpu: no CUDA device visible to PyTorch: nothing measured", file=sys.stderr)
            return 3
        dev = torch.cuda.get_device_properties(0)
    except Exception as e:
        print(f"torch_gpu: CUDA is not usable ({short(e)}): nothing measured", file=sys.stderr)
        return 3
    wall0 = time.monotonic()
    l2 = getattr(dev, "L2_cache_size", 0) or (60 << 20)
    try:
        import triton
        triton_v = getattr(triton, "__version__", "unknown")
    except Exception:
        triton_v = "none"
    extra = [f"device_detail: {dev.name}, {dev.multi_processor_count} SMs, L2 {l2 / 1048576:.1f} MiB",
             f"torch: {torch.__version__}, cuda {torch.version.cuda}, triton {triton_v}, "
             f"python {platform.python_version()}"]
    try:
        writer = CsvWriter(args.output, common_prov(args, dev.name, extra))
    except OSError as e:
        print(f"torch_gpu: {args.output}: {e}", file=sys.stderr)
        return 1
    jobs = make_jobs(args)
    state = {"rows": 0, "failed": [], "skipped": [], "not_verified": [], "protocols": {}, "stopped": "",
             "measure_t0": None}
    old = {}
    for sig in (signal.SIGTERM, signal.SIGHUP):
        try:
            old[sig] = signal.signal(sig, _on_signal)
        except (OSError, ValueError):
            pass
    try:
        gen = torch.Generator(device="cuda")
        gen.manual_seed(1)
        ctx = {"fns": build_functions(torch), "compiled": {}, "gen": gen, "l2": l2, "device": dev.name,
               "dtypes": {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16},
               "timeout": args.timeout}
        measure_all(torch, ctx, jobs, args, writer, state)
    except (Stopped, KeyboardInterrupt) as e:
        state["stopped"] = f"stopped ({str(e) or type(e).__name__}) after {state['rows']} rows"
    except Exception as e:
        traceback.print_exc(file=sys.stderr)
        state["stopped"] = f"aborted after {state['rows']} rows: {short(e)}"
    finally:
        for sig, h in old.items():
            try:
                signal.signal(sig, h)
            except (OSError, ValueError):
                pass
    try:
        if state["stopped"]:
            writer.comment(state["stopped"])
        writer.comment(protocol_summary(state["protocols"]))
        if state["skipped"]:
            writer.comment(f"skipped (budget {args.budget_s:g} s): {' '.join(state['skipped'])}")
        if state["failed"]:
            writer.comment(f"failed: {' '.join(state['failed'])}")
        if state["not_verified"]:
            writer.comment(f"not_verified: {' '.join(state['not_verified'])}")
        measuring = time.monotonic() - state["measure_t0"] if state["measure_t0"] else 0.0
        writer.comment(f"wall_s: {time.monotonic() - wall0:.1f} in all, {measuring:.1f} measuring; "
                       f"{state['rows']} rows of {len(jobs)} cases")
    except OSError as e:
        print(f"torch_gpu: {args.output}: {e}", file=sys.stderr)
    finally:
        writer.close()
    print(f"torch_gpu: wrote {args.output} ({state['rows']} rows of {len(jobs)} cases, "
          f"{time.monotonic() - wall0:.0f} s; {protocol_summary(state['protocols'])}"
          f"{', ' + str(len(state['skipped'])) + ' skipped for the budget' if state['skipped'] else ''}"
          f"{', ' + str(len(state['failed'])) + ' failed' if state['failed'] else ''}"
          f"{'; ' + state['stopped'] if state['stopped'] else ''})", file=sys.stderr)
    return 1 if state["failed"] or state["skipped"] or state["not_verified"] or state["stopped"] else 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("variants", nargs="*", help="variants (default: all): " +
                    ", ".join(sorted(LECTURE_N)))
    ap.add_argument("--sizes", default="", help="2^20,2^24 or 2^16..2^28[:STEP]; default: lecture sizes")
    ap.add_argument("--dtype", default="f32,bf16", help="f32, bf16, f16 (comma-separated)")
    ap.add_argument("--timeout", type=float, default=10.0, help="seconds of sampling per case at most")
    ap.add_argument("--budget-s", type=float, default=0.0,
                    help="start no case after this many seconds of measuring, counted after torch.compile "
                         "(0: no limit); skipped cases are named")
    ap.add_argument("--compile-budget-s", type=float, default=0.0,
                    help="start no torch.compile after this many seconds of compiling (0: no limit); "
                         "the fused cases left out are named")
    ap.add_argument("--device", default="h100-sxm",
                    help="model device: a table id or an INI spec (default h100-sxm)")
    ap.add_argument("--bin", default="", help="membound binary for the model columns (default: none)")
    ap.add_argument("-o", "--output", default="torch_gpu.csv", help="CSV path (default torch_gpu.csv)")
    ap.add_argument("--list", action="store_true", help="print the cases in run order and exit (no PyTorch needed)")
    ap.add_argument("--selftest", nargs="?", const="", default=None, metavar="FILE",
                    help="write the CSV (to FILE, else -o) with mocked timings, re-reading it after every "
                         "row (no PyTorch, no GPU), and exit")
    args = ap.parse_args(argv)
    args.argv = sys.argv[1:] if argv is None else list(argv)
    for v in args.variants:
        if v not in LECTURE_N:
            ap.error(f"unknown variant '{v}' (variants: {', '.join(sorted(LECTURE_N))})")
    args.dtypes = [d for d in args.dtype.split(",") if d]
    for d in args.dtypes:
        if d not in DTYPES:
            ap.error(f"unknown dtype '{d}' (f32, bf16, f16)")
    if not args.dtypes:
        ap.error("--dtype: no dtype")
    try:
        args.sizes = parse_sizes(args.sizes) if args.sizes else []
    except ValueError as e:
        ap.error(f"--sizes: {e}")
    if args.bin and not os.access(args.bin, os.X_OK):
        ap.error(f"--bin: '{args.bin}' is not an executable")
    if args.list:
        for variant, plan, dname, n in make_jobs(args):
            print(f"{variant} {plan} {backend_of(plan)} {dname} n={n}")
        return 0
    if args.selftest is not None:
        if args.selftest:
            args.output = args.selftest
        return selftest(args)
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
