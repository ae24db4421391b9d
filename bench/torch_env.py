#!/usr/bin/python3
"""torch_env.py — the one PyTorch environment of bench/: a virtual environment
under the build folder (build/bench-venv) with PyTorch 2.x and numexpr from
PyPI, made on first use and reused afterwards. The PyTorch scripts of bench/
(lecture_demos.py, cpu_peers.py, torch_gpu.py) re-run themselves under its
python through ensure(). Nothing in tests/ or scripts/test.sh calls it: it
downloads from PyPI.

Two routes (docs/pytorch.md has the measured costs):
  cpu   PyPI's torch wheel without its dependencies, the pure-Python ones it
        lists, and only those NVIDIA wheels whose libraries torch's shared
        objects cannot load from this machine (ldd 'not found', plus NCCL:
        libtorch_cuda.so needs symbols newer than a CUDA toolkit's copy).
        Imports, runs eager and compiles with Inductor's CPU backend (its C++
        compiler is the system's g++); no Triton, no GPU. Default where no
        NVIDIA driver is present (no /proc/driver/nvidia).
  full  `pip install torch` as PyPI resolves it: every NVIDIA runtime wheel
        and Triton (the GPU path of torch_gpu.py and the GPU guide). Default
        where a driver is present; also the fallback when the cpu route does
        not import.
A stamp file (bench-venv/membound-env.json) records the route, the versions
and what the install took; a venv with a stamp whose torch imports is reused.

usage: bench/torch_env.py [--build DIR] [--route auto|cpu|full] [--python] [--force]
Does not: run any benchmark, or touch anything outside DIR/bench-venv.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time

# Pinned so every machine measures the same code (PyPI's newest on 2026-12-02).
TORCH = "torch==2.15.0"
NUMEXPR = "numexpr==2.14.2"
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
STAMP = "membound-env.json"
# A library torch's shared objects link -> what provides it: ("extra", X) is
# the cuda-toolkit metapackage's extra X at torch's pin; ("pkg", NAME) the
# requirement of that name in torch's metadata (its pin kept).
LIB_WHEELS = {
    "libcudart": ("extra", "cudart"), "libcublas": ("extra", "cublas"),
    "libcublasLt": ("extra", "cublas"), "libcufft": ("extra", "cufft"),
    "libcufile": ("extra", "cufile"), "libcupti": ("extra", "cupti"),
    "libcusolver": ("extra", "cusolver"), "libcusparse": ("extra", "cusparse"),
    "libnvJitLink": ("extra", "nvjitlink"), "libnvrtc": ("extra", "nvrtc"),
    "libnvToolsExt": ("extra", "nvtx"), "libcudnn": ("pkg", "nvidia-cudnn-cu13"),
    "libcusparseLt": ("pkg", "nvidia-cusparselt-cu13"), "libnccl": ("pkg", "nvidia-nccl-cu13"),
    "libnvshmem_host": ("pkg", "nvidia-nvshmem-cu13"),
}


def say(msg):
    print(f"torch_env: {msg}", file=sys.stderr, flush=True)


def venv_dir(build):
    return os.path.join(os.path.abspath(build), "bench-venv")


def venv_python(build):
    return os.path.join(venv_dir(build), "bin", "python")


def read_stamp(build):
    try:
        with open(os.path.join(venv_dir(build), STAMP)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def imports_torch(py):
    """(ok, one line): whether py imports torch 2.x, and its version or error."""
    code = "import torch, numexpr; print(torch.__version__)"
    try:
        r = subprocess.run([py, "-c", code], capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.SubprocessError) as e:
        return False, str(e)
    if r.returncode != 0:
        lines = [l for l in r.stderr.strip().splitlines() if l.strip()]
        return False, lines[-1] if lines else f"exit {r.returncode}"
    v = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else "?"
    return v.split(".")[0].isdigit() and int(v.split(".")[0]) >= 2, v


def pip(py, args, log):
    cmd = [py, "-m", "pip", "install", "--disable-pip-version-check", "-q"] + args
    say("pip install " + " ".join(args))
    t = time.monotonic()
    subprocess.run(cmd, check=True)
    log.append({"pip": args, "s": round(time.monotonic() - t, 1)})


def torch_requirements(py):
    """Requires-Dist lines of the installed torch (no extras): (plain, nvidia)
    where nvidia maps a requirement's name to the whole line."""
    code = ("import importlib.metadata as m; print('\\n'.join(m.requires('torch') or []))")
    out = subprocess.run([py, "-c", code], capture_output=True, text=True, check=True).stdout
    plain, nvidia = [], {}
    for line in out.splitlines():
        if "extra ==" in line:
            continue
        req = line.split(";")[0].strip()
        name = re.split(r"[\[<>=~! ]", req, 1)[0].lower()
        if name.startswith(("nvidia-", "cuda-", "triton")):
            nvidia[name] = req
        else:
            plain.append(req)
    return plain, nvidia


def missing_libs(site):
    """Library stems ('libcufile') torch/lib's shared objects need and the
    loader cannot find here."""
    lib = os.path.join(site, "torch", "lib")
    stems = set()
    for f in sorted(os.listdir(lib)):
        if ".so" not in f:
            continue
        r = subprocess.run(["ldd", os.path.join(lib, f)], capture_output=True, text=True)
        for m in re.finditer(r"^\s*(\S+?)\.so[.\d]*\s*=>\s*not found", r.stdout, re.M):
            stems.add(m.group(1))
    return stems


