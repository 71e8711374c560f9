export PYTHONUNBUFFERED=1
B=build/gpu-bundle
export FWP_LIBRARY="$PWD/$B/py/build/lib/libfwp_runtime.so" FWP_CACHE_DIR="$PWD/$B/py/kernel-cache" PYTHONPATH="$PWD/$B/py/python"
uname -a
timeout 150 python3 .devrun/prof.py > $OUT/profile.log 2>&1; echo "prof exit $?" >> $OUT/profile.log
timeout 150 ncu --clock-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed,launch__registers_per_thread,launch__shared_mem_per_block_dynamic,launch__grid_size,launch__block_size,sm__warps_active.avg.pct_of_peak_sustained_active python3 .devrun/prof.py ncu > $OUT/ncu.log 2>&1; echo "ncu exit $?" >> $OUT/ncu.log
tail -c 5000 $OUT/ncu.log
