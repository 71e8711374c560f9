#!/usr/bin/env bash
# ctest's entry to the Python tests: pytest in the tests' environment
# (scripts/python-env.sh: PyTorch 2.x, pinned), or under $FWP_PYTHON.
# Without that environment the tests are skipped, saying why (exit 77).
set -u
root="$(cd "$(dirname "$0")/../.." && pwd)"
py="${FWP_PYTHON:-$("$root/scripts/python-env.sh" --path)}"
if ! "$py" -c "import torch, numpy, pytest" 2> /dev/null; then
  echo "test/python: Skipped"
  echo "no PyTorch, numpy or pytest for $py (make python-env makes them)"
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
export PYTHONPATH="$root/python${PYTHONPATH:+:$PYTHONPATH}"
exec "$py" -m pytest -q -p no:cacheprovider "$(dirname "$0")"
