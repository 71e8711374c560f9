//===- AttentionEntry.cpp - Loading a compiled entry point ----------------===//

#include "fwp/Runtime/AttentionEntry.h"
#include "fwp/Runtime/Error.h"

namespace fwp::rt {

AttentionSignature attentionSignature(EntryPoint entry, int64_t seqLen,
                                      int64_t batch, int64_t heads,
                                      int64_t dModel) {
  std::vector<int64_t> steps = {seqLen, batch, dModel};
  std::vector<int64_t> square = {dModel, dModel};
  AttentionSignature signature;
  signature.inputs = {{"x", steps},
                      {"w_q", square},
                      {"w_k", square},
                      {"w_v", square},
                      {"w_beta", {heads, dModel}},
                      {"w_o", square},
                      {"b_o", {dModel}}};
  if (entry == EntryPoint::Forward) {
    signature.outputs = {{"y", steps}};
    return signature;
  }
  // One gradient per operand of the forward, named after it.
  for (const AttentionBuffer &input : signature.inputs)
    signature.outputs.push_back({"d" + input.name, input.sizes});
  signature.inputs.push_back({"dy", steps});
  return signature;
}

std::unique_ptr<AttentionEntry> AttentionEntry::load(const std::string &dir) {
  ModuleInfo info = readModuleInfo(dir);
  if (info.backend == Backend::Cpu)
    return loadHostEntry(dir, std::move(info));
  return loadCudaEntry(dir, std::move(info));
}

void AttentionEntry::runOnDevice(int64_t, int64_t,
                                 const std::vector<uint64_t> &,
                                 const std::vector<uint64_t> &,
                                 const DeviceCall &) const {
  throw Error(std::string(entryPointName(info_.entry)) +
              ": a CPU entry runs on host buffers (run), not device ones");
}

} // namespace fwp::rt
