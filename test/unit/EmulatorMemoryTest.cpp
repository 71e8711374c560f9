//===- EmulatorMemoryTest.cpp - ld, st, atom and cp.async -----------------===//
//
// The emulator's state spaces through ld/st, bar.sync, atom and cp.async, case
// by case from EmulatorCasesMemory.cpp, where each case cites the PTX ISA
// section its answers rest on. The same cases run on a GPU through
// fwp-ptx-conformance.
//
//===----------------------------------------------------------------------===//

#include "EmulatorTestUtils.h"

#include <gtest/gtest.h>

using namespace fwp::emu::test;
namespace cases = fwp::conformance;

namespace {

TEST(EmulatorMemory, ParamSpaceReadsScalarsOfEveryWidthAndVectors) {
  expectCasesPass(cases::memoryParamSpaceReadsScalarsOfEveryWidthAndVectors());
}

TEST(EmulatorMemory, GlobalLoadsAndStoresOfEveryWidthAndVector) {
  expectCasesPass(cases::memoryGlobalLoadsAndStoresOfEveryWidthAndVector());
}

TEST(EmulatorMemory, SharedLoadsAndStoresOfEveryWidth) {
  expectCasesPass(cases::memorySharedLoadsAndStoresOfEveryWidth());
}

TEST(EmulatorMemory, SharedStoreIsSeenByAnotherWarpAfterBarSync) {
  expectCasesPass(cases::memorySharedStoreIsSeenByAnotherWarpAfterBarSync());
}

TEST(EmulatorMemory, AtomicsFromManyThreadsOfManyCtasCombineExactly) {
  expectCasesPass(
      cases::memoryAtomicsFromManyThreadsOfManyCtasCombineExactly());
}

TEST(EmulatorMemory, CpAsyncCopiesOf4And8And16BytesLandByGroup) {
  expectCasesPass(cases::memoryCpAsyncCopiesOf4And8And16BytesLandByGroup());
}

} // namespace
