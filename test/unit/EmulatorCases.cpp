//===- EmulatorCases.cpp - Kernel builders and the list of every case -----===//
//
// The elementwise kernel and its judge, shared by most cases, and allCases(),
// the list the conformance runner walks. A case function missing from it
// would run on the emulator only, so each family's list below names every
// function of its EmulatorCases<Family>.cpp, in the order of the header.
//
//===----------------------------------------------------------------------===//

#include "EmulatorCases.h"

#include <cstdio>
#include <sstream>

namespace fwp::conformance {

int64_t ulpDistance(float a, float b) {
  auto ordered = [](float value) {
    int64_t bits = bitsOf(value);
    return bits & 0x80000000 ? -(bits & 0x7fffffff) : bits;
  };
  int64_t distance = ordered(a) - ordered(b);
  return distance < 0 ? -distance : distance;
}

std::string hex(uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx",
                static_cast<unsigned long long>(value));
  return text;
}

std::string inOutKernel(const std::string &declarations,
                        const std::string &body, const std::string &preamble) {
  return ptxHeader() + preamble +
         ".visible .entry test_kernel(.param .u64 in, .param .u64 out)\n"
         "{\n"
         "  .reg .b64 %inp, %outp;\n"
         "  .reg .b32 %t;\n" +
         declarations +
         "  ld.param.u64 %inp, [in];\n"
         "  ld.param.u64 %outp, [out];\n"
         "  cvta.to.global.u64 %inp, %inp;\n"
         "  cvta.to.global.u64 %outp, %outp;\n"
         "  mov.u32 %t, %tid.x;\n" +
         body + "  ret;\n}\n";
}

std::string elementwiseKernel(const std::string &resultType,
                              const std::vector<std::string> &sourceTypes,
                              const std::string &body) {
  static const char *names[] = {"%a", "%b", "%c"};
  std::string declarations = "  .reg .b64 %ia, %oa;\n"
                             "  .reg .pred %p<4>;\n"
                             "  .reg .b32 %x<8>;\n"
                             "  .reg .b64 %y<8>;\n"
                             "  .reg .b16 %h<8>;\n"
                             "  .reg .f32 %fx<8>;\n"
                             "  .reg .f64 %fy<8>;\n"
                             "  .reg ." +
                             resultType + " %d;\n";
  std::string loads;
  size_t sources = sourceTypes.size();
  for (size_t i = 0; i < sources && i < 3; ++i) {
    declarations += "  .reg ." + sourceTypes[i] + " " + names[i] + ";\n";
    loads += "  ld.global." + sourceTypes[i] + " " + names[i] + ", [%ia+" +
             std::to_string(i * 8) + "];\n";
  }
  std::string addressing = "  mul.wide.u32 %ia, %t, " +
                           std::to_string(sources * 8) +
                           ";\n"
                           "  add.s64 %ia, %inp, %ia;\n"
                           "  mul.wide.u32 %oa, %t, 8;\n"
                           "  add.s64 %oa, %outp, %oa;\n";
  return inOutKernel(declarations, addressing + loads + body +
                                       "\n  st.global." + resultType +
                                       " [%oa], %d;\n");
}

