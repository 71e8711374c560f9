//===- EmulatorCasesMatrix.cpp - mma.sync and ldmatrix cases --------------===//
//
// Warp-level matrix instructions (PTX ISA "Warp Level Matrix
// Multiply-Accumulate Instructions"). The host scatters A, B and C into each
// lane's fragment registers by the ISA's layout tables ("Matrix Fragments for
// mma.m16n8k8", "Matrix Fragments for mma.m16n8k16 with floating point
// type"), each lane loads its fragments, runs mma and stores D, and the host
// gathers D by the same tables and compares with a float64 matrix product.
// ldmatrix ("Warp-level matrix load instruction: ldmatrix") is checked lane
// by lane against its fragment layout.
//
// Operands built from small dyadic values (i/16) make every product and
// every partial sum exact in f32, so D must equal the product bit for bit
// whatever accumulation order is used; the random cases then allow the
// rounding of "at least single precision" accumulation.
//
//===----------------------------------------------------------------------===//

#include "EmulatorCases.h"

#include <random>
#include <sstream>

namespace fwp::conformance {
namespace {

// groupID = %laneid >> 2, threadID_in_group = %laneid % 4 in every table.
struct Position {
  unsigned row, col;
};

// m16n8k8 .tf32 A: row = groupID for a0, a2 and groupID + 8 for a1, a3;
// col = threadID_in_group for a0, a1 and threadID_in_group + 4 for a2, a3.
Position tf32A(unsigned lane, unsigned i) {
  return {(lane >> 2) + (i % 2) * 8, lane % 4 + (i / 2) * 4};
}
// m16n8k8 .tf32 B: row = threadID_in_group (b0), + 4 (b1); col = groupID.
Position tf32B(unsigned lane, unsigned i) {
  return {lane % 4 + i * 4, lane >> 2};
}
// m16n8k16 .f16/.bf16 A: row = groupID for a0, a1, a4, a5 and groupID + 8
// otherwise; col = threadID_in_group * 2 + (i & 1), plus 8 for i >= 4.
Position halfA(unsigned lane, unsigned i) {
  unsigned row = (lane >> 2) + ((i / 2) % 2) * 8;
  return {row, (lane % 4) * 2 + (i & 1) + (i >= 4 ? 8 : 0)};
}
// m16n8k16 .f16/.bf16 B: row = threadID_in_group * 2 + (i & 1), plus 8 for
// i >= 2; col = groupID.
Position halfB(unsigned lane, unsigned i) {
  return {(lane % 4) * 2 + (i & 1) + (i >= 2 ? 8 : 0), lane >> 2};
}
// C/D (both shapes): row = groupID for c0, c1 and groupID + 8 for c2, c3;
// col = threadID_in_group * 2 + (i & 1).
Position accumulator(unsigned lane, unsigned i) {
  return {(lane >> 2) + (i / 2) * 8, (lane % 4) * 2 + (i & 1)};
}

enum class Kind { Tf32, Bf16, F16 };

/// Bits of `value` (exactly representable) in the element format.
uint32_t encode(Kind kind, float value) {
  uint32_t bits = bitsOf(value);
  if (kind == Kind::Tf32)
    return bits;
  if (kind == Kind::Bf16)
    return bits >> 16;
  // f16 of a normal or zero value: rebias the exponent, keep 10 mantissa bits.
  uint32_t sign = (bits >> 16) & 0x8000;
  if ((bits & 0x7fffffff) == 0)
    return sign;
  int exponent = int((bits >> 23) & 0xff) - 127 + 15;
  return sign | uint32_t(exponent) << 10 | (bits >> 13 & 0x3ff);
}

struct MmaProblem {
  Kind kind;
  unsigned k;                  // 8 for tf32, 16 for f16/bf16
  std::vector<float> a;        // 16 x k, the values the product uses
  std::vector<uint32_t> aBits; // 16 x k, the element bits given to mma
  std::vector<float> b;        // k x 8
  std::vector<uint32_t> bBits;
  std::vector<float> c; // 16 x 8
};

/// D = A * B + C in float64 and the sum of the magnitudes of its terms.
void reference(const MmaProblem &p, std::vector<double> &d,
               std::vector<double> &magnitude) {
  d.assign(128, 0);
  magnitude.assign(128, 0);
  for (unsigned i = 0; i < 16; ++i)
    for (unsigned j = 0; j < 8; ++j) {
      double sum = p.c[i * 8 + j], abs = std::fabs(sum);
      for (unsigned k = 0; k < p.k; ++k) {
        double term = double(p.a[i * p.k + k]) * p.b[k * 8 + j];
        sum += term;
        abs += std::fabs(term);
      }
      d[i * 8 + j] = sum;
      magnitude[i * 8 + j] = abs;
    }
}

/// How D is held to the float64 product.
enum class Accuracy {
  Exact,                     // D == the product, rounded to f32
  SinglePrecisionAccumulate, // within (k + 1) * 2^-23 * sum |terms|
};

std::string describeElement(unsigned i, float got, double expected) {
  std::ostringstream text;
  text << "D[" << i / 8 << "][" << i % 8 << "] = " << got;
  if (!std::isnan(expected))
    text << " (reference " << expected << ")";
  return text.str();
}

/// One warp's mma on `p`: D (16 x 8, row-major) gathered from the lanes'
/// fragments and held to the float64 product as `accuracy` says.
KernelCase mmaCase(const std::string &name, const MmaProblem &p,
                   Accuracy accuracy) {
  const bool tf32 = p.kind == Kind::Tf32;
  std::string instruction =
      tf32 ? "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"
           : std::string("mma.sync.aligned.m16n8k16.row.col.f32.") +
                 (p.kind == Kind::Bf16 ? "bf16.bf16" : "f16.f16") + ".f32";
  std::string ptx = inOutKernel(R"(
  .reg .b32 %a<4>, %b<2>;
  .reg .f32 %c<4>, %d<4>;
  .reg .b64 %rd<4>;
)",
                                R"(
  mul.wide.u32 %rd1, %t, 16;
  add.s64 %rd2, %inp, %rd1;
  ld.global.v4.b32 {%a0, %a1, %a2, %a3}, [%rd2];
  mul.wide.u32 %rd3, %t, 8;
  add.s64 %rd3, %inp, %rd3;
  ld.global.v2.b32 {%b0, %b1}, [%rd3+512];
  ld.global.v4.f32 {%c0, %c1, %c2, %c3}, [%rd2+768];
  )" + instruction + R"(
      {%d0, %d1, %d2, %d3}, {%a0, %a1, %a2, %a3}, {%b0, %b1},
      {%c0, %c1, %c2, %c3};
  add.s64 %rd1, %outp, %rd1;
  st.global.v4.f32 [%rd1], {%d0, %d1, %d2, %d3};
)");
  // Four A registers, two B registers, four C registers a lane. A .tf32
  // register holds one element; an .f16x2/.bf16x2 register two, the lower
  // numbered element in the low half ("Elements (low to high)").
  std::vector<uint32_t> input(320);
  for (unsigned lane = 0; lane < 32; ++lane) {
    for (unsigned r = 0; r < 4; ++r) {
      if (tf32) {
        Position at = tf32A(lane, r);
        input[lane * 4 + r] = p.aBits[at.row * p.k + at.col];
      } else {
        Position low = halfA(lane, 2 * r), high = halfA(lane, 2 * r + 1);
        input[lane * 4 + r] = p.aBits[low.row * p.k + low.col] |
                              p.aBits[high.row * p.k + high.col] << 16;
      }
      Position at = accumulator(lane, r);
      input[192 + lane * 4 + r] = bitsOf(p.c[at.row * 8 + at.col]);
    }
    for (unsigned r = 0; r < 2; ++r) {
      if (tf32) {
        Position at = tf32B(lane, r);
        input[128 + lane * 2 + r] = p.bBits[at.row * 8 + at.col];
      } else {
        Position low = halfB(lane, 2 * r), high = halfB(lane, 2 * r + 1);
        input[128 + lane * 2 + r] = p.bBits[low.row * 8 + low.col] |
                                    p.bBits[high.row * 8 + high.col] << 16;
      }
    }
  }
  std::vector<double> ref, magnitude;
  reference(p, ref, magnitude);
  unsigned k = p.k;
  auto judge = [name, ref, magnitude, k,
                accuracy](const std::vector<uint32_t> &output) {
    std::vector<float> d(128, NAN);
    for (unsigned lane = 0; lane < 32 && output.size() == 128; ++lane)
      for (unsigned r = 0; r < 4; ++r) {
        Position at = accumulator(lane, r);
        d[at.row * 8 + at.col] = floatOf(output[lane * 4 + r]);
      }
    Verdict verdict{name, true, "", ""};
    unsigned wrong = 0;
    for (unsigned i = 0; i < 128; ++i) {
      bool holds;
      std::string expected;
      if (accuracy == Accuracy::Exact) {
        holds = d[i] == float(ref[i]);
        expected = describeElement(i, float(ref[i]), NAN);
      } else {
        double bound = (k + 1) * std::ldexp(magnitude[i], -23);
        holds = std::fabs(d[i] - ref[i]) <= bound;
        std::ostringstream text;
        text << "D[" << i / 8 << "][" << i % 8 << "] within " << bound << " of "
             << ref[i];
        expected = text.str();
      }
      if (holds)
        continue;
      verdict.passed = false;
      if (++wrong == 1) {
        verdict.got = describeElement(i, d[i], NAN);
        verdict.expected = expected;
      }
    }
    if (wrong > 1)
      verdict.got += " and " + std::to_string(wrong - 1) + " more elements";
    return std::vector<Verdict>{verdict};
  };
  return inOutCase<uint32_t>(ptx, input, 128, Shape{}, Shape{32, 1, 1}, judge);
}

/// A problem whose values are i/16 (|i| <= 32, C: i/8): exact everywhere.
MmaProblem dyadicProblem(Kind kind, uint32_t seed) {
  std::mt19937 random(seed);
  MmaProblem p{kind, kind == Kind::Tf32 ? 8u : 16u, {}, {}, {}, {}, {}};
  auto draw = [&](int range, float scale) {
    return float(int(random() % (2 * range + 1)) - range) / scale;
  };
  for (unsigned i = 0; i < 16 * p.k; ++i) {
    p.a.push_back(draw(32, 16));
    p.aBits.push_back(encode(kind, p.a.back()));
  }
  for (unsigned i = 0; i < p.k * 8; ++i) {
    p.b.push_back(draw(32, 16));
    p.bBits.push_back(encode(kind, p.b.back()));
  }
  for (unsigned i = 0; i < 128; ++i)
    p.c.push_back(draw(64, 8));
  return p;
}

/// Random values of the element format in [-4, 4] (tf32: 10 mantissa bits).
MmaProblem randomProblem(Kind kind, uint32_t seed) {
  std::mt19937 random(seed);
  MmaProblem p{kind, kind == Kind::Tf32 ? 8u : 16u, {}, {}, {}, {}, {}};
  auto element = [&]() {
    uint32_t sign = random() & 1, exponent = 124 + random() % 5;
    uint32_t mantissa = random() & 0x7fe000; // the top 10 bits
    float value = floatOf(sign << 31 | exponent << 23 | mantissa);
    if (kind == Kind::Bf16) // keep 7 bits
      value = floatOf(bitsOf(value) & 0xffff0000);
    return value;
  };
  for (unsigned i = 0; i < 16 * p.k; ++i) {
    p.a.push_back(element());
    p.aBits.push_back(encode(kind, p.a.back()));
  }
  for (unsigned i = 0; i < p.k * 8; ++i) {
    p.b.push_back(element());
    p.bBits.push_back(encode(kind, p.b.back()));
  }
  std::uniform_real_distribution<float> unit(-1, 1);
  for (unsigned i = 0; i < 128; ++i)
    p.c.push_back(floatOf(bitsOf(unit(random)) & 0xffffff00));
  return p;
}

} // namespace

