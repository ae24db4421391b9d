#!/usr/bin/env python3
"""torch_oracle_lang.py — PyTorch as the oracle of the language's PyTorch
forms: casts (x.to(f32)), each tensor's own dtype and type promotion, an
incoming gradient of another dtype ('backward grad bf16': autograd's cast
before the backward), inputs
without gradients (requires_grad=False), sums and means over every element,
tensors of named dimensions. For each case, on PyTorch's CPU eager mode, the
aten calls that launch kernels, forward then backward (a TorchDispatchMode;
views, detach and AccumulateGrad's allocation left out, as
tests/torch_oracle_rows.py does; y.backward(g), the incoming gradient given),
equal membound's eager kernels (`model --plan eager --per-kernel
--json`) in order and kind, and the bytes PyTorch saves for backward
(saved_tensors_hooks, each distinct tensor once) equal membound's
saved_bytes. Names: aten's _to_copy is membound's copy, membound's add_grad
aten's add and its colsum aten's sum. And the kernels that cast — an aten
call whose tensor operand (0-dim wrapped numbers left out) is of another
dtype than its result, which on CUDA takes PyTorch's unrolled casting loop
— are exactly those membound marks 'cast_loop' under --framework pytorch on
a GPU. Runs under the torch it finds (Debian 12's 1.13 in ctest; 2.x from
the bench environment); prints each case. Environment: MB_BIN."""
import json
import os
import subprocess
import sys

import tempfile

import torch
import torch.nn.functional as F

from torch.utils._pytree import tree_flatten

from torch_oracle_rows import Ops, report, summary  # beside this file: the dispatch recorder and the case report the oracles share

ROWS, COLS, N = 8, 16, 64
DIMS = {"batch": 2, "heads": 3, "seq": 4, "head_dim": 8}
NOT_KERNELS = {"detach", "expand", "is_same_size", "view", "_unsafe_view", "alias", "lift_fresh",
               "ones_like", "t", "as_strided", "unsqueeze", "squeeze", "new_empty_strided"}
FROM_TORCH = {"_to_copy": "copy", "_softmax": "softmax", "_log_softmax": "log_softmax", "add_": "add",
              "copy_": "copy"}
FROM_MB = {"add_grad": "add", "colsum": "sum", "to_copy_grad": "copy"}
DT = {"f32": torch.float32, "bf16": torch.bfloat16}


def llama_rmsnorm(x, w):
    """Hugging Face's LlamaRMSNorm.forward (transformers, modeling_llama.py)."""
    input_dtype = x.dtype
    hidden_states = x.to(torch.float32)
    variance = hidden_states.pow(2).mean(-1, keepdim=True)
    hidden_states = hidden_states * torch.rsqrt(variance + 1e-6)
    return w * hidden_states.to(input_dtype)


def masked_loss(x, t, m):
    d = (x - t) * m
    return (d * d).mean()


LLAMA = ("input x [rows, cols] bf16\ninput w [cols] bf16\nh = x.to(f32)\nv = h.pow(2).mean(-1, keepdim=True)\n"
         "h = h * rsqrt(v + 1e-6)\ny = w * h.to(bf16)\noutput y\nbackward\n")

# torch 1.x's mean over a dim saves its input, which torch 2.x and membound do
# not (the gradient is grad / count, which reads none of it; mean() over every
# element saves none in either): per case, those bytes
TORCH_1 = int(torch.__version__.split(".")[0]) < 2
MEAN_RC_F32 = ROWS * COLS * 4 if TORCH_1 else 0
MEAN_INPUT = {"LlamaRMSNorm": MEAN_RC_F32, "LlamaRMSNorm, frozen weight": MEAN_RC_F32,
              "LlamaRMSNorm, f32 weight, dy bf16": MEAN_RC_F32}

# the incoming gradient's dtype where it is not the output's: the case's label
# -> dtype ('backward grad DTYPE'; autograd's engine casts it to the output's)
GRAD_DTYPE = {"LlamaRMSNorm, f32 weight, dy bf16": "bf16"}

# cases whose casting kernels are not compared, and why
CAST_UNCOMPARED = {
    "4-D, a [head_dim] weight and a row statistic":
        "amax's backward: PyTorch's tie mask is bool and its count int64 (div and mul then cast), membound's f32",
    "F.rms_norm on the CPU": "membound's CUDA plan is one rms_norm kernel, not the CPU's composite ones",
}