namespace {

/// `body` on one line, for a verdict's name.
std::string oneLine(const std::string &body) {
  std::string line;
  bool space = false;
  for (char c : body) {
    if (c == '\n' || c == ' ' || c == '\t') {
      space = !line.empty();
      continue;
    }
    if (space)
      line += ' ';
    space = false;
    line += c;
  }
  return line;
}

std::string describeF32(uint64_t bits) {
  std::ostringstream text;
  text << hex(bits) << " (" << floatOf(static_cast<uint32_t>(bits)) << ")";
  return text.str();
}

Verdict judgeElement(const std::string &name, const ElementCase &c,
                     uint64_t got) {
  Verdict verdict{name, false, hex(got), ""};
  switch (c.match) {
  case Match::Bits:
    verdict.passed = got == c.expected;
    verdict.expected = hex(c.expected);
    break;
  case Match::AnyNaNF32:
    verdict.passed = isNanF32(got);
    verdict.expected = "an f32 NaN";
    break;
  case Match::AnyNaNF16:
    verdict.passed = isNanF16(got);
    verdict.expected = "an f16 NaN";
    break;
  case Match::AnyNaNBf16:
    verdict.passed = isNanBf16(got);
    verdict.expected = "a bf16 NaN";
    break;
  case Match::AnyNaNF64:
    verdict.passed = std::isnan(doubleOf(got));
    verdict.expected = "an f64 NaN";
    break;
  case Match::WithinUlpsF32: {
    float reference = static_cast<float>(c.exact);
    float value = floatOf(static_cast<uint32_t>(got));
    verdict.passed = !std::isnan(value) &&
                     ulpDistance(value, reference) <= int64_t(c.tolerance);
    verdict.got = describeF32(got);
    verdict.expected = "within " + std::to_string(int64_t(c.tolerance)) +
                       " ulp of " + describeF32(bitsOf(reference));
    break;
  }
  case Match::WithinF32: {
    long double error =
        std::fabs(floatOf(static_cast<uint32_t>(got)) - c.exact);
    verdict.passed = error <= c.tolerance;
    std::ostringstream expected;
    expected << "within " << static_cast<double>(c.tolerance) << " of "
             << static_cast<double>(c.exact);
    verdict.got = describeF32(got);
    verdict.expected = expected.str();
    break;
  }
  }
  return verdict;
}

} // namespace

KernelCase elementwise(const std::string &resultType,
                       const std::vector<std::string> &sourceTypes,
                       const std::string &body, unsigned resultBytes,
                       std::vector<ElementCase> cases) {
  std::vector<uint64_t> input;
  for (const ElementCase &c : cases)
    for (size_t i = 0; i < sourceTypes.size(); ++i)
      input.push_back(i < c.sources.size() ? c.sources[i] : 0);
  Shape block{static_cast<unsigned>(cases.size()), 1, 1};
  std::string instruction = oneLine(body);
  auto judge = [cases, resultBytes, instruction,
                sourceCount =
                    sourceTypes.size()](const std::vector<uint64_t> &output) {
    std::vector<Verdict> verdicts;
    for (size_t i = 0; i < cases.size(); ++i) {
      std::string name = instruction + " [" + cases[i].what + "]";
      if (cases[i].sources.size() != sourceCount) {
        verdicts.push_back(
            {name, false, "a malformed case", "one source each"});
        continue;
      }
      uint64_t got = i < output.size() ? output[i] : kSentinel64;
      if (resultBytes < 8)
        got &= (uint64_t(1) << (8 * resultBytes)) - 1;
      verdicts.push_back(judgeElement(name, cases[i], got));
    }
    return verdicts;
  };
  return inOutCase<uint64_t>(elementwiseKernel(resultType, sourceTypes, body),
                             input, cases.size(), Shape{}, block, judge);
}

namespace {

CaseList family(const char *name, std::vector<CaseList (*)()> makers) {
  CaseList cases;
  for (CaseList (*make)() : makers)
    append(cases, make());
  for (KernelCase &c : cases)
    c.family = name;
  return cases;
}

} // namespace

