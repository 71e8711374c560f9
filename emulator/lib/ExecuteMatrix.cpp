//===- ExecuteMatrix.cpp - mma.sync and ldmatrix --------------------------===//
//
// PTX ISA 9.7.14.5 (warp-level matrix fragments for mma.m16n8k8 and
// mma.m16n8k16) and 9.7.14.5.15 (ldmatrix). With groupID = laneid >> 2 and
// threadID_in_group = laneid % 4 (g and t below):
//  - C and D, 16x8 f32, four registers c0..c3: row g for c0, c1 and g + 8
//    for c2, c3; column 2t + (i & 1).
//  - m16n8k8 .tf32: A (16x8) a0..a3: row g for a0, a2, g + 8 for a1, a3;
//    column t for a0, a1, t + 4 for a2, a3. B (8x8) b0, b1: row t and t + 4,
//    column g.
//  - m16n8k16 .f16/.bf16: A (16x16) a0..a7, two to a register (the lower
//    index in the low half): row g for a0, a1, a4, a5, else g + 8; column
//    2t + (i & 1), plus 8 for a4..a7. B (16x8) b0..b3: row 2t + (i & 1),
//    plus 8 for b2, b3; column g.
//  - m16n8k8 .f16/.bf16: A a0..a3: row g for a0, a1, g + 8 for a2, a3;
//    column 2t + (i & 1). B b0, b1: row 2t + i, column g.
// The products are exact, the sum is formed in double and rounded once to
// f32 (the ISA asks for at least single precision, in an unspecified
// order); tf32 operands lose their low 13 bits; a NaN result is written as
// 0x7fffffff.
//
// ldmatrix: lanes 8j..8j+7 give the addresses of the 8 rows (16 bytes) of
// matrix j; lane L's register j holds row L / 4, elements 2 (L % 4) and
// 2 (L % 4) + 1 of matrix j, or with .trans those of column L / 4.
//
//===----------------------------------------------------------------------===//

#include "FloatFormats.h"
#include "Handlers.h"
#include "Lanes.h"

#include <cmath>

