#!/usr/bin/env python3
"""K-loop version of the f16 tile product (the shape a chunked attention kernel needs):
   C[64x64,f32] += A[64 x 64*T, f16] * B[64*T x 64, f16], 4 warps, double-buffered shared memory.

--pipeline none   : scf.for over k-tiles; each iteration: cp.async tile kt -> buffer kt%2, commit, wait 0,
                    barrier, compute, barrier.   (input for transform.nvgpu.pipeline_shared_memory_copies)
--pipeline manual : prologue copies tile 0; loop kt in [0,T-1): issue tile kt+1 -> buffer (kt+1)%2, commit,
                    wait numGroups=1 (tile kt landed), barrier, compute kt, barrier; epilogue: wait 0, compute T-1.
"""
import argparse

p = argparse.ArgumentParser()
p.add_argument("--ktiles", type=int, default=4)
p.add_argument("--pipeline", default="manual", choices=["none", "manual"])
p.add_argument("--warps", type=int, default=4)
args = p.parse_args()

TK = args.ktiles
KT = 64
K = KT * TK
W = args.warps
T = 32 * W
PAD = 8
LD = 64 + PAD
WS = "#gpu.address_space<workgroup>"
gA = f"memref<64x{K}xf16>"
gB = f"memref<{K}x64xf16>"
gC = "memref<64x64xf32>"
smA = f"memref<2x64x{LD}xf16, {WS}>"
smB = f"memref<2x{KT}x{LD}xf16, {WS}>"
acc_t = "vector<2x2xf32>"
RPW = 64 // W
MT, NT = RPW // 16, 8

out, cnt, consts = [], [0], {}
ind = [2]


def emit(s):
    out.append("  " * ind[0] + s)


def v(pfx="v"):
    cnt[0] += 1
    return f"%{pfx}{cnt[0]}"


def c(i):
    consts.setdefault(i, f"%c{i}")
    return consts[i]


def op(kind, a, b):
    r = v("i")
    emit(f"{r} = arith.{kind} {a}, {b} : index")
    return r


def addc(a, k):
    return a if k == 0 else op("addi", a, c(k))


emit("%tid = gpu.thread_id x")
lane = op("remui", "%tid", c(32))
warp = op("divui", "%tid", c(32))
g = op("divui", lane, c(4))
t = op("remui", lane, c(4))
l16 = op("remui", lane, c(16))
hi8 = op("muli", op("divui", lane, c(16)), c(8))
row_w = op("muli", warp, c(RPW))
emit(f"%zb = arith.constant dense<0.0> : vector<2x2xf16>")
emit(f"%zacc = arith.constant dense<0.0> : {acc_t}")

