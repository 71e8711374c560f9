#!/usr/bin/env python
"""Compile fla's chunked delta-rule kernels (forward and backward) to PTX for
sm_80 without a GPU, using triton's ahead-of-time path.

How it works
------------
* fla is imported with a fake triton driver and a patched
  torch.cuda.device_count so that fla's import-time decisions
  (check_shared_mem(), check_shared_mem('ampere'/'ada'/'hopper')) see an A100
  (max_shared_mem = 166912 B, fla's Backend.AMPERE).  fla's device stays 'cpu',
  so IS_NVIDIA_HOPPER / IS_NVIDIA_BLACKWELL / IS_TMA_SUPPORTED are False,
  exactly as on an A100.
* fla's own python wrappers (chunk_delta_rule_fwd / chunk_delta_rule_bwd,
  from fla/ops/delta_rule/chunk.py) are run on torch 'meta' tensors of the
  reference shape; nothing is allocated and no kernel runs.
* triton's Autotuner.run is patched to take one config (CONFIG_INDEX, default
  0 = fla's first config) instead of benchmarking; Heuristics run unchanged.
* JITFunction.run is patched to do what triton's launcher does up to the
  compile (binder -> specialization -> _pack_args, i.e. the exact signature,
  constexprs and tt.divisibility attrs a real launch would use) and then
  calls triton.compile(ASTSource(fn, signature, constexprs, attrs),
  target=GPUTarget("cuda", 80, 32), options=...) instead of launching.
* Each distinct compiled kernel is written to OUT/<name>.ptx (+ .json with
  the signature/constexprs/attrs/options/metadata and the grid).

Usage:  python compile_fla.py [--T 4096] [--config 0] [--out DIR] [--state] [--line-info]
  --state: also pass an initial state h0 (fp32) and output_final_state=True
           (adds the USE_INITIAL_STATE / STORE_FINAL_STATE / dht / dh0 variants)
"""
import argparse
import json
import os
import sys

ap = argparse.ArgumentParser()
ap.add_argument('--B', type=int, default=4)
ap.add_argument('--T', type=int, default=4096)
ap.add_argument('--H', type=int, default=16)
ap.add_argument('--K', type=int, default=128)
ap.add_argument('--V', type=int, default=128)
ap.add_argument('--chunk', type=int, default=64)
ap.add_argument('--config', type=int, default=0,
                help='index into each autotuner config list (0 = fla first config); '
                     'clamped to the list length')
ap.add_argument('--out', default=os.path.join(os.path.dirname(os.path.abspath(__file__)), 'ptx'))
ap.add_argument('--state', action='store_true')
ap.add_argument('--fla', default='/work/main/.fla')
ap.add_argument('--line-info', action='store_true',
                help='keep triton\'s default line info (.loc/.file and .section .debug_*); the emulator '
                     'rejects .section, so by default TRITON_DISABLE_LINE_INFO=1 is set')
args = ap.parse_args()
if not args.line_info:
    os.environ['TRITON_DISABLE_LINE_INFO'] = '1'

sys.path.insert(0, args.fla)
os.makedirs(args.out, exist_ok=True)

import torch  # noqa: E402
import triton  # noqa: E402
from triton.runtime import driver as _tdriver  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402

A100_MAX_SHARED = 166912   # fla.utils._device.Backend.AMPERE (A100 opt-in max per block)


class _FakeUtils:
    @staticmethod
    def get_device_properties(i):
        return {'max_shared_mem': A100_MAX_SHARED, 'multiprocessor_count': 108,
                'max_num_regs': 65536, 'warpSize': 32, 'sm_clock_rate': 1410000,
                'mem_clock_rate': 1215000, 'mem_bus_width': 5120}


class _FakeDriver:
    """Only what fla asks at import time. get_current_target raises, so fla's
    get_available_device() says 'cpu' and all IS_NVIDIA_* flags stay False."""
    utils = _FakeUtils()

    def get_current_target(self):
        raise RuntimeError('no GPU: fake driver for AOT compilation')


