//===- Backend.h - Backends fwp-run can run the layer on --------*- C++ -*-===//
//
// A backend computes the forward and (optionally) the backward of the
// fast-weight attention layer. Its calls take exactly the arguments of
// fwp::ref::attention / fwp::ref::attentionBackward (float64 vectors in the
// layouts of fwp/Reference/Reference.h), whatever precision it computes in;
// fwp-run converts the .npy arrays to and from them.
//
// Backends are looked up by name in a table (Backend.cpp). `reference` is
// implemented; `cpu` and `cuda` are recognised but not available yet: a later
// change adds a Backend subclass and puts its factory into the table.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_RUN_BACKEND_H
#define FWP_RUN_BACKEND_H

#include "fwp/Reference/Reference.h"

#include <memory>
#include <string>
#include <vector>

namespace fwp::run {

class Backend {
public:
  virtual ~Backend() = default;

  virtual const char *name() const = 0;

  /// As fwp::ref::attention with a zero initial state; only `y` of the
  /// result is used by fwp-run.
  virtual ref::AttentionOutputs forward(const ref::AttentionConfig &config,
                                        const ref::AttentionShape &shape,
                                        const std::vector<double> &x,
                                        const ref::AttentionParams &params) = 0;

  /// As fwp::ref::attentionBackward with a zero initial state and no
  /// gradient of the final state; `initialState` of the result is unused.
  virtual ref::AttentionGradients backward(const ref::AttentionConfig &config,
                                           const ref::AttentionShape &shape,
                                           const std::vector<double> &x,
                                           const ref::AttentionParams &params,
                                           const std::vector<double> &dy) = 0;
};

/// The names fwp-run recognises, available or not, in the table's order.
std::vector<std::string> backendNames();

/// Creates the backend called `name`. Throws UsageError ("backend 'cpu' is
/// not available yet", or "unknown backend ...") when there is none.
std::unique_ptr<Backend> createBackend(const std::string &name);

} // namespace fwp::run

#endif // FWP_RUN_BACKEND_H