# per-thread copy coordinates (independent of k-tile): 512 16-byte chunks per 64x64 f16 tile
copy_rc = []
for i in range(512 // T):
    cid = addc("%tid", i * T)
    copy_rc.append((op("divui", cid, c(8)), op("muli", op("remui", cid, c(8)), c(8))))


def issue_copies(kt_val, buf_val):
    """cp.async of A[:, kt*64 : +64] and B[kt*64 : +64, :] into buffer buf; returns the group token"""
    kofs = op("muli", kt_val, c(KT))
    toks = []
    for (r, col) in copy_rc:
        ac = op("addi", kofs, col)
        tk = v("tok")
        emit(f"{tk} = nvgpu.device_async_copy %A[{r}, {ac}], %As[{buf_val}, {r}, {col}], 8 {{bypassL1}} : {gA} to {smA}")
        toks.append(tk)
        br = op("addi", kofs, r)
        tk = v("tok")
        emit(f"{tk} = nvgpu.device_async_copy %B[{br}, {col}], %Bs[{buf_val}, {r}, {col}], 8 {{bypassL1}} : {gB} to {smB}")
        toks.append(tk)
    grp = v("grp")
    emit(f"{grp} = nvgpu.device_async_create_group " + ", ".join(toks))
    return grp


def compute(buf_val, accs):
    new = list(accs)
    for kk in range(KT // 16):
        afr = []
        for mi in range(MT):
            ar = op("addi", addc(row_w, 16 * mi), l16)
            fa = v("fa")
            emit(f"{fa} = nvgpu.ldmatrix %As[{buf_val}, {ar}, {addc(hi8, 16 * kk)}] {{numTiles = 4 : i32, transpose = false}} : {smA} -> vector<4x2xf16>")
            afr.append(fa)
        bfr = []
        kr = addc(l16, 16 * kk)
        for pq in range(NT // 2):
            fb4 = v("fb")
            emit(f"{fb4} = nvgpu.ldmatrix %Bs[{buf_val}, {kr}, {addc(hi8, 16 * pq)}] {{numTiles = 4 : i32, transpose = true}} : {smB} -> vector<4x2xf16>")
            for h in range(2):
                r0, r1, b0, b1 = v("fr"), v("fr"), v("fb"), v("fb")
                emit(f"{r0} = vector.extract {fb4}[{2*h}] : vector<2xf16> from vector<4x2xf16>")
                emit(f"{r1} = vector.extract {fb4}[{2*h+1}] : vector<2xf16> from vector<4x2xf16>")
                emit(f"{b0} = vector.insert {r0}, %zb [0] : vector<2xf16> into vector<2x2xf16>")
                emit(f"{b1} = vector.insert {r1}, {b0} [1] : vector<2xf16> into vector<2x2xf16>")
                bfr.append(b1)
        for mi in range(MT):
            for nj in range(NT):
                d = v("acc")
                emit(f"{d} = nvgpu.mma.sync({afr[mi]}, {bfr[nj]}, {new[mi*NT+nj]}) {{mmaShape = [16, 8, 16]}} : (vector<4x2xf16>, vector<2x2xf16>, {acc_t}) -> {acc_t}")
                new[mi * NT + nj] = d
    return new


# accumulators from C
accs = []
cidx = []
for mi in range(MT):
    r0 = op("addi", addc(row_w, 16 * mi), g)
    r1 = addc(r0, 8)
    for nj in range(NT):
        col = addc(op("muli", t, c(2)), 8 * nj)
        cidx.append((r0, r1, col))
        x0, x1, a0, a1 = v("cv"), v("cv"), v("acc"), v("acc")
        emit(f"{x0} = vector.load %C[{r0}, {col}] {{alignment = 8}} : {gC}, vector<2xf32>")
        emit(f"{x1} = vector.load %C[{r1}, {col}] {{alignment = 8}} : {gC}, vector<2xf32>")
        emit(f"{a0} = vector.insert {x0}, %zacc [0] : vector<2xf32> into {acc_t}")
        emit(f"{a1} = vector.insert {x1}, {a0} [1] : vector<2xf32> into {acc_t}")
        accs.append(a1)

n = len(accs)
tys = ", ".join([acc_t] * n)
if args.pipeline == "none":
    its = [v("it") for _ in accs]
    res = v("res")
    emit(f"{res}:{n} = scf.for %kt = {c(0)} to {c(TK)} step {c(1)} iter_args(" + ", ".join(f"{i} = {a}" for i, a in zip(its, accs)) + f") -> ({tys}) {{")
    ind[0] += 1
    buf = op("remui", "%kt", c(2))
    grp = issue_copies("%kt", buf)
    emit(f"nvgpu.device_async_wait {grp} {{numGroups = 0 : i32}}")
    emit("gpu.barrier")
    new = compute(buf, its)
    emit("gpu.barrier")
    emit("scf.yield " + ", ".join(new) + " : " + tys)
    ind[0] -= 1
    emit("}")
    final = [f"{res}#{i}" for i in range(n)]
else:
    emit("// prologue: tile 0 -> buffer 0")
    grp0 = issue_copies(c(0), c(0))
    its = [v("it") for _ in accs]
    res = v("res")
    emit(f"{res}:{n} = scf.for %kt = {c(0)} to {c(TK-1)} step {c(1)} iter_args(" + ", ".join(f"{i} = {a}" for i, a in zip(its, accs)) + f") -> ({tys}) {{")
    ind[0] += 1
    nk = op("addi", "%kt", c(1))
    nbuf = op("remui", nk, c(2))
    emit("// issue tile kt+1 into the other buffer, then wait until only that group is in flight")
    grp = issue_copies(nk, nbuf)
    emit(f"nvgpu.device_async_wait {grp} {{numGroups = 1 : i32}}")
    emit("gpu.barrier")
    buf = op("remui", "%kt", c(2))
    new = compute(buf, its)
    emit("gpu.barrier  // everyone done reading buffer kt%2 before iteration kt+1 overwrites it")
    emit("scf.yield " + ", ".join(new) + " : " + tys)
    ind[0] -= 1
    emit("}")
    emit("// epilogue: last tile")
    emit("// (the token operand is only an SSA handle; the lowering emits cp.async.wait_group <numGroups>)")
    emit(f"nvgpu.device_async_wait {grp0} {{numGroups = 0 : i32}}")
    emit("gpu.barrier")
    final = compute(c((TK - 1) % 2), [f"{res}#{i}" for i in range(n)])

for (r0, r1, col), a in zip(cidx, final):
    for r, row in ((0, r0), (1, r1)):
        x = v("o")
        emit(f"{x} = vector.extract {a}[{r}] : vector<2xf32> from {acc_t}")
        emit(f"vector.store {x}, %C[{row}, {col}] {{alignment = 8}} : {gC}, vector<2xf32>")
emit("gpu.return")

body = "\n".join(out)
hdr = [f"// Generated by gen_kloop.py --ktiles={TK} --pipeline={args.pipeline} --warps={W}",
       f"// C[64x64,f32] += A[64x{K},f16] * B[{K}x64,f16]; double-buffered smem, {T} threads",
       "gpu.module @kernels {",
       f"  gpu.func @tile_mma_kloop(%A: {gA}, %B: {gB}, %C: {gC})",
       f"      workgroup(%As: {smA} {{llvm.align = 128 : i64}}, %Bs: {smB} {{llvm.align = 128 : i64}}) kernel",
       f"      attributes {{known_block_size = array<i32: {T}, 1, 1>}} {{"]
cdecl = [f"    {nm} = arith.constant {i} : index" for i, nm in sorted(consts.items())]
print("\n".join(hdr + cdecl + [body, "  }", "}"]))
