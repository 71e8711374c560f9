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
"$here/bin/fwp-gpu-check" check "$here"
status=$?
if [ $status -eq 2 ]; then
  exit 2
fi
"$here/bin/fwp-gpu-check" bench "$here" "$@" || exit $?
exit $status
