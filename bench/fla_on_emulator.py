#!/usr/bin/env python
"""fla's chunk_delta_rule FORWARD + BACKWARD on the fwp PTX emulator
(build/lib/emulated-cuda/libcuda.so.1) through ctypes, and check dq, dk, dv,
dbeta against float64 torch-autograd gradients of the delta rule.

`make gpu-model` runs it (bench/gpu-model.sh); its first runs and their
figures: bench/results/fla-forward-on-emulator-2026-11-27 and
fla-backward-on-emulator-2026-11-27. It copies none of fla's code: fla's
wrappers run on meta tensors to record the launches, Triton compiles fla's
kernels, ctypes launches them.

1. compile (only if OUT/ptx/plan.json is missing or --recompile): fla's own
   wrappers chunk_delta_rule_fwd and then chunk_delta_rule_bwd
   (fla/ops/delta_rule/chunk.py) run on torch 'meta' tensors, with fla made to
   believe it is on an A100.  The bwd gets the fwd's A (= Ai, exactly the
   tensor fla saves for backward) and a meta `do`; dht = initial_state = None.
   Every `kernel[grid](...)` call is intercepted after triton's binder /
   _pack_args, compiled with triton.compile(..., GPUTarget('cuda', 80, 32))
   and recorded (PTX, grid, metadata.shared, runtime params in .entry order,
   tensors identified by object identity).  Autotuning = fla's FIRST config.
   The final `dk.add_(dk2)` of chunk_delta_rule_bwd is a torch op on meta
   tensors (no kernel): it is done here ON THE HOST after copying dk and dk2
   back (bf16 + bf16 -> computed in fp32, rounded to bf16, as torch's
   in-place bf16 add does).

2. run: the whole plan (5 fwd steps + 6 bwd kernels) is replayed on the
   emulated driver with every emulator check left as the caller set it
   (default on), cuCtxSynchronize after every launch.

3. check: float64 torch autograd on the CPU through (a) the token-by-token
   delta-rule recurrence (dq, dk, dv, dbeta) and (b) the chunked WY form with
   k split into two leaves (for the kernel-level intermediates dv_local, dh,
   dv2 = du, dw, dk (dqkwg part), dk2 (WY part)), from the same bf16-rounded
   inputs and do.

Environment: FWP_EMU_SM=80 is forced; FWP_EMU_REPORT defaults to
OUT/report.jsonl; FWP_EMU_CHECKS is left as the caller set it (default: on).
"""
import argparse
import ctypes
import json
import os
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument('--B', type=int, default=1)
ap.add_argument('--T', type=int, default=128)
ap.add_argument('--H', type=int, default=2)
ap.add_argument('--K', type=int, default=128)
ap.add_argument('--V', type=int, default=128)
ap.add_argument('--chunk', type=int, default=64)
ap.add_argument('--seed', type=int, default=0)
ap.add_argument('--config', type=int, default=0, help='index into every autotune config list (0 = fla first)')
ap.add_argument('--out', default='/tmp/fla-on-emulator')
ap.add_argument('--recompile', action='store_true')
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..'))
ap.add_argument('--fla', default=os.path.join(ROOT, '.fla'))
ap.add_argument('--lib', default=os.path.join(ROOT, 'build', 'lib', 'emulated-cuda', 'libcuda.so.1'))
args = ap.parse_args()

PTX_DIR = os.path.join(args.out, 'ptx')
PLAN = os.path.join(PTX_DIR, 'plan.json')
SHAPE = dict(B=args.B, T=args.T, H=args.H, K=args.K, V=args.V, BT=args.chunk, config=args.config)

os.environ['TRITON_DISABLE_LINE_INFO'] = '1'     # the emulator's parser would skip .section now, but keep PTX lean
os.environ['FWP_EMU_SM'] = '80'                  # read at the library's first use
os.environ.setdefault('FWP_EMU_REPORT', os.path.join(args.out, 'report.jsonl'))
sys.path.insert(0, args.fla)
os.makedirs(PTX_DIR, exist_ok=True)

import numpy as np  # noqa: E402
import torch  # noqa: E402


def log(*a):
    print(*a, flush=True)


