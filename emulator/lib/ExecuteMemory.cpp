//===- ExecuteMemory.cpp - ld, st, atom, red and cp.async -----------------===//
//
// PTX ISA 9.7.9.8 (ld), 9.7.9.10 (st), 9.7.13.5 (atom), 9.7.13.6 (red),
// 9.7.9.25 (cp.async and its groups). A vector access is one access of the
// whole vector's size and alignment. cp.async copies land at the
// cp.async.wait_group that completes their group: until then the
// destination is marked pending, and touching it is reported.
//
//===----------------------------------------------------------------------===//

#include "FloatFormats.h"
#include "Handlers.h"
#include "Lanes.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace fwp::emu {
namespace {

/// The host bytes of `lane`'s access, checked; counted by the caller. A
/// store gives the bytes it will write.
uint8_t *access(Exec &e, int lane, uint64_t address, unsigned bytes,
                bool isWrite, const uint8_t *stored = nullptr) {
  switch (e.inst.space) {
  case Space::Param: {
    if (isWrite || address + bytes > e.cta.kernel->parameterBytes)
      fault(e, lane, LaunchError::IllegalAddress,
            "parameter access out of bounds at offset " +
                std::to_string(address));
    return const_cast<uint8_t *>(e.cta.params) + address;
  }
  case Space::Shared:
    return sharedAddress(e, lane, address, bytes, isWrite, stored);
  case Space::Global:
  case Space::None:
    return globalAddress(e, lane, address, bytes, isWrite, false, stored);
  default:
    fault(e, lane, LaunchError::IllegalInstruction, "unsupported state space");
  }
}

void count(Exec &e, const uint64_t *addresses, unsigned bytes) {
  if (e.inst.space == Space::Shared)
    countSharedAccess(e, addresses, e.mask, bytes);
  else if (e.inst.space != Space::Param)
    countGlobalAccess(e, addresses, e.mask, bytes);
}

/// The lanes of `mask` in the order their stores land: index order, or a
/// random one in shuffled mode (lanes storing to one address race).
void laneOrder(Exec &e, int *order, int &n) {
  n = 0;
  forLanes(e.mask, [&](int lane) { order[n++] = lane; });
  if (e.cta.options->shuffle)
    std::shuffle(order, order + n, e.cta.random);
}

void execLd(Exec &e) {
  const Instruction &inst = e.inst;
  unsigned element = sizeOf(inst.type), bytes = element * inst.vector;
  const Operand &dest = inst.operands[0];
  uint64_t addresses[kWarpSize];
  forLanes(e.mask, [&](int lane) {
    addresses[lane] = addressOf(e, inst.operands[1], lane);
    const uint8_t *p = access(e, lane, addresses[lane], bytes, false);
    for (unsigned i = 0; i < inst.vector; ++i) {
      uint64_t bits = 0;
      std::memcpy(&bits, p + i * element, element);
      const Operand &to =
          dest.kind == Operand::Kind::Vector ? dest.elements[i] : dest;
      write(e, to, lane, widenSigned(e, to, inst.type, bits));
    }
  });
  count(e, addresses, bytes);
}

void execSt(Exec &e) {
  const Instruction &inst = e.inst;
  unsigned element = sizeOf(inst.type), bytes = element * inst.vector;
  const Operand &source = inst.operands[1];
  uint64_t addresses[kWarpSize];
  int order[kWarpSize], n;
  laneOrder(e, order, n);
  for (int k = 0; k < n; ++k) {
    int lane = order[k];
    addresses[lane] = addressOf(e, inst.operands[0], lane);
    uint8_t stored[32];
    for (unsigned i = 0; i < inst.vector; ++i) {
      uint64_t bits = read(
          e, source.kind == Operand::Kind::Vector ? source.elements[i] : source,
          lane);
      std::memcpy(stored + i * element, &bits, element);
    }
    uint8_t *p = access(e, lane, addresses[lane], bytes, true, stored);
    std::memcpy(p, stored, bytes);
  }
  count(e, addresses, bytes);
}

template <typename T> T atomicFloatAdd(T *p, T value) {
  T old, updated;
  __atomic_load(p, &old, __ATOMIC_SEQ_CST);
  do {
    updated = old + value;
    if constexpr (std::is_same_v<T, float>)
      updated = flushSubnormal(updated);
  } while (!__atomic_compare_exchange(p, &old, &updated, false,
                                      __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST));
  return old;
}

/// One atomic operation on `p`; returns the old value's bits.
template <typename T>
uint64_t atomicApply(const std::string &op, T *p, T b, T c) {
  if (op == "add") {
    if constexpr (std::is_floating_point_v<T>)
      return asBits(atomicFloatAdd(p, b));
    else
      return asBits(__atomic_fetch_add(p, b, __ATOMIC_SEQ_CST));
  }
  T old, updated{};
  __atomic_load(p, &old, __ATOMIC_SEQ_CST);
  do {
    if (op == "exch")
      updated = b;
    else if (op == "cas")
      updated = old == b ? c : old;
    else if (op == "min")
      updated = std::min(old, b);
    else if (op == "max")
      updated = std::max(old, b);
    else if constexpr (std::is_integral_v<T>) {
      if (op == "and")
        updated = old & b;
      else if (op == "or")
        updated = old | b;
      else if (op == "xor")
        updated = old ^ b;
      else if (op == "inc")
        updated = old >= b ? 0 : T(old + 1);
      else // dec
        updated = (old == 0 || old > b) ? b : T(old - 1);
    }
  } while (!__atomic_compare_exchange(p, &old, &updated, false,
                                      __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST));
  return asBits(old);
}

template <typename T> void atomicLanes(Exec &e, bool returnsOld) {
  const Instruction &inst = e.inst;
  int address = returnsOld ? 1 : 0;
  uint64_t addresses[kWarpSize];
  int order[kWarpSize], n;
  laneOrder(e, order, n);
  for (int k = 0; k < n; ++k) {
    int lane = order[k];
    addresses[lane] = addressOf(e, inst.operands[address], lane);
    if (inst.space == Space::Shared)
      fault(e, lane, LaunchError::IllegalInstruction,
            "shared-memory atomics are not emulated");
    T *p = reinterpret_cast<T *>(
        globalAddress(e, lane, addresses[lane], sizeof(T), true, true));
    T b = operandAs<T>(e, address + 1, lane);
    T c = inst.atomicOp == "cas" ? operandAs<T>(e, address + 2, lane) : T{};
    if constexpr (std::is_same_v<T, float>)
      b = flushSubnormal(b); // atom.add.f32 flushes subnormal inputs
    uint64_t old = atomicApply<T>(inst.atomicOp, p, b, c);
    if (returnsOld)
      write(e, inst.operands[0], lane, old);
  }
  count(e, addresses, sizeof(T));
}

template <bool returnsOld> void execAtomic(Exec &e) {
  switch (e.inst.type) {
  case Type::F32:
    return atomicLanes<float>(e, returnsOld);
  case Type::F64:
    return atomicLanes<double>(e, returnsOld);
  case Type::S32:
    return atomicLanes<int32_t>(e, returnsOld);
  case Type::S64:
    return atomicLanes<int64_t>(e, returnsOld);
  case Type::U64:
  case Type::B64:
    return atomicLanes<uint64_t>(e, returnsOld);
  default:
    return atomicLanes<uint32_t>(e, returnsOld);
  }
}

/// cp.async [shared], [global], size[, source size]: the bytes past the
/// source size are zeros.
void execCpAsync(Exec &e) {
  const Instruction &inst = e.inst;
  unsigned bytes = unsigned(inst.operands[2].bits);
  uint64_t sources[kWarpSize];
  forLanes(e.mask, [&](int lane) {
    uint32_t destination = uint32_t(addressOf(e, inst.operands[0], lane));
    uint64_t source = addressOf(e, inst.operands[1], lane);
    unsigned sourceBytes = inst.operands.size() > 3
                               ? unsigned(read(e, inst.operands[3], lane))
                               : bytes;
    if (sourceBytes > bytes)
      fault(e, lane, LaunchError::IllegalInstruction,
            "cp.async source size above the copy size");
    if (uint64_t(destination) + bytes > e.cta.shared.size())
      fault(e, lane, LaunchError::IllegalAddress,
            "cp.async destination out of bounds at shared offset " +
                std::to_string(destination));
    if (destination % bytes)
      fault(e, lane, LaunchError::MisalignedAddress,
            "misaligned cp.async destination at shared offset " +
                std::to_string(destination));
    if (sourceBytes && !e.cta.memory->find(source, sourceBytes))
      fault(e, lane, LaunchError::IllegalAddress,
            "cp.async source out of bounds: " + e.cta.memory->describe(source));
    if (source % bytes)
      fault(e, lane, LaunchError::MisalignedAddress,
            "misaligned cp.async source");
    for (unsigned i = 0; i < bytes; ++i)
      e.cta.sharedPending[destination + i] = 1;
    e.warp.uncommitted[lane].push_back(
        {source, destination, bytes, sourceBytes});
    sources[lane] = source;
  });
  countGlobalAccess(e, sources, e.mask, bytes);
}

void execCommitGroup(Exec &e) {
  forLanes(e.mask, [&](int lane) {
    e.warp.groups[lane].push_back(std::move(e.warp.uncommitted[lane]));
    e.warp.uncommitted[lane].clear();
  });
}

void execWaitGroup(Exec &e) {
  size_t keep = size_t(e.inst.operands[0].bits);
  forLanes(e.mask, [&](int lane) { completeCopies(e, lane, keep); });
}

void execWaitAll(Exec &e) {
  execCommitGroup(e);
  forLanes(e.mask, [&](int lane) { completeCopies(e, lane, 0); });
}

bool knownAtomic(const Instruction &inst) {
  if (inst.atomicOp.empty())
    return false;
  bool isFloatType = inst.type == Type::F32 || inst.type == Type::F64;
  if (isFloatType)
    return inst.atomicOp == "add" || inst.atomicOp == "exch" ||
           inst.atomicOp == "min" || inst.atomicOp == "max";
  return sizeOf(inst.type) == 4 || sizeOf(inst.type) == 8;
}

} // namespace

Handler memoryHandler(const Instruction &inst) {
  bool sized = sizeOf(inst.type) > 0 && sizeOf(inst.type) <= 8 &&
               inst.type != Type::Pred;
  switch (inst.op) {
  case Opcode::Ld:
    return sized ? execLd : nullptr;
  case Opcode::St:
    return sized && inst.space != Space::Param ? execSt : nullptr;
  case Opcode::Atom:
    return knownAtomic(inst) ? execAtomic<true> : nullptr;
  case Opcode::Red:
    return knownAtomic(inst) ? execAtomic<false> : nullptr;
  case Opcode::CpAsync:
    return inst.operands.size() >= 3 &&
                   inst.operands[2].kind == Operand::Kind::Immediate
               ? execCpAsync
               : nullptr;
  case Opcode::CpAsyncCommitGroup:
    return execCommitGroup;
  case Opcode::CpAsyncWaitGroup:
    return inst.operands.size() == 1 ? execWaitGroup : nullptr;
  case Opcode::CpAsyncWaitAll:
    return execWaitAll;
  default:
    return nullptr;
  }
}

} // namespace fwp::emu
