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
#include "fwp/Support/EntryInputs.h"
#include "fwp/Support/Npy.h"

#include <fmt/format.h>

#include <exception>
#include <filesystem>

namespace {

void run(const std::string &moduleDir, const std::string &inputs,
         const std::string &outputs) {
  auto entry = fwp::rt::AttentionEntry::load(moduleDir);
  const fwp::rt::ModuleInfo &info = entry->info();
  fwp::npy::EntryInputs in = fwp::npy::readEntryInputs(inputs, info);
  const fwp::rt::AttentionSignature &signature = in.signature;
  std::vector<std::vector<char>> out;
  for (const fwp::rt::AttentionBuffer &buffer : signature.outputs)
    out.emplace_back(*fwp::rt::elementCount(buffer.sizes) *
                     fwp::rt::dtypeBytes(info.dtype));
  std::vector<const void *> inPointers;
  std::vector<void *> outPointers;
  for (auto &b : in.buffers)
    inPointers.push_back(b.data());
  for (auto &b : out)
    outPointers.push_back(b.data());
  entry->run(in.seqLen, in.batch, inPointers, outPointers);
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
