"""Smoke test: launch the AOT-compiled chunk_scaled_dot_kkt_fwd_kernel PTX on the
emulated driver (B=1, T=128, H=16, K=128, BT=64) and compare with torch on CPU.
Shows the launch ABI: triton 3.6 kernels take two extra trailing .u64 params
(global_scratch, profile_scratch) that triton's launcher passes as NULL here."""
import ctypes, os, sys, torch
os.environ.setdefault('FWP_EMU_SM', '80')
cu = ctypes.CDLL('/work/main/build/lib/emulated-cuda/libcuda.so.1')
def ck(rc, w):
    if rc: s = ctypes.c_char_p(); cu.cuGetErrorName(rc, ctypes.byref(s)); sys.exit(f'{w}: {rc} {s.value}')
ck(cu.cuInit(0), 'init'); dev = ctypes.c_int(); ck(cu.cuDeviceGet(ctypes.byref(dev), 0), 'dev')
ctx = ctypes.c_void_p(); ck(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), 'ctx'); ck(cu.cuCtxSetCurrent(ctx), 'set')
ptx = open(os.path.join(os.path.dirname(__file__), '..', 'ptx', 'chunk_scaled_dot_kkt_fwd_kernel.ptx'), 'rb').read() + b'\0'
mod = ctypes.c_void_p(); ck(cu.cuModuleLoadDataEx(ctypes.byref(mod), ptx, 0, None, None), 'load')  # the stand-in has no cuModuleLoadData
fn = ctypes.c_void_p(); ck(cu.cuModuleGetFunction(ctypes.byref(fn), mod, b'chunk_scaled_dot_kkt_fwd_kernel'), 'getfn')
B, T, H, K, BT = 1, 128, 16, 128, 64
torch.manual_seed(0)
k = torch.nn.functional.normalize(torch.randn(B, T, H, K), dim=-1).bfloat16()
beta = torch.rand(B, T, H).sigmoid().bfloat16()
def todev(t):
    p = ctypes.c_uint64(); n = t.numel() * t.element_size(); ck(cu.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(n)), 'alloc')
    ck(cu.cuMemcpyHtoD_v2(p, ctypes.c_void_p(t.data_ptr()), ctypes.c_size_t(n)), 'htod'); return p
dk, db = todev(k.contiguous()), todev(beta.contiguous())
A = torch.empty(B, T, H, BT, dtype=torch.float32)
dA = ctypes.c_uint64(); ck(cu.cuMemAlloc_v2(ctypes.byref(dA), ctypes.c_size_t(A.numel() * 4)), 'allocA')
Tv, null1, null2 = ctypes.c_int32(T), ctypes.c_uint64(0), ctypes.c_uint64(0)
params = (ctypes.c_void_p * 6)(*[ctypes.cast(ctypes.byref(x), ctypes.c_void_p) for x in (dk, db, dA, Tv, null1, null2)])
ck(cu.cuLaunchKernel(fn, T // BT, B * H, 1, 64, 1, 1, 4096, None, params, None), 'launch')  # 2 warps, shared from metadata
ck(cu.cuCtxSynchronize(), 'sync')
ck(cu.cuMemcpyDtoH_v2(ctypes.c_void_p(A.data_ptr()), dA, ctypes.c_size_t(A.numel() * 4)), 'dtoh')
kc = k.float().view(B, T // BT, BT, H, K).permute(0, 1, 3, 2, 4)           # b n h c k
ref = (kc @ kc.transpose(-1, -2)) * beta.float().view(B, T // BT, BT, H).permute(0, 1, 3, 2)[..., None]
ref = ref.tril(-1).permute(0, 1, 3, 2, 4).reshape(B, T, H, BT)
print('max |A - ref| =', (A - ref).abs().max().item(), ' max |ref| =', ref.abs().max().item())
