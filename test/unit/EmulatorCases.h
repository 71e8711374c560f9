//===- EmulatorCases.h - PTX kernels with answers from the ISA --*- C++ -*-===//
//
// The emulator's instruction tests as data: small PTX kernels, what they are
// launched with, and a judge that compares what they wrote with answers
// worked out by hand from NVIDIA's PTX ISA (bit for bit where the ISA fixes
// the bits, within its stated bound for approximate instructions and matrix
// products). Each case function cites the ISA sections its answers rest on.
//
// Nothing here launches anything, so that the same cases hold two machines to
// the same answers: EmulatorTest runs them on the emulator library
// (EmulatorTestUtils.h), and fwp-ptx-conformance (test/gpu-bundle) runs them
// through a CUDA driver: NVIDIA's on a GPU, or fwp's stand-in one. So this
// header and EmulatorCases*.cpp use neither gtest, the emulator nor the
// runtime.
//
// A case whose answer the ISA leaves to the implementation is kept for the
// emulator (it pins the emulator's choice) but carries the reason in
// `emulatorOnly`, and the conformance runner leaves it out.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_TEST_UNIT_EMULATORCASES_H
#define FWP_TEST_UNIT_EMULATORCASES_H

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace fwp::conformance {

/// The byte output buffers are filled with before a launch: a result word the
/// kernel never stored reads back as 0xa5a5..., which no case expects.
constexpr uint8_t kSentinelByte = 0xa5;
constexpr uint32_t kSentinel32 = 0xa5a5a5a5u;
constexpr uint64_t kSentinel64 = 0xa5a5a5a5a5a5a5a5ull;

inline uint32_t bitsOf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}
inline uint64_t bitsOf(double value) {
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}
inline float floatOf(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}
inline double doubleOf(uint64_t bits) {
  double value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}
inline bool isNanF32(uint64_t bits) {
  return (bits & 0x7f800000u) == 0x7f800000u && (bits & 0x007fffffu) != 0;
}
inline bool isNanF16(uint64_t bits) {
  return (bits & 0x7c00u) == 0x7c00u && (bits & 0x03ffu) != 0;
}
inline bool isNanBf16(uint64_t bits) {
  return (bits & 0x7f80u) == 0x7f80u && (bits & 0x007fu) != 0;
}

/// How many f32 values lie between `a` and `b` (0 when equal, 1 for
/// neighbours; +0 and -0 count as equal). Both must be non-NaN.
int64_t ulpDistance(float a, float b);

/// "0x..." for messages.
std::string hex(uint64_t value);

/// The bytes of `values`, and `bytes` read back as words (a partial last word
/// is dropped).
template <typename Word>
std::vector<uint8_t> bytesOf(const std::vector<Word> &values) {
  std::vector<uint8_t> bytes(values.size() * sizeof(Word));
  if (!bytes.empty())
    std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}
template <typename Word>
std::vector<Word> wordsOf(const std::vector<uint8_t> &bytes) {
  std::vector<Word> words(bytes.size() / sizeof(Word));
  if (!words.empty())
    std::memcpy(words.data(), bytes.data(), words.size() * sizeof(Word));
  return words;
}

/// Launch dimensions, converted by each runner to its own.
struct Shape {
  unsigned x = 1, y = 1, z = 1;
};

/// One kernel parameter: a device buffer (the parameter is its address) or a
/// plain value of the parameter's size.
struct Argument {
  bool isBuffer = true;
  /// A buffer's first bytes (the rest is kSentinelByte), or the value.
  std::vector<uint8_t> bytes;
  /// A buffer's size in bytes (runners allocate at least 8).
  size_t bufferBytes = 0;

  static Argument buffer(std::vector<uint8_t> contents, size_t bytes) {
    return Argument{true, std::move(contents), bytes};
  }
  template <typename T> static Argument value(T value) {
    std::vector<uint8_t> bytes(sizeof(T));
    std::memcpy(bytes.data(), &value, sizeof(T));
    return Argument{false, std::move(bytes), 0};
  }
};

/// One check of what a kernel wrote: its name, whether it held, and (for a
/// message) what was found and what the ISA says.
struct Verdict {
  std::string name;
  bool passed = false;
  std::string got, expected;
};

