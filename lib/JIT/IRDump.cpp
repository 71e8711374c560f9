//===- IRDump.cpp - Write the IR after every stage ------------------------===//

#include "IRDump.h"

#include "mlir/Pass/Pass.h"
#include "llvm/Support/Format.h"

#include <filesystem>
#include <fstream>
#include <stdexcept>

using namespace mlir;

namespace fwp::jit {
namespace {

/// Prints the whole module after every pass into its own numbered file.
class StageFiles : public PassManager::IRPrinterConfig {
public:
  explicit StageFiles(std::string dir)
      : IRPrinterConfig(/*printModuleScope=*/true), dir(std::move(dir)) {}

  void printAfterIfEnabled(Pass *pass, Operation *,
                           PrintCallbackFn print) override {
    std::string text;
    llvm::raw_string_ostream os(text);
    print(os);
    std::string name;
    llvm::raw_string_ostream(name)
        << llvm::format("%02u-", ++stage) << pass->getArgument() << ".mlir";
    writeDumpFile(dir, name, text);
  }

private:
  std::string dir;
  unsigned stage = 0;
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
