#!/usr/bin/env bash
# The one-command GPU check (make gpu-bundle writes this folder). On a
# machine with an NVIDIA GPU and its driver, no compiler needed:
#
#   bash run.sh [--seconds S]
#
# runs every CUDA check (forward and all gradients against the float64
# reference, computed when the bundle was made), then the benchmark (median
# time per call of each entry point on each shape, S seconds of runs each,
# default 1). One line per check and per figure; exit status 1 if a check
# failed, 2 if the bundle or the device cannot be used.
set -u
here="$(cd "$(dirname "$0")" && pwd)"
echo "fwp GPU bundle: $(tr '\n' ' ' < "$here/BUILD.txt")"
echo "machine: $(uname -n), $(date -u '+%Y-%m-%d %H:%M UTC')"
if command -v nvidia-smi > /dev/null; then
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
fi
# First the emulator's PTX instruction cases (answers from NVIDIA's PTX ISA)
# on this GPU: a failure means the emulator's semantics are not the
# hardware's. Without a usable device it says why (exit 2) and the checks
# below say so too.
conformance=0
if [ -x "$here/bin/fwp-ptx-conformance" ]; then
  "$here/bin/fwp-ptx-conformance"
  conformance=$?
fi
"$here/bin/fwp-gpu-check" check "$here"
status=$?
if [ $status -eq 2 ]; then
  exit 2
fi
if [ $conformance -ne 0 ]; then
  status=1
fi
"$here/bin/fwp-gpu-check" bench "$here" "$@" || exit $?

# The Python package on CUDA tensors, through libfwp_runtime.so and the
# kernels compiled into py/kernel-cache: its tests, then the benchmark
# against fla (FLA_PATH: a flash-linear-attention checkout; without it,
# fwp's figures only).
if [ -d "$here/py" ] && python3 -c "import torch, pytest" 2> /dev/null; then
  export FWP_LIBRARY="$here/py/build/lib/libfwp_runtime.so"
  export FWP_CACHE_DIR="$here/py/kernel-cache"
  export PYTHONPATH="$here/py/python${PYTHONPATH:+:$PYTHONPATH}"
  python3 -m pytest -q -p no:cacheprovider "$here/py/test/python/test_cuda.py" || status=1
  python3 "$here/py/bench/gpu_vs_fla.py" ${FLA_PATH:+--fla "$FLA_PATH"} || status=1
else
  echo "python: skipped (no py/ folder, or no python3 with torch and pytest)"
fi
exit $status
