//===- NpyHeader.h - The dict of an .npy header ------------------*- C++
//-*-===//
//
// Internal to Npy.cpp: the header's Python dict, parsed.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_LIB_SUPPORT_NPYHEADER_H
#define FWP_LIB_SUPPORT_NPYHEADER_H

#include <cstdint>
#include <string>
#include <vector>

namespace fwp::npy::detail {

/// Throws std::runtime_error "<name>: <problem>".
[[noreturn]] void fail(const std::string &name, const std::string &problem);

/// One value of the dict: a string, True/False or a tuple of non-negative
/// integers.
struct Value {
  enum Kind { String, Bool, Tuple } kind = String;
  std::string str;
  bool boolean = false;
  std::vector<int64_t> tuple;
  std::string text; // source text, for messages
};

/// The keys numpy writes, each at most once.
struct Dict {
  bool hasDescr = false, hasFortran = false, hasShape = false;
  Value descr, fortran, shape;
};

/// Parses the header `text` of the file `name`; throws naming the file
/// and the problem.
Dict parseHeader(const std::string &text, const std::string &name);

} // namespace fwp::npy::detail

#endif // FWP_LIB_SUPPORT_NPYHEADER_H
