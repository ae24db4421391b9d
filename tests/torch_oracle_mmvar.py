#!/usr/bin/env python3
"""torch_oracle_mmvar.py — PyTorch as the oracle of the variants that multiply
(`membound mlp --variant`, model/mmvar.c): each variant's text and the same
computation written in torch, run on PyTorch's CPU eager mode forward and then
backward (y.backward(g)); the aten calls that launch kernels (a
TorchDispatchMode, views left out, as tests/torch_oracle_mlp.py records them)
equal the variant's eager plan (`mlp --variant F --backward --json` on a CPU
spec) in order and kind, by aten name (a kernel's first word: "mm x@wg" is
mm), and the bytes autograd saves (saved_tensors_hooks, each tensor once,
parameters left out) equal the plan's saved_bytes. The cases: the built-in
layer files (llama_mlp, gpt2_mlp, attention), GPT-2's MLP through F.linear,
a 3-D input folded into one mm, a loss ending in .sum(), a frozen weight. Runs under the torch it
finds (Debian's 1.13 in ctest; 2.x from the bench environment); prints each
case. Environment: MB_BIN, MB_SRC."""
import json
import math
import os
import subprocess
import sys
import tempfile

import torch
import torch.nn.functional as F

from torch_oracle_rows import Ops, report, summary  # beside this file: the dispatch recorder and the case report the oracles share
from torch_oracle_mlp import CPU_SPEC, FROM_MB, NOT_KERNELS, gelu_new
from torch_oracle_mlp import FROM_TORCH as MLP_FROM_TORCH

FROM_TORCH = dict(MLP_FROM_TORCH, _softmax="softmax")

ONLY_MB = {"addmm bias copy"}  # inside aten's addmm on the CPU (addmm_out_cpu copies the bias first)

GPT2_LINEAR = """name gpt2_linear
input x [tokens, dim]
input w1 [ffn, dim]
input b1 [ffn]
input w2 [dim, ffn]
input b2 [dim]
a = F.linear(x, w1, b1)
h = 0.5 * a * (1.0 + tanh(0.7978845608 * (a + 0.044715 * a**3)))
y = linear(h, w2, b2)
"""
GPT2_ADDMM = """name gpt2_addmm
input x [tokens, dim]
input w1 [dim, ffn]
input b1 [ffn]
input w2 [ffn, dim]
input b2 [dim]
a = torch.addmm(b1, x, w1)
h = 0.5 * a * (1.0 + tanh(0.7978845608 * (a + 0.044715 * a**3)))
y = addmm(b2, h, w2)
"""
FOLDED = """name folded
input x [batch, seq, dim]
input w [dim, ffn]
input g [ffn]
y = sigmoid(x @ w) * g
"""
FROZEN = """name frozen
input x [tokens, dim]
input w [dim, ffn] nograd
y = relu(x @ w)
"""


def layer(name):
    with open(os.path.join(os.environ["MB_SRC"], "model", "variants", "layers", name + ".mb")) as f:
        return f.read()