CaseList matrixMmaTf32M16n8k8MatchesTheProductExactly() {
  return {mmaCase("m16n8k8 tf32: D = A * B + C exactly",
                  dyadicProblem(Kind::Tf32, 1), Accuracy::Exact)};
}

CaseList matrixMmaBf16M16n8k16MatchesTheProductExactly() {
  return {mmaCase("m16n8k16 bf16: D = A * B + C exactly",
                  dyadicProblem(Kind::Bf16, 2), Accuracy::Exact)};
}

CaseList matrixMmaF16M16n8k16MatchesTheProductExactly() {
  return {mmaCase("m16n8k16 f16: D = A * B + C exactly",
                  dyadicProblem(Kind::F16, 3), Accuracy::Exact)};
}

// The ISA leaves how an f32 register's bits become a .tf32 operand to the
// implementation ("the internal layout of tf32 format is implementation
// defined", "reduced precision (>=10 bits)"); its wgmma section says the
// operation "will truncate lower 13 bits of the 32-bit input data before
// multiplication". This case holds the emulator's mma to that: low mantissa
// bits (some above the halfway point, so rounding would differ) must not
// change D. Being implementation-defined, it runs on the emulator only.
CaseList matrixMmaTf32IgnoresTheLow13MantissaBits() {
  MmaProblem p = dyadicProblem(Kind::Tf32, 4);
  std::mt19937 random(5);
  for (uint32_t &bits : p.aBits)
    bits |= 1 + random() % 0x1fff;
  for (uint32_t &bits : p.bBits)
    bits |= 1 + random() % 0x1fff;
  return {onlyOnTheEmulator(
      mmaCase("m16n8k8 tf32 with low bits set: D = A * B + C exactly", p,
              Accuracy::Exact),
      "the ISA leaves tf32's layout and precision implementation-defined "
      "(Alternate Floating-Point Data Formats)")};
}

