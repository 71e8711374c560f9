//===- ExecuteControl.cpp - Branches, exit, barriers and fences -----------===//
//
// PTX ISA 9.7.12 (control flow) and 9.7.13 (bar, membar/fence). A branch
// moves the program counter of the lanes whose guard holds; the warp then
// runs its lowest program counter first, so that lanes meet again.
// bar.sync itself is taken by the scheduler (Interpreter.cpp): here it is
// only the case of a guard that holds for no lane. Fences order nothing on
// an emulator whose memory operations happen one at a time.
//
//===----------------------------------------------------------------------===//

#include "Handlers.h"
#include "Lanes.h"

namespace fwp::emu {
namespace {

void execBra(Exec &e) {
  int target = e.inst.operands[0].target;
  forLanes(e.mask, [&](int lane) { e.warp.pc[lane] = target; });
}

/// brx.idx index, table: the index-th label of the .branchtargets table.
void execBrx(Exec &e) {
  const std::vector<int> &table =
      e.cta.kernel->branchTables[size_t(e.inst.operands[1].target)];
  forLanes(e.mask, [&](int lane) {
    uint32_t index = uint32_t(read(e, e.inst.operands[0], lane));
    if (index >= table.size())
      fault(e, lane, LaunchError::IllegalInstruction,
            "brx.idx index " + std::to_string(index) + " outside its " +
                std::to_string(table.size()) + " targets");
    e.warp.pc[lane] = table[index];
  });
}

void execExit(Exec &e) {
  forLanes(e.mask, [&](int lane) {
    if (!e.warp.groups[lane].empty() || !e.warp.uncommitted[lane].empty())
      fault(e, lane, LaunchError::LaunchFailed,
            "the thread exited with cp.async copies never waited for");
    e.warp.exited |= 1u << lane;
  });
}

void execNothing(Exec &) {}

bool isLabel(const Operand &op) { return op.kind == Operand::Kind::Label; }

} // namespace

Handler controlHandler(const Instruction &inst) {
  const auto &ops = inst.operands;
  switch (inst.op) {
  case Opcode::Bra:
    return ops.size() == 1 && isLabel(ops[0]) && ops[0].target >= 0 ? execBra
                                                                    : nullptr;
  case Opcode::Brx:
    return inst.idx && ops.size() == 2 && isLabel(ops[1]) ? execBrx : nullptr;
  case Opcode::Exit:
  case Opcode::Ret:
    return execExit;
  case Opcode::Bar:
  case Opcode::Barrier:
    // Only barrier 0 for the whole CTA: a thread count is not emulated.
    return ops.size() == 1 && ops[0].kind == Operand::Kind::Immediate &&
                   ops[0].bits == 0
               ? execNothing
               : nullptr;
  case Opcode::Membar:
  case Opcode::Fence:
    return execNothing;
  default:
    return nullptr;
  }
}

} // namespace fwp::emu