# =========================================================== phase 1: compile
def compile_plan():
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.runtime import driver as _tdriver

    A100_MAX_SHARED = 166912

    class _FakeUtils:
        @staticmethod
        def get_device_properties(i):
            return {'max_shared_mem': A100_MAX_SHARED, 'multiprocessor_count': 108, 'max_num_regs': 65536,
                    'warpSize': 32, 'sm_clock_rate': 1410000, 'mem_clock_rate': 1215000, 'mem_bus_width': 5120}

    class _FakeDriver:
        utils = _FakeUtils()

        def get_current_target(self):
            raise RuntimeError('no GPU: fake driver for AOT compilation')

    _tdriver.set_active(_FakeDriver())
    torch.cuda.device_count = lambda: 1
    import fla.utils._device as fdev

    class _AnyIndexList(list):
        def __getitem__(self, i):
            return list.__getitem__(self, 0 if i is None else i)

    fdev.get_all_max_shared_mem = lambda: _AnyIndexList([A100_MAX_SHARED])
    fdev.check_shared_mem.cache_clear()
    assert fdev.check_shared_mem() and fdev.check_shared_mem('ampere') and not fdev.check_shared_mem('hopper')
    assert not fdev.IS_NVIDIA_HOPPER and not fdev.IS_TMA_SUPPORTED

    from triton.compiler import ASTSource, make_backend
    from triton.runtime.autotuner import Autotuner
    from triton.runtime.jit import JITFunction, create_function_from_signature
    from fla.ops.delta_rule.chunk import chunk_delta_rule_bwd, chunk_delta_rule_fwd
    from fla.ops.utils.cache import CachedAutotuner

    target = GPUTarget('cuda', 80, 32)
    backend = make_backend(target)
    cfg_stack = []

    def _autotuner_run(self, *a, **kw):
        self.nargs = dict(zip(self.arg_names, a))
        cfg = self.configs[min(args.config, len(self.configs) - 1)]
        self.best_config = cfg
        cfg_stack.append(str(cfg))
        try:
            return self.fn.run(*a, **kw, **cfg.all_kwargs())
        finally:
            cfg_stack.pop()

    Autotuner.run = _autotuner_run
    CachedAutotuner.run = _autotuner_run

    # ---- tensor registry (by object identity): name -> (dtype, shape)
    buffers = {}        # name -> {'dtype':..., 'shape':...}
    names = {}          # id(tensor) -> name
    keep = []           # keep tensors alive so ids stay unique
    steps = []

    def register(t, name):
        if id(t) in names:
            return names[id(t)]
        base, j = name, 2
        while name in buffers:          # e.g. recompute_w_u_fwd_kernel.w in fwd AND bwd
            name = f'{base}#{j}'
            j += 1
        names[id(t)] = name
        keep.append(t)
        buffers[name] = {'dtype': str(t.dtype).replace('torch.', ''), 'shape': list(t.shape)}
        return name

    orig_zeros_like = torch.zeros_like

    def zeros_like(t, *a, **kw):
        z = orig_zeros_like(t, *a, **kw)
        n = register(z, f'zeros_like#{len(steps)}')
        steps.append({'op': 'memset0', 'buffer': n})
        return z

    torch.zeros_like = zeros_like

    def _jit_run(self, *a, grid, warmup, **kw):
        kw['debug'] = kw.get('debug', self.debug) or triton.knobs.runtime.debug
        kw['instrumentation_mode'] = triton.knobs.compilation.instrumentation_mode
        binder = create_function_from_signature(self.signature, self.params, backend)
        bound_args, specialization, options = binder(*a, **kw)
        options, signature, constexprs, attrs = self._pack_args(backend, kw, bound_args, specialization, options)
        name = self.__name__
        if callable(grid):
            grid = grid(bound_args)
        grid = list(grid) + [1] * (3 - len(grid))
        params = []
        for pname, ty in signature.items():
            if ty == 'constexpr':
                continue
            val = bound_args[pname]
            if isinstance(val, torch.Tensor):
                bname = register(val, f'{name}.{pname}')
                params.append({'name': pname, 'type': ty, 'buffer': bname})
            else:
                params.append({'name': pname, 'type': ty, 'value': val})
        src = ASTSource(self, signature, constexprs, attrs)
        k = triton.compile(src, target=target, options=options.__dict__)
        md = k.metadata
        ptx_file = name + '.ptx'
        with open(os.path.join(PTX_DIR, ptx_file), 'w') as f:
            f.write(k.asm['ptx'])
        steps.append({
            'op': 'launch', 'kernel': name, 'entry': md.name, 'ptx': ptx_file, 'grid': grid,
            'threads': 32 * md.num_warps, 'num_warps': md.num_warps, 'num_stages': md.num_stages,
            'shared': md.shared, 'config': cfg_stack[-1] if cfg_stack else None, 'params': params,
            'constexprs': {self.arg_names[p[0]]: (v if isinstance(v, (int, float, str, bool)) or v is None
                                                  else str(v)) for p, v in constexprs.items()},
        })
        return None

    JITFunction.run = _jit_run

    B, T, H, K, V, BT = args.B, args.T, args.H, args.K, args.V, args.chunk
    bf = torch.bfloat16
    q = torch.empty(B, T, H, K, dtype=bf, device='meta')
    k = torch.empty(B, T, H, K, dtype=bf, device='meta')
    v = torch.empty(B, T, H, V, dtype=bf, device='meta')
    beta = torch.empty(B, T, H, dtype=bf, device='meta')
    do = torch.empty(B, T, H, V, dtype=bf, device='meta')
    for t, n in ((q, 'q'), (k, 'k'), (v, 'v'), (beta, 'beta'), (do, 'do')):
        register(t, n)
    steps.append({'op': 'phase', 'name': 'forward (chunk_delta_rule_fwd)'})
    o, A, final_state = chunk_delta_rule_fwd(q=q, k=k, v=v, beta=beta, scale=K ** -0.5, initial_state=None,
                                             output_final_state=False, cu_seqlens=None, chunk_indices=None,
                                             chunk_size=BT)
    steps.append({'op': 'phase', 'name': 'backward (chunk_delta_rule_bwd)'})
    dq, dk, dv, db, dh0 = chunk_delta_rule_bwd(q=q, k=k, v=v, beta=beta, A=A, scale=K ** -0.5,
                                               initial_state=None, do=do, dht=None, cu_seqlens=None,
                                               chunk_indices=None, chunk_size=BT)
    assert dh0 is None
    steps.append({'op': 'host_add', 'what': 'dk.add_(dk2) (torch op in fla; done on the host after copy-back)'})
    torch.zeros_like = orig_zeros_like
    outputs = {'o': names[id(o)], 'A_saved_for_bwd': names[id(A)], 'dq': names[id(dq)],
               'dk_before_add': names[id(dk)], 'dv': names[id(dv)], 'dbeta': names[id(db)]}
    plan = {'shape': SHAPE, 'scale': K ** -0.5, 'triton': triton.__version__, 'target': 'sm_80',
            'buffers': buffers, 'steps': steps, 'outputs': outputs}
    with open(PLAN, 'w') as f:
        json.dump(plan, f, indent=1)
    return plan


