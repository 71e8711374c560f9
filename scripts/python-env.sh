#!/usr/bin/env bash
# The Python environment of the tests: a virtual environment with the
# packages of python/requirements-test.txt, pinned, made once and reused.
# It lives outside the clone, in $FWP_VENV or else
# ${XDG_CACHE_HOME:-~/.cache}/fwp/python-<hash of the requirements>, so a
# clean clone finds it and a change of pins makes a new one.
# Prints the environment's python. --path prints it without making it.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
requirements="$root/python/requirements-test.txt"
base="${FWP_BASE_PYTHON:-/usr/bin/python3}"
if [[ -n "${FWP_VENV:-}" ]]; then
  venv="$FWP_VENV"
else
  hash=$(cat "$requirements" <("$base" -V 2>&1) | sha256sum | cut -c1-12)
  venv="${XDG_CACHE_HOME:-$HOME/.cache}/fwp/python-$hash"
fi
python="$venv/bin/python"
# Written last: an environment without it was cut short and is made again.
stamp="$venv/.fwp-complete"
if [[ "${1:-}" == "--path" || -f "$stamp" ]]; then
  echo "$python"
  exit 0
fi

mkdir -p "$(dirname "$venv")"
exec 9> "$venv.lock"
flock 9
if [[ ! -f "$stamp" ]]; then
  echo "python-env: making $venv (PyTorch and CUDA's libraries: a few minutes)" >&2
  rm -rf "$venv"
  "$base" -m venv "$venv"
  "$python" -m pip install -q --disable-pip-version-check -r "$requirements" >&2
  touch "$stamp"
fi
echo "$python"