# label, variant text, --dims, parameters (name, shape, requires_grad), the
# non-parameter inputs (name, shape), torch function
T, D, FF = 48, 32, 80
B, H, S, E = 2, 3, 40, 16
CASES = [
    ("Llama MLP (llama_mlp.mb)", layer("llama_mlp"), f"tokens={T},dim={D},ffn={FF}",
     [("wg", (D, FF)), ("wu", (D, FF)), ("wd", (FF, D))], [("x", (T, D))],
     lambda t: (F.silu(t["x"] @ t["wg"]) * (t["x"] @ t["wu"])) @ t["wd"]),
    ("GPT-2 MLP as written (gpt2_mlp.mb)", layer("gpt2_mlp"), f"tokens={T},dim={D},ffn={FF}",
     [("w1", (D, FF)), ("b1", (FF,)), ("w2", (FF, D)), ("b2", (D,))], [("x", (T, D))],
     lambda t: gelu_new(t["x"] @ t["w1"] + t["b1"]) @ t["w2"] + t["b2"]),
    ("GPT-2 MLP through F.linear", GPT2_LINEAR, f"tokens={T},dim={D},ffn={FF}",
     [("w1", (FF, D)), ("b1", (FF,)), ("w2", (D, FF)), ("b2", (D,))], [("x", (T, D))],
     lambda t: F.linear(gelu_new(F.linear(t["x"], t["w1"], t["b1"])), t["w2"], t["b2"])),
    ("GPT-2 MLP through torch.addmm (Conv1D)", GPT2_ADDMM, f"tokens={T},dim={D},ffn={FF}",
     [("w1", (D, FF)), ("b1", (FF,)), ("w2", (FF, D)), ("b2", (D,))], [("x", (T, D))],
     lambda t: torch.addmm(t["b2"], gelu_new(torch.addmm(t["b1"], t["x"], t["w1"])), t["w2"])),
    ("standard attention (attention.mb)", layer("attention"), f"batch={B},heads={H},seq={S},hdim={E}",
     [], [("q", (B, H, S, E)), ("k", (B, H, S, E)), ("v", (B, H, S, E))],
     lambda t: torch.softmax((t["q"] @ t["k"].transpose(-2, -1)) * 0.125, -1) @ t["v"]),
    ("a 3-D input by a matrix (one mm)", FOLDED, f"batch=2,seq=24,dim={D},ffn={FF}",
     [("w", (D, FF)), ("g", (FF,))], [("x", (2, 24, D))],
     lambda t: torch.sigmoid(t["x"] @ t["w"]) * t["g"]),
    ("a loss: relu(x @ w).sum()", "input x [tokens, dim]\ninput w [dim, ffn]\ny = relu(x @ w).sum()\n",
     f"tokens={T},dim={D},ffn={FF}", [("w", (D, FF))], [("x", (T, D))], lambda t: torch.relu(t["x"] @ t["w"]).sum()),
    ("a frozen weight (nograd)", FROZEN, f"tokens={T},dim={D},ffn={FF}",
     [("w", (D, FF), False)], [("x", (T, D))], lambda t: torch.relu(t["x"] @ t["w"])),
]
if hasattr(F, "rms_norm"):  # torch 2.4 on: F.rms_norm, the CPU's composite kernels
    CASES.append(("a projection, then F.rms_norm (linear_rmsnorm.mb)", layer("linear_rmsnorm"),
                  f"tokens={T},dim={D},ffn={FF}", [("w", (D, FF)), ("g", (FF,))], [("x", (T, D))],
                  lambda t: F.rms_norm(t["x"] @ t["w"], [FF], t["g"])))


def torch_run(params, inputs, f):
    torch.manual_seed(0)
    t = {name: torch.randn(shape, requires_grad=True) for name, shape in inputs}
    for p in params:
        t[p[0]] = torch.randn(p[1], requires_grad=p[2] if len(p) > 2 else True)
    weights = {t[p[0]].data_ptr() for p in params}
    saved = {}

    def pack(x):
        if x.dim() > 0 and x.data_ptr() not in weights:
            saved[(x.data_ptr(), x.shape, x.stride(), x.dtype)] = x.numel() * x.element_size()
        return x

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda x: x):
        f(t)
    # a tensor and its transposed view share storage: once
    by_storage = {}
    for (ptr, shape, stride, dt), n in saved.items():
        by_storage[ptr] = max(by_storage.get(ptr, 0), n)
    with Ops(NOT_KERNELS, FROM_TORCH) as fwd:
        y = f(t)
    g = torch.randn(y.shape)
    with Ops(NOT_KERNELS, FROM_TORCH) as bwd:
        y.backward(g)
    return fwd.ops + bwd.ops, sum(by_storage.values())


def mb_run(text, dims):
    with tempfile.TemporaryDirectory() as d:
        spec, var = os.path.join(d, "cpu.ini"), os.path.join(d, "v.mb")
        with open(spec, "w") as f:
            f.write(CPU_SPEC)
        with open(var, "w") as f:
            f.write(text)
        args = [os.environ["MB_BIN"], "mlp", "--variant", var, "--dims", dims, "--backward", "--json", "--device", spec]
        out = subprocess.run(args, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError("membound mlp --variant: " + out.stderr.strip())
    plan = next(p for p in json.loads(out.stdout)["results"][0]["plans"] if p["plan"] == "eager")
    names = [k["name"].split()[0] for k in plan["kernels"] if k["name"] not in ONLY_MB]
    return [FROM_MB.get(n, n) for n in names], plan["saved_bytes"]


def main():
    for k in ("MB_BIN", "MB_SRC"):
        if k not in os.environ:
            print(f"torch_oracle_mmvar: error: {k} is not set")
            return 2
    fails = 0
    for label, text, dims, params, inputs, f in CASES:
        want, want_saved = torch_run(params, inputs, f)
        fails += report(label, want, want_saved, lambda: mb_run(text, dims))
    return summary(len(CASES), fails)


if __name__ == "__main__":
    sys.exit(main())
