#!/usr/bin/python3
"""calib_stability.py — how far `membound calibrate` moves between runs on this
machine: every numeric key of the spec, full and --quick calibrations
interleaved (full, quick, full, quick, ...), each key's spread across the full
runs and each quick run's distance from the full runs' median.

Prints, per key: the full runs' median, their largest distance from it, and the
quick runs' largest distance from it (in %); then how many keys stay within
--within % (default 5) in every full run, and in every quick run; the wall time
of each run; the load average before and after. A shared host drifts: the full
runs' own spread is the floor any faster calibration is judged against. Nothing
is asserted.

  bench/calib_stability.py [--membound BIN] [--runs N] [--within PCT] [--threads T]
                           [--no-quick] [--keep DIR]
"""
import argparse
import configparser
import os
import statistics
import subprocess
import sys
import tempfile
import time

# keys that are not measurements: ids, text, counts the machine reports
NOT_MEASURED = {"sm_count", "max_threads_per_sm", "mem_gb", "onchip_kib"}


def read_spec(path):
    cp = configparser.ConfigParser(inline_comment_prefixes=(";", "#"), interpolation=None)
    cp.read(path)
    out = {}
    for k, v in cp["device"].items():
        if k in NOT_MEASURED:
            continue
        try:
            out[k] = float(v)
        except ValueError:
            pass
    return out


def calibrate(binary, path, quick, threads):
    cmd = [binary, "calibrate", "-o", path] + (["--quick"] if quick else []) + \
          (["--threads", str(threads)] if threads else [])
    t0 = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True, check=False)
    wall = time.monotonic() - t0
    if r.returncode:
        sys.exit(f"calib_stability.py: error: {' '.join(cmd)}: {r.stderr.strip()}")
    return read_spec(path), wall


def dist(v, ref):
    if ref == 0:
        return 0.0 if v == 0 else float("inf")
    return abs(v / ref - 1) * 100


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--membound", default=os.path.join(here, "..", "build", "bin", "membound"))
    ap.add_argument("--runs", type=int, default=3, help="full calibrations (and as many quick ones; default 3)")
    ap.add_argument("--within", type=float, default=5.0, help="the distance a key is judged by, %% (default 5)")
    ap.add_argument("--threads", type=int, default=0, help="calibrate's --threads (default: its own)")
    ap.add_argument("--no-quick", action="store_true", help="full calibrations only")
    ap.add_argument("--keep", help="write each run's spec into DIR (full-1.ini, quick-1.ini, ...)")
    o = ap.parse_args()
    if o.runs < 2 or o.within <= 0:
        ap.error("--runs is at least 2 and --within above 0")
    if not os.access(o.membound, os.X_OK):
        sys.exit(f"calib_stability.py: error: {o.membound} is not an executable (build first)")
    if o.keep:
        os.makedirs(o.keep, exist_ok=True)
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    full, quick, walls = [], [], {"full": [], "quick": []}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(o.runs):
            for kind in ("full",) if o.no_quick else ("full", "quick"):
                path = os.path.join(o.keep or tmp, f"{kind}-{i + 1}.ini")
                spec, wall = calibrate(o.membound, path, kind == "quick", o.threads)
                (full if kind == "full" else quick).append(spec)
                walls[kind].append(wall)
                print(f"{kind} run {i + 1}: {wall:.1f} s, {len(spec)} numeric keys", flush=True)
    keys = sorted(set.intersection(*(set(s) for s in full)))
    print(f"\n{'key':34} {'full median':>14} {'full max %':>10}" + ("" if o.no_quick else f" {'quick max %':>11}"))
    n_full = n_quick = 0
    rows = []
    for k in keys:
        med = statistics.median(s[k] for s in full)
        f = max(dist(s[k], med) for s in full)
        q = max((dist(s[k], med) for s in quick if k in s), default=float("nan"))
        n_full += f <= o.within
        n_quick += q <= o.within
        rows.append((k, med, f, q))
    for k, med, f, q in sorted(rows, key=lambda r: -r[2]):
        print(f"{k:34} {med:14.6g} {f:10.1f}" + ("" if o.no_quick else f" {q:11.1f}"))
    print(f"\nwithin {o.within:g}% of the full runs' median: {n_full} of {len(keys)} keys in every full run"
          + ("" if o.no_quick else f", {n_quick} of {len(keys)} in every quick run"))
    for kind, w in walls.items():
        if w:
            print(f"{kind}: wall {statistics.median(w):.1f} s median ({', '.join(f'{x:.1f}' for x in w)})")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
