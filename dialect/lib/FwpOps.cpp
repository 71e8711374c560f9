//===- FwpOps.cpp - Operations of the fwp dialect -------------------------===//
//
// Verifiers. Shapes may be static or dynamic; we check what is known. Each
// layout names its dimensions (seq_len, batch, heads, ...): the first static
// size seen for a name binds it, and every later static size must agree.
//
//===----------------------------------------------------------------------===//

#include "LayoutChecker.h"

#include "fwp/Dialect/FwpOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"

#include <cmath>

using namespace mlir;
using namespace fwp;

#include "fwp/Dialect/FwpEnums.cpp.inc"

#define GET_OP_CLASSES
#include "fwp/Dialect/FwpOps.cpp.inc"

namespace {

/// Checks the DPFP hyper-parameters; `d` is the input vector size if known.
LogicalResult verifyDpfpParams(Operation *op, int64_t nu, double eps,
                               std::optional<int64_t> d, StringRef dName) {
  if (!(eps > 0.0) || !std::isfinite(eps))
    return op->emitOpError() << "eps must be positive and finite, got " << eps;
  if (nu < 1)
    return op->emitOpError() << "nu must be at least 1, got " << nu;
  if (d && nu > 2 * *d - 1)
    return op->emitOpError() << "nu = " << nu << " is out of range [1, "
                             << 2 * *d - 1 << "] for " << dName << " = " << *d;
  return success();
}

} // namespace

//===----------------------------------------------------------------------===//
// DpfpOp
//===----------------------------------------------------------------------===//

/// The shapes of a DPFP map's input and features (`featuresName`: the
/// result, or a gradient with its type) and the map's parameters.
static LogicalResult verifyDpfpShapes(Operation *op, RankedTensorType inputType,
                                      RankedTensorType resultType,
                                      StringRef featuresName, int64_t nu,
                                      double eps) {
  if (inputType.getRank() == 0)
    return op->emitOpError() << "'input' must have at least one dimension "
                                "(the vector to map), got "
                             << inputType;
  if (resultType.getRank() != inputType.getRank())
    return op->emitOpError()
           << featuresName << " must have the rank of 'input' ("
           << inputType.getRank() << "), got " << resultType;
  Type featureElement = resultType.getElementType();
  Type inputElement = inputType.getElementType();
  bool sixteenBitInput = inputElement.getIntOrFloatBitWidth() == 16;
  if (featureElement != inputElement &&
      !(sixteenBitInput && featureElement.isF32()))
    return op->emitOpError()
           << featuresName << " element type " << featureElement
           << " is neither 'input' element type " << inputElement
           << " nor f32 for a 16-bit input";

  LayoutChecker layout(op);
  int64_t last = inputType.getRank() - 1;
  for (int64_t dim = 0; dim < last; ++dim) {
    std::string name = "leading dim " + std::to_string(dim);
    if (failed(layout.bind(name, inputType.getDimSize(dim), "input", dim)) ||
        failed(
            layout.bind(name, resultType.getDimSize(dim), featuresName, dim)))
      return failure();
  }

  std::optional<int64_t> d;
  if (!inputType.isDynamicDim(last))
    d = inputType.getDimSize(last);
  if (failed(verifyDpfpParams(op, nu, eps, d, "d")))
    return failure();
  if (d && !resultType.isDynamicDim(last) &&
      resultType.getDimSize(last) != 2 * *d * nu)
    return op->emitOpError()
           << featuresName << " feature size is " << resultType.getDimSize(last)
           << ", expected 2 * d * nu = " << 2 * *d * nu;
  return success();
}

LogicalResult DpfpOp::verify() {
  return verifyDpfpShapes(getOperation(), getInput().getType(),
                          getResult().getType(), "result", getNu(),
                          getEps().convertToDouble());
}

//===----------------------------------------------------------------------===//
// DpfpGradOp
//===----------------------------------------------------------------------===//

