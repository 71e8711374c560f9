//===- Backend.cpp - Backends fwp-run can run the layer on ----------------===//

#include "Backend.h"
#include "Error.h"

#include "fwp/Runtime/Driver.h"

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
                                npy::DType) override {
    // Always float64: it is the yardstick, whatever the inputs' dtype.
    return ref::attention(config, shape, x, params);
  }

  ref::AttentionGradients
  backward(const ref::AttentionConfig &config, const ref::AttentionShape &shape,
           const std::vector<double> &x, const ref::AttentionParams &params,
           const std::vector<double> &dy, npy::DType) override {
    // Always float64, as the forward.
    return ref::attentionBackward(config, shape, x, params, dy);
  }
};

struct BackendEntry {
  const char *name;
  std::unique_ptr<Backend> (*create)(const BackendSettings &);
};

const BackendEntry kBackends[] = {
    {"reference",
     [](const BackendSettings &) {
       return std::unique_ptr<Backend>(new ReferenceBackend);
     }},
    {"cpu", createCpuBackend},
    {"cuda", createCudaBackend},
};

const BackendEntry *findBackend(const std::string &name) {
  for (const BackendEntry &entry : kBackends)
    if (name == entry.name)
      return &entry;
  return nullptr;
}

} // namespace

std::vector<std::string> backendNames() {
  std::vector<std::string> names;
  for (const BackendEntry &entry : kBackends)
    names.push_back(entry.name);
  return names;
}

std::unique_ptr<Backend> createBackend(const std::string &name,
                                       const BackendSettings &settings) {
  if (const BackendEntry *entry = findBackend(name))
    return entry->create(settings);
  std::string known;
  for (const BackendEntry &entry : kBackends)
    known += std::string(known.empty() ? "" : ", ") + entry.name;
  throw UsageError("unknown backend '" + name + "' (expected one of: " + known +
                   ")");
}

BackendChoice chooseBackend(bool needsBackward,
                            const BackendSettings &settings) {
  // Each backend passed over adds its reason, so that the line fwp-run
  // prints says why the fastest one was not used.
  std::string why;
  auto skip = [&why](const std::string &reason) {
    why += (why.empty() ? "" : "; ") + reason;
  };
  std::vector<const char *> preference;
  std::string whyNoGpu;
  if (rt::cudaUsable(&whyNoGpu))
    preference.push_back("cuda");
  else
    skip("no usable CUDA GPU: " + whyNoGpu);
  preference.push_back("cpu");
  preference.push_back("reference");

  for (const char *name : preference) {
    std::unique_ptr<Backend> backend = findBackend(name)->create(settings);
    if (needsBackward && !backend->hasBackward()) {
      skip(std::string("backend '") + name + "' computes the forward only");
      continue;
    }
    return {std::move(backend), why.empty() ? "a usable CUDA GPU" : why};
  }
  // The reference computes both directions: the loop always returns.
  throw std::logic_error("no backend can run");
}

} // namespace fwp::run
