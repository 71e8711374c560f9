//===- ChunkViews.cpp - Where a chunk's tiles are read and written --------===//
//
// The regions of the chunk operations' tensors that a kernel instance
// reads and writes, and the copies between them and the tiles. The tiles
// are of the arithmetic type (ChunkTiles::element); a tensor stored in a
// narrower type is extended as its rows are loaded and rounded once as
// they are stored.
//
//===----------------------------------------------------------------------===//

#include "ChunkLowering.h"
#include "WidenStorage.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"

using namespace mlir;

namespace fwp {

ChunkTiles::Slice ChunkTiles::rowsSlice(Value bi, Value h, Value t0, Value len,
                                        int64_t width, OpFoldResult col0) {
  OpFoldResult one = b.getIndexAttr(1);
  Slice slice;
  if (batchFirst) {
    slice.offsets = {bi, t0, h};
    slice.sizes = {one, len, one};
  } else {
    slice.offsets = {t0, bi, h};
    slice.sizes = {len, one, one};
  }
  if (width > 0) {
    slice.offsets.push_back(col0 ? col0 : b.getIndexAttr(0));
    slice.sizes.push_back(b.getIndexAttr(width));
  }
  slice.strides.assign(slice.offsets.size(), one);
  return slice;
}

ChunkTiles::Slice ChunkTiles::region(ArrayRef<OpFoldResult> offsets,
                                     ArrayRef<OpFoldResult> sizes) {
  Slice slice;
  slice.offsets.assign(offsets.begin(), offsets.end());
  slice.sizes.assign(sizes.begin(), sizes.end());
  slice.strides.assign(offsets.size(), b.getIndexAttr(1));
  return slice;
}

ChunkTiles::Slice ChunkTiles::perHead(Value bi, Value h,
                                      ArrayRef<OpFoldResult> sizes,
                                      ArrayRef<OpFoldResult> trailing) {
  OpFoldResult one = b.getIndexAttr(1);
  SmallVector<OpFoldResult> offsets = {bi, h}, all = {one, one};
  llvm::append_range(offsets, trailing);
  offsets.append(sizes.size() - trailing.size(), b.getIndexAttr(0));
  all.append(sizes.begin(), sizes.end());
  return region(offsets, all);
}

Value ChunkTiles::extract(Value source, ArrayRef<int64_t> shape,
                          const Slice &slice) {
  return tensor::ExtractSliceOp::create(
      b, RankedTensorType::get(shape, getElementTypeOrSelf(source)), source,
      slice.offsets, slice.sizes, slice.strides);
}

Value ChunkTiles::chunkState(Value states, Value bi, Value h, Value c,
                             int64_t rows, int64_t cols) {
  OpFoldResult zero = b.getIndexAttr(0), one = b.getIndexAttr(1);
  return extract(
      states, {rows, cols},
      region({bi, h, c, zero, zero},
             {one, one, one, b.getIndexAttr(rows), b.getIndexAttr(cols)}));
}

ChunkTiles::View ChunkTiles::headRows(Value perStep, Value bi, Value h,
                                      Value steps, int64_t width,
                                      OpFoldResult col0) {
  Slice slice = rowsSlice(bi, h, index(0), steps, width, col0);
  SmallVector<int64_t> shape = {ShapedType::kDynamic};
  if (width > 0)
    shape.push_back(width);
  return {slice, extract(perStep, shape, slice)};
}

ChunkTiles::View ChunkTiles::headStates(Value states, Value bi, Value h,
                                        Value chunks, int64_t rows,
                                        int64_t cols, OpFoldResult row0) {
  SmallVector<OpFoldResult> offsets;
  if (row0)
    offsets = {b.getIndexAttr(0), row0};
  Slice slice = perHead(
      bi, h, {chunks, b.getIndexAttr(rows), b.getIndexAttr(cols)}, offsets);
  return {slice, extract(states, {ShapedType::kDynamic, rows, cols}, slice)};
}

Value ChunkTiles::startState(Value given, const Slice &slice, int64_t rows,
                             int64_t cols) {
  if (!given)
    return zeros({rows, cols});
  return copy(extract(given, {rows, cols}, slice));
}

/// `source` copied into `target` of its shape: a linalg.copy, or where their
/// element types differ (a tensor's storage type and the arithmetic type)
/// converted (fwp-widen-storage's extension or rounding).
static Value copyInto(OpBuilder &b, Location loc, Value source, Value target) {
  if (getElementTypeOrSelf(source) == getElementTypeOrSelf(target))
    return linalg::CopyOp::create(b, loc, source, target).getResult(0);
  return convertInto(b, loc, source, target);
}

Value ChunkTiles::copyTo(Value source, Value dest, const Slice &slice) {
  auto targetType = cast<RankedTensorType>(source.getType())
                        .clone(getElementTypeOrSelf(dest));
  Value target = tensor::ExtractSliceOp::create(
      b, targetType, dest, slice.offsets, slice.sizes, slice.strides);
  return copyInto(b, b.getLoc(), source, target);
}

Value ChunkTiles::place(Value source, Value dest, const Slice &slice) {
  return tensor::InsertSliceOp::create(b, copyTo(source, dest, slice), dest,
                                       slice.offsets, slice.sizes,
                                       slice.strides);
}

Value ChunkTiles::placeTransposed(Value source, Value dest,
                                  const Slice &slice) {
  auto type = cast<RankedTensorType>(source.getType());
  assert(type.getElementType() == getElementTypeOrSelf(dest) &&
         "transposed tiles stay in the arithmetic type");
  auto targetType = RankedTensorType::get(
      {type.getDimSize(1), type.getDimSize(0)}, type.getElementType());
  Value target = tensor::ExtractSliceOp::create(
      b, targetType, dest, slice.offsets, slice.sizes, slice.strides);
  Value transposed =
      linalg::TransposeOp::create(b, source, target, ArrayRef<int64_t>{1, 0})
          .getResult()[0];
  return tensor::InsertSliceOp::create(b, transposed, dest, slice.offsets,
                                       slice.sizes, slice.strides);
}

Value ChunkTiles::transpose(Value tile) {
  auto type = cast<RankedTensorType>(tile.getType());
  Value into = tensor::EmptyOp::create(
      b, ArrayRef<int64_t>{type.getDimSize(1), type.getDimSize(0)},
      type.getElementType());
  return linalg::TransposeOp::create(b, tile, into, ArrayRef<int64_t>{1, 0})
      .getResult()[0];
}

Value ChunkTiles::copy(Value source) {
  return copyInto(b, b.getLoc(), source, emptyLike(source, element));
}

Value ChunkTiles::loadRows(Value perStep, Value bi, Value h, Value t0,
                           Value len, std::optional<ValueBlock> block) {
  auto type = cast<RankedTensorType>(perStep.getType());
  if (DpfpOp map = fusedFeatureMap(perStep)) {
    assert(!block && "features are read whole");
    // A zero row maps to zero: rows past len stay zero.
    Value rows = loadRows(map.getInput(), bi, h, t0, len);
    auto features = RankedTensorType::get({chunk, type.getDimSize(3)}, element);
    return DpfpOp::create(b, features, rows, map.getNuAttr(), map.getEpsAttr());
  }
  bool hasWidth = type.getRank() == 4;
  int64_t width = block ? block->width : hasWidth ? type.getDimSize(3) : 0;
  Slice slice =
      rowsSlice(bi, h, t0, len, width, block ? block->offset : nullptr);
  SmallVector<int64_t> rowsShape = {ShapedType::kDynamic};
  SmallVector<int64_t> tileShape = {chunk};
  if (hasWidth) {
    rowsShape.push_back(width);
    tileShape.push_back(width);
  }
  Value rows = tensor::ExtractSliceOp::create(
      b, RankedTensorType::get(rowsShape, type.getElementType()), perStep,
      slice.offsets, slice.sizes, slice.strides);
  SmallVector<OpFoldResult> offsets(tileShape.size(), b.getIndexAttr(0));
  SmallVector<OpFoldResult> sizes = {len};
  if (hasWidth)
    sizes.push_back(b.getIndexAttr(width));
  return place(rows, zeros(tileShape), region(offsets, sizes));
}

Value ChunkTiles::firstRows(Value tile, Value len) {
  auto type = cast<RankedTensorType>(tile.getType());
  SmallVector<int64_t> shape(type.getShape());
  shape[0] = ShapedType::kDynamic;
  SmallVector<OpFoldResult> offsets(shape.size(), b.getIndexAttr(0));
  SmallVector<OpFoldResult> sizes = {len};
  if (shape.size() == 2)
    sizes.push_back(b.getIndexAttr(shape[1]));
  Slice rows = region(offsets, sizes);
  return tensor::ExtractSliceOp::create(
      b, RankedTensorType::get(shape, type.getElementType()), tile,
      rows.offsets, rows.sizes, rows.strides);
}

ParallelStore storeRows(ChunkTiles &tiles, Value tile, Value out, Value bi,
                        Value h, Value t0, Value len, int64_t width,
                        OpFoldResult col0) {
  ChunkTiles::Slice rows = tiles.rowsSlice(bi, h, t0, len, width, col0);
  return {tiles.copyTo(tiles.firstRows(tile, len), out, rows), out, rows};
}

} // namespace fwp
