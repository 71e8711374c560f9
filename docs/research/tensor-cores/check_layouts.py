#!/usr/bin/env python3
"""CPU model (pure Python) of the warp-level data movement used by gen.py, to check the
lane->element bookkeeping without a GPU.

Semantics modelled (PTX ISA, ldmatrix / mma.m16n8k16 / mma.m16n8k8.tf32) and MLIR's
nvgpu::getLaneIdAndValueIdToOperandCoord (mlir/lib/Dialect/NVGPU/Utils/MMAUtils.cpp):

  ldmatrix.m8n8.x4[.trans].b16: lane l supplies the address of row (l%8) of matrix (l//8);
     each matrix row is 16 bytes. Result register i of lane l holds, for matrix i:
       non-trans: row l//4, 32-bit word l%4          -> elements M_i[l//4][2*(l%4)+e]
       trans    : column l//4 of rows 2*(l%4)+e       -> elements M_i[2*(l%4)+e][l//4]
  mma operand fragments (vector<RxExT> in nvgpu, row r = register, e = element in register):
     g = lane//4, t = lane%4
     f16/bf16 m16n8k16: A vector<4x2>: A[g + 8*(r%2)][2t + e + 8*(r//2)]
                        B vector<2x2>: B[k = 2t + e + 8r][n = g]
                        C vector<2x2xf32>: C[g + 8r][2t + e]
     tf32 m16n8k8     : A vector<4x1xf32>: A[g + 8*(r%2)][t + 4*(r//2)]
                        B vector<2x1xf32>: B[k = t + 4r][n = g]
                        C as above
The model then replays exactly the address formulas emitted by gen.py and checks C == C0 + A@B.
"""
import random


def ldmatrix_x4(smem, addr_of_lane, trans, words_per_row_elems):
    """smem: dict (row, col)->value ; addr_of_lane(l) -> (row, col) of the first element of the
    16-byte row this lane points to. words_per_row_elems = elements per 32-bit word (2 for b16, 1 for b32).
    returns regs[lane][i] = list of elements in register i"""
    epw = words_per_row_elems
    rows = {}  # (matrix, rowInMatrix) -> list of 8 b16 (or 4 b32) elements
    for l in range(32):
        m, rr = l // 8, l % 8
        r0, c0 = addr_of_lane(l)
        rows[(m, rr)] = [smem[(r0, c0 + j)] for j in range(4 * epw)]
    regs = [[None] * 4 for _ in range(32)]
    for l in range(32):
        g, t = l // 4, l % 4
        for i in range(4):
            if not trans:
                regs[l][i] = rows[(i, g)][epw * t: epw * t + epw]
            else:
                assert epw == 2
                regs[l][i] = [rows[(i, 2 * t + e)][g] for e in range(2)]
    return regs


