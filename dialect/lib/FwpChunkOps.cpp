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

/// [B, H, d_v, D].
const StringRef kStateLayout[] = {"batch", "heads", "d_v", "D"};
/// [B, H, N, d_v, D].
const StringRef kChunkStatesLayout[] = {"batch", "heads", "chunks", "d_v",
                                        "D"};

} // namespace

LogicalResult ChunkWyOp::verify() {
  LayoutChecker layout(getOperation());
  if (failed(layout.check("k", getK(), stepLayout(*this, "D"))) ||
      failed(layout.check("v", getV(), stepLayout(*this, "d_v"))) ||
      failed(layout.check("beta", getBeta(), stepLayout(*this))) ||
      failed(layout.check("wt", getWt(), stepLayout(*this, "D"))) ||
      failed(layout.check("ut", getUt(), stepLayout(*this, "d_v"))))
    return failure();
  return verifyChunking(*this, layout);
}

LogicalResult ChunkStatesOp::verify() {
  LayoutChecker layout(getOperation());
  if (failed(layout.check("k", getK(), stepLayout(*this, "D"))) ||
      failed(layout.check("values", getValues(), stepLayout(*this, "d_v"))) ||
      (getWt() &&
       failed(layout.check("wt", getWt(), stepLayout(*this, "D")))) ||
      (getInitial() &&
       failed(layout.check("initial", getInitial(), kStateLayout))) ||
      failed(layout.check("u", getU(), stepLayout(*this, "d_v"))) ||
      failed(layout.check("final_state", getFinalState(), kStateLayout)))
    return failure();
  if (failed(verifyChunking(*this, layout)))
    return failure();
  return layout.check("h", getH(), kChunkStatesLayout);
}

LogicalResult ChunkOutputOp::verify() {
  LayoutChecker layout(getOperation());
  if (failed(layout.check("q", getQ(), stepLayout(*this, "D"))) ||
      failed(layout.check("k", getK(), stepLayout(*this, "D"))) ||
      failed(layout.check("u", getU(), stepLayout(*this, "d_v"))) ||
      failed(layout.check("y", getY(), stepLayout(*this, "d_v"))) ||
      failed(verifyChunking(*this, layout)))
    return failure();
  return layout.check("h", getH(), kChunkStatesLayout);
}
