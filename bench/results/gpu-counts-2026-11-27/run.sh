#!/bin/bash
# usage: run.sh NAME  -> /tmp/emu/NAME.jsonl, outputs in /tmp/emu/out-NAME, compares with tile outputs
cd /work/main
rm -rf /tmp/emu/$1.jsonl /tmp/emu/cache-$1
LD_LIBRARY_PATH=build/lib/emulated-cuda FWP_CACHE_DIR=/tmp/emu/cache-$1 FWP_EMU_REPORT=/tmp/emu/$1.jsonl build/bin/fwp-run --inputs /tmp/emu/in --outputs /tmp/emu/out-$1 --heads 2 --backend cuda --compute-type bf16 2>&1 | grep -v "runs on fwp PTX"
PY=/root/.cache/fwp/python-1502c76118be/bin/python
$PY /tmp/emu/sum.py /tmp/emu/$1.jsonl | grep -E "chunk|dpfp|scan|TOTAL|kernel "
$PY - $1 <<'P'
import numpy as np,sys,json
print(' '.join('%s %.1e'%(n,np.abs(np.load('/tmp/emu/out-%s/%s.npy'%(sys.argv[1],n))-np.load('/tmp/emu/out-tile/%s.npy'%n)).max()/np.abs(np.load('/tmp/emu/out-tile/%s.npy'%n)).max()) for n in ['y','dx','dw_q','dw_k','dw_v','dw_beta']))
c=sum(json.loads(l)['shared_bank_conflicts'] for l in open('/tmp/emu/%s.jsonl'%sys.argv[1])); print('bank conflicts', c)
P