t_start = time.time()
plan = None
if os.path.exists(PLAN) and not args.recompile:
    plan = json.load(open(PLAN))
    if plan['shape'] != SHAPE:
        plan = None
if plan is None:
    t0 = time.time()
    plan = compile_plan()
    log(f'# compiled {sum(s["op"] == "launch" for s in plan["steps"])} kernels to {PTX_DIR} in {time.time() - t0:.1f} s')
else:
    log(f'# reusing {PLAN}')

B, T, H, K, V, BT = args.B, args.T, args.H, args.K, args.V, args.chunk
NT = (T + BT - 1) // BT
scale = plan['scale']
log(f'# shape B={B} T={T} H={H} K={K} V={V} BT={BT} NT={NT} bf16, scale=K**-0.5={scale:.6g}; '
    f'triton {plan["triton"]} -> sm_80 PTX, fla config index {args.config}')
log(f'# FWP_EMU_SM={os.environ["FWP_EMU_SM"]} FWP_EMU_CHECKS={os.environ.get("FWP_EMU_CHECKS", "(unset = 1)")} '
    f'FWP_EMU_REPORT={os.environ["FWP_EMU_REPORT"]} FWP_EMU_THREADS={os.environ.get("FWP_EMU_THREADS", "(unset)")}')
log('# plan:')
for s in plan['steps']:
    if s['op'] in ('phase', 'host_add'):
        log(f"  -- {s.get('name') or s.get('what')}")
    elif s['op'] == 'memset0':
        b = plan['buffers'][s['buffer']]
        log(f"  memset0 {s['buffer']} {b['dtype']}{b['shape']}")
    else:
        ps = ', '.join(f"{p['name']}={p['buffer']}" if 'buffer' in p else f"{p['name']}:{p['type']}={p['value']}"
                       for p in s['params'])
        log(f"  launch {s['kernel']} grid={tuple(s['grid'])} threads={s['threads']} shared={s['shared']} "
            f"[{s['config']}]\n      ({ps}, global_scratch=NULL, profile_scratch=NULL)")

# ============================================================ inputs (bf16)
torch.manual_seed(args.seed)
bf = torch.bfloat16
q_in = torch.nn.functional.normalize(torch.randn(B, T, H, K), p=2, dim=-1).to(bf)
k_in = torch.nn.functional.normalize(torch.randn(B, T, H, K), p=2, dim=-1).to(bf)
v_in = torch.randn(B, T, H, V).to(bf)
beta_in = torch.randn(B, T, H).sigmoid().to(bf)
do_in = torch.randn(B, T, H, V).to(bf)        # random upstream gradient of o
host_inputs = {'q': q_in, 'k': k_in, 'v': v_in, 'beta': beta_in, 'do': do_in}

# ======================================================= phase 2: emulator
cu = ctypes.CDLL(args.lib)
cu.cuLaunchKernel.argtypes = [ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint,
                              ctypes.c_uint, ctypes.c_uint, ctypes.c_uint, ctypes.c_void_p,
                              ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p]
cu.cuMemAlloc_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
cu.cuMemcpyHtoD_v2.argtypes = [ctypes.c_uint64, ctypes.c_void_p, ctypes.c_size_t]
cu.cuMemcpyDtoH_v2.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_size_t]
cu.cuMemsetD8_v2.argtypes = [ctypes.c_uint64, ctypes.c_ubyte, ctypes.c_size_t]
cu.cuFuncSetAttribute.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 3, 4
CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 5, 6


