//===- FwpAttrs.td - Attributes of the fwp dialect ---------*- tablegen -*-===//

#ifndef FWP_DIALECT_FWPATTRS_TD
#define FWP_DIALECT_FWPATTRS_TD

include "fwp/Dialect/FwpDialect.td"
include "fwp/Dialect/FwpEnums.td"
include "mlir/IR/AttrTypeBase.td"

def Fwp_KernelConfigAttr : AttrDef<Fwp_Dialect, "KernelConfig"> {
  let mnemonic = "kernel_config";
  let summary = "the kernel configuration chosen for a function's target";
  let description = [{
    What `fwp-configure-kernels` chose for the kernels of a function
    (lib/Transforms/KernelConfig.cpp, where every default is written), kept
    on the `func.func` as `fwp.kernel_config`; the lowerings read it there
    rather than taking options of their own.

    - `target`: `cpu`, `gpu`, or `gpu-on-host` (the GPU's kernels run on
      the host, their local tiles on the stack, to check their tiling).
    - `chunk_size`: steps per chunk of the scans.
    - `value_block`: value columns per instance of the state kernels (0:
      all of them).
    - `state_memory`: where the state kernels keep their block of the
      state across the chunks.
    - `scratch_slots`: instances of the chunk-parallel backward kernels,
      each taking chunks in turn (0: one per chunk).
    - `local_bytes`: the most bytes of kernel-local tiles an instance keeps
      (shared memory on the GPU).
    - `stage_floats`: floats of shared memory for staging the tensor cores'
      operands.
    - `products`: how the f32 tile products run on the GPU.
    - `block_size`: threads per GPU block.

    Fields a target does not use are left out (0 or absent).

    Example:

    ```mlir
    func.func @scan(...) attributes {fwp.kernel_config =
        #fwp.kernel_config<target = gpu, chunk_size = 64, value_block = 32,
          state_memory = workgroup, scratch_slots = 512, local_bytes = 34816,
          stage_floats = 8192, products = tf32x3, block_size = 128>}
    ```
  }];
  let parameters = (ins
    "::fwp::KernelTarget":$target,
    "int64_t":$chunk_size,
    DefaultValuedParameter<"int64_t", "0">:$value_block,
    OptionalParameter<"std::optional<::fwp::StateMemory>">:$state_memory,
    DefaultValuedParameter<"int64_t", "0">:$scratch_slots,
    DefaultValuedParameter<"int64_t", "0">:$local_bytes,
    DefaultValuedParameter<"int64_t", "0">:$stage_floats,
    OptionalParameter<"std::optional<::fwp::ProductPrecision>">:$products,
    DefaultValuedParameter<"int64_t", "0">:$block_size
  );
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Whether the kernels are the GPU's (on the GPU or on the host).
    bool isGpuTiling() const {
      return getTarget() != ::fwp::KernelTarget::Cpu;
    }
  }];
}

#endif // FWP_DIALECT_FWPATTRS_TD
