#!/usr/bin/env bash
# Installs the Debian packages fwp needs, and only those that are missing.
# Idempotent; works as root or through sudo.
set -euo pipefail

# python3-venv makes the Python tests' environment (PyTorch 2.x from PyPI:
# scripts/python-env.sh). libomp5 is the OpenMP runtime the CPU kernels run
# on every core with. bible-kjv gives examples/char-lm its default text
# (the King James Bible, public domain).
packages=(
  llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools
  libfmt-dev libgtest-dev cmake ninja-build python3
  python3-venv libomp5 bible-kjv
)

missing=()
for pkg in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$pkg")
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all dependencies are installed"
  exit 0
fi

if [[ $(id -u) -eq 0 ]]; then
  sudo=()
elif command -v sudo >/dev/null; then
  sudo=(sudo)
else
  echo "install-deps: missing ${missing[*]}; run as root or install sudo" >&2
  exit 1
fi

echo "install-deps: installing ${missing[*]}"
"${sudo[@]}" apt-get update -q
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y -q --no-install-recommends "${missing[@]}"
