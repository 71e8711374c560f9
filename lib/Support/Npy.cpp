//===- Npy.cpp - Reading and writing NumPy .npy files ---------------------===//
//
// Format (numpy/lib/format.py):
//   "\x93NUMPY" major minor
//   header length: uint16 little-endian (1.0) or uint32 (2.0, 3.0)
//   header: a Python literal dict {'descr': ..., 'fortran_order': ...,
//           'shape': (...), } padded with spaces and ended by '\n'
//           (latin-1 in 1.0/2.0, utf-8 in 3.0)
//   data:   the elements in C (or Fortran) order
//
//===----------------------------------------------------------------------===//

#include "fwp/Support/Npy.h"

#include "NpyHeader.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <stdexcept>

namespace fwp::npy {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
constexpr size_t kArrayAlign = 64;
// numpy >= 1.24 leaves room after the dict so the growing axis can get
// longer in place: len(str(8 * 2**64 - 1)).
constexpr size_t kGrowthAxisMaxDigits = 21;

using detail::fail;
using detail::Value;

using rt::DType;

/// NumPy's type string of `dtype`; NumPy has no bfloat16.
const char *descr(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "<f4";
  case DType::F64:
    return "<f8";
  case DType::F16:
    return "<f2";
  case DType::BF16:
    break;
  }
  throw std::runtime_error(".npy files cannot hold bf16 (NumPy has no "
                           "bfloat16): write f32 instead");
}

//===----------------------------------------------------------------------===//
// Byte-order helpers (the format is little-endian whatever the host is).
//===----------------------------------------------------------------------===//

uint64_t loadLE(const char *p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i)
    v |= uint64_t(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

void storeLE(std::string &out, uint64_t v, size_t n) {
  for (size_t i = 0; i < n; ++i)
    out += static_cast<char>((v >> (8 * i)) & 0xff);
}

/// One element of `dtype` at `p` (little-endian, as .npy files and the
/// host's buffers hold them), as a double: exact for every dtype.
double loadElement(const char *p, DType dtype) {
  switch (dtype) {
  case DType::F32: {
    uint32_t bits = static_cast<uint32_t>(loadLE(p, 4));
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  case DType::F64: {
    uint64_t bits = loadLE(p, 8);
    double v;
    std::memcpy(&v, &bits, 8);
    return v;
  }
  case DType::BF16:
    return rt::fromBf16(static_cast<uint16_t>(loadLE(p, 2)));
  case DType::F16:
    return rt::fromF16(static_cast<uint16_t>(loadLE(p, 2)));
  }
  return 0;
}

/// The bits of `v` rounded to `dtype` (to nearest, ties to even; a 16-bit
/// dtype through float32 first, which can round twice: within one unit of
/// the 16-bit dtype's last place).
uint64_t elementBits(double v, DType dtype) {
  switch (dtype) {
  case DType::F32: {
    float f = static_cast<float>(v);
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    return bits;
  }
  case DType::F64: {
    uint64_t bits;
    std::memcpy(&bits, &v, 8);
    return bits;
  }
  case DType::BF16:
    return rt::toBf16(static_cast<float>(v));
  case DType::F16:
    return rt::toF16(static_cast<float>(v));
  }
  return 0;
}

/// "()", "(3,)", "(2, 3)".
std::string pythonShapeRepr(const std::vector<int64_t> &shape) {
  return fmt::format("({}{})", fmt::join(shape, ", "),
                     shape.size() == 1 ? "," : "");
}

/// The element count of `shape`; fails, naming `name`, on a negative
/// dimension or a count that does not fit int64_t.
int64_t countElements(const std::vector<int64_t> &shape,
                      const std::string &name) {
  if (std::optional<int64_t> count = rt::elementCount(shape))
    return *count;
  bool negative =
      std::any_of(shape.begin(), shape.end(), [](int64_t d) { return d < 0; });
  fail(name,
       negative
           ? fmt::format("negative dimension in shape {}", formatShape(shape))
           : fmt::format("shape {} has too many elements", formatShape(shape)));
}

} // namespace

const char *numpyName(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "float32";
  case DType::F64:
    return "float64";
  case DType::F16:
    return "float16";
  case DType::BF16:
    return "bfloat16";
  }
  return "?";
}

