#!/usr/bin/env python3
"""torch_host.py — what PyTorch's host side costs per op, per autograd node and
per autograd.Function call, measured on this machine's CPU with tensors of
one element (their kernels cost next to nothing, so the time is the host's
code up to the launch: Python, the dispatcher, autograd's bookkeeping).

Prints the four figures the model's host term takes (device keys
host_op_us, host_node_us, host_function_us, host_backward_call_us;
docs/model.md, "The host") as
INI lines, and with --json every probe. Each figure is the minimum over
--rounds rounds of the mean of --calls calls: contention on a shared host
only adds.

  host_op_us        one eager op with autograd recording its node:
                    y = a * b, a requiring grad
  host_node_us      one backward node run by autograd's engine, with the op
                    its formula launches: the backward of a chain of
                    y = y * 2.0 (MulBackward0, one mul), per node
  host_function_us  one Python torch.autograd.Function, per direction
                    (the model charges it to its forward and to its
                    backward): half of what a Function costs forward and
                    backward together beyond the ops it runs, a chain of a
                    Function whose forward and backward are one mul
                    against the same chain of the plain op
  host_backward_call_us  one y.backward() call from Python beyond the
                    nodes it runs: the engine's entry (its graph task, the
                    dependencies) and exit, and x.grad = None; the backward
                    of a chain of one mul against the per-node figure of
                    the long chain (T(L) = C + N L: C from L = 1 and L =
                    --chain)

usage: torch_host.py [--rounds 15] [--calls 2000] [--chain 64] [--json]
Run it with the interpreter whose torch is to be measured (the bench venv's:
build/bench-venv/bin/python bench/torch_host.py). Exit 1 when a figure
derived as a difference comes out at or below zero (a host too busy to
resolve it), 2 without torch or on bad arguments.
"""
import argparse
import json
import sys
import time

try:
    import torch
except ImportError:
    print("torch_host: no torch in this interpreter", file=sys.stderr)
    sys.exit(2)


class Scale(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2.0

    @staticmethod
    def backward(ctx, g):
        return g * 2.0


def best(fn, rounds, calls):
    fn()
    out = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        out.append((time.perf_counter() - t0) / calls)
    return min(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--chain", type=int, default=64)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    if a.rounds < 1 or a.calls < 1 or a.chain < 1:
        print("torch_host: --rounds, --calls and --chain must be positive", file=sys.stderr)
        return 2
    torch.set_num_threads(1)
    x = torch.ones(1, requires_grad=True)
    b = torch.ones(1)
    op_s = best(lambda: x * b, a.rounds, a.calls)
    op_nograd_s = best(lambda: b * b, a.rounds, a.calls)

    def chain(step):
        y = x
        for _ in range(a.chain):
            y = step(y)
        return y

    def backward_of(step):
        def run():
            y = chain(step)
            y.backward()
            x.grad = None
        return run

    def one_mul():
        return x * 2.0

    def backward_of_one():
        y = x * 2.0
        y.backward()
        x.grad = None

    calls = max(1, a.calls // a.chain)
    # the six probes interleaved round by round, so that a spell of
    # contention falls on all of them; each figure the minimum over rounds
    runs = [lambda: chain(lambda y: y * 2.0), backward_of(lambda y: y * 2.0),
            lambda: chain(Scale.apply), backward_of(Scale.apply), one_mul, backward_of_one]
    per = [a.chain] * 4 + [1, 1]
    mins = [float("inf")] * len(runs)
    for _ in range(a.rounds):
        for i, fn in enumerate(runs):
            mins[i] = min(mins[i], best(fn, 1, calls if per[i] > 1 else a.calls // 4 or 1) / per[i])
    fwd_op_s, full_op_s, fwd_fn_s, full_fn_s, fwd_one_s, full_one_s = mins
    node_s = full_op_s - fwd_op_s
    function_s = (full_fn_s - full_op_s) / 2
    # the backward of one node costs C + N, the long chain's per node N + C / chain
    call_s = ((full_one_s - fwd_one_s) - node_s) * a.chain / (a.chain - 1) if a.chain > 1 else 0.0
    res = {"torch": torch.__version__, "python": sys.version.split()[0],
           "host_op_us": op_s * 1e6, "op_nograd_us": op_nograd_s * 1e6,
           "host_node_us": node_s * 1e6, "host_function_us": function_s * 1e6,
           "host_backward_call_us": call_s * 1e6,
           "function_pair_us": 2 * function_s * 1e6,
           "scalar_op_fwd_us": fwd_op_s * 1e6, "function_fwd_us": fwd_fn_s * 1e6,
           "rounds": a.rounds, "calls": a.calls, "chain": a.chain}
    # a difference of two minima: on a busy host it can come out at or below
    # zero, which is no figure; say so rather than print it
    for k in ("host_node_us", "host_function_us", "host_backward_call_us"):
        if not res[k] > 0:
            print(f"torch_host: {k} came out {res[k]:.2f} us: the host was too busy to resolve it; "
                  f"run again with more --rounds", file=sys.stderr)
            return 1
    if a.json:
        print(json.dumps(res, indent=1))
    else:
        print(f"# torch {res['torch']}, python {res['python']}, one thread, tensors of one element")
        for k in ("host_op_us", "host_node_us", "host_function_us", "host_backward_call_us"):
            print(f"{k} = {res[k]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
