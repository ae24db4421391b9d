#!/usr/bin/env python3
"""torch_oracle_rows.py — PyTorch as the oracle of the eager backward of row
operations (sum, mean, amax, softmax, log_softmax, layer_norm and the
written-out softmax, LayerNorm and RMSNorm variants, with [cols] weights and
biases too), at a 2-D shape, on PyTorch's CPU eager mode:
  - the aten calls that launch kernels, forward and backward
    (y.backward(g), the incoming gradient given; a TorchDispatchMode, views,
    detach and AccumulateGrad's allocation left out, as tests/torch_oracle.py
    does) equal membound's eager kernels (`model --plan eager --per-kernel
    --json`), in order and kind; membound's add_grad is aten's add, its copy
    where an input's gradient is an expand aten's copy_ (AccumulateGrad
    copies a view it cannot take over); membound's colsum (a [cols] operand's
    gradient, a sum over the rows) is aten's sum (autograd's sum_to); and
    membound's gamma_beta_backward, the second kernel of layer_norm's
    backward with a weight on CUDA (GammaBetaBackwardCUDAKernel), is left
    out: the CPU's one native_layer_norm_backward call computes dx, dw and
    db together;
  - the gradients of every input, x and the weights, are requested;
  - the bytes PyTorch saves for backward (saved_tensors_hooks, each distinct
    tensor once) equal membound's eager saved_bytes, but for the differences
    ALLOWED below, each with its reason.
rms_norm is not here: torch 1.13 has no F.rms_norm. Environment: MB_BIN."""
import json
import os
import subprocess
import sys

import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode

ROWS, COLS = 8, 16
NOT_KERNELS = {"detach", "expand", "is_same_size", "view", "_unsafe_view", "alias", "lift_fresh",
               "ones_like", "t", "as_strided", "unsqueeze", "squeeze", "new_empty_strided"}
X = "input x [rows, cols]\n"
FROM_TORCH = {"_softmax": "softmax", "_log_softmax": "log_softmax", "native_layer_norm": "layer_norm",
              "copy_": "copy"}
FULL = ROWS * COLS * 4  # bytes of one [rows, cols] f32 tensor
# Saved bytes PyTorch keeps beyond membound's, per case: torch 1.x's mean
# saves its input (the hook sees it; the gradient is grad / cols, which reads
# none of it; torch 2.x saves only its shape, as membound), and
# native_layer_norm saves its mean and rstd ([rows, 1] each), which
# membound's layer_norm backward recomputes from x (autodiff.c).
TORCH_1 = int(torch.__version__.split(".")[0]) < 2
MEAN_INPUT = "torch 1.x's mean saves its input"
MEAN_FULL = FULL if TORCH_1 else 0
ALLOWED = {
    "y = x.mean(-1, keepdim=True)": (MEAN_FULL, MEAN_INPUT),
    "y = tanh(x) * x.mean(-1, keepdim=True)": (MEAN_FULL, MEAN_INPUT),
    "layernorm_bwd": (2 * MEAN_FULL, MEAN_INPUT + " (two means)"),
    "rmsnorm_bwd": (MEAN_FULL, MEAN_INPUT),
    "y = layer_norm(x)": (2 * ROWS * 4, "mean and rstd saved, recomputed here"),
    "y = layer_norm(x, w, b)": (2 * ROWS * 4 + COLS * 4, "mean and rstd saved, recomputed here; and the bias, "
                                "which the backward does not read"),
    "y = layer_norm(x, w, b) * x": (2 * ROWS * 4 + COLS * 4, "as y = layer_norm(x, w, b)"),
    "layernorm_affine_bwd": (2 * MEAN_FULL, MEAN_INPUT + " (two means)"),
    "rmsnorm_affine_bwd": (MEAN_FULL, MEAN_INPUT),
}
W = "input w [cols]\n"
B = "input b [cols]\n"


def softmax_written(x):
    m = x.amax(-1, keepdim=True)
    e = torch.exp(x - m)
    return e / e.sum(-1, keepdim=True)


def layernorm_written(x):
    m = x.mean(-1, keepdim=True)
    d = x - m
    v = (d * d).mean(-1, keepdim=True)
    return d * torch.rsqrt(v + 1e-5)


def rmsnorm_written(x):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)