_tdriver.set_active(_FakeDriver())
torch.cuda.device_count = lambda: 1

import fla.utils._device as fdev  # noqa: E402


class _AnyIndexList(list):
    # meta tensors have device.index None; fla calls check_shared_mem(arch, k.device.index),
    # which on a real GPU gets index 0.  Treat None as device 0.
    def __getitem__(self, i):
        return list.__getitem__(self, 0 if i is None else i)


fdev.get_all_max_shared_mem = lambda: _AnyIndexList([A100_MAX_SHARED])
fdev.check_shared_mem.cache_clear()

assert fdev.check_shared_mem() and fdev.check_shared_mem('ampere') and fdev.check_shared_mem('ada')
assert not fdev.check_shared_mem('hopper')
assert fdev.check_shared_mem('ada', None) and not fdev.check_shared_mem('hopper', None)
assert not fdev.IS_NVIDIA_HOPPER and not fdev.IS_TMA_SUPPORTED

from triton.compiler import ASTSource, make_backend  # noqa: E402
from triton.runtime.autotuner import Autotuner  # noqa: E402
from triton.runtime.jit import JITFunction, create_function_from_signature  # noqa: E402

from fla.ops.delta_rule.chunk import chunk_delta_rule_bwd, chunk_delta_rule_fwd  # noqa: E402
from fla.ops.utils.cache import CachedAutotuner  # noqa: E402

TARGET = GPUTarget('cuda', 80, 32)
BACKEND = make_backend(TARGET)

PHASE = ['?']
compiled = {}      # name -> record
launches = []      # (phase, kernel name, grid, config)


def _autotuner_run(self, *a, **kw):
    self.nargs = dict(zip(self.arg_names, a))
    cfg = self.configs[min(args.config, len(self.configs) - 1)]
    self.best_config = cfg
    _CFG_STACK.append((cfg, len(self.configs)))
    try:
        return self.fn.run(*a, **kw, **cfg.all_kwargs())
    finally:
        _CFG_STACK.pop()


_CFG_STACK = []
Autotuner.run = _autotuner_run
CachedAutotuner.run = _autotuner_run


def _jsonable(v):
    if isinstance(v, (int, float, str, bool)) or v is None:
        return v
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    return str(v)


def _jit_run(self, *a, grid, warmup, **kw):
    kw['debug'] = kw.get('debug', self.debug) or triton.knobs.runtime.debug
    kw['instrumentation_mode'] = triton.knobs.compilation.instrumentation_mode
    binder = create_function_from_signature(self.signature, self.params, BACKEND)
    bound_args, specialization, options = binder(*a, **kw)
    options, signature, constexprs, attrs = self._pack_args(BACKEND, kw, bound_args, specialization, options)
    name = self.__name__
    if callable(grid):
        grid = grid(bound_args)
    cfg = _CFG_STACK[-1] if _CFG_STACK else (None, 0)
    # tensor args: name -> (dtype, shape) for the record
    tensors = {k: (str(v.dtype).replace('torch.', ''), list(v.shape))
               for k, v in bound_args.items() if isinstance(v, torch.Tensor)}
    key = (name, json.dumps(_jsonable(signature)), json.dumps(_jsonable({str(k): v for k, v in constexprs.items()})),
           json.dumps(_jsonable({str(k): v for k, v in attrs.items()})), str(options))
    launches.append({'phase': PHASE[0], 'kernel': name, 'grid': list(grid),
                     'config': str(cfg[0]), 'n_configs': cfg[1], 'tensors': tensors})
    if key in compiled:
        compiled[key]['phases'].append(PHASE[0])
        return None
    src = ASTSource(self, signature, constexprs, attrs)
    k = triton.compile(src, target=TARGET, options=options.__dict__)
    md = k.metadata
    fname = name
    same = [r for r in compiled.values() if r['kernel'] == name]
    if same:
        fname = f'{name}_v{len(same) + 1}'
    with open(os.path.join(args.out, fname + '.ptx'), 'w') as f:
        f.write(k.asm['ptx'])
    rec = {
        'file': fname + '.ptx', 'kernel': name, 'ptx_entry': md.name,
        'phases': [PHASE[0]], 'grid_at_reference': list(grid),
        'autotune_config': str(cfg[0]), 'autotune_n_configs': cfg[1],
        'signature': _jsonable(signature),
        'constexprs': {self.arg_names[p[0]]: _jsonable(v) for p, v in constexprs.items()},
        'attrs': {self.arg_names[p[0]]: _jsonable(v) for p, v in attrs.items()},
        'num_warps': md.num_warps, 'num_stages': md.num_stages, 'num_ctas': md.num_ctas,
        'shared_bytes': md.shared, 'ptx_version': md.ptx_version if hasattr(md, 'ptx_version') else None,
        'n_regs_ptxas': getattr(k, 'n_regs', None), 'tensors': tensors,
    }
    with open(os.path.join(args.out, fname + '.json'), 'w') as f:
        json.dump(rec, f, indent=1)
    compiled[key] = rec
    return None


