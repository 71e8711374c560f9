//===- ExecuteShuffle.cpp - shfl.sync -------------------------------------===//
//
// PTX ISA "Data Movement and Conversion Instructions: shfl.sync". Each lane
// computes a source lane j from b (a lane or a lane offset) and c (c[4:0]
// the clamp value, c[12:8] the segment mask):
//
//   maxLane = (lane & segmask) | (cval & ~segmask);  minLane = lane & segmask
//   .up:   j = lane - b;  in range if j >= maxLane
//   .down: j = lane + b;  in range if j <= maxLane
//   .bfly: j = lane ^ b;  in range if j <= maxLane
//   .idx:  j = minLane | (b & ~segmask);  in range if j <= maxLane
//
// and takes a from lane j if in range, else its own; the optional predicate
// destination says which. What the ISA leaves undefined is a fault here: a
// thread not in its membermask, a lane of the membermask that does not
// execute the shuffle with it (the ISA makes the others wait for it; the
// emulator runs a shuffle only once all of them are there), and a value
// taken from a lane that does not execute it ("unpredictable").
//
//===----------------------------------------------------------------------===//

#include "Handlers.h"

namespace fwp::emu {
namespace {

/// Lane j of `lane`'s shuffle, and whether j is in range.
std::pair<int, bool> sourceLane(ShuffleMode mode, int lane, uint32_t b,
                                uint32_t c) {
  int bval = int(b & 31), cval = int(c & 31), segmask = int((c >> 8) & 31);
  int maxLane = (lane & segmask) | (cval & ~segmask);
  int minLane = lane & segmask;
  switch (mode) {
  case ShuffleMode::Up:
    return {lane - bval, lane - bval >= maxLane};
  case ShuffleMode::Down:
    return {lane + bval, lane + bval <= maxLane};
  case ShuffleMode::Bfly:
    return {lane ^ bval, (lane ^ bval) <= maxLane};
  case ShuffleMode::Idx: {
    int j = minLane | (bval & ~segmask);
    return {j, j <= maxLane};
  }
  case ShuffleMode::None:
    break;
  }
  return {lane, false};
}

void execShfl(Exec &e) {
  const Instruction &inst = e.inst;
  const Operand &dest = inst.operands[0];
  bool hasPredicate = dest.kind == Operand::Kind::Vector;
  const Operand &d = hasPredicate ? dest.elements[0] : dest;
  uint32_t live = e.warp.live();
  uint32_t source[kWarpSize] = {};
  forLanes(e.mask, [&](int lane) {
    uint32_t members = uint32_t(read(e, inst.operands[4], lane));
    if (!(members >> lane & 1))
      fault(e, lane, LaunchError::IllegalInstruction,
            "shfl.sync executed by a thread not in its membermask");
    uint32_t absent = members & live & ~e.mask;
    if (absent)
      fault(e, lane, LaunchError::IllegalInstruction,
            "shfl.sync: lane " + std::to_string(__builtin_ctz(absent)) +
                " of the membermask does not execute it with this lane");
    source[lane] = uint32_t(read(e, inst.operands[1], lane));
  });
  uint32_t result[kWarpSize];
  bool inRange[kWarpSize];
  forLanes(e.mask, [&](int lane) {
    auto [j, valid] = sourceLane(inst.shuffle, lane,
                                 uint32_t(read(e, inst.operands[2], lane)),
                                 uint32_t(read(e, inst.operands[3], lane)));
    if (!valid)
      j = lane;
    if (j < 0 || j >= kWarpSize || !(e.mask >> j & 1))
      fault(e, lane, LaunchError::IllegalInstruction,
            "shfl.sync takes a value from lane " + std::to_string(j) +
                ", which does not execute it (the value is unpredictable)");
    result[lane] = source[j];
    inRange[lane] = valid;
  });
  forLanes(e.mask, [&](int lane) {
    write(e, d, lane, result[lane]);
    if (hasPredicate)
      write(e, dest.elements[1], lane, inRange[lane]);
  });
}

} // namespace

Handler shuffleHandler(const Instruction &inst) {
  if (inst.op != Opcode::Shfl || inst.shuffle == ShuffleMode::None ||
      inst.type != Type::B32 || inst.operands.size() != 5)
    return nullptr;
  const Operand &dest = inst.operands[0];
  if (dest.kind == Operand::Kind::Vector && dest.elements.size() != 2)
    return nullptr;
  return execShfl;
}

} // namespace fwp::emu