CASES = [  # membound variant (built-in name or text), torch function
    (X + "y = x.sum(-1, keepdim=True)\noutput y\nbackward\n", lambda x: x.sum(-1, keepdim=True)),
    (X + "y = x.mean(-1, keepdim=True)\noutput y\nbackward\n", lambda x: x.mean(-1, keepdim=True)),
    (X + "y = x.amax(-1, keepdim=True)\noutput y\nbackward\n", lambda x: x.amax(-1, keepdim=True)),
    (X + "y = softmax(x, -1)\noutput y\nbackward\n", lambda x: F.softmax(x, -1)),
    (X + "y = log_softmax(x, -1)\noutput y\nbackward\n", lambda x: F.log_softmax(x, -1)),
    (X + "y = layer_norm(x)\noutput y\nbackward\n", lambda x: F.layer_norm(x, [COLS])),
    (X + "y = tanh(x) * x.mean(-1, keepdim=True)\noutput y\nbackward\n",
     lambda x: torch.tanh(x) * x.mean(-1, keepdim=True)),
    ("softmax_bwd", softmax_written),
    ("layernorm_bwd", layernorm_written),
    ("rmsnorm_bwd", rmsnorm_written),
    # [cols] weights and biases (the function takes x, w, b in the variant's order)
    (X + W + B + "y = x * w + b\noutput y\nbackward\n", lambda x, w, b: x * w + b),
    (X + W + "y = tanh(x * w) * w\noutput y\nbackward\n", lambda x, w: torch.tanh(x * w) * w),
    (X + W + "y = (x + w).sum(-1, keepdim=True) * x\noutput y\nbackward\n",
     lambda x, w: (x + w).sum(-1, keepdim=True) * x),
    (X + W + B + "y = layer_norm(x, w, b)\noutput y\nbackward\n",
     lambda x, w, b: F.layer_norm(x, [COLS], w, b)),
    (X + W + B + "y = layer_norm(x, w, b) * x\noutput y\nbackward\n",
     lambda x, w, b: F.layer_norm(x, [COLS], w, b) * x),
    ("layernorm_affine_bwd", lambda x, w, b: layernorm_written(x) * w + b),
    ("rmsnorm_affine_bwd", lambda x, w: rmsnorm_written(x) * w),
]


class Ops(TorchDispatchMode):
    """The aten calls run under it, by membound's names: those not in
    not_kernels, renamed by from_torch (tests/torch_oracle_lang.py's too)."""

    def __init__(self, not_kernels=NOT_KERNELS, from_torch=FROM_TORCH):
        super().__init__()
        self.ops = []
        self.not_kernels, self.from_torch = not_kernels, from_torch

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func.__name__.split(".")[0]
        if name not in self.not_kernels:
            self.ops.append(self.from_torch.get(name, name))
        return func(*args, **(kwargs or {}))


def report(label, want, want_saved, run, extra=0, why=""):
    """One case of an oracle: torch's kernels and saved bytes (want,
    want_saved) against membound's, run() -> (names, saved bytes), extra of
    torch's saved bytes allowed (why: what they are). Prints ok or FAIL with
    both sides; returns 1 when they differ (a failed run differs)."""
    try:
        got, got_saved = run()
    except (RuntimeError, subprocess.CalledProcessError) as e:
        got, got_saved = [str(e)], -1
    ok = want == got and want_saved == got_saved + extra
    print(f"{'ok' if ok else 'FAIL'}: {label}: {len(want)} kernels, saved {want_saved} B"
          + (f" ({extra} B of them {why})" if extra else ""))
    if not ok:
        print(f"  torch:    {' '.join(want)} (saved {want_saved} B)\n"
              f"  membound: {' '.join(got)} (saved {int(got_saved)} B)")
    return 0 if ok else 1


def summary(n, fails):
    """The oracle's last line and its exit status."""
    print(f"{n - fails} of {n} cases match torch {torch.__version__}")
    return 1 if fails else 0


def torch_run(f):
    torch.manual_seed(0)
    x = torch.randn(ROWS, COLS, requires_grad=True)
    params = [torch.randn(COLS, requires_grad=True) for _ in range(f.__code__.co_argcount - 1)]
    g = torch.randn(ROWS, COLS)
    saved = {}

    def pack(t):
        saved[(t.data_ptr(), t.shape, t.stride())] = t.numel() * t.element_size()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        with Ops() as fwd:
            y = f(x, *params)
    g = g[..., : y.shape[-1]].contiguous()
    with Ops() as bwd:
        y.backward(g)
    return fwd.ops + bwd.ops, sum(saved.values())


def mb_run(variant):
    b = os.environ["MB_BIN"]
    args = [b, "model"] + (["--expr", variant] if "\n" in variant else [variant])
    args += ["--plan", "eager", "--per-kernel", "--json", "--shape", f"{ROWS}x{COLS}"]
    out = json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)
    r = out["results"][0]
    from_mb = {"add_grad": "add", "colsum": "sum"}
    names = [from_mb.get(k["name"], k["name"]) for k in r["per_kernel"] if k["name"] != "gamma_beta_backward"]
    return names, r["saved_bytes"]


def main():
    fails = 0
    for variant, f in CASES:
        want, want_saved = torch_run(f)
        label = next(ln for ln in variant.splitlines() if ln.startswith("y =")) if "\n" in variant else variant
        extra, why = ALLOWED.get(label, (0, ""))
        fails += report(label, want, want_saved, lambda: mb_run(variant), extra, why)
    return summary(len(CASES), fails)


if __name__ == "__main__":
    sys.exit(main())
