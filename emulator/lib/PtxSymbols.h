//===- PtxSymbols.h - Placing what a kernel's operands name -----*- C++ -*-===//

#ifndef FWP_EMULATOR_PTXSYMBOLS_H
#define FWP_EMULATOR_PTXSYMBOLS_H

#include "fwp/Emulator/Ptx.h"

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fwp::emu {

/// What a kernel's body names, known once all of it is parsed.
struct KernelNames {
  const std::map<std::string, int> &labels;      // name -> instruction
  const std::map<std::string, int> &tableLabels; // name -> branch table
  /// Each branch table's target labels, by table.
  const std::vector<std::pair<int, std::vector<std::string>>> &pendingTables;
  const std::vector<SharedVariable> &localShared, &moduleShared;
};

/// Resolves the symbols of `kernel`'s operands: labels to instructions or
/// branch tables, parameters to their offsets, shared variables to the
/// offsets of the kernel's own layout (static ones in the order it first
/// names them, then the dynamic part); fills the branch tables. Throws
/// std::runtime_error naming the kernel for an unknown name.
void resolveSymbols(Kernel &kernel, const KernelNames &names);

/// The special register `name` (`%tid.x`, `%laneid`, ...) names, if any.
std::optional<Special> specialRegister(std::string_view name);

/// `value` rounded up to a multiple of `align` (0: unchanged).
unsigned alignUp(unsigned value, unsigned align);

} // namespace fwp::emu

#endif // FWP_EMULATOR_PTXSYMBOLS_H