/// Each buffer argument's contents after the launch, in argument order.
using Buffers = std::vector<std::vector<uint8_t>>;
using Judge = std::function<std::vector<Verdict>(const Buffers &)>;

/// A kernel, its launch and the judge of its results.
struct KernelCase {
  std::string family; // e.g. "integer"; set by the family lists below
  std::string ptx;
  std::string kernel = "test_kernel";
  Shape grid, block;
  std::vector<Argument> arguments;
  Judge judge;
  /// Why the ISA leaves this answer to the implementation; null when it
  /// fixes it. Such cases run on the emulator only.
  const char *emulatorOnly = nullptr;
};

using CaseList = std::vector<KernelCase>;

/// `kernelCase`, kept off the conformance run because the ISA leaves its
/// answer to the implementation (`reason` says where).
inline KernelCase onlyOnTheEmulator(KernelCase kernelCase, const char *reason) {
  kernelCase.emulatorOnly = reason;
  return kernelCase;
}

inline void append(CaseList &into, CaseList more) {
  for (KernelCase &one : more)
    into.push_back(std::move(one));
}

/// Passes when `got` equals `expected` word for word; otherwise lists the
/// first few words that differ.
template <typename Word>
Verdict compareWords(std::string name, const std::vector<Word> &got,
                     const std::vector<Word> &expected);

//===----------------------------------------------------------------------===//
// Kernel builders
//===----------------------------------------------------------------------===//

/// The module header every case kernel uses. A runner on an older chip
/// rewrites the target.
inline std::string ptxHeader() {
  return ".version 8.0\n.target sm_90\n.address_size 64\n\n";
}

/// The prologue of a `test_kernel(.param .u64 in, .param .u64 out)`: leaves
/// the global addresses of the buffers in %inp and %outp (.b64) and %tid.x in
/// %t (.b32). `declarations` are the kernel's own .reg lines.
std::string inOutKernel(const std::string &declarations,
                        const std::string &body,
                        const std::string &preamble = "");

/// PTX that stores %r9 (.b32; %rd9 a .b64 scratch) to out[%t]: the result
/// of an inOutKernel whose threads compute one word each.
extern const char *const kStoreR9ToOut;

/// `threads` threads of one CTA run inOutKernel-style `ptx` (no input);
/// thread t's word must be `expected(t)`.
KernelCase perThreadCase(const std::string &name, std::string ptx,
                         unsigned threads, uint32_t (*expected)(uint32_t));

/// A case running inOutKernel-style `ptx` with `in` holding `input` and `out`
/// (`outputWords` words, sentinel-filled) given to `judge` afterwards.
template <typename Word>
KernelCase
inOutCase(std::string ptx, const std::vector<Word> &input, size_t outputWords,
          Shape grid, Shape block,
          std::function<std::vector<Verdict>(const std::vector<Word> &)> judge);

/// An elementwise kernel: thread t loads source operands %a, %b, %c (as many
/// as `sourceTypes` names, of those PTX types) from 8-byte slots
/// in[(t * sources + i) * 8], runs `body`, and stores %d (of PTX type
/// `resultType`) to the 8-byte slot out[t * 8]. The body may use the scratch
/// registers %p<4> (.pred), %x<8> (.b32), %y<8> (.b64), %h<8> (.b16),
/// %fx<8> (.f32) and %fy<8> (.f64).
std::string elementwiseKernel(const std::string &resultType,
                              const std::vector<std::string> &sourceTypes,
                              const std::string &body);

/// How an elementwise result is judged.
enum class Match {
  Bits,          // equal to `expected`
  AnyNaNF32,     // any f32 NaN (the ISA leaves f32 NaN payloads open)
  AnyNaNF16,     // any f16 NaN
  AnyNaNBf16,    // any bf16 NaN
  AnyNaNF64,     // any f64 NaN
  WithinUlpsF32, // within `tolerance` f32 ulps of `exact` rounded to f32
  WithinF32,     // |result - exact| <= `tolerance`
};

/// One thread's sources (low bytes first) and its hand-worked result (`what`
/// says why).
struct ElementCase {
  std::string what;
  std::vector<uint64_t> sources;
  uint64_t expected = 0;
  Match match = Match::Bits;
  long double exact = 0;     // WithinUlpsF32, WithinF32
  long double tolerance = 0; // ulps or an absolute error
};

