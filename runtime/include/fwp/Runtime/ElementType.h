//===- ElementType.h - Element types and element counts ---------*- C++ -*-===//
//
// The element types of buffers (f32, f64) and the element count of a shape,
// as plans, the runtime and the code around them name and count them.
//
// Header only: code that does not link the runtime (the .npy reader, the
// JIT's argument checks) shares these definitions without a library.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_RUNTIME_ELEMENTTYPE_H
#define FWP_RUNTIME_ELEMENTTYPE_H

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace fwp::rt {

enum class DType { F32, F64 };

/// "f32", "f64".
inline const char *dtypeName(DType dtype) {
  return dtype == DType::F32 ? "f32" : "f64";
}

/// 4, 8.
inline size_t dtypeBytes(DType dtype) { return dtype == DType::F32 ? 4 : 8; }

/// The dtype called `name` ("f32", "f64"), if any.
inline std::optional<DType> parseDType(const std::string &name) {
  if (name == "f32")
    return DType::F32;
  if (name == "f64")
    return DType::F64;
  return std::nullopt;
}

/// The product of `sizes` (1 for rank 0); nullopt if a size is negative or
/// the product does not fit int64_t. A zero size makes the product 0 however
/// large the other sizes are.
inline std::optional<int64_t> elementCount(const std::vector<int64_t> &sizes) {
  bool empty = false;
  for (int64_t size : sizes) {
    if (size < 0)
      return std::nullopt;
    empty = empty || size == 0;
  }
  if (empty)
    return 0;
  int64_t count = 1;
  for (int64_t size : sizes) {
    if (count > std::numeric_limits<int64_t>::max() / size)
      return std::nullopt;
    count *= size;
  }
  return count;
}

} // namespace fwp::rt

#endif // FWP_RUNTIME_ELEMENTTYPE_H