LogicalResult DpfpGradOp::verify() {
  if (failed(verifyDpfpShapes(getOperation(), getInput().getType(),
                              getDFeatures().getType(), "d_features", getNu(),
                              getEps().convertToDouble())))
    return failure();
  if (getDInput().getType() != getInput().getType())
    return emitOpError() << "'d_input' must have the type of 'input' ("
                         << getInput().getType() << "), got "
                         << getDInput().getType();
  return success();
}

//===----------------------------------------------------------------------===//
// GateOp
//===----------------------------------------------------------------------===//

LogicalResult GateOp::verify() {
  LayoutChecker layout(getOperation());
  if (failed(layout.check("x", getX(), {"seq_len", "batch", "d_model"})) ||
      failed(layout.check("w_beta", getWBeta(), {"heads", "d_model"})) ||
      failed(layout.check("beta", getBeta(), {"seq_len", "batch", "heads"})))
    return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// ScanOp
//===----------------------------------------------------------------------===//

/// The operands a scan and its gradient share: rule and beta, DPFP
/// attributes, q, k, v, beta and the initial state.
template <typename ScanLikeOp>
static LogicalResult verifyScanOperands(ScanLikeOp op, LayoutChecker &layout) {
  if (op.getRule() == Rule::Delta && !op.getBeta())
    return op.emitOpError() << "the delta rule requires 'beta'";
  if (op.getRule() == Rule::Sum && op.getBeta())
    return op.emitOpError() << "the sum rule takes no 'beta'";
  if (op.getDpfpNu().has_value() != op.getDpfpEps().has_value())
    return op.emitOpError() << "'dpfp_nu' and 'dpfp_eps' go together";

  SmallVector<StringRef> perStep = stepLayout(op, "d_v");
  if (op.getDpfpNu()) {
    // Fused DPFP: q and k are raw d_k-wide vectors; the state is D wide.
    SmallVector<StringRef> raw = stepLayout(op, "d_k");
    if (failed(layout.check("q", op.getQ(), raw)) ||
        failed(layout.check("k", op.getK(), raw)))
      return failure();
    std::optional<int64_t> dKey = layout.lookup("d_k");
    int64_t nu = *op.getDpfpNu();
    if (failed(verifyDpfpParams(op, nu, op.getDpfpEps()->convertToDouble(),
                                dKey, "d_k")) ||
        (dKey && failed(layout.bind("D", 2 * *dKey * nu, "q with DPFP", 3))))
      return failure();
  } else {
    SmallVector<StringRef> features = stepLayout(op, "D");
    if (failed(layout.check("q", op.getQ(), features)) ||
        failed(layout.check("k", op.getK(), features)))
      return failure();
  }
  if (failed(layout.check("v", op.getV(), perStep)))
    return failure();
  if (op.getBeta() &&
      failed(layout.check("beta", op.getBeta(), stepLayout(op))))
    return failure();
  if (op.getInitial() && failed(layout.check("initial", op.getInitial(),
                                             {"batch", "heads", "d_v", "D"})))
    return failure();
  return success();
}

/// Checks that gradient `name` has the type of the operand it belongs to.
static LogicalResult checkGradientType(Operation *op, StringRef name,
                                       Value gradient, StringRef operandName,
                                       Value operand) {
  if (gradient.getType() == operand.getType())
    return success();
  return op->emitOpError() << "'" << name << "' must have the type of '"
                           << operandName << "' (" << operand.getType()
                           << "), got " << gradient.getType();
}

LogicalResult ScanOp::verify() {
  LayoutChecker layout(getOperation());
  if (failed(verifyScanOperands(*this, layout)) ||
      failed(layout.check("y", getY(), stepLayout(*this, "d_v"))))
    return failure();
  if (getFinalState() && failed(layout.check("final_state", getFinalState(),
                                             {"batch", "heads", "d_v", "D"})))
    return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// ScanGradOp
//===----------------------------------------------------------------------===//

LogicalResult ScanGradOp::verify() {
  LayoutChecker layout(getOperation());
  if (failed(verifyScanOperands(*this, layout)) ||
      failed(layout.check("dy", getDy(), stepLayout(*this, "d_v"))))
    return failure();
  if (getDFinalState() && failed(layout.check("d_final_state", getDFinalState(),
                                              {"batch", "heads", "d_v", "D"})))
    return failure();
  if (static_cast<bool>(getBeta()) != static_cast<bool>(getDbeta()))
    return emitOpError() << "'dbeta' is returned exactly when 'beta' is given";
  Operation *op = getOperation();
  if (failed(checkGradientType(op, "dq", getDq(), "q", getQ())) ||
      failed(checkGradientType(op, "dk", getDk(), "k", getK())) ||
      failed(checkGradientType(op, "dv", getDv(), "v", getV())) ||
      (getBeta() &&
       failed(checkGradientType(op, "dbeta", getDbeta(), "beta", getBeta()))))
    return failure();
  if (getDInitial() && failed(layout.check("d_initial", getDInitial(),
                                           {"batch", "heads", "d_v", "D"})))
    return failure();
  if (getY() && failed(layout.check("y", getY(), stepLayout(*this, "d_v"))))
    return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// AttentionOp
//===----------------------------------------------------------------------===//

/// The operands and attributes an attention and its gradient share.
template <typename AttentionLikeOp>
static LogicalResult verifyAttentionOperands(AttentionLikeOp op,
                                             LayoutChecker &layout) {
  int64_t heads = op.getHeads();
  if (heads < 1)
    return op.emitOpError() << "heads must be at least 1, got " << heads;

  const StringRef square[] = {"d_model", "d_model"};
  if (failed(layout.check("x", op.getX(), {"seq_len", "batch", "d_model"})) ||
      failed(layout.check("w_q", op.getWQ(), square)) ||
      failed(layout.check("w_k", op.getWK(), square)) ||
      failed(layout.check("w_v", op.getWV(), square)) ||
      failed(layout.bind("heads", heads, "heads attribute", 0)) ||
      failed(layout.check("w_beta", op.getWBeta(), {"heads", "d_model"})) ||
      failed(layout.check("w_o", op.getWO(), square)) ||
      failed(layout.check("b_o", op.getBO(), {"d_model"})))
    return failure();

  std::optional<int64_t> dHead;
  if (std::optional<int64_t> dModel = layout.lookup("d_model")) {
    if (*dModel % heads != 0)
      return op.emitOpError()
             << "heads = " << heads << " does not divide d_model = " << *dModel;
    dHead = *dModel / heads;
  }
  return verifyDpfpParams(op, op.getNu(), op.getEps().convertToDouble(), dHead,
                          "d_k = d_model / heads");
}

LogicalResult AttentionOp::verify() {
  LayoutChecker layout(getOperation());
  if (failed(verifyAttentionOperands(*this, layout)))
    return failure();
  return layout.check("y", getY(), {"seq_len", "batch", "d_model"});
}

//===----------------------------------------------------------------------===//
// AttentionGradOp
//===----------------------------------------------------------------------===//

LogicalResult AttentionGradOp::verify() {
  LayoutChecker layout(getOperation());
  if (failed(verifyAttentionOperands(*this, layout)) ||
      failed(layout.check("dy", getDy(), {"seq_len", "batch", "d_model"})))
    return failure();
  Operation *op = getOperation();
  std::pair<StringRef, std::pair<Value, Value>> gradients[] = {
      {"dx", {getDx(), getX()}},
      {"dw_q", {getDwQ(), getWQ()}},
      {"dw_k", {getDwK(), getWK()}},
      {"dw_v", {getDwV(), getWV()}},
      {"dw_beta", {getDwBeta(), getWBeta()}},
      {"dw_o", {getDwO(), getWO()}},
      {"db_o", {getDbO(), getBO()}}};
  for (auto &[name, pair] : gradients)
    if (failed(checkGradientType(op, name, pair.first, name.drop_front(),
                                 pair.second)))
      return failure();
  return success();
}