// mma "Precision and rounding": products "with specified precision" (or at
// least single precision for .f16), "accumulation of the intermediate values
// is performed with at least single precision", order unspecified. Each of
// the k + 1 additions may then err by an f32 ulp of the running sum, bounded
// here by (k + 1) * 2^-23 * the sum of the terms' magnitudes.
CaseList matrixMmaRandomOperandsAreWithinSinglePrecisionAccumulation() {
  const char *names[] = {
      "m16n8k8 tf32, random operands: D within the accumulation bound",
      "m16n8k16 bf16, random operands: D within the accumulation bound",
      "m16n8k16 f16, random operands: D within the accumulation bound"};
  CaseList cases;
  for (Kind kind : {Kind::Tf32, Kind::Bf16, Kind::F16})
    cases.push_back(mmaCase(names[int(kind)],
                            randomProblem(kind, 10 + unsigned(kind)),
                            Accuracy::SinglePrecisionAccumulate));
  return cases;
}

// ldmatrix .m8n8 .b16: threads 0-7 give the row addresses of the first matrix,
// 8-15 of the second, and so on; ".x1" reads only addr0-addr7, ".x2" only
// addr0-addr15. "A group of four threads loads an entire row": lane l gets
// row l / 4, columns 2 (l % 4) and 2 (l % 4) + 1 (Figure "ldmatrix fragment
// layout for one 8x8 Matrix with 16-bit elements"), register j from matrix j.
// ".trans" loads the matrix "in column-major format": lane l gets column
// l / 4, rows 2 (l % 4) and 2 (l % 4) + 1. Rows sit at scattered, reversed,
// padded slots ("Consecutive instances of row need not be stored
// contiguously").
CaseList matrixLdmatrixGivesEachLaneItsRowFragment() {
  auto element = [](unsigned m, unsigned r, unsigned c) {
    return uint16_t(0x1000 * (m + 1) + r * 16 + c);
  };
  auto slot = [](unsigned m, unsigned r) { return m * 8 + (7 - r); };
  std::vector<uint32_t> image(256, 0xdeaddead);
  for (unsigned m = 0; m < 4; ++m)
    for (unsigned r = 0; r < 8; ++r)
      for (unsigned c = 0; c < 8; c += 2)
        image[slot(m, r) * 8 + c / 2] =
            element(m, r, c) | uint32_t(element(m, r, c + 1)) << 16;
  std::string ptx = inOutKernel(R"(
  .reg .b32 %r<16>;
  .reg .b32 %m<11>;
  .reg .b64 %rd<4>;
)",
                                R"(
  mul.wide.u32 %rd1, %t, 32;
  add.s64 %rd1, %inp, %rd1;
  ld.global.v4.b32 {%r1, %r2, %r3, %r4}, [%rd1];
  ld.global.v4.b32 {%r5, %r6, %r7, %r8}, [%rd1+16];
  mov.u32 %r9, tile;
  shl.b32 %r10, %t, 5;
  add.u32 %r10, %r9, %r10;
  st.shared.v4.b32 [%r10], {%r1, %r2, %r3, %r4};
  st.shared.v4.b32 [%r10+16], {%r5, %r6, %r7, %r8};
  bar.sync 0;
  shr.u32 %r11, %t, 3;
  and.b32 %r12, %t, 7;
  shl.b32 %r11, %r11, 3;
  sub.u32 %r11, %r11, %r12;
  add.u32 %r11, %r11, 7;
  shl.b32 %r11, %r11, 5;
  add.u32 %r11, %r9, %r11;
  ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%m0, %m1, %m2, %m3}, [%r11];
  ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%m4}, [%r11];
  ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%m5, %m6}, [%r11];
  ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%m7, %m8, %m9, %m10}, [%r11];
  mul.wide.u32 %rd2, %t, 16;
  add.s64 %rd2, %outp, %rd2;
  st.global.v4.b32 [%rd2], {%m0, %m1, %m2, %m3};
  st.global.v4.b32 [%rd2+512], {%m7, %m8, %m9, %m10};
  mul.wide.u32 %rd3, %t, 4;
  add.s64 %rd3, %outp, %rd3;
  st.global.b32 [%rd3+1024], %m4;
  mul.wide.u32 %rd3, %t, 8;
  add.s64 %rd3, %outp, %rd3;
  st.global.v2.b32 [%rd3+1152], {%m5, %m6};
)",
                                ".shared .align 16 .b8 tile[1024];\n\n");
  auto judge = [element](const std::vector<uint32_t> &got) {
    // Expected words at the same offsets as the kernel stores them.
    std::vector<uint32_t> x4(128), x4Trans(128), x1(32), x2(64);
    for (unsigned lane = 0; lane < 32; ++lane) {
      unsigned row = lane / 4, col = 2 * (lane % 4);
      auto fragment = [&](unsigned m) {
        return element(m, row, col) | uint32_t(element(m, row, col + 1)) << 16;
      };
      auto transposed = [&](unsigned m) {
        return element(m, col, row) | uint32_t(element(m, col + 1, row)) << 16;
      };
      for (unsigned m = 0; m < 4; ++m) {
        x4[lane * 4 + m] = fragment(m);
        x4Trans[lane * 4 + m] = transposed(m);
      }
      x1[lane] = fragment(0);
      for (unsigned m = 0; m < 2; ++m)
        x2[lane * 2 + m] = fragment(m);
    }
    auto part = [&](size_t from, size_t count) {
      std::vector<uint32_t> words(count, kSentinel32);
      for (size_t i = 0; i < count && from + i < got.size(); ++i)
        words[i] = got[from + i];
      return words;
    };
    // The index in each verdict is lane * registers + register.
    return std::vector<Verdict>{
        compareWords("ldmatrix .x4: each lane's row fragment of 4 matrices",
                     part(0, 128), x4),
        compareWords("ldmatrix .x4.trans: each lane's column fragment",
                     part(128, 128), x4Trans),
        compareWords("ldmatrix .x1: the first matrix", part(256, 32), x1),
        compareWords("ldmatrix .x2: the first two matrices", part(288, 64),
                     x2)};
  };
  return {
      inOutCase<uint32_t>(ptx, image, 352, Shape{}, Shape{32, 1, 1}, judge)};
}

} // namespace fwp::conformance