def errname(rc):
    s, t = ctypes.c_char_p(), ctypes.c_char_p()
    cu.cuGetErrorName(rc, ctypes.byref(s))
    cu.cuGetErrorString(rc, ctypes.byref(t))
    return f'{rc} {s.value.decode() if s.value else "?"} ({t.value.decode() if t.value else "?"})'


def ck(rc, what):
    if rc != 0:
        log(f'!! {what} failed: {errname(rc)}')
        raise SystemExit(2)


ck(cu.cuInit(0), 'cuInit')
dev = ctypes.c_int()
ck(cu.cuDeviceGet(ctypes.byref(dev), 0), 'cuDeviceGet')
nbuf = ctypes.create_string_buffer(256)
cu.cuDeviceGetName(nbuf, 256, dev)
ctx = ctypes.c_void_p()
ck(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), 'cuDevicePrimaryCtxRetain')
ck(cu.cuCtxSetCurrent(ctx), 'cuCtxSetCurrent')
log(f'# emulated device: "{nbuf.value.decode()}"')

TORCH_DT = {'bfloat16': torch.bfloat16, 'float32': torch.float32}
dptr = {}
for name, b in plan['buffers'].items():
    n = int(np.prod(b['shape'])) * torch.tensor([], dtype=TORCH_DT[b['dtype']]).element_size()
    p = ctypes.c_uint64()
    ck(cu.cuMemAlloc_v2(ctypes.byref(p), n), f'cuMemAlloc({name})')
    assert p.value % 16 == 0, 'PTX was compiled with tt.divisibility=16 on every pointer'
    dptr[name] = (p.value, n)
for name, t in host_inputs.items():
    t = t.contiguous()
    assert list(t.shape) == plan['buffers'][name]['shape']
    ck(cu.cuMemcpyHtoD_v2(dptr[name][0], t.data_ptr(), dptr[name][1]), f'cuMemcpyHtoD({name})')


def fetch(name):
    b = plan['buffers'][name]
    t = torch.empty(b['shape'], dtype=TORCH_DT[b['dtype']])
    ck(cu.cuMemcpyDtoH_v2(t.data_ptr(), dptr[name][0], dptr[name][1]), f'cuMemcpyDtoH({name})')
    return t


def load_module(path, entry):
    text = open(path, 'rb').read() + b'\0'
    err, info = ctypes.create_string_buffer(8192), ctypes.create_string_buffer(8192)
    opts = (ctypes.c_int * 4)(CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                              CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES)
    vals = (ctypes.c_void_p * 4)(ctypes.cast(err, ctypes.c_void_p).value, 8192,
                                 ctypes.cast(info, ctypes.c_void_p).value, 8192)
    mod = ctypes.c_void_p()
    rc = cu.cuModuleLoadDataEx(ctypes.byref(mod), text, 4, opts, vals)
    if rc != 0:
        log(f'!! cuModuleLoadDataEx({os.path.basename(path)}) -> {errname(rc)}\n   error log: {err.value.decode()}')
        raise SystemExit(2)
    fn = ctypes.c_void_p()
    ck(cu.cuModuleGetFunction(ctypes.byref(fn), mod, entry.encode()), f'cuModuleGetFunction({entry})')
    return fn, info.value.decode(errors='replace')


def entry_param_count(path):
    import re
    text = open(path).read()
    head = text[text.index('.entry'):text.index(')', text.index('.entry'))]
    return len(re.findall(r'\.param\s', head))


timings = []
ok = True
launch_log = []
for si, s in enumerate(plan['steps']):
    if s['op'] == 'phase':
        log(f'# ---- {s["name"]}')
        continue
    if s['op'] == 'host_add':
        continue
    if s['op'] == 'memset0':
        t0 = time.time()
        ck(cu.cuMemsetD8_v2(dptr[s['buffer']][0], 0, dptr[s['buffer']][1]), f'cuMemsetD8({s["buffer"]})')
        timings.append(('memset0 ' + s['buffer'], time.time() - t0))
        continue
    path = os.path.join(PTX_DIR, s['ptx'])
    fn, info = load_module(path, s['entry'])
    keep = []
    for p in s['params']:
        if 'buffer' in p:
            keep.append(ctypes.c_uint64(dptr[p['buffer']][0]))
        elif p['type'] == 'i32':
            keep.append(ctypes.c_int32(p['value']))
        elif p['type'] == 'fp32':
            keep.append(ctypes.c_float(p['value']))
        else:
            raise SystemExit(f'unhandled param type {p}')
    keep += [ctypes.c_uint64(0), ctypes.c_uint64(0)]         # global_scratch, profile_scratch
    n_entry = entry_param_count(path)
    assert n_entry == len(keep), f'{s["kernel"]}: .entry has {n_entry} params, passing {len(keep)}'
    params = (ctypes.c_void_p * len(keep))(*[ctypes.cast(ctypes.byref(x), ctypes.c_void_p) for x in keep])
    if s['shared'] > 48 * 1024:
        ck(cu.cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, s['shared']),
           f'cuFuncSetAttribute({s["kernel"]}, MAX_DYNAMIC_SHARED_SIZE_BYTES={s["shared"]})')
    gx, gy, gz = s['grid']
    log(f'>> launch {s["kernel"]} grid=({gx},{gy},{gz}) block=({s["threads"]},1,1) shared={s["shared"]} '
        f'params={len(keep)} ({info.strip()})')
    t0 = time.time()
    rc = cu.cuLaunchKernel(fn, gx, gy, gz, s['threads'], 1, 1, s['shared'], None, params, None)
    rc2 = cu.cuCtxSynchronize() if rc == 0 else None
    dt = time.time() - t0
    timings.append((s['kernel'], dt))
    launch_log.append((si, s['kernel'], rc, rc2))
    if rc != 0 or rc2 != 0:
        log(f'!! {s["kernel"]}: cuLaunchKernel -> {errname(rc)}' +
            (f', cuCtxSynchronize -> {errname(rc2)}' if rc2 is not None else '') + f' after {dt:.1f} s')
        ok = False
        break
    log(f'   ok in {dt:.2f} s')

