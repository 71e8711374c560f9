#!/usr/bin/env bash
# ctest's entry to the Python tests: pytest under Debian's python3, the one
# python3-torch is installed for (FWP_PYTHON to use another). Without
# PyTorch, numpy or pytest the tests are skipped, saying why (exit 77).
set -u
py="${FWP_PYTHON:-/usr/bin/python3}"
if ! "$py" -c "import torch, numpy, pytest" 2> /dev/null; then
  echo "test/python: Skipped"
  echo "no PyTorch, numpy or pytest for $py (scripts/install-deps.sh installs them)"
  exit 77
fi
exec "$py" -m pytest -q -p no:cacheprovider "$(dirname "$0")"