CaseList allCases() {
  CaseList cases;
  append(cases, family("integer",
                       {integerAddAndSubWrapModuloTheWidth,
                        integerMulLoHiAndWideTakeTheRightHalfOfTheProduct,
                        integerMadAddsTheLowOrWideProduct,
                        integerDivAndRemSignedAndUnsigned,
                        integerShiftAmountsBeyondTheWidthClampToTheWidth,
                        integerBitwiseLogicPopcClzCnot,
                        integerBitFieldExtractSignAndZeroExtends,
                        integerMinMaxNegAbsAreSignAware,
                        integerSetpComparesSignedOrUnsignedAndSelpSelects}));
  append(cases, family("float",
                       {floatRoundingModifiersPickTheRightNeighbourInAddSubMul,
                        floatFmaRoundsOnceUnderEachModifier,
                        floatF64AddAndFmaRoundLikeIeee,
                        floatDivRcpSqrtWithRoundingAreCorrectlyRounded,
                        floatInvalidOperationsGiveNaN,
                        floatMinMaxReturnTheNumberWhenOneInputIsNaN,
                        floatSetpOrderedIsFalseAndUnorderedTrueOnNaN,
                        floatNegAndAbsChangeOnlyTheSign,
                        floatFtzFlushesSubnormalInputsAndResultsToSignedZero,
                        floatSatClampsToTheUnitIntervalAndNaNToPlusZero}));
  append(cases,
         family("half", {halfAddSubMulRoundToNearestEven, halfFmaRoundsOnce,
                         halfSatAndFtz, halfSignMinMaxAndPackedPairs}));
  append(cases,
         family("approx",
                {approxEx2IsWithinTwoUlpAndFollowsItsTable,
                 approxEx2FtzFlushesASubnormalResultToPlusZero,
                 approxLg2IsWithinTheStatedErrorAndFollowsItsTable,
                 approxRsqrtIsWithinTheStatedErrorAndFollowsItsTable,
                 approxSinCosAreWithinTheStatedAbsoluteError,
                 approxTanhIsWithinTheStatedErrorAndPassesSubnormalsThrough,
                 approxRcpApproxIsWithinOneUlpAndFollowsItsTable,
                 approxDivFullAndDivApproxMeetTheirBounds}));
  append(cases,
         family("conversion",
                {conversionIntegerWideningSignOrZeroExtends,
                 conversionIntegerNarrowingTruncatesOrSaturates,
                 conversionFloatToIntegerRoundsClampsAndMapsNaN,
                 conversionIntegerToFloatRoundsWithTheModifier,
                 conversionF32AndF64ConvertExactlyOrWithRounding,
                 conversionSatClampsToTheUnitIntervalAndNaNToZero,
                 conversionF32ToF16RoundsToNearestEvenOverflowsAndKeepsNaN,
                 conversionF32ToBf16RoundsToNearestEvenOverflowsAndKeepsNaN,
                 conversionPackedX2PutsTheFirstOperandInTheUpperHalf,
                 conversionTf32RoundsToNearestTiesAwayAndKeepsInfAndNaN}));
  append(cases,
         family("memory", {memoryParamSpaceReadsScalarsOfEveryWidthAndVectors,
                           memoryGlobalLoadsAndStoresOfEveryWidthAndVector,
                           memorySharedLoadsAndStoresOfEveryWidth,
                           memorySharedStoreIsSeenByAnotherWarpAfterBarSync,
                           memoryAtomicsFromManyThreadsOfManyCtasCombineExactly,
                           memoryCpAsyncCopiesOf4And8And16BytesLandByGroup}));
  append(cases, family("control",
                       {controlDivergentBranchesReconvergeBeforeTheJoin,
                        controlLoopsRunADifferentTripCountPerLane,
                        controlBrxIdxJumpsToTheIndexedTargetPerLane,
                        controlExitEndsOnlyTheLanesThatTakeIt,
                        controlSpecialRegistersDescribeA2DGridOfPartialWarps}));
  append(cases,
         family("warp", {warpShflBflyReductionGivesEveryLaneTheWarpTotal,
                         warpShflUpInclusiveScanAddsWhereThePredicateHolds,
                         warpShflIdxAndDownStayInsideSegments}));
  append(cases,
         family("matrix",
                {matrixMmaTf32M16n8k8MatchesTheProductExactly,
                 matrixMmaBf16M16n8k16MatchesTheProductExactly,
                 matrixMmaF16M16n8k16MatchesTheProductExactly,
                 matrixMmaTf32IgnoresTheLow13MantissaBits,
                 matrixMmaRandomOperandsAreWithinSinglePrecisionAccumulation,
                 matrixLdmatrixGivesEachLaneItsRowFragment}));
  return cases;
}

const char *const kStoreR9ToOut = R"(
  mul.wide.u32 %rd9, %t, 4;
  add.s64 %rd9, %outp, %rd9;
  st.global.u32 [%rd9], %r9;
)";

KernelCase perThreadCase(const std::string &name, std::string ptx,
                         unsigned threads, uint32_t (*expected)(uint32_t)) {
  return inOutCase<uint32_t>(
      std::move(ptx), {}, threads, Shape{}, Shape{threads, 1, 1},
      [name, threads, expected](const std::vector<uint32_t> &got) {
        std::vector<uint32_t> want(threads);
        for (uint32_t t = 0; t < threads; ++t)
          want[t] = expected(t);
        return std::vector<Verdict>{compareWords(name, got, want)};
      });
}

} // namespace fwp::conformance
