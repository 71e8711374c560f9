//===- Handlers.cpp - From an instruction to its semantics ----------------===//

#include "Handlers.h"

namespace fwp::emu {

Handler handlerFor(const Instruction &inst) {
  for (auto family : {controlHandler, memoryHandler, matrixHandler,
                      shuffleHandler, selectionHandler, conversionHandler,
                      floatHandler, halfHandler, integerHandler})
    if (Handler handler = family(inst))
      return handler;
  return nullptr;
}

bool hasSemantics(const Instruction &inst) { return handlerFor(inst); }

} // namespace fwp::emu
