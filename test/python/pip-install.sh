#!/usr/bin/env bash
# `pip install .` into a fresh virtual environment, then, from another
# directory, what a user does first: import fwp, `python -m fwp`, the
# module's forward and backward on the CPU, and torch.compile(fullgraph)
# against eager mode (test/python/pip_smoke.py).
# Usage: pip-install.sh BUILD_DIR. The native build reuses BUILD_DIR (the
# project's own build: CMake reconfigures it and builds nothing new), so
# the test costs seconds, not a second compile of the compiler. PyTorch and
# scikit-build-core come from the tests' environment (scripts/python-env.sh)
# through a .pth file; pip contacts no index.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$(cd "$1" && pwd)"
tests_python="${FWP_PYTHON:-$("$root/scripts/python-env.sh" --path)}"
if ! "$tests_python" -c "import torch, scikit_build_core" 2> /dev/null; then
  echo "pip-install: Skipped"
  echo "no PyTorch or scikit-build-core for $tests_python (make python-env)"
  exit 77
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"${FWP_BASE_PYTHON:-/usr/bin/python3}" -m venv "$work/venv"
"$tests_python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])" \
  > "$("$work/venv/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")/tests-environment.pth"
# The build's own build type, so that reconfiguring it changes no flags
# (pyproject.toml's Release would recompile a RelWithDebInfo build, such as
# make sanitize's, from scratch).
build_type="$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build/CMakeCache.txt")"
SKBUILD_BUILD_DIR="$build" SKBUILD_CMAKE_BUILD_TYPE="${build_type:-Release}" \
  "$work/venv/bin/python" -m pip install -q --disable-pip-version-check \
  --no-index --no-build-isolation "$root"
cd "$work"
unset FWP_LIBRARY PYTHONPATH
# A package built with AddressSanitizer (make sanitize) loads into a Python
# only with the sanitizers' runtimes preloaded (as test/python/run.sh does).
library="$(find "$work/venv" -name 'libfwp*.so*' -print -quit)"
if [[ -n "$library" ]]; then
  runtimes=$(ldd "$library" 2> /dev/null |
    awk '/lib(asan|ubsan)\.so/ { print $3 }' | paste -sd:)
  [[ -n "$runtimes" ]] && export LD_PRELOAD="$runtimes${LD_PRELOAD:+:$LD_PRELOAD}"
fi
"$work/venv/bin/python" -m fwp
"$work/venv/bin/python" "$root/test/python/pip_smoke.py" "$work/venv"
