//===- FwpDialect.td - The fwp dialect ---------------------*- tablegen -*-===//

#ifndef FWP_DIALECT_FWPDIALECT_TD
#define FWP_DIALECT_FWPDIALECT_TD

include "mlir/IR/OpBase.td"

def Fwp_Dialect : Dialect {
  let name = "fwp";
  let summary = "Fast-weight attention: DPFP, the beta gate and fast-weight scans";
  let description = [{
    The `fwp` dialect describes the delta-rule fast weight programmers of
    Schlag, Irie and Schmidhuber (2021), "Linear Transformers Are Secretly
    Fast Weight Programmers", at the tensor level: the DPFP feature map, the
    beta gate, the delta-rule and sum-rule fast-weight scans, and the whole
    FastWeightsAttention module.

    Layouts follow the seeds' PyTorch module (see docs/delta-rule-math.md):
    sequences are time-major, `[seq_len, batch, ...]`; per-head tensors are
    `[seq_len, batch, heads, d]`; fast-weight states are
    `[batch, heads, d_v, D]`; projection weights are `nn.Linear` weights
    `[out, in]`, applied as `y = x W^T`.

    One discardable attribute, `fwp.kernel = "name"`, marks a kernel of
    the tile level (`fwp-tile-scan`): an `scf.forall` whose points are the
    kernel's instances (thread blocks on the GPU), and after
    `fwp-kernels-to-gpu` the `gpu.launch` made from it; on a function
    (`func.func`, then `llvm.func`), a tile of that kernel outlined into a
    function of its own (`fwp-outline-tiles`), called from the kernel's
    instances.
    The name becomes the GPU kernel's symbol, so it must be an identifier.

    Another, `fwp.kernel_config = #fwp.kernel_config<...>` on a function
    (`func.func`, then `llvm.func`), records the configuration its kernels
    were lowered with (`fwp-configure-kernels`).
  }];
  let cppNamespace = "::fwp";
  let hasOperationAttrVerify = 1;
  let useDefaultAttributePrinterParser = 1;
  let extraClassDeclaration = [{
    /// The attribute that names a kernel of the tile level.
    static constexpr ::llvm::StringLiteral kKernelAttrName = "fwp.kernel";
    /// The attribute of a function (func.func, then llvm.func) that holds
    /// its kernels' configuration (#fwp.kernel_config).
    static constexpr ::llvm::StringLiteral kKernelConfigAttrName =
        "fwp.kernel_config";
  }];
}

class Fwp_Op<string mnemonic, list<Trait> traits = []>
    : Op<Fwp_Dialect, mnemonic, traits>;

#endif // FWP_DIALECT_FWPDIALECT_TD