JITFunction.run = _jit_run

# ------------------------------------------------------------------ inputs
B, T, H, K, V, BT = args.B, args.T, args.H, args.K, args.V, args.chunk
dev = 'meta'
bf = torch.bfloat16
q = torch.empty(B, T, H, K, dtype=bf, device=dev)
k = torch.empty(B, T, H, K, dtype=bf, device=dev)
v = torch.empty(B, T, H, V, dtype=bf, device=dev)
beta = torch.empty(B, T, H, dtype=bf, device=dev)
h0 = torch.empty(B, H, K, V, dtype=torch.float32, device=dev) if args.state else None
scale = K ** -0.5

PHASE[0] = 'fwd'
o, A, final_state = chunk_delta_rule_fwd(q=q, k=k, v=v, beta=beta, scale=scale, initial_state=h0,
                                         output_final_state=args.state, cu_seqlens=None,
                                         chunk_indices=None, chunk_size=BT)
do = torch.empty_like(o)
dht = torch.empty(B, H, K, V, dtype=torch.float32, device=dev) if args.state else None
PHASE[0] = 'bwd'
dq, dk, dv, db, dh0 = chunk_delta_rule_bwd(q=q, k=k, v=v, beta=beta, A=A, scale=scale, initial_state=h0,
                                           do=do, dht=dht, cu_seqlens=None, chunk_indices=None,
                                           chunk_size=BT)

print(f'# line info: {"kept" if args.line_info else "disabled (TRITON_DISABLE_LINE_INFO=1)"}')
print(f'# reference shape B={B} T={T} H={H} K={K} V={V} BT={BT} bf16; target sm_80 (GPUTarget("cuda", 80, 32)); '
      f'triton {triton.__version__}; config index {args.config}; state={args.state}')
print('# launch order:')
for L in launches:
    print(f"  {L['phase']}: {L['kernel']} grid={tuple(L['grid'])}")
print()
print(f"{'file':52s} {'warps':>5s} {'stages':>6s} {'shared_B':>8s}  phases / config")
for r in compiled.values():
    print(f"{r['file']:52s} {r['num_warps']:5d} {r['num_stages']:6d} {r['shared_bytes']:8d}  "
          f"{'+'.join(r['phases'])}  [{r['autotune_config']}] of {r['autotune_n_configs']}")
for r in compiled.values():
    print(f"\n== {r['file']}  (.entry {r['ptx_entry']})")
    print('  signature :', r['signature'])
    print('  constexprs:', r['constexprs'])
    print('  attrs     :', r['attrs'])
with open(os.path.join(args.out, 'launches.json'), 'w') as f:
    json.dump(launches, f, indent=1)
with open(os.path.join(args.out, 'summary.json'), 'w') as f:
    json.dump(list(compiled.values()), f, indent=1)