t_emul = sum(t for _, t in timings)
if not ok:
    log(f'# STOPPED at the failing launch; total wall {time.time() - t_start:.1f} s')
    raise SystemExit(1)

# ======================================== float64 references (torch autograd, CPU)
torch.set_default_dtype(torch.float64)
f64 = lambda t: t.double()  # noqa: E731
Q, Kk, Vv, Bb, DO = f64(q_in), f64(k_in), f64(v_in), f64(beta_in), f64(do_in)   # exact bf16 values, [B,T,H,*]


def recurrence_grads():
    """(a) token-by-token delta rule, S as [V, K], S_0 = 0:
    S_t = S_{t-1} + beta_t (v_t - S_{t-1} k_t) k_t^T ; o_t = S_t (scale q_t);  L = sum(o * do)."""
    q, k, v, b = (x.clone().requires_grad_(True) for x in (Q, Kk, Vv, Bb))
    S = torch.zeros(B, H, V, K)
    os_ = []
    for t in range(T):
        kt, vt, qt, bt = k[:, t], v[:, t], q[:, t], b[:, t]                # [B,H,K] ...
        err = vt - (S @ kt[..., None])[..., 0]                              # [B,H,V]
        S = S + bt[..., None, None] * err[..., :, None] * kt[..., None, :]
        os_.append((S @ (scale * qt)[..., None])[..., 0])
    o = torch.stack(os_, 1)                                                 # [B,T,H,V]
    (o * DO).sum().backward()
    return o.detach(), q.grad, k.grad, v.grad, b.grad


def chunk_grads():
    """(b) fla's chunked WY form in float64, with k split into two leaves:
    k1 = k where it enters o (q k^T tile) and the state update / v_new's w h term's partner k^T v_new,
    k2 = k where it enters A = tril(beta k k^T, -1), w = Ai beta k, u = Ai beta v.
    Then d/dk1 is what chunk_bwd_kernel_dqkwg writes into dk and d/dk2 is prepare_wy_repr_bwd's dk2."""
    q, k1, k2, v, b = (x.clone().requires_grad_(True) for x in (Q, Kk, Kk, Vv, Bb))
    S = torch.zeros(B, H, K, V)                                             # fla's [K, V] state
    outs, keep = [], {'w': [], 'u': [], 'vn': [], 'Send': [], 'h': []}
    for c in range(NT):
        sl = slice(c * BT, min((c + 1) * BT, T))
        n = sl.stop - sl.start
        tr = lambda x: x[:, sl].transpose(1, 2)                             # noqa: E731  [B,H,n,*]
        qc, k1c, k2c, vc, bc = tr(q), tr(k1), tr(k2), tr(v), b[:, sl].transpose(1, 2)
        Ac = torch.tril(bc[..., :, None] * (k2c @ k2c.transpose(-1, -2)), -1)
        Aic = torch.linalg.inv(torch.eye(n) + Ac)
        w = Aic @ (bc[..., None] * k2c)
        u = Aic @ (bc[..., None] * vc)
        w.retain_grad()
        u.retain_grad()
        keep['h'].append(S.detach())
        vn = u - w @ S
        vn.retain_grad()
        oc = scale * (qc @ S) + scale * (torch.tril(qc @ k1c.transpose(-1, -2)) @ vn)
        outs.append(oc.transpose(1, 2))
        S = S + k1c.transpose(-1, -2) @ vn
        S.retain_grad()
        keep['w'].append(w)
        keep['u'].append(u)
        keep['vn'].append(vn)
        keep['Send'].append(S)
    o = torch.cat(outs, 1)
    (o * DO).sum().backward()
    cat = lambda xs: torch.cat([x.transpose(1, 2) for x in xs], 1)          # noqa: E731  -> [B,T,H,*]
    g = lambda x: x.grad if x.grad is not None else torch.zeros_like(x)     # noqa: E731
    r = {'o': o.detach(), 'dq': q.grad, 'dk_dqkwg': k1.grad, 'dk2': k2.grad, 'dk': k1.grad + k2.grad,
         'dv': v.grad, 'dbeta': b.grad,
         'w': cat([x.detach() for x in keep['w']]), 'u': cat([x.detach() for x in keep['u']]),
         'v_new': cat([x.detach() for x in keep['vn']]),
         'dw': cat([g(x) for x in keep['w']]), 'du': cat([g(x) for x in keep['u']]),
         'dv2': cat([g(x) for x in keep['vn']]),
         'h': torch.stack(keep['h'], 1),                                        # [B,NT,H,K,V]
         # dh[c] = dL/d(state at the END of chunk c) (bwd_dhu stores b_dh before adding chunk c's terms)
         'dh': torch.stack([g(x) for x in keep['Send']], 1)}
    # intra-chunk part of dv (chunk_bwd_kernel_dv_local): scale * tril(q k^T)^T do, per chunk
    dvl = torch.zeros(B, T, H, V)
    for c in range(NT):
        sl = slice(c * BT, min((c + 1) * BT, T))
        qc, kc, dc = (x[:, sl].transpose(1, 2) for x in (Q, Kk, DO))
        dvl[:, sl] = (scale * torch.tril(qc @ kc.transpose(-1, -2)).transpose(-1, -2) @ dc).transpose(1, 2)
    r['dv_local'] = dvl
    return r


