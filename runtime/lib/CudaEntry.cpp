//===- CudaEntry.cpp - CUDA entry points: a launch plan and its PTX -------===//
//
// Calls take host buffers: each call uploads its inputs, carries out the
// plan and downloads its outputs. Calls on one entry are serialised (they
// share the loaded modules and the default stream). The PTX is loaded on the
// first call, so loading an entry needs no GPU.
//
//===----------------------------------------------------------------------===//

#include "fwp/Runtime/AttentionEntry.h"
#include "fwp/Runtime/PlanCuda.h"

#include <fmt/format.h>

#include <map>
#include <mutex>

namespace fwp::rt {
namespace {

class CudaEntry final : public AttentionEntry {
public:
  CudaEntry(ModuleInfo info, Plan plan, std::map<std::string, std::string> ptx)
      : AttentionEntry(std::move(info)), plan(std::move(plan)),
        ptx(std::move(ptx)) {}

  void run(int64_t seqLen, int64_t batch,
           const std::vector<const void *> &inputs,
           const std::vector<void *> &outputs) const override {
    AttentionSignature signature = attentionSignature(
        info().entry, seqLen, batch, info().heads, info().dModel);
    std::lock_guard<std::mutex> lock(mutex);
    CudaPlanDevice &dev = device();
    std::vector<DeviceBuffer> memory;
    std::vector<BufferRef> refs;
    auto upload = [&](const AttentionBuffer &buffer, const void *host) {
      BufferRef ref{0, buffer.sizes, info().dtype};
      // The caller checked that the sizes do not overflow.
      size_t bytes =
          static_cast<size_t>(*ref.elementCount()) * dtypeBytes(info().dtype);
      memory.emplace_back(bytes);
      if (host)
        memory.back().copyFromHost(host, bytes);
      ref.ptr = memory.back().ptr();
      refs.push_back(std::move(ref));
    };
    for (size_t i = 0; i < signature.inputs.size(); ++i)
      upload(signature.inputs[i], inputs[i]);
    for (const AttentionBuffer &output : signature.outputs)
      upload(output, nullptr);
    execute(plan, dev, refs);
    for (size_t i = 0; i < outputs.size(); ++i) {
      const DeviceBuffer &result = memory[signature.inputs.size() + i];
      result.copyToHost(outputs[i], result.size());
    }
  }

  bool runsOnDevice() const override { return true; }

  void runOnDevice(int64_t seqLen, int64_t batch,
                   const std::vector<uint64_t> &inputs,
                   const std::vector<uint64_t> &outputs) const override {
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
    std::lock_guard<std::mutex> lock(mutex);
    execute(plan, device(), refs);
  }

private:
  CudaPlanDevice &device() const {
    if (!loaded)
      loaded = std::make_unique<CudaPlanDevice>(ptx);
    return *loaded;
  }

  Plan plan;
  std::map<std::string, std::string> ptx;
  mutable std::mutex mutex;
  mutable std::unique_ptr<CudaPlanDevice> loaded;
};

} // namespace

std::unique_ptr<AttentionEntry> loadCudaEntry(const std::string &dir,
                                              ModuleInfo info) {
  Plan plan = loadPlanFile(fmt::format("{}/plan.fwp", dir));
  std::map<std::string, std::string> ptx;
  for (const std::string &module : plan.modules)
    ptx[module] = readTextFile(fmt::format("{}/{}.ptx", dir, module));
  return std::make_unique<CudaEntry>(std::move(info), std::move(plan),
                                     std::move(ptx));
}

} // namespace fwp::rt
