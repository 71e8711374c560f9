//===- Backend.cpp - Backends fwp-run can run the layer on ----------------===//

#include "Backend.h"
#include "Error.h"

namespace fwp::run {

namespace {

/// The float64 reference: plain loops, fwp/Reference/Reference.h.
class ReferenceBackend final : public Backend {
public:
  const char *name() const override { return "reference"; }

  ref::AttentionOutputs forward(const ref::AttentionConfig &config,
                                const ref::AttentionShape &shape,
                                const std::vector<double> &x,
                                const ref::AttentionParams &params) override {
    return ref::attention(config, shape, x, params);
  }

  ref::AttentionGradients backward(const ref::AttentionConfig &config,
                                   const ref::AttentionShape &shape,
                                   const std::vector<double> &x,
                                   const ref::AttentionParams &params,
                                   const std::vector<double> &dy) override {
    return ref::attentionBackward(config, shape, x, params, dy);
  }
};

struct BackendEntry {
  const char *name;
  /// Null while the backend is not available.
  std::unique_ptr<Backend> (*create)();
};

const BackendEntry kBackends[] = {
    {"reference",
     [] { return std::unique_ptr<Backend>(new ReferenceBackend); }},
    {"cpu", nullptr},
    {"cuda", nullptr},
};

} // namespace

std::vector<std::string> backendNames() {
  std::vector<std::string> names;
  for (const BackendEntry &entry : kBackends)
    names.push_back(entry.name);
  return names;
}

std::unique_ptr<Backend> createBackend(const std::string &name) {
  for (const BackendEntry &entry : kBackends) {
    if (name != entry.name)
      continue;
    if (!entry.create)
      throw UsageError("backend '" + name + "' is not available yet");
    return entry.create();
  }
  std::string known;
  for (const BackendEntry &entry : kBackends)
    known += std::string(known.empty() ? "" : ", ") + entry.name;
  throw UsageError("unknown backend '" + name + "' (expected one of: " + known +
                   ")");
}

} // namespace fwp::run
