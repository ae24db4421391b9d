#!/usr/bin/env python3
"""torch_oracle_attn.py — PyTorch as the oracle of `membound attention`'s
standard plan: attention as PyTorch eager writes it,
softmax((q @ k.transpose(-2, -1)) * scale [+ mask], -1) @ v, on PyTorch's
CPU eager mode: the aten calls that launch kernels, forward then backward (a
TorchDispatchMode; views and detach left out; y.backward(g)), equal the
plan's kernels (`attention --backward --json` on a spec of kind cpu) in
order and kind, by aten name, and the bytes PyTorch saves for backward
(saved_tensors_hooks, each storage once: bmm saves 3-D views of q, k and P)
equal q, k and v and the plan's saved_bytes (P). Left out of the comparison:
the copy AccumulateGrad makes of k's gradient, which arrives as a transposed
view and is stored contiguous because k is a leaf here (in a layer, k's
gradient flows on to its projection, which reads it as it is). Causal and
not; f32. Runs under the torch it finds (Debian 12's 1.13 in ctest; 2.x
from the bench environment). Environment: MB_BIN."""
import json
import math
import os
import subprocess
import sys
import tempfile

import torch
import torch.nn.functional as F

from torch_oracle_rows import Ops, report, summary  # beside this file: the dispatch recorder and the case report the oracles share

B, H, N, D = 2, 3, 16, 8
NOT_KERNELS = {"detach", "expand", "is_same_size", "view", "_unsafe_view", "alias", "lift_fresh", "ones_like",
               "t", "as_strided", "unsqueeze", "squeeze", "new_empty_strided", "reshape", "_reshape_alias",
               "transpose", "permute", "clone"}
FROM_TORCH = {"_softmax": "softmax", "_softmax_backward_data": "softmax_bwd"}
LEAF_ONLY = {"copy_"}  # AccumulateGrad's contiguous copy of k's gradient (k a leaf here)
FROM_MB = {"softmax bwd": "softmax_bwd"}
CPU_SPEC = ("[device]\nname = cpu-like\nkind = cpu\nmem_bandwidth_gbs = 100\ncache_mb = 1\nfp32_tflops = 1\n"
            "bf16_tflops = 1\ngemm_gflops = 100\nlaunch_overhead_us = 1\nonchip_kib = 1024\n"
            "source = tests/torch_oracle_attn.py\n")


def storage(t):
    s = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
    return s.data_ptr(), s.nbytes()


def torch_run(causal):
    torch.manual_seed(0)
    q, k, v = [torch.randn(B, H, N, D, requires_grad=True) for _ in range(3)]
    mask = torch.triu(torch.full((N, N), float("-inf")), 1)

    def f(q, k, v):
        s = (q @ k.transpose(-2, -1)) * (1 / math.sqrt(D))
        if causal:
            s = s + mask
        return F.softmax(s, -1) @ v

    saved = {}

    def pack(t):
        if t.dim() > 0:
            ptr, nbytes = storage(t)
            saved[ptr] = nbytes
        return t

    # the saved bytes from a run of their own (torch 1.13 fails a backward
    # whose forward ran under both the hooks and the dispatch mode)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        f(q, k, v)
    with Ops(NOT_KERNELS, FROM_TORCH) as fwd:
        y = f(q, k, v)
    g = torch.randn(y.shape)
    with Ops(NOT_KERNELS, FROM_TORCH) as bwd:
        y.backward(g)
    return fwd.ops + [o for o in bwd.ops if o not in LEAF_ONLY], sum(saved.values())


def mb_run(causal):
    with tempfile.NamedTemporaryFile("w", suffix=".ini") as spec:
        spec.write(CPU_SPEC)
        spec.flush()
        args = [os.environ["MB_BIN"], "attention", "--dims", f"batch={B},heads={H},seq={N},head_dim={D}",
                "--backward", "--json", "--device", spec.name] + (["--causal"] if causal else [])
        out = subprocess.run(args, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError("membound attention: " + out.stderr.strip())
    st = json.loads(out.stdout)["results"][0]["standard"]
    names = [FROM_MB.get(k["name"], k["name"].split()[0]) for k in st["kernels"]]
    return names, st["saved_bytes"] + 3 * B * H * N * D * 4  # P, and q, k, v


def main():
    if "MB_BIN" not in os.environ:
        print("torch_oracle_attn: error: MB_BIN is not set")
        return 2
    fails = 0
    for causal in (False, True):
        label = "standard attention" + (", causal mask" if causal else "")
        want, want_saved = torch_run(causal)
        fails += report(label, want, want_saved, lambda: mb_run(causal))
    return summary(2, fails)


if __name__ == "__main__":
    sys.exit(main())
