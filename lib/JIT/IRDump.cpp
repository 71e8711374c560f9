//===- IRDump.cpp - Write the IR after every stage ------------------------===//

#include "IRDump.h"

#include "mlir/Pass/Pass.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/Format.h"

#include <filesystem>
#include <fstream>
#include <stdexcept>

using namespace mlir;

namespace fwp::jit {
namespace {

/// Prints the whole module after every pass into its own numbered file. A
/// pass nested on functions runs once per function (interleaved with the
/// other passes of its nested pipeline), each time printing the module:
/// those prints overwrite the pass's one file, which ends up holding the
/// module after the pass's last run.
class StageFiles : public PassManager::IRPrinterConfig {
public:
  explicit StageFiles(std::string dir)
      : IRPrinterConfig(/*printModuleScope=*/true), dir(std::move(dir)) {}

  void printAfterIfEnabled(Pass *pass, Operation *,
                           PrintCallbackFn print) override {
    std::string text;
    llvm::raw_string_ostream os(text);
    print(os);
    auto [number, added] = stages.try_emplace(pass, stages.size() + 1);
    std::string name;
    llvm::raw_string_ostream(name) << llvm::format("%02u-", number->second)
                                   << pass->getArgument() << ".mlir";
    writeDumpFile(dir, name, text);
  }

private:
  std::string dir;
  /// Each pass's number, in the order they first ran (00 is the input).
  llvm::DenseMap<Pass *, unsigned> stages;
};

} // namespace

void writeDumpFile(const std::string &dir, const std::string &name,
                   const std::string &text) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  std::filesystem::path path = std::filesystem::path(dir) / name;
  std::ofstream file(path);
  file << text;
  if (ec || !file)
    throw std::runtime_error("cannot write " + path.string());
}

void dumpEveryStage(PassManager &pm, ModuleOp module, const std::string &dir) {
  if (dir.empty())
    return;
  std::string text;
  llvm::raw_string_ostream os(text);
  module.print(os);
  writeDumpFile(dir, "00-input.mlir", text);
  pm.enableIRPrinting(std::make_unique<StageFiles>(dir));
}

} // namespace fwp::jit
