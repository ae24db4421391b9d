#!/usr/bin/env python3
"""torch_oracle_mlp.py — PyTorch as the oracle of `membound mlp`'s eager
plan: for each layer, on PyTorch's CPU eager mode, the aten calls that launch
kernels, forward then backward (a TorchDispatchMode; views and detach left
out, as tests/torch_oracle_rows.py does; y.backward(g), the incoming gradient
given), equal the eager plan's kernels (`mlp --backward --json`, checkpoint
store: what autograd does) in order and kind, by aten name (a kernel's first
word: "addmm x@w1+b1" is addmm; membound's gamma_beta_backward is part of
PyTorch's native_layer_norm_backward on the CPU and is left out of the
comparison), and the bytes PyTorch saves for backward (saved_tensors_hooks,
each distinct tensor once, the weights and biases left out: a model's
parameters are held whatever autograd saves) equal the plan's saved_bytes.
The layers as their sources write them: GPT-2's MLP with Hugging Face's
NewGELUActivation written out (transformers, activations.py), Llama's
LlamaMLP (modeling_llama.py: down(act(gate(x)) * up(x)), no biases),
GEGLU with F.gelu(approximate="tanh"), a linear layer and F.layer_norm.
Runs under the torch it finds (Debian 12's 1.13 in ctest; 2.x from the bench
environment); prints each case. Environment: MB_BIN."""
import json
import math
import os
import subprocess
import sys
import tempfile

import torch
import torch.nn.functional as F

from torch_oracle_rows import Ops, report, summary  # beside this file: the dispatch recorder and the case report the oracles share

TOKENS, D, FF = 64, 32, 128
NOT_KERNELS = {"detach", "expand", "is_same_size", "view", "_unsafe_view", "alias", "lift_fresh", "ones_like",
               "t", "as_strided", "unsqueeze", "squeeze", "new_empty_strided", "reshape", "_reshape_alias",
               "empty_like", "zeros_like", "transpose", "permute", "fill_", "zero_", "empty"}
FROM_TORCH = {"native_layer_norm": "layer_norm", "add_": "add"}
FROM_MB = {"add_grad": "add", "colsum": "sum"}  # autograd adds gradients with aten's add, sums over rows with sum
CPU_SPEC = ("[device]\nname = cpu-like\nkind = cpu\nmem_bandwidth_gbs = 100\ncache_mb = 1\nfp32_tflops = 1\n"
            "bf16_tflops = 1\ngemm_gflops = 100\nlaunch_overhead_us = 1\nsource = tests/torch_oracle_mlp.py\n")


def gelu_new(x):
    """transformers' NewGELUActivation.forward"""
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


def gpt2(x, p):
    return F.linear(gelu_new(F.linear(x, p["w1"], p["b1"])), p["w2"], p["b2"])


def llama(x, p):
    return F.linear(F.silu(F.linear(x, p["wg"])) * F.linear(x, p["wu"]), p["wd"])


def geglu(x, p):
    return F.linear(F.gelu(F.linear(x, p["wg"]), approximate="tanh") * F.linear(x, p["wu"]), p["wd"])


def linear_layernorm(x, p):
    return F.layer_norm(F.linear(x, p["w"], p["b"]), [FF], p["g"], p["beta"])


def linear_rmsnorm(x, p):
    return F.rms_norm(F.linear(x, p["w"], p["b"]), [FF], p["g"], 1e-6)


# label, membound layer, parameters (name, shape), torch function
CASES = [
    ("GPT-2 MLP (gelu_new written out)", "gpt2",
     [("w1", (FF, D)), ("b1", (FF,)), ("w2", (D, FF)), ("b2", (D,))], gpt2),
    ("Llama MLP (LlamaMLP)", "llama", [("wg", (FF, D)), ("wu", (FF, D)), ("wd", (D, FF))], llama),
    ("GEGLU", "geglu", [("wg", (FF, D)), ("wu", (FF, D)), ("wd", (D, FF))], geglu),
    ("linear, then F.layer_norm", "linear-layernorm",
     [("w", (FF, D)), ("b", (FF,)), ("g", (FF,)), ("beta", (FF,))], linear_layernorm),
]
# kernels membound names that are inside one aten call on the CPU: layer_norm's
# weight gradients (native_layer_norm_backward) and addmm's copy of the bias
# into its output before the product (addmm_out_cpu)
# F.rms_norm (torch 2.4 on), on the CPU: its composite kernels, which membound
# models for a device of kind cpu
if hasattr(F, "rms_norm"):
    CASES.append(("linear, then F.rms_norm (the CPU's composite)", "linear-rmsnorm",
                  [("w", (FF, D)), ("b", (FF,)), ("g", (FF,))], linear_rmsnorm))
ONLY_MB = {"gamma_beta_backward", "addmm bias copy"}
# native_layer_norm saves its mean and rstd ([tokens] f32 each), which
# membound's layer_norm backward recomputes from its input (model/autodiff.c;
# tests/torch_oracle_rows.py allows the same)
NOT_IN_MB = {"linear-layernorm": 2 * TOKENS * 4}


def torch_run(params, f):
    torch.manual_seed(0)
    x = torch.randn(TOKENS, D, requires_grad=True)
    p = {name: torch.randn(shape, requires_grad=True) for name, shape in params}
    weights = {t.data_ptr() for t in p.values()}
    saved = {}

    def pack(t):
        if t.dim() > 0 and t.data_ptr() not in weights:
            saved[(t.data_ptr(), t.shape, t.stride(), t.dtype)] = t.numel() * t.element_size()
        return t

    # the saved bytes from a run of their own: torch 1.13 fails a backward
    # whose forward ran under both the hooks and the dispatch mode
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        f(x, p)
    with Ops(NOT_KERNELS, FROM_TORCH) as fwd:
        y = f(x, p)
    g = torch.randn(y.shape)
    with Ops(NOT_KERNELS, FROM_TORCH) as bwd:
        y.backward(g)
    return fwd.ops + bwd.ops, sum(saved.values())


def mb_run(layer):
    with tempfile.NamedTemporaryFile("w", suffix=".ini") as spec:  # the kernels of torch on a CPU
        spec.write(CPU_SPEC)
        spec.flush()
        args = [os.environ["MB_BIN"], "mlp", "--layer", layer, "--dims", f"tokens={TOKENS},d_model={D},d_ff={FF}",
                "--backward", "--checkpoint", "store", "--json", "--device", spec.name]
        out = subprocess.run(args, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError("membound mlp: " + out.stderr.strip())
    plan = next(p for p in json.loads(out.stdout)["results"][0]["plans"]
                if p["plan"] == "eager" and p["checkpoint"] == "store")
    names = [k["name"].split()[0] for k in plan["kernels"] if k["name"] not in ONLY_MB]
    return [FROM_MB.get(n, n) for n in names], plan["saved_bytes"]


def main():
    if "MB_BIN" not in os.environ:
        print("torch_oracle_mlp: error: MB_BIN is not set")
        return 2
    fails = 0
    for label, layer, params, f in CASES:
        want, want_saved = torch_run(params, f)
        fails += report(label, want, want_saved, lambda: mb_run(layer), NOT_IN_MB.get(layer, 0),
                        "layer_norm's mean and rstd")
    return summary(len(CASES), fails)


if __name__ == "__main__":
    sys.exit(main())
