//===- Handlers.h - Instruction families ------------------------*- C++ -*-===//
//
// Each family returns the handler of an instruction it has semantics for, or
// null; handlerFor (Handlers.cpp) asks them in turn.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_EMULATOR_HANDLERS_H
#define FWP_EMULATOR_HANDLERS_H

#include "Interpreter.h"

namespace fwp::emu {

Handler integerHandler(const Instruction &inst);    // ExecuteInteger.cpp
Handler floatHandler(const Instruction &inst);      // ExecuteFloat.cpp
Handler halfHandler(const Instruction &inst);       // ExecuteHalf.cpp
Handler conversionHandler(const Instruction &inst); // ExecuteConvert.cpp
Handler selectionHandler(const Instruction &inst);  // ExecuteSelect.cpp
Handler memoryHandler(const Instruction &inst);     // ExecuteMemory.cpp
Handler controlHandler(const Instruction &inst);    // ExecuteControl.cpp
Handler matrixHandler(const Instruction &inst);     // ExecuteMatrix.cpp
Handler shuffleHandler(const Instruction &inst);    // ExecuteShuffle.cpp

} // namespace fwp::emu

#endif // FWP_EMULATOR_HANDLERS_H
