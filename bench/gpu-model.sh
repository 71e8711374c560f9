#!/usr/bin/env bash
# `make gpu-model`: fwp's bare scan (its stage kernels and tile-scan's) and
# fla's chunk_delta_rule, forward then backward, on the PTX emulator at
# T 128 and 256 (B 1, H 2; fla checked against float64 in its run), then
# bench/gpu_model_compare.py at the reference shape.
#   bench/gpu-model.sh BUILD OUT FLA_SOURCE PYTHON
set -euo pipefail
build=$1 out=$2 fla=$3 py=$4
mkdir -p "$out"
rm -rf "$out/cache" # fwp's compiled scans, whose launch plans give its memory
export LD_LIBRARY_PATH="$build/lib/emulated-cuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
for t in 128 256; do
  for kind in stages tile; do
    rm -f "$out/fwp-$kind-$t.jsonl"
    FWP_EMU_REPORT="$out/fwp-$kind-$t.jsonl" FWP_CACHE_DIR="$out/cache" \
      "$build/bin/fwp-scan-counts" "$kind" "$t" 1 2 64 128 |
      awk '/forward launches/ { print $3 }' > "$out/fwp-$kind-$t.forward"
  done
  rm -f "$out/fla-$t.jsonl"
  FWP_EMU_REPORT="$out/fla-$t.jsonl" "$py" bench/fla_on_emulator.py \
    --T "$t" --fla "$fla" --lib "$build/lib/emulated-cuda/libcuda.so.1" \
    --out "$out/fla-$t" > "$out/fla-$t.log"
  grep -E '^ *(o|dq|dk|dv|dbeta) +\(' "$out/fla-$t.log" | head -5
done
for gpu in a100 h100; do
  "$py" bench/gpu_model_compare.py --reports "$out" --gpu "$gpu" > "$out/$gpu.txt"
done
cat "$out/a100.txt"
tail -n 1 "$out/h100.txt"
