//===- HostEntry.cpp - CPU entry points: a shared object with a C ABI -----===//
//
// The compiler emits the entry point with MLIR's C interface, one memref
// descriptor per buffer (HostLibrary.h), in the order of the entry's
// signature.
//
//===----------------------------------------------------------------------===//

#include "fwp/Runtime/AttentionEntry.h"
#include "fwp/Runtime/HostLibrary.h"

namespace fwp::rt {
namespace {

class HostEntry final : public AttentionEntry {
public:
  HostEntry(ModuleInfo info, std::unique_ptr<HostLibrary> library)
      : AttentionEntry(std::move(info)), library(std::move(library)) {}

  void run(int64_t seqLen, int64_t batch,
           const std::vector<const void *> &inputs,
           const std::vector<void *> &outputs) const override {
    AttentionSignature signature = attentionSignature(
        info().entry, seqLen, batch, info().heads, info().dModel);
    std::vector<HostBuffer> buffers;
    for (size_t i = 0; i < signature.inputs.size(); ++i)
      buffers.push_back({inputs[i], signature.inputs[i].sizes});
    for (size_t i = 0; i < signature.outputs.size(); ++i)
      buffers.push_back({outputs[i], signature.outputs[i].sizes});
    library->call(0, buffers);
  }

private:
  std::unique_ptr<HostLibrary> library;
};

} // namespace

const char *hostEntrySymbol(EntryPoint entry) {
  return entry == EntryPoint::Forward ? "_mlir_ciface_fwp_attention"
                                      : "_mlir_ciface_fwp_attention_grad";
}

std::unique_ptr<AttentionEntry> loadHostEntry(const std::string &dir,
                                              ModuleInfo info) {
  auto library = HostLibrary::load(dir, {hostEntrySymbol(info.entry)});
  return std::make_unique<HostEntry>(std::move(info), std::move(library));
}

} // namespace fwp::rt
