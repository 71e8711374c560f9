//===- NpyTest.cpp - Tests of the .npy reader and writer ------------------===//

#include "fwp/Support/Npy.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>

using fwp::npy::Array;
using fwp::rt::DType;

namespace {

/// A fresh directory under the test temp dir, one per test.
class NpyTest : public ::testing::Test {
protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "npytest-XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    ASSERT_NE(mkdtemp(buf.data()), nullptr);
    dir = buf.data();
  }
  void TearDown() override {
    std::string cmd = "rm -rf '" + dir + "'";
    (void)std::system(cmd.c_str());
  }

  std::string path(const std::string &name) const { return dir + "/" + name; }

  void writeBytes(const std::string &name, const std::string &bytes) const {
    std::ofstream out(path(name), std::ios::binary);
    out.write(bytes.data(), bytes.size());
    ASSERT_TRUE(out.good());
  }

  std::string readBytes(const std::string &name) const {
    std::ifstream in(path(name), std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  /// Writes `bytes` to a file and expects `read` to throw a message that
  /// names the file and contains `problem`.
  void expectRefused(const std::string &bytes, const std::string &problem) {
    writeBytes("bad.npy", bytes);
    expectReadFails(path("bad.npy"), problem);
  }

  static void expectReadFails(const std::string &file,
                              const std::string &problem) {
    try {
      fwp::npy::read(file);
      ADD_FAILURE() << "reading " << file << " did not fail (expected '"
                    << problem << "')";
    } catch (const std::runtime_error &e) {
      std::string msg = e.what();
      EXPECT_EQ(msg.rfind(file + ": ", 0), 0u) << msg;
      EXPECT_NE(msg.find(problem), std::string::npos)
          << "message: " << msg << "\nexpected to contain: " << problem;
    }
  }

  std::string dir;
};

std::string le16(unsigned v) {
  return std::string{static_cast<char>(v & 0xff),
                     static_cast<char>((v >> 8) & 0xff)};
}
std::string le32(unsigned v) { return le16(v & 0xffff) + le16(v >> 16); }

std::string f64Bytes(const std::vector<double> &values) {
  std::string s;
  for (double v : values) {
    unsigned char b[8];
    std::memcpy(b, &v, 8); // the tests run on a little-endian host
    s.append(reinterpret_cast<char *>(b), 8);
  }
  return s;
}

/// A file with the given header dict text, padded as numpy does (to a
/// multiple of 64 bytes), in format version `major`.0.
std::string npyFile(const std::string &dict, const std::string &data,
                    int major = 1) {
  size_t prefix = major == 1 ? 10 : 12;
  std::string header = dict;
  size_t total = prefix + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out = std::string("\x93NUMPY", 6);
  out += static_cast<char>(major);
  out += '\0';
  out += major == 1 ? le16(header.size()) : le32(header.size());
  return out + header + data;
}

Array makeArray(std::vector<int64_t> shape, DType dtype) {
  Array a;
  a.shape = std::move(shape);
  a.dtype = dtype;
  int64_t n = *fwp::rt::elementCount(a.shape);
  for (int64_t i = 0; i < n; ++i)
    a.values.push_back(dtype == DType::F32 ? 0.25 * i - 3.5
                                           : std::sin(1.0 + i) * 1e3);
  return a;
}

void expectSameArray(const Array &a, const Array &b) {
  EXPECT_EQ(a.shape, b.shape);
  EXPECT_EQ(a.dtype, b.dtype);
  ASSERT_EQ(a.values.size(), b.values.size());
  for (size_t i = 0; i < a.values.size(); ++i)
    EXPECT_EQ(a.values[i], b.values[i]) << "at " << i;
}

//===----------------------------------------------------------------------===//
// Round trips
//===----------------------------------------------------------------------===//

TEST_F(NpyTest, RoundTripFloat64AllRanks) {
  std::vector<std::vector<int64_t>> shapes = {
      {}, {1}, {7}, {2, 3}, {3, 1, 4}, {2, 3, 4, 5}, {1, 2, 1, 2, 1, 2}};
  for (const auto &shape : shapes) {
    Array a = makeArray(shape, DType::F64);
    fwp::npy::write(path("a.npy"), a);
    expectSameArray(fwp::npy::read(path("a.npy")), a);
    // The data starts at a multiple of 64 bytes.
    EXPECT_EQ(readBytes("a.npy").size() % 64, (a.values.size() * 8) % 64);
  }
}

TEST_F(NpyTest, RoundTripFloat32AllRanks) {
  std::vector<std::vector<int64_t>> shapes = {
      {}, {5}, {4, 2}, {2, 2, 3}, {1, 1, 1, 1}};
  for (const auto &shape : shapes) {
    Array a = makeArray(shape, DType::F32);
    fwp::npy::write(path("a.npy"), a);
    expectSameArray(fwp::npy::read(path("a.npy")), a);
  }
}

TEST_F(NpyTest, RoundTripEmptyDimensions) {
  for (DType dtype : {DType::F32, DType::F64}) {
    for (const auto &shape :
         std::vector<std::vector<int64_t>>{{0}, {2, 0, 3}, {0, 0}, {4, 0}}) {
      Array a = makeArray(shape, dtype);
      ASSERT_TRUE(a.values.empty());
      fwp::npy::write(path("e.npy"), a);
      expectSameArray(fwp::npy::read(path("e.npy")), a);
    }
  }
}

TEST_F(NpyTest, RoundTripSpecialValues) {
  Array a;
  a.shape = {6};
  a.dtype = DType::F64;
  a.values = {0.0,
              -0.0,
              std::numeric_limits<double>::infinity(),
              -std::numeric_limits<double>::infinity(),
              std::numeric_limits<double>::denorm_min(),
              std::numeric_limits<double>::max()};
  fwp::npy::write(path("s.npy"), a);
  Array b = fwp::npy::read(path("s.npy"));
  expectSameArray(b, a);
  EXPECT_TRUE(std::signbit(b.values[1]));

  a.values.push_back(std::nan(""));
  a.shape = {7};
  fwp::npy::write(path("s.npy"), a);
  EXPECT_TRUE(std::isnan(fwp::npy::read(path("s.npy")).values[6]));
}

TEST_F(NpyTest, Float32WriteRoundsToFloat) {
  Array a;
  a.shape = {2};
  a.dtype = DType::F32;
  a.values = {0.1, 1.0 / 3.0};
  fwp::npy::write(path("r.npy"), a);
  Array b = fwp::npy::read(path("r.npy"));
  EXPECT_EQ(b.values[0], static_cast<double>(0.1f));
  EXPECT_EQ(b.values[1], static_cast<double>(1.0f / 3.0f));
  EXPECT_EQ(readBytes("r.npy").size(), 128u + 8u);
}

//===----------------------------------------------------------------------===//
// Byte-exact files, as numpy.save writes them
//===----------------------------------------------------------------------===//

// np.save("a.npy", np.arange(6.0).reshape(2, 3))
TEST_F(NpyTest, ByteExactFloat64Matrix) {
  std::string expected = std::string("\x93NUMPY\x01\x00\x76\x00", 10) +
                         "{'descr': '<f8', 'fortran_order': False, "
                         "'shape': (2, 3), }" +
                         std::string(58, ' ') + "\n" +
                         std::string("\x00\x00\x00\x00\x00\x00\x00\x00"
                                     "\x00\x00\x00\x00\x00\x00\xf0\x3f"
                                     "\x00\x00\x00\x00\x00\x00\x00\x40"
                                     "\x00\x00\x00\x00\x00\x00\x08\x40"
                                     "\x00\x00\x00\x00\x00\x00\x10\x40"
                                     "\x00\x00\x00\x00\x00\x00\x14\x40",
                                     48);
  ASSERT_EQ(expected.size(), 128u + 48u);

  Array a;
  a.shape = {2, 3};
  a.dtype = DType::F64;
  a.values = {0, 1, 2, 3, 4, 5};
  fwp::npy::write(path("a.npy"), a);
  EXPECT_EQ(readBytes("a.npy"), expected);
  EXPECT_EQ(fwp::npy::encode(a), expected);

  writeBytes("numpy.npy", expected);
  expectSameArray(fwp::npy::read(path("numpy.npy")), a);
}

// np.save("b.npy", np.array([1.5, -2.0, 0.0], dtype=np.float32))
TEST_F(NpyTest, ByteExactFloat32Vector) {
  std::string expected = std::string("\x93NUMPY\x01\x00\x76\x00", 10) +
                         "{'descr': '<f4', 'fortran_order': False, "
                         "'shape': (3,), }" +
                         std::string(60, ' ') + "\n" +
                         std::string("\x00\x00\xc0\x3f"
                                     "\x00\x00\x00\xc0"
                                     "\x00\x00\x00\x00",
                                     12);
  Array a;
  a.shape = {3};
  a.dtype = DType::F32;
  a.values = {1.5, -2.0, 0.0};
  EXPECT_EQ(fwp::npy::encode(a), expected);
}

// np.save("c.npy", np.float64(2.5))
TEST_F(NpyTest, ByteExactScalar) {
  std::string expected =
      std::string("\x93NUMPY\x01\x00\x76\x00", 10) +
      "{'descr': '<f8', 'fortran_order': False, 'shape': (), }" +
      std::string(62, ' ') + "\n" +
      std::string("\x00\x00\x00\x00\x00\x00\x04\x40", 8);
  Array a;
  a.shape = {};
  a.dtype = DType::F64;
  a.values = {2.5};
  EXPECT_EQ(fwp::npy::encode(a), expected);
  writeBytes("c.npy", expected);
  expectSameArray(fwp::npy::read(path("c.npy")), a);
}

//===----------------------------------------------------------------------===//
// Other format versions and header spellings
//===----------------------------------------------------------------------===//

TEST_F(NpyTest, ReadsVersion2) {
  std::string dict = "{'descr': '<f8', 'fortran_order': False, "
                     "'shape': (3,), }";
  std::string file = npyFile(dict, f64Bytes({1.0, -2.0, 3.25}), 2);
  ASSERT_EQ(file.substr(6, 2), std::string("\x02\x00", 2));
  writeBytes("v2.npy", file);
  Array a = fwp::npy::read(path("v2.npy"));
  EXPECT_EQ(a.shape, (std::vector<int64_t>{3}));
  EXPECT_EQ(a.dtype, DType::F64);
  EXPECT_EQ(a.values, (std::vector<double>{1.0, -2.0, 3.25}));
}

TEST_F(NpyTest, ReadsVersion3) {
  std::string dict = "{'descr': '<f8', 'fortran_order': False, "
                     "'shape': (1, 2), }";
  writeBytes("v3.npy", npyFile(dict, f64Bytes({4.0, 5.0}), 3));
  Array a = fwp::npy::read(path("v3.npy"));
  EXPECT_EQ(a.shape, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(a.values, (std::vector<double>{4.0, 5.0}));
}

TEST_F(NpyTest, WritesVersion2WhenHeaderIsLarge) {
  // 25000 dimensions of size 1 need a header longer than 65535 bytes.
  Array a;
  a.shape.assign(25000, 1);
  a.dtype = DType::F64;
  a.values = {7.0};
  fwp::npy::write(path("big.npy"), a);
  std::string bytes = readBytes("big.npy");
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x93NUMPY\x02\x00", 8));
  EXPECT_EQ((bytes.size() - 8) % 64, 0u);
  expectSameArray(fwp::npy::read(path("big.npy")), a);
}

TEST_F(NpyTest, HeaderKeyOrderQuotesAndWhitespace) {
  std::string dict = "{ \"shape\" :( 2 ,3 ) ,\n  'fortran_order':False,"
                     "'descr':\"<f8\"}";
  writeBytes("h.npy", npyFile(dict, f64Bytes({1, 2, 3, 4, 5, 6})));
  Array a = fwp::npy::read(path("h.npy"));
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a.values, (std::vector<double>{1, 2, 3, 4, 5, 6}));
}

TEST_F(NpyTest, HeaderFromOldNumpy) {
  // Python 2 era numpy: longs in the shape, 16-byte alignment.
  std::string dict =
      "{'descr': '<f8', 'fortran_order': False, 'shape': (2L, 1L), }";
  std::string header = dict;
  header.append((16 - (10 + dict.size() + 1) % 16) % 16, ' ');
  header += '\n';
  std::string file = std::string("\x93NUMPY\x01\x00", 8) + le16(header.size()) +
                     header + f64Bytes({8.0, 9.0});
  writeBytes("old.npy", file);
  Array a = fwp::npy::read(path("old.npy"));
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(a.values, (std::vector<double>{8.0, 9.0}));
}

//===----------------------------------------------------------------------===//
// Refusals: each names the file and the problem
//===----------------------------------------------------------------------===//

const char *kGoodDict = "{'descr': '<f8', 'fortran_order': False, "
                        "'shape': (2,), }";

TEST_F(NpyTest, RefusesFortranOrder) {
  expectRefused(npyFile("{'descr': '<f8', 'fortran_order': True, "
                        "'shape': (2, 2), }",
                        f64Bytes({1, 2, 3, 4})),
                "Fortran-order arrays are not supported");
}

TEST_F(NpyTest, RefusesBigEndian) {
  expectRefused(npyFile("{'descr': '>f8', 'fortran_order': False, "
                        "'shape': (2,), }",
                        f64Bytes({1, 2})),
                "big-endian arrays are not supported (dtype '>f8'");
  expectRefused(npyFile("{'descr': '>f4', 'fortran_order': False, "
                        "'shape': (2,), }",
                        std::string(8, '\0')),
                "big-endian arrays are not supported (dtype '>f4'");
}

TEST_F(NpyTest, RefusesOtherDtypes) {
  for (const char *descr :
       {"<i4", "<f16", "|u1", "<i8", "<c16", "|b1", "<U3", "=f8", "f8", "O"}) {
    SCOPED_TRACE(descr);
    expectRefused(npyFile(std::string("{'descr': '") + descr +
                              "', 'fortran_order': False, 'shape': (2,), }",
                          std::string(64, '\0')),
                  std::string("unsupported dtype '") + descr + "'");
  }
  expectRefused(npyFile("{'descr': [('a', '<f8')], 'fortran_order': False, "
                        "'shape': (2,), }",
                        f64Bytes({1, 2})),
                "structured dtypes are not supported");
}

TEST_F(NpyTest, RefusesTruncatedData) {
  std::string file = npyFile("{'descr': '<f8', 'fortran_order': False, "
                             "'shape': (2, 3), }",
                             f64Bytes({1, 2, 3, 4, 5}));
  expectRefused(file, "truncated data: shape [2, 3] of float64 needs 48 "
                      "bytes, the file has 40");
  std::string f32 = npyFile("{'descr': '<f4', 'fortran_order': False, "
                            "'shape': (3,), }",
                            std::string(11, '\0'));
  expectRefused(f32, "truncated data: shape [3] of float32 needs 12 bytes, "
                     "the file has 11");
}

TEST_F(NpyTest, RefusesTrailingData) {
  expectRefused(npyFile(kGoodDict, f64Bytes({1, 2, 3})),
                "8 unexpected bytes after the data");
}

TEST_F(NpyTest, RefusesBadMagic) {
  std::string file = npyFile(kGoodDict, f64Bytes({1, 2}));
  file[1] = 'X';
  expectRefused(file, "not an .npy file (bad magic string)");
  expectRefused("", "not an .npy file (bad magic string)");
  expectRefused("hello, world\n", "not an .npy file (bad magic string)");
}

TEST_F(NpyTest, RefusesUnknownVersion) {
  std::string file = npyFile(kGoodDict, f64Bytes({1, 2}));
  file[6] = '\x04';
  expectRefused(file, "unsupported .npy format version 4.0");
  file[6] = '\x01';
  file[7] = '\x01';
  expectRefused(file, "unsupported .npy format version 1.1");
}

TEST_F(NpyTest, RefusesTruncatedHeader) {
  std::string file = npyFile(kGoodDict, "");
  expectRefused(file.substr(0, 9), "truncated header");
  expectRefused(file.substr(0, 40), "truncated header: the header needs 128 "
                                    "bytes, the file has 40");
}

TEST_F(NpyTest, RefusesBadDict) {
  std::string data = f64Bytes({1, 2});
  expectRefused(npyFile("'descr': '<f8'", data),
                "malformed .npy header: the header is not a dict");
  expectRefused(npyFile("{'descr' '<f8', 'fortran_order': False, "
                        "'shape': (2,), }",
                        data),
                "malformed .npy header: expected ':' after key 'descr'");
  expectRefused(npyFile("{'descr': '<f8' 'fortran_order': False, "
                        "'shape': (2,), }",
                        data),
                "malformed .npy header: expected ',' or '}'");
  expectRefused(npyFile("{'descr': '<f8', 'fortran_order': False, "
                        "'shape': (2,), ",
                        data),
                "malformed .npy header");
  expectRefused(npyFile("{'descr': '<f8, 'fortran_order': False}", data),
                "malformed .npy header");
  expectRefused(npyFile(std::string(kGoodDict) + " x", data),
                "malformed .npy header: unexpected text after the dict");
  expectRefused(npyFile("{'descr': '<f8', 'fortran_order': Falsey, "
                        "'shape': (2,), }",
                        data),
                "malformed .npy header: unsupported value for "
                "'fortran_order'");
  expectRefused(npyFile("{'descr': '<f8', 'fortran_order': 0, "
                        "'shape': (2,), }",
                        data),
                "malformed .npy header: unsupported value for "
                "'fortran_order'");
  expectRefused(npyFile("{'descr': '<f8', 'fortran_order': 'no', "
                        "'shape': (2,), }",
                        data),
                "malformed .npy header: 'fortran_order' is not True or False "
                "but 'no'");
  expectRefused(npyFile("{'descr': 8, 'fortran_order': False, "
                        "'shape': (2,), }",
                        data),
                "malformed .npy header: unsupported value for 'descr'");
  expectRefused(npyFile("{'descr': False, 'fortran_order': False, "
                        "'shape': (2,), }",
                        data),
                "malformed .npy header: 'descr' is not a string but False");
  expectRefused(npyFile("{'descr': '<f8', 'fortran_order': False, "
                        "'shape': (2,), 'extra': 1, }",
                        data),
                "malformed .npy header: unexpected key 'extra'");
  expectRefused(npyFile("{'descr': '<f8', 'fortran_order': False, "
                        "'shape': (2,), 'descr': '<f8'}",
                        data),
                "malformed .npy header: duplicate key 'descr'");
}

TEST_F(NpyTest, RefusesMissingKeys) {
  std::string data = f64Bytes({1, 2});
  expectRefused(npyFile("{'fortran_order': False, 'shape': (2,), }", data),
                "malformed .npy header: missing key 'descr'");
  expectRefused(npyFile("{'descr': '<f8', 'shape': (2,), }", data),
                "malformed .npy header: missing key 'fortran_order'");
  expectRefused(npyFile("{'descr': '<f8', 'fortran_order': False, }", data),
                "malformed .npy header: missing key 'shape'");
  expectRefused(npyFile("{}", data),
                "malformed .npy header: missing key 'descr'");
}

TEST_F(NpyTest, RefusesBadShapeTuple) {
  std::string data = f64Bytes({1, 2});
  auto withShape = [&](const std::string &shape) {
    return npyFile(
        "{'descr': '<f8', 'fortran_order': False, 'shape': " + shape + ", }",
        data);
  };
  expectRefused(withShape("(2)"), "bad shape tuple: 'shape' is not a tuple");
  expectRefused(withShape("(2, -1)"), "negative dimension");
  expectRefused(withShape("(a,)"), "bad shape tuple: expected an integer");
  expectRefused(withShape("(2.0,)"), "bad shape tuple");
  expectRefused(withShape("(2,,)"), "bad shape tuple");
  expectRefused(withShape("(,)"), "bad shape tuple");
  expectRefused(withShape("(2, 3"), "bad shape tuple");
  expectRefused(withShape("(99999999999999999999,)"),
                "bad shape tuple: dimension too large");
  expectRefused(withShape("(4294967296, 4294967296)"), "too many elements");
  expectRefused(withShape("[2]"),
                "malformed .npy header: unsupported value for 'shape'");
  expectRefused(withShape("'2'"),
                "malformed .npy header: 'shape' is not a tuple but '2'");
}

TEST_F(NpyTest, RefusesMissingFile) {
  expectReadFails(path("nope.npy"),
                  "cannot open file: No such file or directory");
}

TEST_F(NpyTest, RefusesDirectory) { expectReadFails(dir, "cannot read file"); }

TEST_F(NpyTest, WriteRefusesWrongValueCount) {
  Array a;
  a.shape = {2, 2};
  a.values = {1, 2, 3};
  try {
    fwp::npy::write(path("w.npy"), a);
    ADD_FAILURE() << "write did not fail";
  } catch (const std::runtime_error &e) {
    EXPECT_EQ(std::string(e.what()),
              path("w.npy") + ": cannot write: shape [2, 2] has 4 elements "
                              "but 3 values are given");
  }
  EXPECT_NE(access(path("w.npy").c_str(), F_OK), 0);
}

TEST_F(NpyTest, WriteRefusesUnwritablePath) {
  Array a = makeArray({2}, DType::F64);
  try {
    fwp::npy::write(path("no/such/dir/w.npy"), a);
    ADD_FAILURE() << "write did not fail";
  } catch (const std::runtime_error &e) {
    EXPECT_EQ(std::string(e.what()), path("no/such/dir/w.npy") +
                                         ": cannot create file: No such "
                                         "file or directory");
  }
}

TEST(NpyHelpers, FormatShapeAndNumpyName) {
  EXPECT_EQ(fwp::npy::formatShape({}), "[]");
  EXPECT_EQ(fwp::npy::formatShape({8}), "[8]");
  EXPECT_EQ(fwp::npy::formatShape({8, 6}), "[8, 6]");
  EXPECT_STREQ(fwp::npy::numpyName(DType::F32), "float32");
  EXPECT_STREQ(fwp::npy::numpyName(DType::F64), "float64");
}

/// The message of encode(a), "" if it does not throw.
std::string encodeError(const Array &a) {
  try {
    fwp::npy::encode(a);
  } catch (const std::runtime_error &e) {
    return e.what();
  }
  return "";
}

TEST(NpyHelpers, SixteenBitConversionsRoundToNearestEven) {
  using fwp::rt::fromBf16;
  using fwp::rt::fromF16;
  using fwp::rt::toBf16;
  using fwp::rt::toF16;
  // bf16: 8 significant bits. Ties go to the even neighbour.
  EXPECT_EQ(toBf16(1.0f), 0x3f80);
  EXPECT_EQ(toBf16(1.0f + 0x1p-8f), 0x3f80);     // tie: down to even
  EXPECT_EQ(toBf16(1.0f + 3 * 0x1p-8f), 0x3f82); // tie: up to even
  EXPECT_EQ(toBf16(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81);
  EXPECT_EQ(toBf16(-2.0f), 0xc000);
  EXPECT_TRUE(std::isnan(fromBf16(toBf16(std::nanf("")))));
  // f16: 11 significant bits, subnormals from 2^-24, infinity from 65520.
  EXPECT_EQ(toF16(1.0f), 0x3c00);
  EXPECT_EQ(toF16(1.0f + 0x1p-11f), 0x3c00);
  EXPECT_EQ(toF16(1.0f + 3 * 0x1p-11f), 0x3c02);
  EXPECT_EQ(toF16(-2.0f), 0xc000);
  EXPECT_EQ(toF16(65504.0f), 0x7bff);
  EXPECT_EQ(toF16(65519.0f), 0x7bff);
  EXPECT_EQ(toF16(65520.0f), 0x7c00);
  EXPECT_EQ(toF16(0x1p-24f), 0x0001);
  EXPECT_EQ(toF16(0x1p-25f), 0x0000);            // tie: down to even (zero)
  EXPECT_EQ(toF16(3 * 0x1p-25f), 0x0002);        // tie: up to even
  EXPECT_EQ(toF16(0x1p-14f - 0x1p-25f), 0x0400); // rounds up to the normals
  EXPECT_EQ(fromF16(0x0001), 0x1p-24f);
  EXPECT_EQ(fromF16(0x7c00), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(fromF16(toF16(std::nanf("")))));
  // Every pattern but NaN survives a round trip through float.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    auto bits = static_cast<uint16_t>(h);
    if (!std::isnan(fromBf16(bits))) {
      ASSERT_EQ(toBf16(fromBf16(bits)), bits) << h;
    }
    if (!std::isnan(fromF16(bits))) {
      ASSERT_EQ(toF16(fromF16(bits)), bits) << h;
    }
  }
}

TEST_F(NpyTest, Float16FilesRoundTripAndBfloat16IsRefused) {
  Array a;
  a.shape = {2, 3};
  a.dtype = DType::F16;
  a.values = {1.0, -0.5, 0x1p-24, 65504.0, 0.333251953125, 0.0};
  fwp::npy::write(path("h.npy"), a);
  EXPECT_NE(readBytes("h.npy").find("'descr': '<f2'"), std::string::npos);
  Array b = fwp::npy::read(path("h.npy"));
  EXPECT_EQ(b.dtype, DType::F16);
  EXPECT_EQ(b.values, a.values);
  EXPECT_STREQ(fwp::npy::numpyName(DType::F16), "float16");

  a.dtype = DType::BF16;
  try {
    fwp::npy::encode(a);
    ADD_FAILURE() << "encode did not fail";
  } catch (const std::runtime_error &e) {
    EXPECT_NE(std::string(e.what()).find("NumPy has no bfloat16"),
              std::string::npos)
        << e.what();
  }
  // As buffers, both 16-bit types are the runtime's (toBytes/fromBytes).
  for (DType dtype : {DType::BF16, DType::F16}) {
    std::vector<char> bytes = fwp::npy::toBytes(b, dtype);
    EXPECT_EQ(bytes.size(), 12u);
    Array back = fwp::npy::fromBytes(bytes.data(), b.shape, dtype);
    EXPECT_EQ(back.values[0], 1.0);
    EXPECT_EQ(back.values[1], -0.5);
  }
}

TEST(NpyHelpers, EncodeRefusesShapesWithoutAnElementCount) {
  Array a;
  a.shape = {2, -1};
  EXPECT_EQ(encodeError(a), "<array>: negative dimension in shape [2, -1]");
  a.shape = {int64_t(1) << 32, int64_t(1) << 32};
  EXPECT_EQ(encodeError(a),
            "<array>: shape [4294967296, 4294967296] has too many elements");
  a.shape = {int64_t(1) << 32, int64_t(1) << 32, 0};
  EXPECT_EQ(encodeError(a), ""); // zero elements, none given
}

} // namespace
