//===- Interpreter.h - The interpreter's state, for the handlers -*- C++
//-*-===//
//
// A CTA runs warp by warp. A warp executes one instruction for all of its
// lanes that stand at the lowest program counter (its active mask), which
// reconverges divergent lanes at the first instruction they share; the
// handlers (Execute*.cpp) apply an instruction to the lanes of `exec`.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_EMULATOR_INTERPRETER_H
#define FWP_EMULATOR_INTERPRETER_H

#include "fwp/Emulator/Launch.h"

#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <unordered_set>
#include <vector>

namespace fwp::emu {

constexpr int kWarpSize = 32;
/// Generic addresses of shared memory (cvta.shared) start here.
constexpr uint64_t kSharedWindow = 0x0000'5ed0'0000'0000ull;

/// A fault ends the launch: the driver's error code and what happened.
struct Fault : std::runtime_error {
  Fault(LaunchError error, const std::string &what)
      : std::runtime_error(what), error(error) {}
  LaunchError error;
};

struct PendingCopy {
  uint64_t source;      // global address
  uint32_t destination; // shared offset
  uint32_t bytes, sourceBytes;
};

/// An entry of a warp's reconvergence stack: lanes `mask` run from `pc`
/// until they reach `reconvergence`, where the entry below takes them on.
struct Path {
  int pc;
  uint32_t mask;
  int reconvergence;
};

struct Warp {
  unsigned index = 0;
  uint32_t lanes = 0; // lanes that exist
  uint32_t exited = 0;
  bool atBarrier = false;
  std::vector<Path> paths;         // the top runs
  int pc[kWarpSize] = {};          // where a branch sends each lane
  std::vector<uint64_t> registers; // slot * 32 + lane
  /// cp.async: copies not yet committed, then committed groups (oldest
  /// first), per lane.
  std::vector<PendingCopy> uncommitted[kWarpSize];
  std::vector<std::vector<PendingCopy>> groups[kWarpSize];
  uint32_t live() const { return lanes & ~exited; }
};

struct Cta {
  const Kernel *kernel = nullptr;
  Dim3 id, grid, block;
  uint64_t linearId = 0;
  uint64_t launchId = 0;
  const uint8_t *params = nullptr;
  DeviceMemory *memory = nullptr;
  const LaunchOptions *options = nullptr;
  std::vector<uint8_t> shared;
  std::vector<uint8_t> sharedWritten;     // a flag a byte
  std::vector<uint8_t> sharedPending;     // a cp.async lands here at its wait
  std::vector<AccessShadow> sharedShadow; // the race check's
  uint32_t epoch = 1;
  std::vector<Warp> warps;
  Counters counters;
  std::unordered_set<uint64_t> *sectors = nullptr; // distinct global sectors
  /// The allocation the CTA touched last: most accesses hit it again, and
  /// no allocation is freed during a launch.
  const Allocation *lastAllocation = nullptr;
  std::mt19937_64 random;
};

/// One instruction on one warp.
struct Exec {
  Cta &cta;
  Warp &warp;
  const Instruction &inst;
  uint32_t active; // lanes at this instruction
  uint32_t mask;   // those whose guard holds
  uint64_t *reg(int slot) { return warp.registers.data() + slot * kWarpSize; }
  unsigned threadId(int lane) const { return warp.index * kWarpSize + lane; }
};

using Handler = void (*)(Exec &);

/// The handler of `inst`, or null if the emulator has no semantics for it.
Handler handlerFor(const Instruction &inst);

/// "kernel K, line L (`text`), block (x,y,z) thread (x,y,z): what"
std::string where(const Exec &e, int lane, const std::string &what);
[[noreturn]] void fault(const Exec &e, int lane, LaunchError error,
                        const std::string &what);

uint64_t special(const Exec &e, Special which, int lane);

/// The operand's bits for `lane` (registers, immediates, specials).
inline uint64_t read(Exec &e, const Operand &op, int lane) {
  switch (op.kind) {
  case Operand::Kind::Register: {
    uint64_t bits = e.reg(op.reg)[lane];
    return op.negated ? !bits : bits;
  }
  case Operand::Kind::Immediate:
    return op.bits;
  case Operand::Kind::Special:
    return special(e, op.special, lane);
  default:
    fault(e, lane, LaunchError::IllegalInstruction, "operand is not a value");
  }
}

/// Keeps the low `bytes` of `bits`: registers hold values zero-extended.
inline uint64_t truncateBits(uint64_t bits, unsigned bytes) {
  return bytes >= 8 ? bits : bits & ((uint64_t(1) << (8 * bytes)) - 1);
}

inline void write(Exec &e, const Operand &op, int lane, uint64_t bits) {
  if (op.kind == Operand::Kind::Sink)
    return;
  if (op.kind != Operand::Kind::Register)
    fault(e, lane, LaunchError::IllegalInstruction,
          "destination is not a register");
  e.reg(op.reg)[lane] = bits;
}

/// A signed value narrower than its destination register is sign-extended
/// to the register's width (ISA: ld and cvt, "sign-extended to the
/// destination register width for signed integers").
inline uint64_t widenSigned(const Exec &e, const Operand &op, Type type,
                            uint64_t bits) {
  unsigned bytes = sizeOf(type);
  if (!isSigned(type) || bytes >= 8 || op.kind != Operand::Kind::Register)
    return bits;
  unsigned shift = 64 - 8 * bytes;
  int64_t extended = int64_t(bits << shift) >> shift;
  return truncateBits(uint64_t(extended),
                      sizeOf(e.cta.kernel->registerTypes[size_t(op.reg)]));
}

template <typename T> T bitsAs(uint64_t bits) {
  T value;
  std::memcpy(&value, &bits, sizeof(T));
  return value;
}
template <typename T> uint64_t asBits(T value) {
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(T));
  return bits;
}

/// Calls f(lane) for every lane of `mask`, lowest first.
template <typename F> inline void forLanes(uint32_t mask, F f) {
  for (; mask; mask &= mask - 1)
    f(__builtin_ctz(mask));
}

// Memory, with the checks and counters (Access.cpp). A store passes the
// bytes it is about to write as `stored`: two threads storing the same
// bytes without a barrier between is no race when the values are equal.
uint8_t *globalAddress(Exec &e, int lane, uint64_t address, unsigned bytes,
                       bool isWrite, bool isAtomic,
                       const uint8_t *stored = nullptr);
uint8_t *sharedAddress(Exec &e, int lane, uint64_t offset, unsigned bytes,
                       bool isWrite, const uint8_t *stored = nullptr);
/// The address an Address operand names for `lane`.
uint64_t addressOf(Exec &e, const Operand &op, int lane);
/// Counts one warp's global access (sectors) and shared access
/// (wavefronts) from the lanes' addresses.
void countGlobalAccess(Exec &e, const uint64_t *addresses, uint32_t mask,
                       unsigned bytes);
void countSharedAccess(Exec &e, const uint64_t *offsets, uint32_t mask,
                       unsigned bytes);
/// Applies a lane's cp.async groups up to all but the newest `keep`.
void completeCopies(Exec &e, int lane, size_t keep);

} // namespace fwp::emu

#endif // FWP_EMULATOR_INTERPRETER_H
