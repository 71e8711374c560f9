//===- AttentionModule.h - The module every backend compiles ----*- C++ -*-===//
//
//   func.func @fwp_attention(%x: tensor<?x?xDMxT>, %w_q, %w_k, %w_v: DMxDM,
//                            %w_beta: HxDM, %w_o: DMxDM, %b_o: DM,
//                            %y: memref<?x?xDMxT>)
//   func.func @fwp_attention_grad(%x, ..., %b_o, %dy: tensor<?x?xDMxT>,
//                                 %dx: memref<?x?xDMxT>, %dw_q, ..., %db_o)
//
// one fwp.attention and one fwp.attention_grad, results written into the
// caller's buffers (CpuCompiler.h, buildEntryFunction). Internal to lib/JIT.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_LIB_JIT_ATTENTIONMODULE_H
#define FWP_LIB_JIT_ATTENTIONMODULE_H

#include "fwp/JIT/JIT.h"

#include "mlir/IR/BuiltinOps.h"

namespace fwp::jit {

constexpr const char *kForwardName = "fwp_attention";
constexpr const char *kBackwardName = "fwp_attention_grad";

/// Adds the entry function of `entry` for `desc` to `module`.
void buildAttentionModule(mlir::ModuleOp module, const KernelDesc &desc,
                          EntryPoint entry);

} // namespace fwp::jit

#endif // FWP_LIB_JIT_ATTENTIONMODULE_H