# label, membound variant, inputs (name, shape kind, dtype, requires_grad), torch function
CASES = [
    ("LlamaRMSNorm, f32 weight, dy bf16",
     LLAMA.replace("[cols] bf16", "[cols] f32").replace("backward\n", "backward grad bf16\n"),
     [("x", "rc", "bf16", True), ("w", "c", "f32", True)], llama_rmsnorm),
    ("LlamaRMSNorm", LLAMA, [("x", "rc", "bf16", True), ("w", "c", "bf16", True)], llama_rmsnorm),
    ("LlamaRMSNorm, frozen weight", LLAMA.replace("[cols] bf16", "[cols] bf16 nograd"),
     [("x", "rc", "bf16", True), ("w", "c", "bf16", False)], llama_rmsnorm),
    ("cast and back", "input x [n] bf16\ny = (x.to(f32) * 2).to(bf16)\noutput y\nbackward\n",
     [("x", "n", "bf16", True)], lambda x: (x.to(torch.float32) * 2).to(torch.bfloat16)),
    ("type promotion", "input x [n] bf16\ninput z [n]\ny = sin(x * z)\noutput y\nbackward\n",
     [("x", "n", "bf16", True), ("z", "n", "f32", True)], lambda x, z: torch.sin(x * z)),
    ("frozen weight", "input x [rows, cols]\ninput w [cols] nograd\ny = tanh(x * w)\noutput y\nbackward\n",
     [("x", "rc", "f32", True), ("w", "c", "f32", False)], lambda x, w: torch.tanh(x * w)),
    ("detached weight", "input x [rows, cols]\ninput w [cols]\ny = tanh(x * w.detach())\noutput y\nbackward\n",
     [("x", "rc", "f32", True), ("w", "c", "f32", True)], lambda x, w: torch.tanh(x * w.detach())),
    ("masked loss, .mean()",
     "input x [n]\ninput t [n] nograd\ninput m [n] nograd\nd = (x - t) * m\nloss = (d * d).mean()\n"
     "output loss\nbackward\n",
     [("x", "n", "f32", True), ("t", "n", "f32", False), ("m", "n", "f32", False)],
     masked_loss),
    ("masked loss over a 2-D tensor, .mean()",
     "input x [rows, cols]\ninput t [rows, cols] nograd\ninput m [rows, cols] nograd\nd = (x - t) * m\n"
     "loss = (d * d).mean()\noutput loss\nbackward\n",
     [("x", "rc", "f32", True), ("t", "rc", "f32", False), ("m", "rc", "f32", False)],
     masked_loss),
    ("sum over every element", "input x [n]\ny = sin(x).sum()\noutput y\nbackward\n",
     [("x", "n", "f32", True)], lambda x: torch.sin(x).sum()),
    ("4-D softmax", "input x [batch, heads, seq, head_dim]\ny = softmax(x, -1)\noutput y\nbackward\n",
     [("x", "bhsd", "f32", True)], lambda x: F.softmax(x, -1)),
    ("4-D, a [head_dim] weight and a row statistic",
     "input x [batch, heads, seq, head_dim]\ninput w [head_dim]\n"
     "y = tanh(x * w) * x.amax(-1, keepdim=True)\noutput y\nbackward\n",
     [("x", "bhsd", "f32", True), ("w", "d", "f32", True)],
     lambda x, w: torch.tanh(x * w) * x.amax(-1, keepdim=True)),
    ("4-D softmax under a [batch, 1, 1, head_dim] mask and a [1, heads, 1, head_dim] bias",
     "input x [batch, heads, seq, head_dim]\ninput m [batch, 1, 1, head_dim] nograd\n"
     "input c [1, heads, 1, head_dim] nograd\ny = softmax(x * 0.125 + m * -3 + c, -1)\noutput y\nbackward\n",
     [("x", "bhsd", "f32", True), ("m", "b11d", "f32", False), ("c", "1h1d", "f32", False)],
     lambda x, m, c: F.softmax(x * 0.125 + m * -3 + c, -1)),
]
# F.rms_norm (torch 2.4 on), on the CPU: its composite kernels, which membound
# models for a device of kind cpu (one fused kernel on CUDA)
if hasattr(F, "rms_norm"):
    CASES.append(("F.rms_norm on the CPU", "input x [rows, cols]\ninput w [cols]\n"
                  "y = rms_norm(x, w, eps=1e-6)\noutput y\nbackward\n",
                  [("x", "rc", "f32", True), ("w", "c", "f32", True)],
                  lambda x, w: F.rms_norm(x, [COLS], w, 1e-6)))
CPU_SPEC = ("[device]\nname = cpu-like\nkind = cpu\nmem_bandwidth_gbs = 100\ncache_mb = 1\nfp32_tflops = 1\n"
            "bf16_tflops = 1\nlaunch_overhead_us = 1\nsource = tests/torch_oracle_lang.py\n")


class CastOps(Ops):
    """Ops, and for each kernel recorded whether it reads a tensor of another
    dtype than its result (the dynamic casting of TensorIterator)."""

    def __init__(self):
        super().__init__(NOT_KERNELS, FROM_TORCH)
        self.casts = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        n = len(self.ops)
        out = super().__torch_dispatch__(func, types, args, kwargs)
        if len(self.ops) > n:
            res = [t for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)]
            ins = [t for t in tree_flatten((args, kwargs or {}))[0] if isinstance(t, torch.Tensor) and t.dim() > 0]
            # a comparison's loop takes its operands' dtype and returns bool: no cast
            self.casts.append(bool(res) and res[0].dtype != torch.bool and any(t.dtype != res[0].dtype for t in ins))
        return out


