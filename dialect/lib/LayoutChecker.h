//===- LayoutChecker.h - Named dimensions of the ops' tensors ---*- C++ -*-===//

#ifndef FWP_DIALECT_LIB_LAYOUTCHECKER_H
#define FWP_DIALECT_LIB_LAYOUTCHECKER_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"

namespace fwp {

using mlir::ArrayRef;
using mlir::cast;
using mlir::failed;
using mlir::failure;
using mlir::LogicalResult;
using mlir::RankedTensorType;
using mlir::ShapedType;
using mlir::StringRef;
using mlir::success;
using mlir::Type;
using mlir::Value;

/// Binds named dimension sizes across the tensors of one op and reports the
/// first disagreement, naming both tensors.
class LayoutChecker {
public:
  /// With `sameElementType`, every tensor checked must have the element
  /// type of the first; else their element types are the op's own concern.
  explicit LayoutChecker(mlir::Operation *op, bool sameElementType = true)
      : op(op), sameElementType(sameElementType) {}

  /// Checks that `value` is a tensor of the given layout (one name per
  /// dimension) whose element type agrees with the tensors seen so far.
  LogicalResult check(StringRef tensorName, Value value,
                      ArrayRef<StringRef> layout) {
    auto type = cast<RankedTensorType>(value.getType());
    if (type.getRank() != static_cast<int64_t>(layout.size()))
      return op->emitOpError()
             << "'" << tensorName << "' must have rank " << layout.size()
             << " [" << llvm::join(layout, ", ") << "], got " << type;
    if (failed(checkElementType(tensorName, type)))
      return failure();
    for (auto [dim, name] : llvm::enumerate(layout))
      if (failed(bind(name, type.getDimSize(dim), tensorName, dim)))
        return failure();
    return success();
  }

  /// Binds `name` to `size` (ignored when dynamic), or checks it against an
  /// earlier binding.
  LogicalResult bind(StringRef name, int64_t size, StringRef tensorName,
                     size_t dim) {
    if (ShapedType::isDynamic(size))
      return success();
    auto [it, inserted] =
        sizes.try_emplace(name, Binding{size, tensorName.str()});
    if (inserted || it->second.size == size)
      return success();
    return op->emitOpError()
           << "'" << tensorName << "' dimension " << dim << " (" << name
           << ") is " << size << ", but '" << it->second.source << "' gives "
           << name << " = " << it->second.size;
  }

  /// The static size bound to `name`, if any.
  std::optional<int64_t> lookup(StringRef name) const {
    auto it = sizes.find(name);
    if (it == sizes.end())
      return std::nullopt;
    return it->second.size;
  }

private:
  LogicalResult checkElementType(StringRef tensorName, RankedTensorType type) {
    if (!sameElementType)
      return success();
    if (!elementType) {
      elementType = type.getElementType();
      elementSource = tensorName.str();
      return success();
    }
    if (type.getElementType() == elementType)
      return success();
    return op->emitOpError()
           << "'" << tensorName << "' has element type "
           << type.getElementType() << ", but '" << elementSource << "' has "
           << elementType << "; all tensors of the op share one element type";
  }

  struct Binding {
    int64_t size;
    std::string source;
  };
  mlir::Operation *op;
  bool sameElementType;
  Type elementType;
  std::string elementSource;
  llvm::StringMap<Binding> sizes;
};

/// The dimension names of a scan's per-step tensor whose last dimension is
/// `last` (none for beta): [T, B, H, last], or [B, T, H, last] batch first.
template <typename ScanLikeOp>
mlir::SmallVector<mlir::StringRef> stepLayout(ScanLikeOp op,
                                              mlir::StringRef last = "") {
  mlir::SmallVector<mlir::StringRef> names = {"seq_len", "batch", "heads"};
  if (op.getBatchFirst())
    std::swap(names[0], names[1]);
  if (!last.empty())
    names.push_back(last);
  return names;
}

} // namespace fwp

#endif // FWP_DIALECT_LIB_LAYOUTCHECKER_H
