#!/usr/bin/env python3
"""house.py — the shape of the source tree, as a reader meets it: modules
(folders) and the floors their includes put them on, file circles inside a
folder (a file that calls another file's function which calls back), the
longest functions and the biggest headers.

    python3 bench/house.py [--repo DIR] [--rev REV]

--rev reads a commit through a temporary `git worktree` (left nothing behind),
so two commits can be compared on one machine: `--rev 6d716b3` then HEAD.
Needs universal-ctags (Debian: universal-ctags) for the function extents.
A report, not a test: nothing is asserted.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

MODULES = ["model", "kernels", "measure", "calibrate", "reports", "import", "cli"]
SRC_EXT = (".c", ".h", ".cu", ".cuh", ".cpp", ".def")


def strip_c(text):
    """Text without comments and string literals (their contents could name a
    function without calling it)."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    return re.sub(r'"(\\.|[^"\\\n])*"', '""', text)


def sources(repo):
    out = []
    for mod in MODULES:
        d = os.path.join(repo, mod)
        if not os.path.isdir(d):
            continue
        for name in sorted(os.listdir(d)):
            if name.endswith(SRC_EXT):
                out.append(os.path.join(mod, name))
    return out


def ctags_functions(repo, files):
    """(file, name, first line, last line, is file-local) of every function
    definition."""
    cmd = ["ctags", "--output-format=json", "--fields=+neKZ", "--language-force=C++", "-f", "-"]
    res = subprocess.run(cmd + files, cwd=repo, capture_output=True, text=True, check=True)
    funcs = []
    for line in res.stdout.splitlines():
        t = json.loads(line)
        if t.get("kind") != "function" or "end" not in t:
            continue
        funcs.append((t["path"], t["name"], t["line"], t["end"], t.get("scope") == "file" or "file" in t))
    return funcs


def floors(repo, files):
    """Each module's floor: 1 for a module that includes no other module's
    header, else one above the highest it includes; the arrows between them."""
    owner = {os.path.basename(f): f.split("/")[0] for f in files if f.endswith((".h", ".cuh", ".def"))}
    edges = {m: set() for m in MODULES}
    for f in files:
        mod = f.split("/")[0]
        for inc in re.findall(r'#include\s+"([^"]+)"', open(os.path.join(repo, f), errors="replace").read()):
            other = owner.get(os.path.basename(inc))
            if other and other != mod:
                edges[mod].add(other)
    floor = {}

    def get(m, seen=()):
        if m in floor:
            return floor[m]
        if m in seen:
            return 0  # an arrow back up: counted by the caller
        floor[m] = 1 + max([get(o, seen + (m,)) for o in edges[m]] or [0])
        return floor[m]

    present = [m for m in MODULES if any(f.startswith(m + "/") for f in files)]
    for m in present:
        get(m)
    back = sum(1 for m in present for o in edges[m] if floor.get(o, 0) >= floor[m])
    return {m: floor[m] for m in present}, {m: sorted(edges[m]) for m in present}, back


def circles(repo, files, funcs):
    """File circles inside one folder: A -> B when A calls a non-static
    function B defines; the strongly connected groups of two files or more."""
    defined = {}
    for path, name, _a, _b, local in funcs:
        if not local:
            defined.setdefault(name, path)
    text = {f: strip_c(open(os.path.join(repo, f), errors="replace").read()) for f in files
            if not f.endswith((".h", ".cuh", ".def"))}
    graph = {f: set() for f in text}
    calls = re.compile(r"\b([A-Za-z_]\w*)\s*\(")
    for f, t in text.items():
        for name in set(calls.findall(t)):
            g = defined.get(name)
            if g and g != f and g in text and g.split("/")[0] == f.split("/")[0]:
                graph[f].add(g)
    # Tarjan's strongly connected components
    index, low, stack, on, out, n = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in graph:
        if v not in index:
            visit(v)
    return out


def report(repo):
    files = sources(repo)
    funcs = ctags_functions(repo, files)
    fl, edges, back = floors(repo, files)
    print(f"modules: {len(fl)}, floors: {max(fl.values())}, arrows: {sum(len(e) for e in edges.values())}, "
          f"arrows back up: {back}")
    for m in sorted(fl, key=lambda m: (fl[m], m)):
        print(f"  floor {fl[m]}  {m + '/':11} includes {', '.join(edges[m]) or '-'}")
    circ = circles(repo, files, funcs)
    print(f"file circles inside a folder: {len(circ)}")
    for c in circ:
        print("  " + " <-> ".join(c))
    lengths = sorted(((b - a + 1, p, name) for p, name, a, b, _l in funcs), reverse=True)
    med = sorted(x[0] for x in lengths)[len(lengths) // 2] if lengths else 0
    print(f"functions: {len(lengths)}, median {med} lines; longest:")
    for ln, p, name in lengths[:5]:
        print(f"  {ln:4d}  {p}: {name}")
    heads = sorted(((sum(1 for _ in open(os.path.join(repo, f), errors="replace")), f) for f in files
                    if f.endswith((".h", ".cuh"))), reverse=True)
    print("biggest headers:")
    for ln, f in heads[:5]:
        print(f"  {ln:4d}  {f}")
    srcs = sorted(((sum(1 for _ in open(os.path.join(repo, f), errors="replace")), f) for f in files
                   if not f.endswith((".h", ".cuh", ".def"))), reverse=True)
    print("biggest source files:")
    for ln, f in srcs[:5]:
        print(f"  {ln:4d}  {f}")
    asserts = sum(len(re.findall(r"\bassert\s*\(", strip_c(open(os.path.join(repo, f), errors="replace").read())))
                  for f in files)
    print(f"assert calls in the library: {asserts}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repo", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    ap.add_argument("--rev", help="a commit to read instead of the working tree")
    a = ap.parse_args()
    if not a.rev:
        report(a.repo)
        return
    with tempfile.TemporaryDirectory() as tmp:
        wt = os.path.join(tmp, "tree")
        subprocess.run(["git", "-C", a.repo, "worktree", "add", "-q", "--detach", wt, a.rev], check=True)
        try:
            print(f"at {a.rev}:")
            report(wt)
        finally:
            subprocess.run(["git", "-C", a.repo, "worktree", "remove", "--force", wt], check=True)


if __name__ == "__main__":
    main()
