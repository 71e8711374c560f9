#!/usr/bin/env bash
# One device call: the GPU bundle's run.sh (conformance, checks, bench,
# pytest), then fla beside fwp. Each step time-limited; logs into $OUT.
export PYTHONUNBUFFERED=1
B=build/gpu-bundle
cd "$(dirname "$0")/.."
{ date -u; nvidia-smi; python3 -c 'import torch,triton;print(torch.__version__, triton.__version__, torch.cuda.get_device_name())'; } 2>&1 | tee $OUT/machine.txt
# run.sh's python part runs gpu_vs_fla without fla here (FLA_PATH unset): fla separately below.
timeout ${RUNSH_LIMIT:-300} bash $B/run.sh --seconds ${BENCH_SECONDS:-0.3} > $OUT/run-sh.log 2>&1
echo "run.sh exit $?" >> $OUT/run-sh.log
tail -c 3000 $OUT/run-sh.log
export FWP_LIBRARY="$PWD/$B/py/build/lib/libfwp_runtime.so" FWP_CACHE_DIR="$PWD/$B/py/kernel-cache"
export PYTHONPATH="$PWD/$B/py/python"
timeout ${FLA_LIMIT:-240} python3 $B/py/bench/gpu_vs_fla.py --fla "$PWD/.fla" > $OUT/gpu-vs-fla.log 2>&1
echo "gpu_vs_fla exit $?" >> $OUT/gpu-vs-fla.log
cat $OUT/gpu-vs-fla.log | tail -c 6000
