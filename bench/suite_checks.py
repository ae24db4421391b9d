#!/usr/bin/env python3
"""suite_checks.py — counts the checks the test suite makes, two ways, so that
a change to the suite can show it removed none:

  static   the check sites in tests/ at a commit (git show; no build): C
           CHECK, CHECK_EQ_I64 and CHECK_NEAR calls (ptx_traffic.c: each
           bad++ or bad += of a kernel that disagrees); in the shell tests each
           line that records a failure (bad, check, expect, expect_full,
           jcheck, has, hasre, hasnt, golden, or an explicit fail=1 /
           fails=$((fails + 1)) / "FAIL"). A check in a loop is one site.
  dynamic  the checks a run made, from the output ctest kept of it
           (scripts/test.sh's BUILD/Testing/junit-*.xml, or a
           BUILD/Testing/Temporary/LastTest.log that no test's own ctest
           run replaced, as gpu_session_archive's does): the last "N passed, N
           failed" a test printed (mb_test.h, cli_lib.sh, check_lib.sh and
           the shell tests with their own counters), ptx_traffic's plans
           checked and ptxas logs' functions, "N of M cases match", four
           checks a torch_oracle expression, else its "ok" lines; tests that
           print none are listed apart.

    bench/suite_checks.py static COMMIT...        per file, one column a commit
    bench/suite_checks.py dynamic LOG[,LOG...]... per test, one column a
                                                 log (or several, summed)

Prints the counts and their totals; a file or test whose count dropped from
the first column to a later one is marked '<'. Asserts nothing."""
import re
import subprocess
import sys

C_CHECK = re.compile(r"\bCHECK(?:_EQ_I64|_NEAR)?\s*\(|\bbad\s*(?:\+\+|\+=)")
SH_HELPERS = r"(?:bad|check|expect|expect_full|jcheck|has|hasre|hasnt|golden)"
SH_CHECK = re.compile(r"(?:^|[;&|{(!]|\bthen|\belse|\bdo)\s*" + SH_HELPERS + r"(?:\s|$)"
                      r"|\bfails?=(?:1\b|\$\(\(fails? \+ 1\)\))|\bbad=1\b|echo \"FAIL")
SH_DEFINITION = re.compile(r"^\s*[A-Za-z_][A-Za-z_0-9]*\(\)\s*\{")


def git_files(commit):
    out = subprocess.run(["git", "ls-tree", "-r", "--name-only", commit, "tests/"], check=True,
                         capture_output=True, text=True).stdout.split()
    return [f for f in out if f.endswith((".c", ".h", ".sh")) and "/fuzz/" not in f]


def static_count(commit, path):
    text = subprocess.run(["git", "show", f"{commit}:{path}"], check=True, capture_output=True,
                          text=True, errors="replace").stdout
    if path.endswith((".c", ".h")):
        return sum(len(C_CHECK.findall(l)) for l in text.splitlines() if not l.lstrip().startswith("#define"))
    n = 0
    for line in text.replace("\\\n", " ").splitlines():
        s = line.strip()
        if not s or s.startswith("#") or SH_DEFINITION.match(s):
            continue
        n += bool(SH_CHECK.search(s))
    return n


def dynamic_counts(log):
    """{test: checks} from a JUnit file or a LastTest.log; None for a test that printed no count."""
    if log.endswith(".xml"):
        import xml.etree.ElementTree as ET
        return {tc.get("name"): count_of(tc.findtext("system-out") or "")
                for tc in ET.parse(log).getroot().iter("testcase")}
    counts, name, out = {}, None, []
    for line in open(log, errors="replace"):
        m = re.match(r"^\d+/\d+ Test: (\S+)", line)
        if m:
            name, out = m.group(1), []
            continue
        if name and line.startswith("<end of output>"):
            counts[name] = count_of("".join(out))
            name = None
            continue
        if name:
            out.append(line)
    return counts


def count_of(out):
    m = re.findall(r"(\d+) passed, (\d+) failed", out)
    if m:
        return sum(map(int, m[-1]))
    m = re.findall(r"ptx_traffic: (\d+) plans checked|: (\d+) functions, \d+ spill", out)
    if m:
        return sum(int(a or b) for a, b in m)
    m = re.findall(r"(\d+) of (\d+) cases match", out)
    if m:
        return int(m[-1][1])
    m = re.findall(r"torch_oracle: (\d+) expressions: ", out)
    if m:
        return 4 * int(m[-1])  # forward kernels, backward kernels, saved bytes, values
    ok = len(re.findall(r"^(?:ok\b|ok:)", out, re.M))
    return ok or None


def table(columns, heads):
    keys = sorted(set().union(*columns))
    print("\t".join(["name"] + heads))
    totals = [0] * len(columns)
    for k in keys:
        vals = [c.get(k) for c in columns]
        for i, v in enumerate(vals):
            totals[i] += v or 0
        first = vals[0]
        dropped = any(v is not None and first is not None and v < first for v in vals[1:]) or \
            (first is not None and any(k not in c for c in columns[1:]))
        print("\t".join([k] + ["-" if v is None else str(v) for v in vals]) + ("\t<" if dropped else ""))
    print("\t".join(["total"] + [str(t) for t in totals]))


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in ("static", "dynamic"):
        print(__doc__, file=sys.stderr)
        return 2
    if sys.argv[1] == "static":
        cols = [{f: static_count(c, f) for f in git_files(c)} for c in sys.argv[2:]]
    else:
        cols = []
        for arg in sys.argv[2:]:
            col = {}
            for log in arg.split(","):
                for k, v in dynamic_counts(log).items():
                    col[k] = v if col.get(k) is None else col[k] + (v or 0)
            cols.append(col)
        silent = sorted({k for c in cols for k, v in c.items() if v is None})
        if silent:
            print("tests that print no count (see the static count of their files): " + " ".join(silent))
    table(cols, sys.argv[2:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
