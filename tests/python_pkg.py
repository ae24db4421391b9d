#!/usr/bin/env python3
"""python_pkg.py — the python/ package (membound.model, whatif, plan,
trace) against the CLI's own JSON, its errors, and the notebook-style
docs/examples/trace_notebook.py run whole (where torch is importable).
Environment: MB_BIN, MB_SRC."""
import json
import os
import runpy
import subprocess
import sys

SRC = os.environ["MB_SRC"]
sys.path.insert(0, os.path.join(SRC, "python"))
import membound  # noqa: E402

membound.BINARY = os.environ["MB_BIN"]
fails = 0


def check(ok, what):
    global fails
    print(f"{'ok' if ok else 'FAIL'}: {what}")
    fails += not ok


def cli(*args):
    return json.loads(subprocess.run([os.environ["MB_BIN"], *args, "--json"], capture_output=True, text=True,
                                     check=True).stdout)["results"]


m = membound.model("sin2_plus_cos2", plan=["eager", "fused"], dtype="bf16")
want = cli("model", "sin2_plus_cos2", "--plan", "eager,fused", "--dtype", "bf16")
check(list(m["plan"]) == [r["plan"] for r in want] and list(m["read_bytes"]) == [r["read_bytes"] for r in want]
      and list(m["time_s"]) == [r["time_s"] for r in want], "model(): the CLI's rows, plans, bytes and times")
k = membound.model(expr="y = sin(x)**2 + cos(x)**2", plan="eager", per_kernel=True, n="2^20")
check(list(k["name"]) == ["sin", "pow", "cos", "pow", "add"] and (k["kernels"] == 5).all() and (k["total_read_bytes"] == k["read_bytes"].sum()).all(),
      "model(per_kernel=True): one row per kernel, the variant's totals as total_*")
w = membound.whatif("softmax", devices=["h100-sxm", "h200"], plan="eager")
want = cli("whatif", "softmax", "--devices", "h100-sxm,h200", "--plan", "eager")
check(list(w["device"]) == [r["device"] for r in want] and list(w["time_s"]) == [r["time_s"] for r in want],
      "whatif(): one row per device, as the CLI's")
p = membound.plan("sigmoid3")
want = cli("plan", "sigmoid3")
check(len(p) == len(want) and len(p) > 0, f"plan(): {len(p)} rows, as the CLI's")
g = membound.gemm(mnk="4096x4096x4096", dtype="bf16", device=["h100-sxm", "a100-80gb"])
want = cli("gemm", "--mnk", "4096x4096x4096", "--dtype", "bf16", "--device", "h100-sxm,a100-80gb")
check(list(g["device"]) == [r["device"] for r in want] and list(g["time_s"]) == [r["time_s"] for r in want]
      and list(g["tile"]) == ["x".join(map(str, r["tile"])) for r in want] and (g["m"] == 4096).all(),
      "gemm(): one row per device, the product's sizes in each, the tile as MTxNT")
a = membound.attention(dims={"seq": 4096, "head_dim": 128, "heads": 32}, dtype="bf16", backward=True,
                       device="h100-sxm")
want = cli("attention", "--dims", "seq=4096,head_dim=128,heads=32", "--dtype", "bf16", "--backward",
           "--device", "h100-sxm")[0]
check(sorted(a["plan"]) == sorted(k for k, v in want.items() if isinstance(v, dict) and "kernels" in v)
      and all(a[a.plan == pl]["time_s"].iloc[0] == want[pl]["time_s"] for pl in a["plan"]),
      "attention(): one row per plan, the CLI's times")
ml = membound.mlp(preset="llama-7b", dtype="bf16", backward=True, device="h100-sxm", kernels=True)
want = cli("mlp", "--preset", "llama-7b", "--dtype", "bf16", "--backward", "--device", "h100-sxm")[0]["plans"]
check(len(ml) == sum(len(p["kernels"]) for p in want)
      and list(ml[ml.kernel == 0]["total_time_s"]) == [p["time_s"] for p in want]
      and abs(ml[(ml.plan == "fused") & (ml.total_checkpoint == want[-1]["checkpoint"])]["time_s"].sum()
              - [p for p in want if p["plan"] == "fused"][-1]["time_s"]) < 1e-12,
      "mlp(kernels=True): one row per kernel of each plan, its totals as total_*")
lv = membound.mlp(variant="llama_mlp", dims={"tokens": 512, "dim": 256, "ffn": 704}, backward=True,
                  device="h100-sxm,a100-80gb")
want = cli("mlp", "--variant", "llama_mlp", "--dims", "tokens=512,dim=256,ffn=704", "--backward", "--device",
           "h100-sxm,a100-80gb")
check(len(lv) == 4 and set(lv["variant"]) == {"llama_mlp"}
      and list(lv["time_s"]) == [p["time_s"] for r in want for p in r["plans"]],
      "mlp(variant=...): a layer written with '@', one row per device and plan, the CLI's times")
cp = membound.model("rmsnorm_affine_bwd", shape="4096x4096", plan="eager,recompute", colsum="partial")
check(list(cp["plan"]) == ["eager", "recompute"] and cp["colsum_blocks"].isna().tolist() == [True, False]
      and cp["colsum_blocks"].iloc[1] == 132,
      "model(colsum='partial'): --colsum partial, the blocks in the recompute row only")
try:
    membound.model("no_such_variant")
    check(False, "an unknown variant raises")
except membound.MemboundError as e:
    check(e.returncode == 2 and "no_such_variant" in e.message and not e.message.startswith("membound:"),
          f"an unknown variant raises MemboundError, exit 2: {e.message}")
try:
    membound.whatif("softmax", devices="nope-gpu")
    check(False, "an unknown device raises")
except membound.MemboundError as e:
    check(e.returncode == 2 and "nope-gpu" in e.message, f"an unknown device raises: {e.message}")

try:
    import torch  # noqa: F401
except ImportError:
    torch = None
if torch is None:
    print("skipped: trace() and the notebook: this python has no torch")
else:
    sys.path.insert(0, os.path.join(SRC, "tests"))
    import trace_fns
    text = membound.trace(trace_fns.llama_rmsnorm, hidden_states="64x32:bf16", weight=(32,), backward=True)
    check("input hidden_states [rows, cols] bf16" in text and "input weight [cols] f32" in text
          and ".to(f32)" in text and text.rstrip().endswith("backward"), "trace(fn): specs, shape tuples, backward")
    try:
        membound.trace(trace_fns.reshaped, x="8x8")
        check(False, "an unsupported op raises")
    except membound.MemboundError as e:
        check(e.returncode == 2 and "Tensor.reshape" in e.message and "trace_fns.py:" in e.message,
              f"an unsupported op raises with its line: {e.message[:80]}...")
    nb = runpy.run_path(os.path.join(SRC, "docs", "examples", "trace_notebook.py"))
    wf = nb["w"]
    check(set(wf["device"]) == {"h100-sxm", "h200", "a100-80gb"} and len(wf) == 6
          and (wf[wf.plan == "store"]["time_s"].values < wf[wf.plan == "eager"]["time_s"].values).all(),
          "docs/examples/trace_notebook.py runs: its whatif has 3 devices x 2 plans, store faster than eager")
print(f"python_pkg: {'all pass' if not fails else f'{fails} failed'}")
sys.exit(1 if fails else 0)