t_ref = time.time()
o_rec, dq_rec, dk_rec, dv_rec, db_rec = recurrence_grads()
ch = chunk_grads()
t_ref = time.time() - t_ref
log(f'\n# float64 references (torch autograd on CPU) in {t_ref:.1f} s; chunked-WY vs recurrence (float64 sanity):')
for nm, a, b_ in (('o', ch['o'], o_rec), ('dq', ch['dq'], dq_rec), ('dk', ch['dk'], dk_rec),
                  ('dv', ch['dv'], dv_rec), ('dbeta', ch['dbeta'], db_rec)):
    log(f'  {nm:6s} max|chunk - rec| / max|rec| = {(a - b_).abs().max().item() / b_.abs().max().item():.2e}')


def step_param(kernel, pname, nth):
    """buffer name of param `pname` of the nth launch (0-based; -1 = last) of `kernel`"""
    hits = [p['buffer'] for s in plan['steps'] if s['op'] == 'launch' and s['kernel'] == kernel
            for p in s['params'] if p['name'] == pname and 'buffer' in p]
    return hits[nth]


def relerr(got, ref):
    got = got.double()
    d = (got - ref).abs().max().item()
    m = ref.abs().max().item()
    return d / max(m, 1e-300), d, m


bound = 2.0 ** -8
nf = []


def report(label, got, ref):
    r, a, m = relerr(got, ref)
    fin = bool(torch.isfinite(got.double()).all())
    if not fin:
        nf.append(label)
    log(f'  {label:44s} {r:12.3e} {a:12.3e} {m:10.3e} {r / bound:8.2f}' + ('' if fin else '  !! NON-FINITE'))
    return r


fwd_o = fetch(plan['outputs']['o'])
dq = fetch(plan['outputs']['dq'])
dk_kernel = fetch(plan['outputs']['dk_before_add'])
dk2 = fetch(step_param('prepare_wy_repr_bwd_kernel', 'dk', -1))
# fla: dk.add_(dk2) -- a torch in-place bf16 add, done here on the host (fp32 add, RNE to bf16)
dk = (dk_kernel.float() + dk2.float()).to(torch.bfloat16)
dv = fetch(plan['outputs']['dv'])
db = fetch(plan['outputs']['dbeta'])

log('\n# GRADIENTS vs float64 autograd through the recurrence (a)   [bound: 4 * 2^-8 = %.3e]' % (4 * bound))
log(f'  {"tensor":44s} {"rel":>12s} {"max|err|":>12s} {"max|ref|":>10s} {"rel/2^-8":>8s}')
res = {}
res['o (fwd, bf16)'] = report('o     (fwd output, bf16)', fwd_o, o_rec)
res['dq'] = report('dq    (chunk_bwd_kernel_dqkwg, bf16)', dq, dq_rec)
res['dk'] = report('dk    (dqkwg dk + dk2, host add, bf16)', dk, dk_rec)
res['dv'] = report('dv    (prepare_wy_repr_bwd, bf16)', dv, dv_rec)
res['dbeta'] = report('dbeta (prepare_wy_repr_bwd, bf16)', db, db_rec)
dk_f32 = dk_kernel.float() + dk2.float()
log(f'  (dk without the final bf16 rounding of the host add: rel {relerr(dk_f32, dk_rec)[0]:.3e})')

