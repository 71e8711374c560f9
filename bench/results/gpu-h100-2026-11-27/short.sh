#!/usr/bin/env bash
# A short device call: a bundle's CUDA checks, then gpu_vs_fla beside fla,
# then ncu on the DPFP kernels (NCU=1). BUNDLE names the bundle folder.
export PYTHONUNBUFFERED=1
B=${BUNDLE:-build/gpu-bundle}; export BUNDLE=$B
cd "$(dirname "$0")/.."
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; } 2>&1 | tee $OUT/machine.txt
s=$SECONDS
timeout 90 $B/bin/fwp-gpu-check check $B > $OUT/check.log 2>&1; echo "check exit $? after $((SECONDS-s)) s"; tail -2 $OUT/check.log
export FWP_LIBRARY="$PWD/$B/py/build/lib/libfwp_runtime.so" FWP_CACHE_DIR="$PWD/$B/py/kernel-cache" PYTHONPATH="$PWD/$B/py/python"
s=$SECONDS
timeout 120 python3 $B/py/bench/gpu_vs_fla.py --fla "$PWD/.fla" > $OUT/gpu-vs-fla.log 2>&1; echo "gpu_vs_fla exit $? after $((SECONDS-s)) s"; cat $OUT/gpu-vs-fla.log
[ "${NCU:-0}" = 1 ] || exit 0
s=$SECONDS
SHAPE=4,4096,16,64,128 timeout 45 ncu --profile-from-start off --clock-control none --kernel-name regex:'dpfp' --csv --metrics gpu__time_duration.sum,dram__sectors_read.sum,dram__sectors_write.sum,launch__grid_size,launch__registers_per_thread python3 .devrun/prof.py ncu > $OUT/ncu-dpfp.csv 2> $OUT/ncu-dpfp.err; echo "ncu exit $? after $((SECONDS-s)) s"
