#!/usr/bin/env python3
"""suite_profile.py — each ctest test of a build run alone, one after the
other, with its wall time and the CPU time (user + sys) of it and every
process it waited for: where the suite's time goes when the machine is
shared (CPU seconds move less with the load than wall seconds do).

    bench/suite_profile.py BUILD_DIR [-R REGEX] [-o OUT.tsv] [-k LOG_DIR]

Reads the tests from `ctest --show-only=json-v1` (command, environment,
working folder, timeout), runs them as ctest would, and prints one line a
test, the most CPU first, then the totals. Prints; asserts nothing. Does not
run tests side by side (ctest -j does: see scripts/test.sh)."""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time


def tests_of(build):
    out = subprocess.run(["ctest", "--test-dir", build, "--show-only=json-v1"], check=True,
                         capture_output=True, text=True).stdout
    for t in json.loads(out)["tests"]:
        props = {p["name"]: p["value"] for p in t.get("properties", [])}
        yield t["name"], t.get("command"), props


def run_one(cmd, props, log):
    env = dict(os.environ)
    for kv in props.get("ENVIRONMENT", []):
        k, _, v = kv.partition("=")
        env[k] = v
    timeout = float(props.get("TIMEOUT", 1500))
    t0 = time.monotonic()
    out = open(log, "w") if log else subprocess.DEVNULL
    p = subprocess.Popen(cmd, cwd=props.get("WORKING_DIRECTORY"), env=env, stdout=out,
                         stderr=subprocess.STDOUT, start_new_session=True)
    deadline = t0 + timeout
    while True:
        pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            os.killpg(p.pid, signal.SIGKILL)
        time.sleep(0.05)
    wall = time.monotonic() - t0
    if log:
        out.close()
    rc = os.waitstatus_to_exitcode(status)
    return wall, ru.ru_utime, ru.ru_stime, rc


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("build")
    ap.add_argument("-R", dest="regex", default="")
    ap.add_argument("-o", dest="out")
    ap.add_argument("-k", dest="keep", help="keep each test's output as LOG_DIR/NAME.log")
    a = ap.parse_args()
    rows = []
    for name, cmd, props in tests_of(a.build):
        if not cmd or (a.regex and not re.search(a.regex, name)):
            continue
        if a.keep:
            os.makedirs(a.keep, exist_ok=True)
        wall, user, sys_s, rc = run_one(cmd, props, a.keep and os.path.join(a.keep, name + ".log"))
        rows.append((name, wall, user, sys_s, rc))
        print(f"{name:34s} {wall:8.1f} s wall {user + sys_s:8.1f} s cpu  rc {rc}", file=sys.stderr, flush=True)
    rows.sort(key=lambda r: -(r[2] + r[3]))
    lines = ["test\twall_s\tuser_s\tsys_s\trc"] + [f"{n}\t{w:.2f}\t{u:.2f}\t{s:.2f}\t{rc}" for n, w, u, s, rc in rows]
    if a.out:
        with open(a.out, "w") as f:
            f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(f"total\t{sum(r[1] for r in rows):.1f}\t{sum(r[2] for r in rows):.1f}\t{sum(r[3] for r in rows):.1f}\t"
          f"{len(rows)} tests; load average now {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
