//===- fwp-exec.cpp - Run a compiled entry point without the compiler -----===//
//
//   fwp-exec MODULE_DIR INPUTS_DIR OUTPUTS_DIR
//
// Loads a compiled entry point (a disk cache entry, or a directory that
// fwp-compile wrote: docs/compiled-modules.md) through the runtime alone, reads
// its inputs as .npy files named after its buffers (x.npy, w_q.npy, ...,
// dy.npy for a backward) and writes its outputs (y.npy; dx.npy, dw_q.npy, ...).
// It links neither MLIR nor LLVM: this is what an application that ships
// fwp's kernels needs. Exit status 2 and one line on a bad input.
//
//===----------------------------------------------------------------------===//

#include "fwp/Runtime/AttentionEntry.h"
#include "fwp/Support/Npy.h"

#include <fmt/format.h>

#include <exception>
#include <filesystem>

namespace {

void run(const std::string &moduleDir, const std::string &inputs,
         const std::string &outputs) {
  auto entry = fwp::rt::AttentionEntry::load(moduleDir);
  const fwp::rt::ModuleInfo &info = entry->info();
  fwp::npy::Array x = fwp::npy::read(inputs + "/x.npy");
  if (x.shape.size() != 3 || x.shape[2] != info.dModel || x.shape[0] < 1 ||
      x.shape[1] < 1)
    throw std::runtime_error(fmt::format(
        "{}/x.npy: shape {}, expected [seq_len >= 1, batch >= 1, {}]", inputs,
        fwp::npy::formatShape(x.shape), info.dModel));
  fwp::rt::AttentionSignature signature = fwp::rt::attentionSignature(
      info.entry, x.shape[0], x.shape[1], info.heads, info.dModel);
  std::vector<std::vector<char>> in, out;
  for (const fwp::rt::AttentionBuffer &buffer : signature.inputs) {
    std::string path = fmt::format("{}/{}.npy", inputs, buffer.name);
    fwp::npy::Array array = fwp::npy::read(path);
    if (array.shape != buffer.sizes)
      throw std::runtime_error(fmt::format(
          "{}: shape {}, expected {}", path, fwp::npy::formatShape(array.shape),
          fwp::npy::formatShape(buffer.sizes)));
    in.push_back(fwp::npy::toBytes(array, info.dtype));
  }
  for (const fwp::rt::AttentionBuffer &buffer : signature.outputs)
    out.emplace_back(*fwp::rt::elementCount(buffer.sizes) *
                     fwp::rt::dtypeBytes(info.dtype));
  std::vector<const void *> inPointers;
  std::vector<void *> outPointers;
  for (auto &b : in)
    inPointers.push_back(b.data());
  for (auto &b : out)
    outPointers.push_back(b.data());
  entry->run(x.shape[0], x.shape[1], inPointers, outPointers);
  std::filesystem::create_directories(outputs);
  for (size_t i = 0; i < out.size(); ++i)
    fwp::npy::write(
        fmt::format("{}/{}.npy", outputs, signature.outputs[i].name),
        fwp::npy::fromBytes(out[i].data(), signature.outputs[i].sizes,
                            info.dtype));
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 4) {
    fmt::print(stderr, "usage: fwp-exec MODULE_DIR INPUTS_DIR OUTPUTS_DIR\n");
    return 2;
  }
  try {
    run(argv[1], argv[2], argv[3]);
  } catch (const std::exception &error) {
    fmt::print(stderr, "fwp-exec: {}\n", error.what());
    return 2;
  }
  return 0;
}
