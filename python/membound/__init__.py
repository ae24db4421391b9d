"""membound from Python: the CLI's model, whatif, plan, gemm, attention, mlp
and trace, each returning a pandas DataFrame built from the CLI's --json
output (trace: the variant's text).

Options are the CLI's, as keyword arguments: a name's '_' is its '-'
(per_kernel=True is --per-kernel), True a flag, a list or tuple a
comma-separated list, a dict NAME=VALUE pairs (dims={"batch": 8}).
Variants are positional: built-in names or .mb paths; expr= takes one
expression or a list. A failed call raises MemboundError with the CLI's
message and exit code.

The binary: membound.BINARY when set, else $MEMBOUND_BIN, else `membound`
on PATH."""
import inspect
import json
import os
import shutil
import subprocess

import pandas as pd

__all__ = ["MemboundError", "model", "whatif", "plan", "gemm", "attention", "mlp", "trace", "run", "BINARY"]

BINARY = None


class MemboundError(Exception):
    """A membound command that failed: .message is its error line (without
    'membound: error: '), .returncode its exit code (2 bad usage or input,
    1 a failure while running), .stderr all it printed there."""

    def __init__(self, message, returncode, stderr=""):
        super().__init__(message)
        self.message = message
        self.returncode = returncode
        self.stderr = stderr


def _binary():
    b = BINARY or os.environ.get("MEMBOUND_BIN") or shutil.which("membound")
    if not b:
        raise MemboundError("no membound binary: set membound.BINARY or $MEMBOUND_BIN, or put membound on PATH",
                            127)
    return b


def _flags(options):
    out = []
    for key, v in options.items():
        if v is None or v is False:
            continue
        flag = "--" + key.replace("_", "-")
        if v is True:
            out.append(flag)
        elif isinstance(v, dict):
            out += [flag, ",".join(f"{k}={x}" for k, x in v.items())]
        elif isinstance(v, (list, tuple)):
            if key == "expr" or key == "input":  # repeated options
                for x in v:
                    out += [flag, str(x)]
            else:
                out += [flag, ",".join(str(x) for x in v)]
        else:
            out += [flag, str(v)]
    return out


def run(*args):
    """Runs `membound ARGS...`; its standard output, or MemboundError."""
    p = subprocess.run([_binary(), *[str(a) for a in args]], capture_output=True, text=True)
    if p.returncode != 0:
        lines = [ln for ln in p.stderr.splitlines() if ln.startswith("membound: error: ")]
        msg = lines[-1][len("membound: error: "):] if lines else (p.stderr.strip().splitlines() or [
            f"membound exited with {p.returncode}"])[-1]
        raise MemboundError(msg, p.returncode, p.stderr)
    return p.stdout


def _results(command, variants, options, per_kernel_key="per_kernel"):
    per_kernel = bool(options.get("per_kernel"))
    doc = json.loads(run(command, *variants, *_flags(options), "--json"))
    rows = doc.get("results", [])
    top = {k: v for k, v in doc.items() if k != "results" and not isinstance(v, (list, dict))}
    if per_kernel:
        kr = []
        for r in rows:
            head = {**top, **{k: v for k, v in r.items() if not isinstance(v, (list, dict))}}
            head = {("total_" + k if k in r.get(per_kernel_key, [{}])[0] else k): v
                    for k, v in head.items()} if r.get(per_kernel_key) else head
            for i, k in enumerate(r.get(per_kernel_key, [])):
                kr.append({**head, "kernel": i, **k})
        return pd.DataFrame(kr)
    flat = [{**top, **r} for r in rows]
    return pd.DataFrame(flat)


def model(*variants, **options):
    """`membound model VARIANTS... --json` as a DataFrame, one row per variant,
    plan and dtype; per_kernel=True gives one row per kernel instead (the
    variant's totals as total_*). model("sin2_plus_cos2", plan="eager,fused"),
    model(expr="y = tanh(x)", device="h200", n="2^24")."""
    return _results("model", variants, options)


def whatif(*variants, **options):
    """`membound whatif VARIANTS... --json`: one row per device, variant, plan
    and dtype. whatif("layer.mb", devices=["h100-sxm", "a100-80gb"])."""
    return _results("whatif", variants, options)


def plan(*variants, **options):
    """`membound plan VARIANTS... --json`: the optimal recompute plan against
    store and recompute (frontier=True: the memory-traffic frontier)."""
    return _results("plan", variants, options)


