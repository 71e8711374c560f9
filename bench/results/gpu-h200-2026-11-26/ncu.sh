export PYTHONUNBUFFERED=1
B=build/gpu-bundle
export FWP_LIBRARY="$PWD/$B/py/build/lib/libfwp_runtime.so" FWP_CACHE_DIR="$PWD/$B/py/kernel-cache" PYTHONPATH="$PWD/$B/py/python"
timeout 200 ncu --profile-from-start off --clock-control none --kernel-name regex:'chunk|merge|recompute|prepare|scan' --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,launch__shared_mem_per_block_dynamic,launch__shared_mem_per_block_static,launch__grid_size,launch__block_size,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum python3 .devrun/prof.py ncu > $OUT/ncu2.log 2>&1; echo "ncu exit $?" >> $OUT/ncu2.log
grep -E "^  [a-z_]|gpu__time|dram__bytes|exit" $OUT/ncu2.log | head -150
