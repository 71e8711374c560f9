//===- CpuWorkspaceTest.cpp - Compiled CPU calls free what they allocate --===//
//
// A compiled entry point allocates its intermediates (per call, and in its
// kernels per instance) and must free all of them before it returns: the
// heap a process has in use is the same after many calls as after one.
// Through the chunk stages, the tiles a kernel allocated outside its chunk
// loop once went unfreed (MLIR's buffer deallocation lacked scf's rules), a
// few MB per call, found only by a long benchmark's resident set.
//
//===----------------------------------------------------------------------===//

#include "AttentionTestUtils.h"
#include "BackendUnderTest.h"
#include "TestUtils.h"

#include "fwp/JIT/JIT.h"

#include <gtest/gtest.h>

#include <vector>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace {

using fwp::jit::DType;
using fwp::jit::Rule;
using fwp::test::Case;
using fwp::test::Problem;

#if defined(__GLIBC__)
/// Bytes the process's main malloc arena and its mmapped blocks hold for
/// the program (glibc). Instances that OpenMP runs on other threads
/// allocate from their threads' arenas, so a leak shows in part: the
/// caller's thread runs its share of every kernel.
size_t heapInUse() {
  struct mallinfo2 info = mallinfo2();
  return info.uordblks + info.hblkhd;
}

/// One forward and one backward call of `kernel` on `p` in f32; the
/// buffers live only for the call.
void forwardAndBackward(const fwp::jit::CompiledAttention &kernel,
                        const Problem &p) {
  auto f = [](const std::vector<double> &v) {
    return fwp::test::cast<float>(v);
  };
  std::vector<float> x = f(p.x), wq = f(p.params.wQ), wk = f(p.params.wK),
                     wv = f(p.params.wV), wb = f(p.params.wBeta),
                     wo = f(p.params.wO), bo = f(p.params.bO), dy = f(p.dy);
  std::vector<float> y(x.size()), dx(x.size()), dwq(wq.size()), dwk(wk.size()),
      dwv(wv.size()), dwb(wb.size()), dwo(wo.size()), dbo(bo.size());
  kernel.forward(p.shape.seqLen, p.shape.batch, x.data(), wq.data(), wk.data(),
                 wv.data(), wb.data(), wo.data(), bo.data(), y.data());
  kernel.backward(p.shape.seqLen, p.shape.batch, x.data(), wq.data(), wk.data(),
                  wv.data(), wb.data(), wo.data(), bo.data(), dy.data(),
                  dx.data(), dwq.data(), dwk.data(), dwv.data(), dwb.data(),
                  dwo.data(), dbo.data());
}
#endif

TEST(CpuWorkspace, CallsFreeWhatTheyAllocate) {
  if (fwp::test::kBackend != fwp::jit::Backend::Cpu)
    GTEST_SKIP() << "the CPU's allocations: the CUDA build has nothing to add";
#if !defined(__GLIBC__)
  GTEST_SKIP() << "counts the heap in use with glibc's mallinfo2";
#else
  // Several chunks, a partial last one, both DPFP maps in the kernels.
  const Case c{Rule::Delta, 2, 8, 2, 16, 70, 2};
  auto kernel =
      fwp::jit::compileUncached(c.desc(DType::F32, fwp::test::kBackend), {});
  Problem p = fwp::test::makeProblem(c, DType::F32, 5);
  forwardAndBackward(*kernel, p); // OpenMP's team, glibc's arenas
  size_t before = heapInUse();
  for (int call = 0; call < 4; ++call)
    forwardAndBackward(*kernel, p);
  // Tens of bytes may come and go outside the calls (the OpenMP runtime's
  // own bookkeeping); one tile of 64 floats left per kernel instance would
  // be 20 KB over these calls.
  EXPECT_LE(heapInUse(), before + 4096) << "bytes in use after 4 more calls";
#endif
}

} // namespace