def shape_of(kind):
    return {"rc": (ROWS, COLS), "c": (COLS,), "n": (N,), "d": (DIMS["head_dim"],),
            "bhsd": tuple(DIMS.values()), "b11d": (DIMS["batch"], 1, 1, DIMS["head_dim"]),
            "1h1d": (1, DIMS["heads"], 1, DIMS["head_dim"])}[kind]


def torch_run(inputs, f, grad_dtype=None):
    """PyTorch's kernels forward and backward, and the bytes it saves (0-dim
    tensors left out: the wrapped numbers of x * 2, which membound holds as
    scalars); torch 1.x's mean saving its input is taken off (MEAN_INPUT).
    The incoming gradient in y's dtype, or grad_dtype."""
    torch.manual_seed(0)
    xs = [torch.randn(shape_of(k)).to(DT[dt]).requires_grad_(rg) for _, k, dt, rg in inputs]
    saved = {}

    def pack(t):
        if t.dim() > 0:
            saved[(t.data_ptr(), t.shape, t.stride(), t.dtype)] = t.numel() * t.element_size()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        f(*xs)
    with CastOps() as fwd:
        y = f(*xs)
    g = torch.randn(y.shape).to(DT[grad_dtype] if grad_dtype else y.dtype)
    with CastOps() as bwd:
        y.backward(g)
    return fwd.ops + bwd.ops, sum(saved.values()), fwd.casts + bwd.casts


def mb_size(inputs):
    kinds = {k for _, k, _, _ in inputs}
    return (["--dims", ",".join(f"{k}={v}" for k, v in DIMS.items())] if "bhsd" in kinds
            else ["--shape", f"{ROWS}x{COLS}"] if "rc" in kinds else ["--n", str(N)])


def mb_casts(variant, inputs):
    """membound's eager kernels on PyTorch's casting loop: per kernel, whether
    it has 'cast_loop' (--framework pytorch on a GPU)."""
    args = [os.environ["MB_BIN"], "model", "--expr", variant, "--plan", "eager", "--per-kernel", "--json",
            "--device", "a100-pcie-80gb", "--framework", "pytorch"] + mb_size(inputs)
    out = subprocess.run(args, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError("membound model: " + out.stderr.strip())
    return ["cast_loop" in k for k in json.loads(out.stdout)["results"][0]["per_kernel"]]


def mb_run(variant, inputs):
    size = mb_size(inputs)
    with tempfile.NamedTemporaryFile("w", suffix=".ini") as spec:  # the eager kernels of torch on a CPU
        spec.write(CPU_SPEC)
        spec.flush()
        args = [os.environ["MB_BIN"], "model", "--expr", variant, "--plan", "eager", "--per-kernel", "--json",
                "--device", spec.name] + size
        out = subprocess.run(args, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError("membound model: " + out.stderr.strip())
    r = json.loads(out.stdout)["results"][0]
    return [FROM_MB.get(k["name"], k["name"]) for k in r["per_kernel"]], r["saved_bytes"]


def main():
    if "MB_BIN" not in os.environ:
        print("torch_oracle_lang: error: MB_BIN is not set")
        return 2
    fails = 0
    for label, variant, inputs, f in CASES:
        want, want_saved, want_casts = torch_run(inputs, f, GRAD_DTYPE.get(label))
        bad = report(label, want, want_saved, lambda: mb_run(variant, inputs), MEAN_INPUT.get(label, 0),
                     f"mean's input, torch {torch.__version__}")
        if label in CAST_UNCOMPARED:
            print(f"  its casting kernels not compared: {CAST_UNCOMPARED[label]}")
            fails += bad
            continue
        try:
            got_casts = mb_casts(variant, inputs)
        except RuntimeError as e:
            got_casts = [str(e)]
        # as (name, casts) pairs in any order: PyTorch's MulBackward0 computes
        # the second operand's gradient first, membound the first's
        want_pairs, got_pairs = sorted(zip(want, want_casts)), sorted(zip(want, got_casts))
        if len(got_casts) != len(want) or got_pairs != want_pairs:
            print(f"FAIL: {label}: the casting kernels\n"
                  f"  torch:    {' '.join(n for n, c in zip(want, want_casts) if c)}  {want_casts}\n"
                  f"  membound: {got_casts}")
            bad = 1
        elif any(want_casts):
            print(f"  and its {sum(want_casts)} casting kernels: "
                  f"{' '.join(n for n, c in zip(want, want_casts) if c)}")
        fails += bad
    return summary(len(CASES), fails)


if __name__ == "__main__":
    sys.exit(main())
