//===- Npy.h - Reading and writing NumPy .npy files -------------*- C++ -*-===//
//
// A small reader and writer for the NumPy .npy format
// (https://numpy.org/devdocs/reference/generated/numpy.lib.format.html),
// restricted to what the fwp tools exchange: little-endian float32 ('<f4')
// and float64 ('<f8') arrays in C order, of any rank including 0-d. Element
// types and counts are the runtime's (fwp/Runtime/ElementType.h).
//
// Values are held as doubles whatever the stored dtype (float32 -> double is
// exact); `write` stores them in the array's dtype, so writing a float32
// array rounds each value to float32.
//
// Every problem (unreadable file, bad magic, malformed header, unsupported
// dtype or order, truncated data, ...) is reported by throwing
// std::runtime_error with a message "<path>: <problem>".
//
//===----------------------------------------------------------------------===//

#ifndef FWP_SUPPORT_NPY_H
#define FWP_SUPPORT_NPY_H

#include "fwp/Runtime/ElementType.h"

#include <cstdint>
#include <string>
#include <vector>

namespace fwp::npy {

struct Array {
  std::vector<int64_t> shape; // empty for a 0-d array
  rt::DType dtype = rt::DType::F64;
  std::vector<double> values; // C order, rt::elementCount(shape) of them
};

/// Reads an .npy file (format version 1.0, 2.0 or 3.0).
Array read(const std::string &path);

/// Writes `array` as an .npy file in its own dtype, byte-identical to what
/// numpy.save writes for the same array: format version 1.0 (2.0 only when
/// the header does not fit 1.0), header padded so the data starts at a
/// multiple of 64 bytes.
void write(const std::string &path, const Array &array);

/// The bytes `write` would store for `array`; `name` is used in messages.
std::string encode(const Array &array, const std::string &name = "<array>");

/// Parses the bytes of an .npy file; `name` is used in messages.
Array decode(const std::string &bytes, const std::string &name);

/// NumPy's name of `dtype`, "float16", "float32" or "float64" ("bfloat16",
/// which NumPy lacks; rt::dtypeName is the runtime's, "f32").
const char *numpyName(rt::DType dtype);

/// The values of `array` as a dense buffer of `dtype` elements (a narrower
/// dtype rounds them to nearest even, 16-bit ones through float32), as the
/// runtime's entry points take them.
std::vector<char> toBytes(const Array &array, rt::DType dtype);

/// An array of `shape` read from a dense buffer of `dtype` elements.
Array fromBytes(const void *bytes, const std::vector<int64_t> &shape,
                rt::DType dtype);

/// Formats a shape as "[2, 3]" ("[]" for 0-d).
std::string formatShape(const std::vector<int64_t> &shape);

} // namespace fwp::npy

#endif // FWP_SUPPORT_NPY_H