def check(dtype, warps):
    M = N = K = 64
    A = [[random.randint(-3, 3) for _ in range(K)] for _ in range(M)]
    B = [[random.randint(-3, 3) for _ in range(N)] for _ in range(K)]
    C0 = [[random.randint(-3, 3) for _ in range(N)] for _ in range(M)]
    As = {(i, j): A[i][j] for i in range(M) for j in range(K)}  # padding irrelevant for values
    Bs = {(i, j): B[i][j] for i in range(K) for j in range(N)}
    Cout = [[None] * N for _ in range(M)]
    is32 = dtype == "tf32"
    KSTEP = 8 if is32 else 16
    RPW = M // warps
    MT, NT = RPW // 16, N // 8
    for w in range(warps):
        # per-lane accumulators acc[lane][mi][nj][r][e]
        acc = [[[[[C0[w * RPW + 16 * mi + l // 4 + 8 * r][8 * nj + 2 * (l % 4) + e] for e in range(2)]
                  for r in range(2)] for nj in range(NT)] for mi in range(MT)] for l in range(32)]
        for k0 in range(0, K, KSTEP):
            afr = []
            for mi in range(MT):
                if is32:
                    regs = ldmatrix_x4(As, lambda l: (w * RPW + 16 * mi + l % 16, k0 + (l // 16) * 4), False, 1)
                else:
                    regs = ldmatrix_x4(As, lambda l: (w * RPW + 16 * mi + l % 16, k0 + (l // 16) * 8), False, 2)
                afr.append(regs)
            bfr = []  # bfr[nj][lane] = [[b00,b01],[b10,b11]] in vector<2x2> or [[b0],[b1]] (vector<2x1>)
            if is32:
                for nj in range(NT):
                    bfr.append([[[Bs[(k0 + l % 4 + 4 * r, 8 * nj + l // 4)]] for r in range(2)] for l in range(32)])
            else:
                for p in range(NT // 2):
                    regs = ldmatrix_x4(Bs, lambda l: (k0 + l % 16, 16 * p + (l // 16) * 8), True, 2)
                    bfr.append([[regs[l][0], regs[l][1]] for l in range(32)])
                    bfr.append([[regs[l][2], regs[l][3]] for l in range(32)])
            # mma: reconstruct the logical operands from the fragments using the documented layouts
            for mi in range(MT):
                for nj in range(NT):
                    Ab = [[None] * KSTEP for _ in range(16)]
                    Bb = [[None] * 8 for _ in range(KSTEP)]
                    for l in range(32):
                        g, t = l // 4, l % 4
                        for r in range(4):
                            for e in range(1 if is32 else 2):
                                if is32:
                                    Ab[g + 8 * (r % 2)][t + 4 * (r // 2)] = afr[mi][l][r][e]
                                else:
                                    Ab[g + 8 * (r % 2)][2 * t + e + 8 * (r // 2)] = afr[mi][l][r][e]
                        for r in range(2):
                            for e in range(1 if is32 else 2):
                                if is32:
                                    Bb[t + 4 * r][g] = bfr[nj][l][r][e]
                                else:
                                    Bb[2 * t + e + 8 * r][g] = bfr[nj][l][r][e]
                    # sanity: fragments really are the right sub-blocks of A and B
                    for i in range(16):
                        for kk in range(KSTEP):
                            assert Ab[i][kk] == A[w * RPW + 16 * mi + i][k0 + kk], (dtype, "A frag", i, kk)
                    for kk in range(KSTEP):
                        for j in range(8):
                            assert Bb[kk][j] == B[k0 + kk][8 * nj + j], (dtype, "B frag", kk, j)
                    for l in range(32):
                        g, t = l // 4, l % 4
                        for r in range(2):
                            for e in range(2):
                                acc[l][mi][nj][r][e] += sum(Ab[g + 8 * r][kk] * Bb[kk][2 * t + e] for kk in range(KSTEP))
        for l in range(32):
            for mi in range(MT):
                for nj in range(NT):
                    for r in range(2):
                        for e in range(2):
                            Cout[w * RPW + 16 * mi + l // 4 + 8 * r][8 * nj + 2 * (l % 4) + e] = acc[l][mi][nj][r][e]
    ref = [[C0[i][j] + sum(A[i][k] * B[k][j] for k in range(K)) for j in range(N)] for i in range(M)]
    assert Cout == ref, dtype
    print(f"OK  {dtype:5s} warps={warps}: C == C0 + A@B for all 64x64 elements")


random.seed(1)
for dt in ("f16", "tf32"):
    for w in (1, 4):
        check(dt, w)


def check_transposed_storage():
    """Operands stored the 'other' way round (attention: Q.K^T with K row-major [keys x d] is B stored N x K;
    K^T.V / state updates use A stored K x M). Checks the ldmatrix address recipes quoted in NOTES.md."""
    A = [[random.randint(-9, 9) for _ in range(16)] for _ in range(16)]   # logical A[m][k]
    B = [[random.randint(-9, 9) for _ in range(16)] for _ in range(16)]   # logical B[k][n] (two n-tiles)
    At = {(k, m): A[m][k] for m in range(16) for k in range(16)}          # stored K x M
    Bt = {(n, k): B[k][n] for k in range(16) for n in range(16)}          # stored N x K
    # A from K x M storage: ldmatrix.x4.trans, lane l -> &At[k0 + l%8 + 8*(l//16)][m0 + 8*((l//8)%2)]
    ra = ldmatrix_x4(At, lambda l: (l % 8 + 8 * (l // 16), 8 * ((l // 8) % 2)), True, 2)
    # B from N x K storage: ldmatrix.x4 (no trans), lane l -> &Bt[n0 + l%8 + 8*(l//16)][k0 + 8*((l//8)%2)]
    rb = ldmatrix_x4(Bt, lambda l: (l % 8 + 8 * (l // 16), 8 * ((l // 8) % 2)), False, 2)
    for l in range(32):
        g, t = l // 4, l % 4
        for r in range(4):
            for e in range(2):
                assert ra[l][r][e] == A[g + 8 * (r % 2)][2 * t + e + 8 * (r // 2)]
        for half in range(2):          # regs 0,1 -> n-tile 0 ; regs 2,3 -> n-tile 1
            for r in range(2):
                for e in range(2):
                    assert rb[l][2 * half + r][e] == B[2 * t + e + 8 * r][8 * half + g]
    print("OK  A stored KxM via ldmatrix.x4.trans, B stored NxK via ldmatrix.x4 (non-trans)")


check_transposed_storage()
