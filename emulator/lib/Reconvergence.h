//===- Reconvergence.h - Where divergent lanes meet again -------*- C++ -*-===//

#ifndef FWP_EMULATOR_RECONVERGENCE_H
#define FWP_EMULATOR_RECONVERGENCE_H

#include "fwp/Emulator/Ptx.h"

#include <vector>

namespace fwp::emu {

/// For each instruction, the first instruction of its block's immediate
/// post-dominator in the kernel's control-flow graph: where lanes that a
/// branch there splits run together again. -1 where the paths only meet at
/// the kernel's exit.
std::vector<int> reconvergencePoints(const Kernel &kernel);

} // namespace fwp::emu

#endif // FWP_EMULATOR_RECONVERGENCE_H
