//===- Backend.cpp - Backends fwp-run can run the layer on ----------------===//

#include "Backend.h"

#include "fwp/Runtime/Cuda.h"
#include "fwp/Runtime/Driver.h"

#include <fmt/format.h>

#include <stdexcept>

namespace fwp::run {

namespace {

/// The float64 reference: plain loops, fwp/Reference/Reference.h.
class ReferenceBackend final : public Backend {
public:
  const char *name() const override { return "reference"; }

  ref::AttentionOutputs forward(const ref::AttentionConfig &config,
                                const ref::AttentionShape &shape,
                                const std::vector<double> &x,
                                const ref::AttentionParams &params,
                                rt::DType) override {
    // Always float64: it is the yardstick, whatever the inputs' dtype.
    return ref::attention(config, shape, x, params);
  }

  ref::AttentionGradients
  backward(const ref::AttentionConfig &config, const ref::AttentionShape &shape,
           const std::vector<double> &x, const ref::AttentionParams &params,
           const std::vector<double> &dy, rt::DType) override {
    // Always float64, as the forward.
    return ref::attentionBackward(config, shape, x, params, dy);
  }
};

} // namespace

std::unique_ptr<Backend> createBackend(BackendKind kind,
                                       const BackendSettings &settings) {
  switch (kind) {
  case BackendKind::Reference:
    return std::make_unique<ReferenceBackend>();
  case BackendKind::Cpu:
    return createCpuBackend(settings);
  case BackendKind::Cuda:
    return createCudaBackend(settings);
  }
  throw std::logic_error("unknown backend kind");
}

BackendChoice chooseBackend(bool needsBackward,
                            const BackendSettings &settings) {
  // Each backend passed over adds its reason, so that the line fwp-run
  // prints says why the fastest one was not used.
  std::string why;
  auto skip = [&why](const std::string &reason) {
    why += why.empty() ? reason : "; " + reason;
  };
  std::vector<BackendKind> preference;
  std::string whyNoGpu;
  if (!rt::cudaUsable(&whyNoGpu))
    skip(fmt::format("no usable CUDA GPU: {}", whyNoGpu));
  else if (rt::Context::primary().isEmulator())
    skip("the CUDA driver is fwp's PTX emulator, used only with --backend "
         "cuda");
  else
    preference.push_back(BackendKind::Cuda);
  preference.push_back(BackendKind::Cpu);
  preference.push_back(BackendKind::Reference);

  for (BackendKind kind : preference) {
    std::unique_ptr<Backend> backend = createBackend(kind, settings);
    if (needsBackward && !backend->hasBackward()) {
      skip(fmt::format("backend '{}' computes the forward only",
                       backend->name()));
      continue;
    }
    return {std::move(backend), why.empty() ? "a usable CUDA GPU" : why};
  }
  // The reference computes both directions: the loop always returns.
  throw std::logic_error("no backend can run");
}

} // namespace fwp::run
