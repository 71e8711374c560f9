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

#endif // FWP_DIALECT_FWPENUMS_TD
