//===- PtxOpcode.h - An instruction's opcode and modifiers ------*- C++ -*-===//

#ifndef FWP_EMULATOR_PTXOPCODE_H
#define FWP_EMULATOR_PTXOPCODE_H

#include "fwp/Emulator/Ptx.h"

#include <string>
#include <string_view>

namespace fwp::emu {

/// Decodes `word` (`ld.global.v4.f32`, `setp.ltu.f32` ...) into `inst`'s
/// opcode and modifier fields. Returns an empty string, or what is wrong:
/// an unknown opcode or a modifier the opcode does not take.
std::string decodeOpcode(std::string_view word, Instruction &inst);

/// The type a suffix names, or Type::None.
Type typeFromSuffix(std::string_view suffix);

} // namespace fwp::emu

#endif // FWP_EMULATOR_PTXOPCODE_H
