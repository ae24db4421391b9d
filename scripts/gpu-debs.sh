#!/usr/bin/env bash
# gpu-debs.sh — fetches the .deb files the measure binary builds against
# (inih, jansson, pkg-config; libcsv and yajl for `membound import`) into .gpu-debs/, for a GPU machine without those
# packages and without network: carry .gpu-debs/ there and pass
# `--debs .gpu-debs` to scripts/gpu-validate.sh (scripts/gpu-session.sh does).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .gpu-debs
cd .gpu-debs
apt-get download libinih-dev libinih1 libjansson-dev libjansson4 libcsv-dev libcsv3 libyajl-dev libyajl2 pkgconf pkgconf-bin libpkgconf3 >/dev/null
ls -1 *.deb
