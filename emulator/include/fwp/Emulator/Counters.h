//===- Counters.h - What a launch did, counted ------------------*- C++ -*-===//
//
// Counted per warp instruction, as a profiler counts (a warp instruction is
// one issue, whatever its active lanes), for the performance model.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_EMULATOR_COUNTERS_H
#define FWP_EMULATOR_COUNTERS_H

#include <cstdint>
#include <string>

namespace fwp::emu {

enum class InstructionClass : uint8_t {
  IntegerArithmetic,
  FloatArithmetic,
  Conversion,
  Control,
  GlobalMemory,
  SharedMemory,
  ParamMemory,
  AsyncCopy,
  TensorCore,
  Barrier,
  Atomic,
  Count,
};
const char *className(InstructionClass c);

struct Counters {
  uint64_t warpInstructions[size_t(InstructionClass::Count)] = {};
  uint64_t activeLanes = 0; // summed over warp instructions
  uint64_t globalBytesRequested = 0;
  uint64_t globalSectors = 0; // 32-byte sectors a warp access touches
  uint64_t distinctGlobalSectors = 0;
  uint64_t sharedWavefronts = 0;
  uint64_t sharedBankConflicts = 0; // wavefronts beyond the first
  uint64_t mmaTf32 = 0, mmaBf16 = 0, mmaF16 = 0;
  uint64_t barriers = 0; // bar.sync executed per warp
  uint64_t ctas = 0;
  unsigned threadsPerCta = 0;
  unsigned sharedBytesPerCta = 0;
  // ptxas's count when the driver found ptxas, else the virtual registers
  // the PTX uses.
  unsigned registersPerThread = 0;
  bool registersFromPtxas = false;

  void add(const Counters &other);
  uint64_t totalWarpInstructions() const;
  /// One JSON object (no newline).
  std::string json(const std::string &kernel) const;
};

} // namespace fwp::emu

#endif // FWP_EMULATOR_COUNTERS_H
