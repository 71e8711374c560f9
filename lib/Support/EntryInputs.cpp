//===- EntryInputs.cpp - An entry point's inputs from .npy files ---------===//

#include "fwp/Support/EntryInputs.h"
#include "fwp/Support/Npy.h"

#include <fmt/format.h>

namespace fwp::npy {

EntryInputs readEntryInputs(const std::string &dir,
                            const rt::ModuleInfo &info) {
  Array x = read(dir + "/x.npy");
  if (x.shape.size() != 3 || x.shape[2] != info.dModel || x.shape[0] < 1 ||
      x.shape[1] < 1)
    throw ShapeError(fmt::format(
        "{}/x.npy: shape {}, expected [seq_len >= 1, batch >= 1, {}]", dir,
        formatShape(x.shape), info.dModel));
  EntryInputs inputs;
  inputs.seqLen = x.shape[0];
  inputs.batch = x.shape[1];
  inputs.signature = rt::attentionSignature(
      info.entry, inputs.seqLen, inputs.batch, info.heads, info.dModel);
  for (const rt::AttentionBuffer &buffer : inputs.signature.inputs) {
    std::string path = fmt::format("{}/{}.npy", dir, buffer.name);
    Array array = read(path);
    if (array.shape != buffer.sizes)
      throw ShapeError(fmt::format("{}: shape {}, expected {}", path,
                                   formatShape(array.shape),
                                   formatShape(buffer.sizes)));
    inputs.buffers.push_back(toBytes(array, info.dtype));
  }
  return inputs;
}

} // namespace fwp::npy
