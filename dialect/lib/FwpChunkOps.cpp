//===- FwpChunkOps.cpp - Verifiers of the chunked scan's stages -----------===//

#include "LayoutChecker.h"

#include "fwp/Dialect/FwpOps.h"

using namespace mlir;
using namespace fwp;

namespace {

/// Checks `chunk_size` and binds the number of chunks N = ceil(T / C) where
/// T is known.
template <typename ChunkOp>
LogicalResult verifyChunking(ChunkOp op, LayoutChecker &layout) {
  int64_t chunk = op.getChunkSize();
  if (chunk < 1)
    return op.emitOpError() << "chunk_size must be at least 1, got " << chunk;
  if (std::optional<int64_t> steps = layout.lookup("seq_len"))
    return layout.bind("chunks", llvm::divideCeil(*steps, chunk),
                       "seq_len / chunk_size", 0);
  return success();
}

/// A tensor of a stage, by name; null where an optional one is absent.
struct NamedTensor {
  StringRef name;
  Value value;
};

/// The element types of a stage (FwpChunkOps.td): the tensors it hands to or
/// takes from other stages (`handed`) share one type, f32 or f64; the
/// scan's own (`stored`) are of that type or a narrower float.
LogicalResult verifyElementTypes(Operation *op, ArrayRef<NamedTensor> handed,
                                 ArrayRef<NamedTensor> stored) {
  Type arithmetic = getElementTypeOrSelf(handed.front().value.getType());
  if (!isa<Float32Type, Float64Type>(arithmetic))
    return op->emitOpError()
           << "'" << handed.front().name << "' has element type " << arithmetic
           << ": the stages hand each other f32 or f64 tensors";
  for (const NamedTensor &tensor : handed.drop_front()) {
    if (!tensor.value)
      continue;
    Type element = getElementTypeOrSelf(tensor.value.getType());
    if (element != arithmetic)
      return op->emitOpError()
             << "'" << tensor.name << "' has element type " << element
             << ", but '" << handed.front().name << "' has " << arithmetic
             << "; what the stages hand each other shares one type";
  }
  for (const NamedTensor &tensor : stored) {
    if (!tensor.value)
      continue;
    Type element = getElementTypeOrSelf(tensor.value.getType());
    if (element.getIntOrFloatBitWidth() > arithmetic.getIntOrFloatBitWidth())
      return op->emitOpError()
             << "'" << tensor.name << "' has element type " << element
             << ", wider than the arithmetic type " << arithmetic;
  }
  return success();
}

/// [B, H, d_v, D].
const StringRef kStateLayout[] = {"batch", "heads", "d_v", "D"};
/// [B, H, N, d_v, D].
const StringRef kChunkStatesLayout[] = {"batch", "heads", "chunks", "d_v", "D"};

} // namespace

LogicalResult ChunkWyOp::verify() {
  LayoutChecker layout(getOperation(), /*sameElementType=*/false);
  if (failed(layout.check("k", getK(), stepLayout(*this, "D"))) ||
      failed(layout.check("v", getV(), stepLayout(*this, "d_v"))) ||
      failed(layout.check("beta", getBeta(), stepLayout(*this))) ||
      failed(layout.check("wt", getWt(), stepLayout(*this, "D"))) ||
      failed(layout.check("ut", getUt(), stepLayout(*this, "d_v"))) ||
      failed(verifyChunking(*this, layout)))
    return failure();
  return verifyElementTypes(
      *this, {{"wt", getWt()}, {"ut", getUt()}},
      {{"k", getK()}, {"v", getV()}, {"beta", getBeta()}});
}

LogicalResult ChunkStatesOp::verify() {
  LayoutChecker layout(getOperation(), /*sameElementType=*/false);
  if (failed(layout.check("k", getK(), stepLayout(*this, "D"))) ||
      failed(layout.check("values", getValues(), stepLayout(*this, "d_v"))) ||
      (getWt() &&
       failed(layout.check("wt", getWt(), stepLayout(*this, "D")))) ||
      (getInitial() &&
       failed(layout.check("initial", getInitial(), kStateLayout))) ||
      failed(layout.check("u", getU(), stepLayout(*this, "d_v"))) ||
      failed(layout.check("final_state", getFinalState(), kStateLayout)))
    return failure();
  if (failed(verifyChunking(*this, layout)) ||
      failed(layout.check("h", getH(), kChunkStatesLayout)))
    return failure();
  return verifyElementTypes(*this,
                            {{"h", getH()}, {"u", getU()}, {"wt", getWt()}},
                            {{"k", getK()},
                             {"values", getValues()},
                             {"initial", getInitial()},
                             {"final_state", getFinalState()}});
}

