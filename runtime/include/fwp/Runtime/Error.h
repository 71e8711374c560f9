//===- Error.h - Exceptions of the CUDA runtime -----------------*- C++ -*-===//
//
// Every failure in fwp::rt is an exception deriving from fwp::rt::Error, so
// callers can catch the whole runtime with one handler or tell the cases
// apart:
//   CudaError - the driver is missing, has no device, or a call failed.
//   PlanError - a launch plan is malformed or cannot run with the arguments
//               given (Plan.h).
// Anything else (e.g. a file that cannot be read) is a plain Error.
// Messages are meant to be shown to a user as they are.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_RUNTIME_ERROR_H
#define FWP_RUNTIME_ERROR_H

#include <stdexcept>
#include <string>

namespace fwp::rt {

class Error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

class CudaError : public Error {
public:
  using Error::Error;
};

} // namespace fwp::rt

#endif // FWP_RUNTIME_ERROR_H
