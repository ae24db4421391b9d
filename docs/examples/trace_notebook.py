# %% [markdown]
# # From a PyTorch function to what fusing it saves, across GPUs
# A notebook in plain Python (each `# %%` a cell). Needs the `membound`
# package (`pip install ./python`), the built binary (`MEMBOUND_BIN` or on
# PATH), pandas, and PyTorch for the trace. `tests/python_pkg.py` runs it.

# %%
import os
import tempfile

import membound

# %% [markdown]
# A function of one's own, as written for training. `trace` runs it on meta
# tensors (no data) and writes the variant membound models.

# %%
FN = '''
import torch
import torch.nn.functional as F

def gated_norm(x, w, gate):
    h = x.to(torch.float32)
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)
    return (w * h.to(x.dtype)) * F.silu(gate)
'''
work = tempfile.mkdtemp()
script = os.path.join(work, "layer.py")
with open(script, "w") as f:
    f.write(FN)
mb = os.path.join(work, "gated_norm.mb")
text = membound.trace(f"{script}:gated_norm", x="4096x1024:bf16", w="1024:bf16:nograd",
                      gate="4096x1024:bf16", backward=True, output=mb)
print(text)

# %% [markdown]
# Its eager kernels, and the fused plans (store: one forward and one backward kernel,
# saving what eager saves; recompute: saving only inputs) on an H100, then across GPUs.

# %%
m = membound.model(mb, plan=["eager", "store", "recompute"])
print(m[["plan", "kernels", "read_bytes", "write_bytes", "saved_bytes", "time_s"]])
k = membound.model(mb, plan="eager", per_kernel=True)
print(k[["kernel", "name", "backward", "read_bytes", "write_bytes"]].head(8))

# %%
w = membound.whatif(mb, devices=["h100-sxm", "h200", "a100-80gb"], plan=["eager", "store"])
print(w.pivot(index="device", columns="plan", values="time_s"))

# %% [markdown]
# A mistake is the CLI's error, raised.

# %%
try:
    membound.model(mb, device="no-such-gpu")
except membound.MemboundError as e:
    print(f"exit {e.returncode}: {e.message}")