LogicalResult ChunkOutputOp::verify() {
  LayoutChecker layout(getOperation(), /*sameElementType=*/false);
  if (failed(layout.check("q", getQ(), stepLayout(*this, "D"))) ||
      failed(layout.check("k", getK(), stepLayout(*this, "D"))) ||
      failed(layout.check("u", getU(), stepLayout(*this, "d_v"))) ||
      failed(layout.check("y", getY(), stepLayout(*this, "d_v"))) ||
      failed(verifyChunking(*this, layout)) ||
      failed(layout.check("h", getH(), kChunkStatesLayout)))
    return failure();
  return verifyElementTypes(*this, {{"h", getH()}, {"u", getU()}},
                            {{"q", getQ()}, {"k", getK()}, {"y", getY()}});
}

LogicalResult ChunkStatesGradOp::verify() {
  LayoutChecker layout(getOperation(), /*sameElementType=*/false);
  if (failed(layout.check("q", getQ(), stepLayout(*this, "D"))) ||
      failed(layout.check("k", getK(), stepLayout(*this, "D"))) ||
      failed(layout.check("dy", getDy(), stepLayout(*this, "d_v"))) ||
      (getWt() &&
       failed(layout.check("wt", getWt(), stepLayout(*this, "D")))) ||
      (getDFinal() &&
       failed(layout.check("d_final", getDFinal(), kStateLayout))) ||
      failed(layout.check("du", getDu(), stepLayout(*this, "d_v"))) ||
      failed(layout.check("d_initial", getDInitial(), kStateLayout)) ||
      failed(verifyChunking(*this, layout)) ||
      failed(layout.check("dh", getDh(), kChunkStatesLayout)))
    return failure();
  // The sum rule's dU is the scan's value gradient.
  return verifyElementTypes(*this, {{"dh", getDh()}, {"wt", getWt()}},
                            {{"q", getQ()},
                             {"k", getK()},
                             {"dy", getDy()},
                             {"du", getDu()},
                             {"d_final", getDFinal()},
                             {"d_initial", getDInitial()}});
}

LogicalResult ChunkQkGradOp::verify() {
  LayoutChecker layout(getOperation(), /*sameElementType=*/false);
  SmallVector<StringRef> features = stepLayout(*this, "D");
  SmallVector<StringRef> values = stepLayout(*this, "d_v");
  if (failed(layout.check("q", getQ(), features)) ||
      failed(layout.check("k", getK(), features)) ||
      failed(layout.check("u", getU(), values)) ||
      failed(layout.check("dy", getDy(), values)) ||
      failed(layout.check("du", getDu(), values)) ||
      failed(layout.check("dq", getDq(), features)) ||
      failed(layout.check("dk", getDk(), features)) ||
      (getDwt() && failed(layout.check("dwt", getDwt(), features))) ||
      failed(verifyChunking(*this, layout)) ||
      failed(layout.check("h", getH(), kChunkStatesLayout)) ||
      failed(layout.check("dh", getDh(), kChunkStatesLayout)))
    return failure();
  return verifyElementTypes(
      *this, {{"h", getH()}, {"dh", getDh()}, {"u", getU()}, {"dwt", getDwt()}},
      {{"q", getQ()},
       {"k", getK()},
       {"dy", getDy()},
       {"du", getDu()},
       {"dq", getDq()},
       {"dk", getDk()}});
}

LogicalResult ChunkWyGradOp::verify() {
  LayoutChecker layout(getOperation(), /*sameElementType=*/false);
  SmallVector<StringRef> features = stepLayout(*this, "D");
  SmallVector<StringRef> values = stepLayout(*this, "d_v");
  if (failed(layout.check("k", getK(), features)) ||
      failed(layout.check("v", getV(), values)) ||
      failed(layout.check("beta", getBeta(), stepLayout(*this))) ||
      failed(layout.check("du", getDu(), values)) ||
      failed(layout.check("dwt", getDwt(), features)) ||
      failed(layout.check("dk", getDk(), features)) ||
      failed(layout.check("dv", getDv(), values)) ||
      failed(layout.check("dbeta", getDbeta(), stepLayout(*this))) ||
      failed(verifyChunking(*this, layout)))
    return failure();
  return verifyElementTypes(*this, {{"du", getDu()}, {"dwt", getDwt()}},
                            {{"k", getK()},
                             {"v", getV()},
                             {"beta", getBeta()},
                             {"dk", getDk()},
                             {"dv", getDv()},
                             {"dbeta", getDbeta()}});
}
