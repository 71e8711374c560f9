//===- CudaEntry.cpp - CUDA entry points: a launch plan and its PTX -------===//
//
// Calls take host buffers (each uploads its inputs, carries out the plan and
// downloads its outputs) or device buffers in a caller's stream and memory
// (runOnDevice, DeviceCall). Calls on one entry are serialised (they share
// the loaded modules). The PTX is loaded on the first call, so loading an
// entry needs no GPU.
//
//===----------------------------------------------------------------------===//

#include "fwp/Runtime/AttentionEntry.h"
#include "fwp/Runtime/PlanCuda.h"

#include <fmt/format.h>

namespace fwp::rt {
namespace {

class CudaEntry final : public AttentionEntry {
public:
  CudaEntry(ModuleInfo info, std::unique_ptr<DevicePlan> plan)
      : AttentionEntry(std::move(info)), plan(std::move(plan)) {}

  void run(int64_t seqLen, int64_t batch,
           const std::vector<const void *> &inputs,
           const std::vector<void *> &outputs) const override {
    AttentionSignature signature = attentionSignature(
        info().entry, seqLen, batch, info().heads, info().dModel);
    std::vector<DevicePlan::HostArg> args;
    for (size_t i = 0; i < signature.inputs.size(); ++i)
      args.push_back({inputs[i], nullptr,
                      BufferRef{0, signature.inputs[i].sizes, info().dtype}});
    for (size_t i = 0; i < signature.outputs.size(); ++i)
      args.push_back({nullptr, outputs[i],
                      BufferRef{0, signature.outputs[i].sizes, info().dtype}});
    plan->runOnHost(args);
  }

  bool runsOnDevice() const override { return true; }

  void runOnDevice(int64_t seqLen, int64_t batch,
                   const std::vector<uint64_t> &inputs,
                   const std::vector<uint64_t> &outputs,
                   const DeviceCall &call) const override {
    AttentionSignature signature = attentionSignature(
        info().entry, seqLen, batch, info().heads, info().dModel);
    if (inputs.size() != signature.inputs.size() ||
        outputs.size() != signature.outputs.size())
      throw Error(fmt::format(
          "{}: {} inputs and {} outputs given, the entry takes {} and {}",
          entryPointName(info().entry), inputs.size(), outputs.size(),
          signature.inputs.size(), signature.outputs.size()));
    std::vector<BufferRef> refs;
    for (size_t i = 0; i < inputs.size(); ++i)
      refs.push_back({inputs[i], signature.inputs[i].sizes, info().dtype});
    for (size_t i = 0; i < outputs.size(); ++i)
      refs.push_back({outputs[i], signature.outputs[i].sizes, info().dtype});
    plan->run(refs, call);
  }

private:
  std::unique_ptr<DevicePlan> plan;
};

} // namespace

std::unique_ptr<AttentionEntry> loadCudaEntry(const std::string &dir,
                                              ModuleInfo info) {
  return std::make_unique<CudaEntry>(std::move(info), DevicePlan::load(dir));
}

} // namespace fwp::rt
