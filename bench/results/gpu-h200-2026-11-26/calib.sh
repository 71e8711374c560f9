# ncu counters of fwp's and fla's scan kernels (issue 29's model calibration):
# DRAM and L2 sectors, shared-memory wavefronts, instructions, tensor pipe,
# occupancy, at the reference shape (d_v 128) and a small one.
export PYTHONUNBUFFERED=1
B=build/gpu-bundle
export FWP_LIBRARY="$PWD/$B/py/build/lib/libfwp_runtime.so" FWP_CACHE_DIR="$PWD/$B/py/kernel-cache" PYTHONPATH="$PWD/$B/py/python"
M=gpu__time_duration.sum,dram__sectors_read.sum,dram__sectors_write.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_write.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,smsp__inst_executed.sum,sm__inst_executed_pipe_tensor.sum,sm__warps_active.avg.pct_of_peak_sustained_active,launch__occupancy_limit_registers,launch__occupancy_limit_shared_mem,launch__registers_per_thread,launch__grid_size,launch__block_size,sm__cycles_elapsed.max
for shape in 4,4096,16,64,128 1,1024,4,64,128; do
  SHAPE=$shape timeout 150 ncu --profile-from-start off --clock-control none --kernel-name regex:'chunk|merge|recompute|prepare|scan' --csv --metrics $M python3 .devrun/prof.py ncu > $OUT/calib-$shape.csv 2> $OUT/calib-$shape.err
  echo "$shape exit $? $(wc -l < $OUT/calib-$shape.csv) lines"
done