log('\n# backward intermediates vs float64 chunked-WY autograd (b)')
log(f'  {"tensor":44s} {"rel":>12s} {"max|err|":>12s} {"max|ref|":>10s} {"rel/2^-8":>8s}')
W = 'recompute_w_u_fwd_kernel'
FH = 'chunk_gated_delta_rule_fwd_kernel_h_blockdim64'
DHU = 'chunk_gated_delta_rule_bwd_kernel_dhu_blockdim64'
DQ = 'chunk_bwd_kernel_dqkwg'
inter = [
    ('w      (bwd recompute_w_u_fwd)', step_param(W, 'w', -1), ch['w']),
    ('u      (bwd recompute_w_u_fwd)', step_param(W, 'u', -1), ch['u']),
    ('h      (bwd fwd_h, [B,NT,H,K,V])', step_param(FH, 'h', -1), ch['h']),
    ('v_new  (bwd fwd_h)', step_param(FH, 'v_new', -1), ch['v_new']),
    ('dv_local (chunk_bwd_kernel_dv_local)', step_param('chunk_bwd_kernel_dv_local', 'dv', -1), ch['dv_local']),
    ('dh     (bwd_dhu, [B,NT,H,K,V])', step_param(DHU, 'dh', -1), ch['dh']),
    ('dv2=du (bwd_dhu)', step_param(DHU, 'dv2', -1), ch['dv2']),
    ('dw     (dqkwg)', step_param(DQ, 'dw', -1), ch['dw']),
    ('dk     (dqkwg part, before add)', step_param(DQ, 'dk', -1), ch['dk_dqkwg']),
    ('dk2    (prepare_wy_repr_bwd)', step_param('prepare_wy_repr_bwd_kernel', 'dk', -1), ch['dk2']),
]
for label, buf, ref in inter:
    report(label, fetch(buf), ref)

log('\n# bwd recompute vs the forward pass on the emulator (same kernels, same inputs: expect bit-identical)')
for nm, p in (('w', (W, 'w')), ('u', (W, 'u')), ('h', (FH, 'h')), ('v_new', (FH, 'v_new'))):
    a, b_ = fetch(step_param(*p, 0)), fetch(step_param(*p, -1))
    log(f'  {nm:6s} fwd buffer {step_param(*p, 0)!r} vs bwd buffer {step_param(*p, -1)!r}: '
        f'{"bit-identical" if torch.equal(a.view(torch.int16), b_.view(torch.int16)) else "DIFFERENT (max|d| %.3e)" % (a.double() - b_.double()).abs().max().item()}')


# ---- per-kernel check with the kernel's OWN device inputs (fetched from the emulator's buffers): float64
# arithmetic with bf16 (RNE) rounding where fla's kernel casts (dot operands, stores).  Differences here are the
# emulator's fp32 accumulation order / rounding ties, not fla's algorithmic bf16 error.
rb = lambda x: x.to(torch.bfloat16).double()  # noqa: E731
dev = lambda name: fetch(name).double()        # noqa: E731
tril_i = lambda n: torch.ones(n, n).tril().bool()          # noqa: E731  i >= j
Ai_d = dev(plan['outputs']['A_saved_for_bwd'])
w_d, vn_d, h_d = dev(step_param(W, 'w', -1)), dev(step_param(FH, 'v_new', -1)), dev(step_param(FH, 'h', -1))
dvl_d, dh_d, dv2_d = dev(step_param('chunk_bwd_kernel_dv_local', 'dv', -1)), dev(step_param(DHU, 'dh', -1)), \
    dev(step_param(DHU, 'dv2', -1))
dw_d, dkq_d, dq_d = dev(step_param(DQ, 'dw', -1)), dev(step_param(DQ, 'dk', -1)), dev(step_param(DQ, 'dq', -1))
P = 'prepare_wy_repr_bwd_kernel'
dk2_d, dvf_d, db_d = dev(step_param(P, 'dk', -1)), dev(step_param(P, 'dv', -1)), dev(step_param(P, 'dbeta', -1))
m = {n_: torch.zeros_like(x) for n_, x in (('dv_local', dvl_d), ('dh', dh_d), ('dv2', dv2_d), ('dw', dw_d),
                                           ('dk_dqkwg', dkq_d), ('dq', dq_d), ('dk2', dk2_d), ('dv', dvf_d),
                                           ('dbeta', db_d))}
