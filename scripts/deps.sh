# deps.sh — sourced by demo.sh and test.sh: installs the Debian packages the
# build and tests need, when missing. Needs root (or sudo) on Debian 12.
# The CUDA toolkit is not installed here: it is used when present.

MB_DEPS="build-essential cmake pkg-config libinih-dev libjansson-dev libgsl-dev libsleef-dev gnuplot-nox jq libigraph-dev libcmark-dev libcsv-dev libyajl-dev libopenblas64-openmp-dev"
# Only for scripts/test.sh: headless Chromium renders report.html in the report_html test;
# pandas (Debian's) opens every CSV the tool writes in the csv_open test; PyTorch
# (Debian's 1.13, CPU) is the oracle of the eager plan in the torch_oracle test;
# libpng's headers build the mask reader of the fig_overlap test (tests/fig_mask.c);
# SLURM and munge (Debian's) run the slurm_fleet test's one-node cluster, whose
# daemons the test starts and stops itself (tests/slurm_fleet.sh).
MB_TEST_DEPS="chromium python3-pandas python3-torch libpng-dev slurm-wlm munge"

mb_install_deps() {
  local missing=() p
  for p in $MB_DEPS ${MB_EXTRA_DEPS:-}; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "membound: installing ${missing[*]}" >&2
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "membound: error: need root to install: ${missing[*]}" >&2; return 1; }
    sudo=sudo
  fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -q >/dev/null
  $sudo apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
}

# nvcc where the toolkit lives but PATH lacks it
mb_find_cuda() {
  if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
    export PATH=/usr/local/cuda/bin:$PATH
  fi
}

mb_jobs() { nproc 2>/dev/null || echo 2; }
