#!/usr/bin/env bash
# One device call: a GPU bundle's run.sh (conformance, checks, bench,
# pytest, gpu_vs_fla beside fla), then (NCU=1) ncu counters at issue 29's
# reference shape. BUNDLE names the bundle folder; logs into $OUT.
export PYTHONUNBUFFERED=1
B=${BUNDLE:-build/gpu-bundle}; export BUNDLE=$B
cd "$(dirname "$0")/.."
{ date -u; nvidia-smi; python3 -c 'import torch,triton;print(torch.__version__, triton.__version__, torch.cuda.get_device_name())'; } 2>&1 | tee $OUT/machine.txt
export FLA_PATH="$PWD/.fla"
s=$SECONDS
timeout ${RUNSH_LIMIT:-330} bash $B/run.sh --seconds ${BENCH_SECONDS:-0.3} > $OUT/run-sh.log 2>&1
echo "run.sh exit $? after $((SECONDS-s)) s" >> $OUT/run-sh.log
tail -c 6000 $OUT/run-sh.log
[ "${NCU:-0}" = 1 ] || exit 0
export FWP_LIBRARY="$PWD/$B/py/build/lib/libfwp_runtime.so" FWP_CACHE_DIR="$PWD/$B/py/kernel-cache" PYTHONPATH="$PWD/$B/py/python"
M=gpu__time_duration.sum,dram__sectors_read.sum,dram__sectors_write.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_write.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,smsp__inst_executed.sum,sm__inst_executed_pipe_tensor.sum,sm__warps_active.avg.pct_of_peak_sustained_active,launch__occupancy_limit_registers,launch__occupancy_limit_shared_mem,launch__registers_per_thread,launch__grid_size,launch__block_size,sm__cycles_elapsed.max
s=$SECONDS
shape=4,4096,16,64,128; name=B4-T4096-H16-dk64-dv128
SHAPE=$shape timeout ${CALIB_LIMIT:-150} ncu --profile-from-start off --clock-control none --kernel-name regex:'chunk|merge|recompute|prepare|scan|dpfp' --csv --metrics $M python3 .devrun/prof.py ncu > $OUT/calib-$name.csv 2> $OUT/calib-$name.err
echo "calib $shape exit $? $(wc -l < $OUT/calib-$name.csv) lines after $((SECONDS-s)) s"
