#!/bin/bash
# python_pkg.sh — runs tests/python_pkg.py with a python3 that imports pandas
# (Debian's python3-pandas lives in /usr/bin/python3's dist-packages, which
# another python3 first on PATH may not see); exit 77 when none does.
for py in python3 /usr/bin/python3; do
  if command -v "$py" >/dev/null && "$py" -c 'import pandas' 2>/dev/null; then
    exec "$py" "$MB_SRC/tests/python_pkg.py" "$@"
  fi
done
echo "python_pkg: skipped: no python3 here imports pandas (apt-get install python3-pandas)"
exit 77