std::string formatShape(const std::vector<int64_t> &shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

Array decode(const std::string &bytes, const std::string &name) {
  if (bytes.size() < kMagicLen + 2 || bytes.compare(0, kMagicLen, kMagic) != 0)
    fail(name, "not an .npy file (bad magic string)");
  int major = static_cast<unsigned char>(bytes[kMagicLen]);
  int minor = static_cast<unsigned char>(bytes[kMagicLen + 1]);
  if (minor != 0 || major < 1 || major > 3)
    fail(name,
         fmt::format("unsupported .npy format version {}.{}", major, minor));
  size_t lenBytes = major == 1 ? 2 : 4;
  size_t prefix = kMagicLen + 2 + lenBytes;
  if (bytes.size() < prefix)
    fail(name, fmt::format("truncated header: the file has only {} bytes",
                           bytes.size()));
  uint64_t headerLen = loadLE(bytes.data() + kMagicLen + 2, lenBytes);
  if (headerLen > bytes.size() - prefix)
    fail(name,
         fmt::format(
             "truncated header: the header needs {} bytes, the file has {}",
             prefix + headerLen, bytes.size()));
  std::string header = bytes.substr(prefix, headerLen);
  if (header.find('\0') != std::string::npos)
    fail(name, "malformed .npy header: it contains a NUL byte");

  detail::Dict dict = detail::parseHeader(header, name);

  // descr
  if (dict.descr.kind != Value::String)
    fail(name,
         fmt::format("malformed .npy header: 'descr' is not a string but {}",
                     dict.descr.text));
  const std::string &d = dict.descr.str;
  DType dtype;
  if (d == "<f4") {
    dtype = DType::F32;
  } else if (d == "<f8") {
    dtype = DType::F64;
  } else if (d == "<f2") {
    dtype = DType::F16;
  } else if (d.size() > 1 && d[0] == '>') {
    fail(name, fmt::format("big-endian arrays are not supported (dtype '{}'; "
                           "only '<f4' and '<f8' are)",
                           d));
  } else {
    fail(name, fmt::format("unsupported dtype '{}' (only little-endian "
                           "float32 '<f4' and float64 '<f8' are supported)",
                           d));
  }

  // fortran_order
  if (dict.fortran.kind != Value::Bool)
    fail(name, fmt::format("malformed .npy header: 'fortran_order' is not "
                           "True or False but {}",
                           dict.fortran.text));
  if (dict.fortran.boolean)
    fail(name, "Fortran-order arrays are not supported");

  // shape
  if (dict.shape.kind != Value::Tuple)
    fail(name,
         fmt::format("malformed .npy header: 'shape' is not a tuple but {}",
                     dict.shape.text));
  Array array;
  array.dtype = dtype;
  array.shape = dict.shape.tuple;

  // data
  uint64_t dataBytes = bytes.size() - prefix - headerLen;
  int64_t count = countElements(array.shape, name);
  size_t item = rt::dtypeBytes(dtype);
  if (uint64_t(count) > std::numeric_limits<uint64_t>::max() / item)
    fail(name, fmt::format("shape {} is too large", formatShape(array.shape)));
  uint64_t expected = uint64_t(count) * item;
  if (dataBytes < expected)
    fail(name, fmt::format("truncated data: shape {} of {} needs {} bytes, "
                           "the file has {}",
                           formatShape(array.shape), numpyName(dtype), expected,
                           dataBytes));
  if (dataBytes > expected)
    fail(name, fmt::format("{} unexpected bytes after the data (shape {} of "
                           "{} needs {})",
                           dataBytes - expected, formatShape(array.shape),
                           numpyName(dtype), expected));

  const char *p = bytes.data() + prefix + headerLen;
  array.values.resize(count);
  for (int64_t i = 0; i < count; ++i, p += item)
    array.values[i] = loadElement(p, dtype);
  return array;
}

std::string encode(const Array &array, const std::string &name) {
  int64_t count = countElements(array.shape, name);
  if (array.values.size() != uint64_t(count))
    fail(name,
         fmt::format("cannot write: shape {} has {} elements but {} "
                     "values are given",
                     formatShape(array.shape), count, array.values.size()));

  // As numpy.lib.format._write_array_header / _wrap_header.
  std::string dict =
      fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}",
                  descr(array.dtype), pythonShapeRepr(array.shape));
  if (!array.shape.empty())
    dict.append(kGrowthAxisMaxDigits -
                    fmt::formatted_size("{}", array.shape.front()),
                ' ');
  size_t hlen = dict.size() + 1; // + '\n'
  int major = 1;
  size_t lenBytes = 2;
  size_t padlen = kArrayAlign - (kMagicLen + 2 + lenBytes + hlen) % kArrayAlign;
  if (hlen + padlen > 0xffff) {
    major = 2;
    lenBytes = 4;
    padlen = kArrayAlign - (kMagicLen + 2 + lenBytes + hlen) % kArrayAlign;
    if (hlen + padlen > 0xffffffffull)
      fail(name, "cannot write: the header is too large");
  }

  std::string out(kMagic, kMagicLen);
  out += static_cast<char>(major);
  out += '\0';
  storeLE(out, hlen + padlen, lenBytes);
  out += dict;
  out.append(padlen, ' ');
  out += '\n';

  size_t item = rt::dtypeBytes(array.dtype);
  out.reserve(out.size() + item * array.values.size());
  for (double v : array.values) {
    storeLE(out, elementBits(v, array.dtype), item);
  }
  return out;
}

Array read(const std::string &path) {
  errno = 0;
  std::FILE *f = std::fopen(path.c_str(), "rb");
  if (!f)
    fail(path, fmt::format("cannot open file: {}", std::strerror(errno)));
  std::string bytes;
  char buffer[1 << 16];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), f)) > 0)
    bytes.append(buffer, n);
  bool bad = std::ferror(f);
  int err = errno;
  std::fclose(f);
  if (bad)
    fail(path, fmt::format("cannot read file: {}", std::strerror(err)));
  return decode(bytes, path);
}

void write(const std::string &path, const Array &array) {
  std::string bytes = encode(array, path);
  errno = 0;
  std::FILE *f = std::fopen(path.c_str(), "wb");
  if (!f)
    fail(path, fmt::format("cannot create file: {}", std::strerror(errno)));
  bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  int err = errno;
  if (std::fclose(f) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (!ok)
    fail(path, fmt::format("cannot write file: {}", std::strerror(err)));
}

std::vector<char> toBytes(const Array &array, rt::DType dtype) {
  size_t width = rt::dtypeBytes(dtype);
  std::string out;
  out.reserve(array.values.size() * width);
  for (double v : array.values)
    storeLE(out, elementBits(v, dtype), width);
  return std::vector<char>(out.begin(), out.end());
}

Array fromBytes(const void *bytes, const std::vector<int64_t> &shape,
                rt::DType dtype) {
  Array array{shape, dtype, {}};
  const char *data = static_cast<const char *>(bytes);
  size_t n = static_cast<size_t>(rt::elementCount(shape).value_or(0));
  array.values.resize(n);
  size_t width = rt::dtypeBytes(dtype);
  for (size_t i = 0; i < n; ++i)
    array.values[i] = loadElement(data + width * i, dtype);
  return array;
}

} // namespace fwp::npy
