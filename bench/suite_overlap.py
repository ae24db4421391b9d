#!/usr/bin/env python3
"""suite_overlap.py — which source lines a test reaches that a set of other
tests does not: the evidence for leaving a test out of one build's run (the
sanitizer build's 'once' tests, tests/CMakeLists.txt) while its code is
still run there by others.

    bench/suite_overlap.py COV_BUILD --base 'CTEST ARGS' [--keep DIR] TEST...

COV_BUILD is a build with gcov instrumentation, e.g.
    cmake -S . -B build-cov -DCMAKE_BUILD_TYPE=Debug -DMB_ENABLE_CUDA=OFF \\
      -DCMAKE_C_FLAGS=--coverage -DCMAKE_EXE_LINKER_FLAGS=--coverage
Runs ctest with the base arguments (e.g. '-LE timing -E "^(a|b)$"'), keeps
the line counts (in DIR with --keep; a DIR that holds them already is
taken instead of running the base again), then runs each TEST alone from
those counts and prints the
lines of the project's libraries and CLI (not tests/) it reaches that the
base did not, grouped by function. Prints; asserts nothing."""
import argparse
import gzip
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile


def gcda_files(build):
    for root, _, files in os.walk(build):
        for f in files:
            if f.endswith(".gcda"):
                yield os.path.join(root, f)


def covered(build, src):
    """{(file, line): function} of the lines run at least once."""
    lines = {}
    out = tempfile.mkdtemp()
    for gcda in gcda_files(build):
        r = subprocess.run(["gcov", "--json-format", "--stdout", "-o", os.path.dirname(gcda), gcda],
                           capture_output=True, cwd=out)
        for doc in r.stdout.splitlines():
            try:
                d = json.loads(doc)
            except ValueError:
                continue
            for f in d.get("files", []):
                path = os.path.realpath(os.path.join(d.get("current_working_directory", ""), f["file"]))
                rel = os.path.relpath(path, src)
                if rel.startswith("..") or rel.startswith("tests/") or rel.startswith("build"):
                    continue
                for ln in f.get("lines", []):
                    if ln.get("count", 0) > 0:
                        lines[(rel, ln["line_number"])] = ln.get("function_name", "?")
    shutil.rmtree(out, ignore_errors=True)
    return lines


def snapshot(build, to):
    shutil.rmtree(to, ignore_errors=True)
    for g in gcda_files(build):
        dst = os.path.join(to, os.path.relpath(g, build))
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copy2(g, dst)


def restore(build, frm):
    for g in list(gcda_files(build)):
        os.remove(g)
    for root, _, files in os.walk(frm):
        for f in files:
            s = os.path.join(root, f)
            shutil.copy2(s, os.path.join(build, os.path.relpath(s, frm)))


def ctest(build, args):
    cmd = ["ctest", "--test-dir", build] + args
    print("+ " + " ".join(shlex.quote(a) for a in cmd), file=sys.stderr, flush=True)
    return subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("build")
    ap.add_argument("--base", required=True, help="ctest arguments of the base set")
    ap.add_argument("--keep", help="the base's line counts: kept here, or taken from here")
    ap.add_argument("tests", nargs="+")
    a = ap.parse_args()
    src = os.path.realpath(os.path.join(os.path.dirname(__file__), ".."))
    a.build = os.path.abspath(a.build)
    keep = os.path.abspath(a.keep) if a.keep else tempfile.mkdtemp()
    if a.keep and any(gcda_files(keep)):
        restore(a.build, keep)
        rc = "(kept)"
    else:
        for g in list(gcda_files(a.build)):
            os.remove(g)
        rc = ctest(a.build, shlex.split(a.base))
        snapshot(a.build, keep)
    base = covered(a.build, src)
    print(f"base ({a.base}): ctest exit {rc}, {len(base)} lines reached", flush=True)
    for t in a.tests:
        restore(a.build, keep)
        rc = ctest(a.build, ["-R", f"^{t}$"])
        more = {k: v for k, v in covered(a.build, src).items() if k not in base}
        print(f"{t}: ctest exit {rc}, {len(more)} lines the base does not reach", flush=True)
        by_fn = {}
        for (f, ln), fn in sorted(more.items()):
            by_fn.setdefault((f, fn), []).append(ln)
        for (f, fn), lns in sorted(by_fn.items()):
            print(f"  {f}: {fn}: {len(lns)} line(s): {', '.join(map(str, lns[:12]))}{' ...' if len(lns) > 12 else ''}")
    restore(a.build, keep)
    if not a.keep:
        shutil.rmtree(keep, ignore_errors=True)


if __name__ == "__main__":
    main()
