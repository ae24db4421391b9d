#!/usr/bin/python3
"""inductor_ab.py — membound's fused kernel against Inductor's preallocated one
(cpu_peers.py's inductor_vectorize and lecture_demos.into), alternating, two
rounds, sin2_plus_cos2 and gelu_tanh at 2^24 f32; T=1|2 threads (default 2).
Run with the bench venv's python from the repository root. Prints only.
"""
import sys, subprocess, statistics, time, csv, os, tempfile
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch, cpu_peers, lecture_demos
torch.set_num_threads(int(os.environ.get("T", "2")))
cpu_peers.inductor_vectorize(torch)
fns = lecture_demos.functions(torch)
x = torch.rand(1 << 24) * 4 - 2
out = torch.empty_like(x)
res = {}
for v in ("sin2_plus_cos2", "gelu_tanh"):
    ci = torch.compile(lecture_demos.into(fns[v]), dynamic=False); ci(x, out)
    res[v] = ci
for r in range(2):
    for v, ci in res.items():
        t = cpu_peers.timed_median(lambda: ci(x, out), 10)
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "m.csv")
            subprocess.run([os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "build", "bin", "membound"), "measure", "--backend", "cpu", "--device", "h100-sxm", "--sizes", str(1 << 24),
                            "--threads", os.environ.get("T", "2"), "--reps", "10", "--timeout", "1", "--warm", "-q", "-o", p, "--plan", "fused", v],
                           check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            m = float(next(csv.DictReader(open(p)))["time_s_median"])
        print(f"round {r} {v}: inductor prealloc {t*1e3:.1f} ms, membound fused {m*1e3:.1f} ms, ratio {m/t:.2f} (load {open('/proc/loadavg').read().split()[0]})", flush=True)