namespace fwp::emu {
namespace {

void requireWholeWarp(Exec &e) {
  if (e.active != ~0u || e.mask != e.active)
    fault(e, __builtin_ctz(e.active ? e.active : 1u),
          LaunchError::IllegalInstruction,
          std::string(opcodeName(e.inst.op)) +
              " (.aligned) executed by part of a warp");
}

double element(Type type, uint32_t bits) {
  switch (type) {
  case Type::TF32:
    return bitsAs<float>(bits & 0xffffe000u);
  case Type::BF16:
    return bfloatToFloat(uint16_t(bits));
  default:
    return halfToFloat(uint16_t(bits));
  }
}

struct Fragments {
  double a[16][16], b[16][8], c[16][8];
};

/// Gathers A, B and C from the lanes' registers, per the ISA's tables.
void gather(Exec &e, Fragments &f) {
  const Instruction &inst = e.inst;
  const auto &regsA = inst.operands[1].elements;
  const auto &regsB = inst.operands[2].elements;
  const auto &regsC = inst.operands[3].elements;
  bool tf32 = inst.sourceType == Type::TF32;
  unsigned k = inst.shapeK;
  for (int lane = 0; lane < kWarpSize; ++lane) {
    int g = lane >> 2, t = lane & 3;
    auto reg = [&](const Operand &op) { return uint32_t(read(e, op, lane)); };
    for (int i = 0; i < 4; ++i)
      f.c[g + 8 * (i >> 1)][2 * t + (i & 1)] = bitsAs<float>(reg(regsC[i]));
    if (tf32) {
      for (int i = 0; i < 4; ++i)
        f.a[g + 8 * (i & 1)][t + 4 * (i >> 1)] =
            element(Type::TF32, reg(regsA[i]));
      for (int i = 0; i < 2; ++i)
        f.b[t + 4 * i][g] = element(Type::TF32, reg(regsB[i]));
      continue;
    }
    for (size_t r = 0; r < regsA.size(); ++r)
      for (int half = 0; half < 2; ++half) {
        int i = int(2 * r) + half;
        int row = g + ((k == 16 ? (i >> 1) & 1 : i >> 1) ? 8 : 0);
        int col = 2 * t + (i & 1) + (k == 16 && i >= 4 ? 8 : 0);
        f.a[row][col] = element(inst.sourceType, reg(regsA[r]) >> (16 * half));
      }
    for (size_t r = 0; r < regsB.size(); ++r)
      for (int half = 0; half < 2; ++half) {
        int i = int(2 * r) + half;
        f.b[2 * t + (i & 1) + (i >= 2 ? 8 : 0)][g] =
            element(inst.sourceType, reg(regsB[r]) >> (16 * half));
      }
  }
}

void execMma(Exec &e) {
  requireWholeWarp(e);
  const Instruction &inst = e.inst;
  Fragments f;
  gather(e, f);
  float d[16][8];
  for (int m = 0; m < 16; ++m)
    for (int n = 0; n < 8; ++n) {
      double sum = f.c[m][n];
      for (unsigned k = 0; k < inst.shapeK; ++k)
        sum += f.a[m][k] * f.b[k][n];
      d[m][n] = float(sum);
    }
  const auto &regsD = inst.operands[0].elements;
  for (int lane = 0; lane < kWarpSize; ++lane) {
    int g = lane >> 2, t = lane & 3;
    for (int i = 0; i < 4; ++i) {
      float value = d[g + 8 * (i >> 1)][2 * t + (i & 1)];
      write(e, regsD[i], lane,
            std::isnan(value) ? kCanonicalNanF32 : asBits(value));
    }
  }
  Counters &c = e.cta.counters;
  (inst.sourceType == Type::TF32   ? c.mmaTf32
   : inst.sourceType == Type::BF16 ? c.mmaBf16
                                   : c.mmaF16)++;
}

void execLdmatrix(Exec &e) {
  requireWholeWarp(e);
  const Instruction &inst = e.inst;
  unsigned matrices = inst.matrices;
  uint16_t rows[4][8][8]; // [matrix][row][column]
  uint64_t offsets[kWarpSize];
  for (unsigned j = 0; j < matrices; ++j)
    for (int r = 0; r < 8; ++r) {
      int lane = int(8 * j) + r;
      offsets[lane] = addressOf(e, inst.operands[1], lane);
      if (offsets[lane] % 16)
        fault(e, lane, LaunchError::MisalignedAddress,
              "ldmatrix row address not 16-byte aligned");
      const uint8_t *p = sharedAddress(e, lane, offsets[lane], 16, false);
      std::memcpy(rows[j][r], p, 16);
    }
  countSharedAccess(e, offsets, matrices == 4 ? ~0u : (1u << 8 * matrices) - 1,
                    16);
  const auto &dest = inst.operands[0];
  for (int lane = 0; lane < kWarpSize; ++lane) {
    int row = lane / 4, col = 2 * (lane % 4);
    for (unsigned j = 0; j < matrices; ++j) {
      uint32_t low = inst.trans ? rows[j][col][row] : rows[j][row][col];
      uint32_t high =
          inst.trans ? rows[j][col + 1][row] : rows[j][row][col + 1];
      const Operand &d =
          dest.kind == Operand::Kind::Vector ? dest.elements[j] : dest;
      write(e, d, lane, low | high << 16);
    }
  }
}

bool supportedMma(const Instruction &inst) {
  if (inst.accumulatorType != Type::F32 || inst.type != Type::F32 ||
      inst.operands.size() != 4)
    return false;
  for (const Operand &op : inst.operands)
    if (op.kind != Operand::Kind::Vector)
      return false;
  size_t a = inst.operands[1].elements.size(),
         b = inst.operands[2].elements.size();
  if (inst.shapeM != 16 || inst.shapeN != 8 ||
      inst.operands[0].elements.size() != 4 ||
      inst.operands[3].elements.size() != 4)
    return false;
  if (inst.sourceType == Type::TF32)
    return inst.shapeK == 8 && a == 4 && b == 2;
  if (inst.sourceType == Type::BF16 || inst.sourceType == Type::F16)
    return (inst.shapeK == 16 && a == 4 && b == 2) ||
           (inst.shapeK == 8 && a == 2 && b == 1);
  return false;
}

} // namespace

Handler matrixHandler(const Instruction &inst) {
  if (inst.op == Opcode::Mma)
    return supportedMma(inst) ? execMma : nullptr;
  if (inst.op == Opcode::Ldmatrix)
    return inst.space == Space::Shared && inst.type == Type::B16 &&
                   (inst.matrices == 1 || inst.matrices == 2 ||
                    inst.matrices == 4)
               ? execLdmatrix
               : nullptr;
  return nullptr;
}

} // namespace fwp::emu
