#!/usr/bin/python3
"""torch_first_touch.py — PyTorch's own first-touch cost: x.clone() (a fresh
output each call) against out.copy_(x) (a buffer allocated once), 2^21..2^25
f32, 2 threads, medians of 10; extra ms per GB. Run with the bench venv's
python (build/bench-venv/bin/python). Prints only; docs/pytorch.md quotes it.
"""
import torch, time, statistics
torch.set_num_threads(2)
for n in (1<<21, 1<<22, 1<<23, 1<<24, 1<<25):
    x = torch.rand(n); out = torch.empty_like(x)
    def t(f, reps=10):
        f(); ts=[]
        for _ in range(reps):
            t0=time.perf_counter(); f(); ts.append(time.perf_counter()-t0)
        return statistics.median(ts)
    a=t(lambda: x.clone()); b=t(lambda: out.copy_(x))
    print(f"n=2^{n.bit_length()-1} {4*n/2**20:.0f} MiB clone {a*1e3:.2f} ms ({8*n/a/1e9:.1f} GB/s) copy_ {b*1e3:.2f} ms ({8*n/b/1e9:.1f} GB/s) extra {(a-b)/(4*n)*1e12:.0f} ms/GB")