for b_ in range(B):
    for hh in range(H):
        bdh = torch.zeros(K, V)                                         # fp32 accumulator in the kernel
        for c in reversed(range(NT)):                                   # chunk_gated_delta_rule_bwd_kernel_dhu
            sl = slice(c * BT, min((c + 1) * BT, T))
            n = sl.stop - sl.start
            qc, kc, doc, wc = Q[b_, sl, hh], Kk[b_, sl, hh], DO[b_, sl, hh], w_d[b_, sl, hh]
            m['dh'][b_, c, hh] = rb(bdh)
            dv2c = rb(kc @ rb(bdh) + dvl_d[b_, sl, hh])
            m['dv2'][b_, sl, hh] = dv2c
            bdh = (bdh + ((qc.T @ doc) * scale).float().double() - (wc.T @ dv2c).float().double()).float().double()
        for c in range(NT):
            sl = slice(c * BT, min((c + 1) * BT, T))
            n = sl.stop - sl.start
            qc, kc, vc, doc, bc = Q[b_, sl, hh], Kk[b_, sl, hh], Vv[b_, sl, hh], DO[b_, sl, hh], Bb[b_, sl, hh]
            # chunk_bwd_kernel_dv_local: b_A[i,j] = scale k_i.q_j for i <= j, cast bf16; dv = b_A @ do
            Akq = rb(torch.where(tril_i(n).T, scale * (kc @ qc.T), torch.zeros(())))
            m['dv_local'][b_, sl, hh] = rb(Akq @ doc)
            # chunk_bwd_kernel_dqkwg (USE_DW, no g)
            hc, dhc, vnc, dv2c = h_d[b_, c, hh], dh_d[b_, c, hh], vn_d[b_, sl, hh], dv2_d[b_, sl, hh]
            ds = rb(torch.where(tril_i(n), doc @ vnc.T, torch.zeros(())))
            m['dw'][b_, sl, hh] = rb(-(dv2c @ hc.T))
            m['dq'][b_, sl, hh] = rb((doc @ hc.T + ds @ kc) * scale)
            m['dk_dqkwg'][b_, sl, hh] = rb(vnc @ dhc.T + (ds.T @ qc) * scale)
            # prepare_wy_repr_bwd_kernel (b_A = Ai^T of the chunk)
            At = Ai_d[b_, sl, hh, :n].T
            du, dwc = dv2c, dw_d[b_, sl, hh]
            vbeta, kbeta = rb(vc * bc[:, None]), rb(kc * bc[:, None])
            dA = du @ vbeta.T + dwc @ kbeta.T
            dvb = At @ du
            m['dv'][b_, sl, hh] = rb(dvb * bc[:, None])
            dbeta = (dvb * vc).sum(1)
            dkb = At @ dwc
            dk_st = rb(dkb * bc[:, None])                               # stored, reloaded as bf16
            dbeta = dbeta + (dkb * kc).sum(1)
            sl_ = torch.ones(n, n).tril(-1).bool()
            dA = torch.where(sl_, dA, torch.zeros(()))
            dA = rb(dA) @ At
            dA = At @ rb(dA)
            dA = rb(torch.where(sl_, -dA, torch.zeros(())))
            dkb2 = dA @ kc
            dbeta = dbeta + (dkb2 * kc).sum(1)
            m['dk2'][b_, sl, hh] = rb(dk_st + dA.T @ kbeta + dkb2 * bc[:, None])
            m['dbeta'][b_, sl, hh] = rb(dbeta)
torch.save({'mimic': m, 'dh': dh_d, 'dv2': dv2_d, 'dq': dq_d}, os.path.join(args.out, 'kernel_check.pt'))
log('\n# each bwd kernel vs a float64 re-computation from ITS OWN emulator inputs, bf16-rounded where the kernel '
    'casts (emulator error alone)')
for nm, got in (('dv_local', dvl_d), ('dh', dh_d), ('dv2', dv2_d), ('dw', dw_d), ('dq', dq_d),
                ('dk_dqkwg', dkq_d), ('dk2', dk2_d), ('dv', dvf_d), ('dbeta', db_d)):
    ref = m[nm]
    d = (got - ref).abs()
    ulp = 2.0 ** (torch.floor(torch.log2(torch.clamp(ref.abs(), min=1e-30))) - 7)
    log(f'  {nm:9s} rel {d.max().item() / ref.abs().max().item():.3e}  max|diff| {d.max().item():.3e}  '
        f'max diff in bf16 ulps {(d / ulp).max().item():6.2f}  elements differing: {int((d > 0).sum())} of {d.numel()}')

worst = max(res[k_] for k_ in ('dq', 'dk', 'dv', 'dbeta'))
log(f'\n# worst of dq, dk, dv, dbeta: {worst:.3e} = {worst / bound:.2f} * 2^-8  -> ' +
    ('within 2^-8' if worst <= bound else 'within 4 * 2^-8 (bf16 level)' if worst <= 4 * bound else 'TOO LARGE'))
log('# per-step wall time (launch + cuCtxSynchronize):')
for n_, t_ in timings:
    log(f'  {n_:52s} {t_:8.2f} s')
log(f'# emulator total {t_emul:.1f} s; script total wall {time.time() - t_start:.1f} s')
torch.save({'dq': dq, 'dk': dk, 'dv': dv, 'dbeta': db, 'o': fwd_o}, os.path.join(args.out, 'grads.pt'))
sys.exit(0 if worst <= 4 * bound and not nf else 3)