inline ElementCase anyNaNF32(std::string what, std::vector<uint64_t> sources) {
  return {std::move(what), std::move(sources), 0, Match::AnyNaNF32};
}
inline ElementCase anyNaNF16(std::string what, std::vector<uint64_t> sources) {
  return {std::move(what), std::move(sources), 0, Match::AnyNaNF16};
}
inline ElementCase anyNaNBf16(std::string what, std::vector<uint64_t> sources) {
  return {std::move(what), std::move(sources), 0, Match::AnyNaNBf16};
}
inline ElementCase anyNaNF64(std::string what, std::vector<uint64_t> sources) {
  return {std::move(what), std::move(sources), 0, Match::AnyNaNF64};
}

/// Runs `body` elementwise (see elementwiseKernel) with one thread per case;
/// each thread's result, masked to `resultBytes`, is judged by its case's
/// Match. One verdict per case, named by the body and `what`.
KernelCase elementwise(const std::string &resultType,
                       const std::vector<std::string> &sourceTypes,
                       const std::string &body, unsigned resultBytes,
                       std::vector<ElementCase> cases);

//===----------------------------------------------------------------------===//
// The cases, one function per EmulatorTest test of the same name
//===----------------------------------------------------------------------===//

// EmulatorCasesInteger.cpp
CaseList integerAddAndSubWrapModuloTheWidth();
CaseList integerMulLoHiAndWideTakeTheRightHalfOfTheProduct();
CaseList integerMadAddsTheLowOrWideProduct();
CaseList integerDivAndRemSignedAndUnsigned();
CaseList integerShiftAmountsBeyondTheWidthClampToTheWidth();
CaseList integerBitwiseLogicPopcClzCnot();
CaseList integerBitFieldExtractSignAndZeroExtends();
CaseList integerMinMaxNegAbsAreSignAware();
CaseList integerSetpComparesSignedOrUnsignedAndSelpSelects();

// EmulatorCasesFloat.cpp
CaseList floatRoundingModifiersPickTheRightNeighbourInAddSubMul();
CaseList floatFmaRoundsOnceUnderEachModifier();
CaseList floatF64AddAndFmaRoundLikeIeee();
CaseList floatDivRcpSqrtWithRoundingAreCorrectlyRounded();
CaseList floatInvalidOperationsGiveNaN();
CaseList floatMinMaxReturnTheNumberWhenOneInputIsNaN();
CaseList floatSetpOrderedIsFalseAndUnorderedTrueOnNaN();
CaseList floatNegAndAbsChangeOnlyTheSign();
CaseList floatFtzFlushesSubnormalInputsAndResultsToSignedZero();
CaseList floatSatClampsToTheUnitIntervalAndNaNToPlusZero();

// EmulatorCasesApprox.cpp
CaseList approxEx2IsWithinTwoUlpAndFollowsItsTable();
CaseList approxEx2FtzFlushesASubnormalResultToPlusZero();
CaseList approxLg2IsWithinTheStatedErrorAndFollowsItsTable();
CaseList approxRsqrtIsWithinTheStatedErrorAndFollowsItsTable();
CaseList approxSinCosAreWithinTheStatedAbsoluteError();
CaseList approxTanhIsWithinTheStatedErrorAndPassesSubnormalsThrough();
CaseList approxRcpApproxIsWithinOneUlpAndFollowsItsTable();
CaseList approxDivFullAndDivApproxMeetTheirBounds();

// EmulatorCasesConversion.cpp
CaseList conversionIntegerWideningSignOrZeroExtends();
CaseList conversionIntegerNarrowingTruncatesOrSaturates();
CaseList conversionFloatToIntegerRoundsClampsAndMapsNaN();
CaseList conversionIntegerToFloatRoundsWithTheModifier();
CaseList conversionF32AndF64ConvertExactlyOrWithRounding();
CaseList conversionSatClampsToTheUnitIntervalAndNaNToZero();
CaseList conversionF32ToF16RoundsToNearestEvenOverflowsAndKeepsNaN();
CaseList conversionF32ToBf16RoundsToNearestEvenOverflowsAndKeepsNaN();
CaseList conversionPackedX2PutsTheFirstOperandInTheUpperHalf();

