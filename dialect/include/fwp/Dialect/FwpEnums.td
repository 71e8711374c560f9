//===- FwpEnums.td - Enums of the fwp dialect --------------*- tablegen -*-===//

#ifndef FWP_DIALECT_FWPENUMS_TD
#define FWP_DIALECT_FWPENUMS_TD

include "mlir/IR/EnumAttr.td"

def Fwp_RuleDelta : I32EnumAttrCase<"Delta", 0, "delta">;
def Fwp_RuleSum : I32EnumAttrCase<"Sum", 1, "sum">;

def Fwp_RuleAttr : I32EnumAttr<"Rule",
    "fast-weight update rule: `delta` (Schlag et al. 2021) or `sum` "
    "(linear attention, the 1992 fast-weight programmer)",
    [Fwp_RuleDelta, Fwp_RuleSum]> {
  let cppNamespace = "::fwp";
}

// The lowerings' choices, fields of #fwp.kernel_config (FwpAttrs.td) and
// values of pass options: enums of C++, no attributes of their own.

def Fwp_ProductPrecisionTf32x3 : I32EnumAttrCase<"Tf32x3", 0, "tf32x3">;
def Fwp_ProductPrecisionTf32 : I32EnumAttrCase<"Tf32", 1, "tf32">;
def Fwp_ProductPrecisionCudaCores : I32EnumAttrCase<"CudaCores", 2, "cuda-cores">;

def Fwp_ProductPrecision : I32EnumAttr<"ProductPrecision",
    "how the GPU kernels' f32 tile products run",
    [Fwp_ProductPrecisionTf32x3, Fwp_ProductPrecisionTf32,
     Fwp_ProductPrecisionCudaCores]> {
  let cppNamespace = "::fwp";
  let genSpecializedAttr = 0;
}

def Fwp_StateMemoryWorkspace : I32EnumAttrCase<"Workspace", 0, "workspace">;
def Fwp_StateMemoryWorkgroup : I32EnumAttrCase<"Workgroup", 1, "workgroup">;
def Fwp_StateMemoryStack : I32EnumAttrCase<"Stack", 2, "stack">;

def Fwp_StateMemory : I32EnumAttr<"StateMemory",
    "where fwp-tile-scan's unfused state kernels keep their block of the "
    "state across the chunks",
    [Fwp_StateMemoryWorkspace, Fwp_StateMemoryWorkgroup,
     Fwp_StateMemoryStack]> {
  let cppNamespace = "::fwp";
  let genSpecializedAttr = 0;
}

def Fwp_KernelTargetCpu : I32EnumAttrCase<"Cpu", 0, "cpu">;
def Fwp_KernelTargetGpu : I32EnumAttrCase<"Gpu", 1, "gpu">;
def Fwp_KernelTargetGpuOnHost : I32EnumAttrCase<"GpuOnHost", 2, "gpu-on-host">;

def Fwp_KernelTarget : I32EnumAttr<"KernelTarget",
    "what a function's kernels are configured for: the host's cores, the "
    "GPU, or the GPU's kernels run on the host to check their tiling",
    [Fwp_KernelTargetCpu, Fwp_KernelTargetGpu, Fwp_KernelTargetGpuOnHost]> {
  let cppNamespace = "::fwp";
  let genSpecializedAttr = 0;
}

#endif // FWP_DIALECT_FWPENUMS_TD
