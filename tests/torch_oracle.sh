#!/bin/bash
# torch_oracle.sh — runs tests/torch_oracle.py with a python3 that imports
# torch (Debian's python3-torch lives in /usr/bin/python3's dist-packages,
# which another python3 first on PATH may not see); exit 77 when none does.
# MB_ORACLE_SCRIPT names another oracle in tests/ (torch_oracle_rows.py).
for py in python3 /usr/bin/python3; do
  if command -v "$py" >/dev/null && "$py" -c 'import torch, torch.utils._python_dispatch' 2>/dev/null; then
    exec "$py" "$MB_SRC/tests/${MB_ORACLE_SCRIPT:-torch_oracle.py}" "$@"
  fi
done
echo "torch_oracle: skipped: no python3 here imports torch (apt-get install python3-torch)"
exit 77
