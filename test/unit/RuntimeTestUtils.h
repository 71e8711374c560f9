//===- RuntimeTestUtils.h - Helpers for the runtime's tests -----*- C++ -*-===//
//
// What CudaRuntimeTest.cpp and PlanTest.cpp share: catching an expected
// exception's message, substring assertions, writing files, and the fixture
// of the tests that need a GPU, which skip visibly ("no usable CUDA GPU:
// ...") when there is none.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_TEST_UNIT_RUNTIMETESTUTILS_H
#define FWP_TEST_UNIT_RUNTIMETESTUTILS_H

#include "fwp/Runtime/Driver.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <exception>
#include <fstream>
#include <string>
#include <vector>

namespace fwp::test {

/// The message of the exception of type E that `fn` throws ("" and a test
/// failure if it throws none, or an exception of another type).
template <typename E, typename Fn> std::string messageOf(Fn &&fn) {
  try {
    fn();
  } catch (const E &e) {
    return e.what();
  } catch (const std::exception &e) {
    ADD_FAILURE() << "unexpected exception type: " << e.what();
    return "";
  }
  ADD_FAILURE() << "expected an exception";
  return "";
}

inline ::testing::AssertionResult contains(const std::string &text,
                                           const std::string &part) {
  if (text.find(part) != std::string::npos)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "'" << text << "' does not contain '" << part << "'";
}

inline void writeFile(const std::string &path, const std::string &text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  ASSERT_TRUE(out.good()) << "cannot write " << path;
}

/// start, start + 1, ..., n values.
inline std::vector<float> iota(std::size_t n, float start) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = start + float(i);
  return v;
}

/// The fixture of tests that need a usable CUDA GPU: skips them, saying
/// why, where there is none.
class GpuTest : public ::testing::Test {
protected:
  void SetUp() override {
    std::string why;
    if (!rt::cudaUsable(&why))
      GTEST_SKIP() << "no usable CUDA GPU: " << why;
  }
};

} // namespace fwp::test

#endif // FWP_TEST_UNIT_RUNTIMETESTUTILS_H