def _scalars(d, prefix=""):
    """d's values that are neither lists nor dicts (a list of numbers, a
    tile, as "AxB"), keys prefixed."""
    out = {}
    for k, v in d.items():
        if isinstance(v, list) and v and all(isinstance(x, (int, float)) for x in v):
            out[prefix + k] = "x".join(str(x) for x in v)
        elif not isinstance(v, (list, dict)):
            out[prefix + k] = v
    return out


def _layer_rows(command, options, plans_of):
    """One row per device and plan of a layer command's JSON (kernels=True:
    one per kernel, the plan's totals as total_*); plans_of(result) gives a
    result's plan dicts."""
    kernels = bool(options.pop("kernels", False))
    doc = json.loads(run(command, *_flags(options), "--json"))
    top = next((_scalars(v) for k, v in doc.items() if k != "results" and isinstance(v, dict)), {})
    rows = []
    for r in doc.get("results", []):
        head = {**top, **_scalars(r)}
        for pl in plans_of(r):
            if not kernels:
                rows.append({**head, **_scalars(pl)})
                continue
            tot = _scalars(pl, "total_")
            for i, k in enumerate(pl.get("kernels", [])):
                rows.append({**head, **tot, "plan": pl.get("plan"), "kernel": i, **_scalars(k)})
    return pd.DataFrame(rows)


def gemm(**options):
    """`membound gemm --json`: one row per device (the product's sizes and
    FLOPs in each). gemm(mnk="4096x4096x4096", dtype="bf16", device="all")."""
    doc = json.loads(run("gemm", *_flags(options), "--json"))
    top = _scalars(doc.get("gemm", {}))
    return pd.DataFrame([{**top, **_scalars(r)} for r in doc.get("results", [])])


def attention(**options):
    """`membound attention --json`: one row per device and plan (standard,
    recompute, flash; kernels=True: one per kernel). attention(dims={"seq":
    8192, "head_dim": 128, "heads": 32}, dtype="bf16", backward=True, device="all")."""
    return _layer_rows("attention", options,
                       lambda r: [dict(v, plan=v.get("plan", k)) for k, v in r.items()
                                  if isinstance(v, dict) and "kernels" in v])


def mlp(**options):
    """`membound mlp --json`: one row per device, plan and checkpoint choice
    (kernels=True: one per kernel). mlp(preset="llama-7b", dtype="bf16",
    backward=True, device="all")."""
    return _layer_rows("mlp", options, lambda r: r.get("plans", []))


def _input_spec(name, v):
    if isinstance(v, str):
        return f"{name}={v}"
    shape, dtype, grad = v, None, True
    try:  # a tensor: its shape, dtype and requires_grad
        shape, dtype, grad = tuple(v.shape), str(v.dtype).replace("torch.", ""), bool(v.requires_grad)
    except AttributeError:
        pass
    dt = {"float32": "f32", "bfloat16": "bf16", "float16": "f16", None: None}.get(dtype, dtype)
    s = f"{name}={'x'.join(str(int(d)) for d in shape)}"
    if dt:
        s += f":{dt}"
    if not grad:
        s += ":nograd"
    return s


def trace(fn, backward=False, name=None, output=None, python=None, **inputs):
    """`membound trace FILE:FUNCTION`: the variant's text of fn, a function
    (or torch.autograd.Function) defined at the top level of a file. Each
    input is a tensor (its shape, dtype and requires_grad), a shape tuple,
    or the CLI's spec "4096x1024:bf16:nograd". output= also writes the .mb
    there. trace(rmsnorm, x="4096x1024:bf16", w="1024:bf16", backward=True)."""
    if isinstance(fn, str):
        target = fn
    elif not (inspect.isfunction(fn) or inspect.isclass(fn)) or "<locals>" in fn.__qualname__:
        raise MemboundError(f"{fn!r}: trace takes a function or class defined at the top level of a file, or "
                            "'FILE.py:NAME' (a module instance: the name it is bound to there)", 2)
    else:
        f = inspect.getsourcefile(fn)
        if not f or not os.path.isfile(f):
            raise MemboundError(f"{getattr(fn, '__qualname__', fn)} is not defined in a file: membound trace runs "
                                "functions of a .py file", 2)
        target = f"{os.path.abspath(f)}:{fn.__qualname__}"
    if not inputs:
        raise MemboundError("no inputs: one keyword per tensor argument (x='4096x1024:bf16')", 2)
    args = ["trace", target]
    for k, v in inputs.items():
        args += ["--input", _input_spec(k, v)]
    if backward:
        args.append("--backward")
    if name:
        args += ["--name", name]
    if python:
        args += ["--python", python]
    if output:
        run(*args, "-o", output)
        with open(output, encoding="utf-8") as fh:
            return fh.read()
    return run(*args)

