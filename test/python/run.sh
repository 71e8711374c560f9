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
# A libfwp.so built with AddressSanitizer (make sanitize) loads into a
# Python only with the sanitizers' runtimes preloaded.
if [[ -n "${FWP_LIBRARY:-}" ]]; then
  runtimes=$(ldd "$FWP_LIBRARY" 2> /dev/null |
    awk '/lib(asan|ubsan)\.so/ { print $3 }' | paste -sd:)
  [[ -n "$runtimes" ]] && export LD_PRELOAD="$runtimes${LD_PRELOAD:+:$LD_PRELOAD}"
fi
# The package from this checkout (python/fwp).
export PYTHONPATH="$(cd "$(dirname "$0")/../.." && pwd)/python${PYTHONPATH:+:$PYTHONPATH}"
exec "$py" -m pytest -q -p no:cacheprovider "$(dirname "$0")"
