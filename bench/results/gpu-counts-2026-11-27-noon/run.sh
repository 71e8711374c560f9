#!/bin/bash
# usage: run.sh NAME [fwp-run flags] -> /tmp/emu/NAME.jsonl, outputs in /tmp/emu/out-NAME, compares with tile outputs
cd "$(git rev-parse --show-toplevel)"
n=$1; shift
rm -rf /tmp/emu/$n.jsonl /tmp/emu/cache-$n
LD_LIBRARY_PATH=build/lib/emulated-cuda FWP_CACHE_DIR=/tmp/emu/cache-$n FWP_EMU_REPORT=/tmp/emu/$n.jsonl build/bin/fwp-run --inputs /tmp/emu/in --outputs /tmp/emu/out-$n --heads 2 --backend cuda --compute-type bf16 "$@" 2>&1 | grep -v "runs on fwp PTX"
PY=${PY:-python3}
# sum.py: ../gpu-counts-2026-11-27/sum.py, copied to /tmp/emu
$PY /tmp/emu/sum.py /tmp/emu/$n.jsonl | grep -E "chunk|dpfp|scan|TOTAL|kernel "
$PY - $n <<'P'
import numpy as np,sys,json
print(' '.join('%s %.1e'%(n,np.abs(np.load('/tmp/emu/out-%s/%s.npy'%(sys.argv[1],n))-np.load('/tmp/emu/out-tile/%s.npy'%n)).max()/np.abs(np.load('/tmp/emu/out-tile/%s.npy'%n)).max()) for n in ['y','dx','dw_q','dw_k','dw_v','dw_beta']))
c=sum(json.loads(l)['shared_bank_conflicts'] for l in open('/tmp/emu/%s.jsonl'%sys.argv[1])); print('bank conflicts', c)
P