def nvidia_wanted(stems, nvidia):
    """The requirements that provide stems (see LIB_WHEELS), NCCL always."""
    toolkit = nvidia.get("cuda-toolkit", "")
    pin = toolkit.split("]", 1)[1] if "]" in toolkit else ""
    extras, pkgs = set(), {"nvidia-nccl-cu13"}
    for s in stems:
        if s == "libcuda":  # the driver's own library: not a wheel (torch loads without it)
            continue
        kind, what = LIB_WHEELS.get(s, ("pkg", None))
        if kind == "extra":
            extras.add(what)
        elif what:
            pkgs.add(what)
    reqs = [nvidia[p] for p in sorted(pkgs) if p in nvidia]
    # the metapackage has no requirement but its extras': pip resolves them
    toolkit_req = f"cuda-toolkit[{','.join(sorted(extras))}]{pin}" if extras and pin else ""
    unknown = sorted(s for s in stems if s not in LIB_WHEELS and s != "libcuda")
    return reqs, toolkit_req, unknown


def site_packages(py):
    code = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    return subprocess.run([py, "-c", code], capture_output=True, text=True, check=True).stdout.strip()


def install_cpu(py, log):
    pip(py, ["--no-deps", TORCH], log)
    plain, nvidia = torch_requirements(py)
    pip(py, plain + [NUMEXPR], log)
    stems = missing_libs(site_packages(py))
    reqs, toolkit_req, unknown = nvidia_wanted(stems, nvidia)
    if unknown:
        say(f"no wheel known for {', '.join(unknown)}")
    if reqs:  # their own requirements are headers and the like: not loaded
        pip(py, ["--no-deps"] + reqs, log)
    if toolkit_req:
        pip(py, [toolkit_req], log)
    return reqs + ([toolkit_req] if toolkit_req else [])


def du_bytes(path):
    total = 0
    for root, _dirs, files in os.walk(path):
        for f in files:
            p = os.path.join(root, f)
            if not os.path.islink(p):
                total += os.path.getsize(p)
    return total


def make(build, route, force=False):
    """Makes (or reuses) the venv; returns its python. Raises RuntimeError."""
    d, py = venv_dir(build), venv_python(build)
    st = read_stamp(build)
    if st and not force and os.access(py, os.X_OK):
        ok, why = imports_torch(py)
        if ok:
            return py
        say(f"{d}: torch does not import ({why}): made again")
    if route == "auto":
        route = "full" if os.path.exists("/proc/driver/nvidia") else "cpu"
    if os.path.exists(d):
        shutil.rmtree(d)
    os.makedirs(os.path.dirname(d), exist_ok=True)
    t0 = time.monotonic()
    log = []
    say(f"making {d} ({route} route; {TORCH}, {NUMEXPR} from PyPI; minutes, GBs)")
    subprocess.run([sys.executable, "-m", "venv", d], check=True)
    extra = []
    if route == "cpu":
        extra = install_cpu(py, log)
        ok, why = imports_torch(py)
        if not ok:
            say(f"the cpu route does not import ({why}): installing the full set")
            route = "cpu+full"
    if route != "cpu":
        pip(py, [TORCH, NUMEXPR], log)
    ok, version = imports_torch(py)
    if not ok:
        raise RuntimeError(f"{d}: torch does not import: {version}")
    stamp = {"route": route, "torch": version, "requirements": [TORCH, NUMEXPR], "nvidia": extra,
             "install_s": round(time.monotonic() - t0, 1), "disk_bytes": du_bytes(d), "steps": log,
             "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    with open(os.path.join(d, STAMP), "w") as f:
        json.dump(stamp, f, indent=1)
    say(f"{d}: torch {version}, {route} route, {stamp['install_s']:.0f} s, "
        f"{stamp['disk_bytes'] / 1e9:.2f} GB")
    return py


def default_build():
    return os.environ.get("MB_BUILD") or os.path.join(REPO, "build")


def ensure(script, argv, required=True, build=None):
    """Re-executes script with argv under the venv's python (made on first
    use) unless this interpreter already is it or MB_TORCH_SYSTEM=1 (tests
    with a stand-in torch; a machine that carries its own). When the venv
    cannot be had: exit 3 if required. Not required: an existing venv only,
    never a new one (a GPU machine may have no PyPI, and pip's retries would
    spend its time); without one, one line and return (the script goes on
    with this interpreter's torch)."""
    if os.environ.get("MB_TORCH_SYSTEM") == "1":
        return
    build = build or default_build()
    d = venv_dir(build)
    if os.path.realpath(sys.prefix) == os.path.realpath(d):
        return
    if not required and not read_stamp(build):
        say(f"no {d} (bench/torch_env.py makes it): going on with {sys.executable}'s torch")
        return
    try:
        py = make(build, os.environ.get("MB_TORCH_ROUTE", "auto"))
    except (RuntimeError, OSError, subprocess.CalledProcessError) as e:
        say(f"no PyTorch environment under {build}: {e}")
        if required:
            sys.exit(3)
        say(f"going on with {sys.executable}'s torch")
        return
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(py, [py, os.path.abspath(script)] + list(argv))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=default_build(), help="build folder (default: build/)")
    ap.add_argument("--route", choices=("auto", "cpu", "full"), default="auto")
    ap.add_argument("--python", action="store_true", help="print the venv's python and exit")
    ap.add_argument("--force", action="store_true", help="make it again")
    a = ap.parse_args()
    try:
        py = make(a.build, a.route, a.force)
    except (RuntimeError, OSError, subprocess.CalledProcessError) as e:
        say(str(e))
        return 1
    if a.python:
        print(py)
    else:
        print(json.dumps(read_stamp(a.build), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