// EmulatorCasesHalf.cpp
CaseList halfAddSubMulRoundToNearestEven();
CaseList halfFmaRoundsOnce();
CaseList halfSatAndFtz();
CaseList halfSignMinMaxAndPackedPairs();
CaseList conversionTf32RoundsToNearestTiesAwayAndKeepsInfAndNaN();

// EmulatorCasesMemory.cpp
CaseList memoryParamSpaceReadsScalarsOfEveryWidthAndVectors();
CaseList memoryGlobalLoadsAndStoresOfEveryWidthAndVector();
CaseList memorySharedLoadsAndStoresOfEveryWidth();
CaseList memorySharedStoreIsSeenByAnotherWarpAfterBarSync();
CaseList memoryAtomicsFromManyThreadsOfManyCtasCombineExactly();
CaseList memoryCpAsyncCopiesOf4And8And16BytesLandByGroup();

// EmulatorCasesControl.cpp
CaseList controlDivergentBranchesReconvergeBeforeTheJoin();
CaseList controlLoopsRunADifferentTripCountPerLane();
CaseList controlBrxIdxJumpsToTheIndexedTargetPerLane();
CaseList controlExitEndsOnlyTheLanesThatTakeIt();
CaseList controlSpecialRegistersDescribeA2DGridOfPartialWarps();

// EmulatorCasesWarp.cpp
CaseList warpShflBflyReductionGivesEveryLaneTheWarpTotal();
CaseList warpShflUpInclusiveScanAddsWhereThePredicateHolds();
CaseList warpShflIdxAndDownStayInsideSegments();

// EmulatorCasesMatrix.cpp
CaseList matrixMmaTf32M16n8k8MatchesTheProductExactly();
CaseList matrixMmaBf16M16n8k16MatchesTheProductExactly();
CaseList matrixMmaF16M16n8k16MatchesTheProductExactly();
CaseList matrixMmaTf32IgnoresTheLow13MantissaBits();
CaseList matrixMmaRandomOperandsAreWithinSinglePrecisionAccumulation();
CaseList matrixLdmatrixGivesEachLaneItsRowFragment();

/// Every case above, each with its family set ("integer", "float", "approx",
/// "conversion", "memory", "control", "warp", "matrix"), in this order.
CaseList allCases();

//===----------------------------------------------------------------------===//
// Template definitions
//===----------------------------------------------------------------------===//

template <typename Word>
Verdict compareWords(std::string name, const std::vector<Word> &got,
                     const std::vector<Word> &expected) {
  Verdict verdict{std::move(name), true, "", ""};
  size_t differing = 0;
  if (got.size() != expected.size()) {
    verdict.passed = false;
    verdict.got = std::to_string(got.size()) + " words";
    verdict.expected = std::to_string(expected.size()) + " words";
    return verdict;
  }
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] == expected[i])
      continue;
    verdict.passed = false;
    if (++differing > 4)
      continue;
    std::string separator = differing > 1 ? ", " : "";
    verdict.got += separator + "[" + std::to_string(i) + "] " + hex(got[i]);
    verdict.expected +=
        separator + "[" + std::to_string(i) + "] " + hex(expected[i]);
  }
  if (differing > 4)
    verdict.got += " and " + std::to_string(differing - 4) + " more";
  return verdict;
}

template <typename Word>
KernelCase inOutCase(
    std::string ptx, const std::vector<Word> &input, size_t outputWords,
    Shape grid, Shape block,
    std::function<std::vector<Verdict>(const std::vector<Word> &)> judge) {
  KernelCase kernelCase;
  kernelCase.ptx = std::move(ptx);
  kernelCase.grid = grid;
  kernelCase.block = block;
  std::vector<uint8_t> inputBytes = bytesOf(input);
  size_t inputSize = inputBytes.size();
  kernelCase.arguments = {Argument::buffer(std::move(inputBytes), inputSize),
                          Argument::buffer({}, outputWords * sizeof(Word))};
  kernelCase.judge = [judge](const Buffers &buffers) {
    return judge(wordsOf<Word>(buffers.at(1)));
  };
  return kernelCase;
}

} // namespace fwp::conformance

#endif // FWP_TEST_UNIT_EMULATORCASES_H
