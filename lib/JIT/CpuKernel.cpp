//===- CpuKernel.cpp - fwp.attention JIT-compiled for the host ------------===//
//
// One kernel = one module holding the forward and the backward:
//
//   func.func @fwp_attention(%x: tensor<?x?xDMxT>, %w_q, %w_k, %w_v: DMxDM,
//                            %w_beta: HxDM, %w_o: DMxDM, %b_o: DM,
//                            %y: memref<?x?xDMxT>)
//     %r = fwp.attention %x, ... heads = H nu = N eps = E rule = R
//     bufferization.materialize_in_destination %r in restrict writable %y
//
//   func.func @fwp_attention_grad(%x, %w_q, %w_k, %w_v, %w_beta, %w_o, %b_o,
//                                 %dy: tensor<?x?xDMxT>,
//                                 %dx: memref<?x?xDMxT>, %dw_q, %dw_k,
//                                 %dw_v: memref<DMxDM>, %dw_beta: HxDM,
//                                 %dw_o: DMxDM, %db_o: DM)
//     %g:7 = fwp.attention_grad %x, ... dy(%dy) heads = H nu = N ...
//     bufferization.materialize_in_destination %g#i in restrict writable ...
//
// lowered together by fwp-to-cpu and handed to MLIR's ExecutionEngine
// (CpuCompiler.h). The backward recomputes the forward it needs (the
// decomposition of fwp.attention_grad), so the two entry points share no
// state and each call allocates its own scratch.
//
// Why outputs are memref arguments rather than results: fwp-to-cpu turns
// results into out-parameters only for static shapes; a dynamically shaped
// result would come back as a buffer malloc'ed by the kernel. Writing into
// the caller's buffers keeps every allocation on the caller's side.
//
//===----------------------------------------------------------------------===//

#include "AttentionModule.h"
#include "CpuCompiler.h"
#include "Kernel.h"

#include "fwp/Dialect/FwpOps.h"

using namespace mlir;

namespace fwp::jit {

namespace {

//===----------------------------------------------------------------------===//
// The kernel
//===----------------------------------------------------------------------===//

class CpuKernel final : public CompiledAttention::Impl {
public:
  CpuKernel(const KernelDesc &desc, CpuModule module)
      : Impl(desc), module(std::move(module)) {}

  void forward(const ForwardArgs &args) const override {
    if (desc.dtype == DType::F32)
      callForward<float>(args);
    else
      callForward<double>(args);
  }

  void backward(const BackwardArgs &args) const override {
    if (desc.dtype == DType::F32)
      callBackward<float>(args);
    else
      callBackward<double>(args);
  }

private:
  template <typename T> void callForward(const ForwardArgs &a) const {
    using M1 = StridedMemRefType<T, 1>;
    using M2 = StridedMemRefType<T, 2>;
    using M3 = StridedMemRefType<T, 3>;
    using Fn = void (*)(M3 *, M2 *, M2 *, M2 *, M2 *, M2 *, M1 *, M3 *);
    int64_t dm = desc.dModel();
    M3 x = view<T, 3>(a.x, {a.seqLen, a.batch, dm});
    M2 wq = view<T, 2>(a.wQ, {dm, dm}), wk = view<T, 2>(a.wK, {dm, dm}),
       wv = view<T, 2>(a.wV, {dm, dm}), wo = view<T, 2>(a.wO, {dm, dm});
    M2 wb = view<T, 2>(a.wBeta, {desc.heads, dm});
    M1 bo = view<T, 1>(a.bO, {dm});
    M3 y = view<T, 3>(a.y, {a.seqLen, a.batch, dm});
    reinterpret_cast<Fn>(module.entries[0])(&x, &wq, &wk, &wv, &wb, &wo, &bo,
                                            &y);
  }

  template <typename T> void callBackward(const BackwardArgs &a) const {
    using M1 = StridedMemRefType<T, 1>;
    using M2 = StridedMemRefType<T, 2>;
    using M3 = StridedMemRefType<T, 3>;
    using Fn = void (*)(M3 *, M2 *, M2 *, M2 *, M2 *, M2 *, M1 *, M3 *, M3 *,
                        M2 *, M2 *, M2 *, M2 *, M2 *, M1 *);
    int64_t dm = desc.dModel(), h = desc.heads;
    std::array<int64_t, 3> steps = {a.seqLen, a.batch, dm};
    M3 x = view<T, 3>(a.x, steps), dy = view<T, 3>(a.dy, steps),
       dx = view<T, 3>(a.dx, steps);
    M2 wq = view<T, 2>(a.wQ, {dm, dm}), wk = view<T, 2>(a.wK, {dm, dm}),
       wv = view<T, 2>(a.wV, {dm, dm}), wb = view<T, 2>(a.wBeta, {h, dm}),
       wo = view<T, 2>(a.wO, {dm, dm});
    M1 bo = view<T, 1>(a.bO, {dm});
    M2 dwq = view<T, 2>(a.dwQ, {dm, dm}), dwk = view<T, 2>(a.dwK, {dm, dm}),
       dwv = view<T, 2>(a.dwV, {dm, dm}), dwb = view<T, 2>(a.dwBeta, {h, dm}),
       dwo = view<T, 2>(a.dwO, {dm, dm});
    M1 dbo = view<T, 1>(a.dbO, {dm});
    reinterpret_cast<Fn>(module.entries[1])(&x, &wq, &wk, &wv, &wb, &wo, &bo,
                                            &dy, &dx, &dwq, &dwk, &dwv, &dwb,
                                            &dwo, &dbo);
  }

  // Owns the compiled code; it no longer needs the MLIR context, which
  // compileCpuModule drops once the engine exists.
  CpuModule module;
};

} // namespace

std::unique_ptr<CompiledAttention::Impl>
compileCpu(const KernelDesc &desc, const CompileOptions &options) {
  CpuModule module = compileCpuModule(
      "the kernel (" + desc.str() + ")", desc.chunkSize,
      [&](ModuleOp m) { buildAttentionModule(m, desc); },
      {kForwardName, kBackwardName}, options.dumpDirectory);
  return std::make_unique<CpuKernel>(desc, std::move(module));
}

} // namespace fwp::jit
