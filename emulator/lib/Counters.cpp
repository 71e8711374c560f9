//===- Counters.cpp - What a launch did, counted --------------------------===//

#include "fwp/Emulator/Counters.h"

#include <sstream>

namespace fwp::emu {

const char *className(InstructionClass c) {
  static const char *const names[] = {
      "integer", "float",      "conversion",  "control", "global", "shared",
      "param",   "async_copy", "tensor_core", "barrier", "atomic"};
  return names[static_cast<int>(c)];
}

void Counters::add(const Counters &other) {
  for (size_t i = 0; i < size_t(InstructionClass::Count); ++i)
    warpInstructions[i] += other.warpInstructions[i];
  activeLanes += other.activeLanes;
  globalBytesRequested += other.globalBytesRequested;
  globalSectors += other.globalSectors;
  distinctGlobalSectors += other.distinctGlobalSectors;
  sharedWavefronts += other.sharedWavefronts;
  sharedBankConflicts += other.sharedBankConflicts;
  mmaTf32 += other.mmaTf32;
  mmaBf16 += other.mmaBf16;
  mmaF16 += other.mmaF16;
  barriers += other.barriers;
  ctas += other.ctas;
}

uint64_t Counters::totalWarpInstructions() const {
  uint64_t total = 0;
  for (uint64_t n : warpInstructions)
    total += n;
  return total;
}

std::string Counters::json(const std::string &kernel) const {
  std::ostringstream out;
  uint64_t total = totalWarpInstructions();
  out << "{\"kernel\":\"" << kernel << "\",\"ctas\":" << ctas
      << ",\"threads_per_cta\":" << threadsPerCta
      << ",\"shared_bytes_per_cta\":" << sharedBytesPerCta
      << ",\"registers_per_thread\":" << registersPerThread
      << ",\"registers_source\":\"" << (registersFromPtxas ? "ptxas" : "ptx")
      << "\""
      << ",\"warp_instructions\":" << total << ",\"by_class\":{";
  for (size_t i = 0; i < size_t(InstructionClass::Count); ++i)
    out << (i ? "," : "") << "\"" << className(InstructionClass(i))
        << "\":" << warpInstructions[i];
  out << "},\"active_lane_share\":"
      << (total ? double(activeLanes) / (32.0 * double(total)) : 0.0)
      << ",\"global_bytes_requested\":" << globalBytesRequested
      << ",\"global_sectors\":" << globalSectors
      << ",\"distinct_global_sectors\":" << distinctGlobalSectors
      << ",\"shared_wavefronts\":" << sharedWavefronts
      << ",\"shared_bank_conflicts\":" << sharedBankConflicts
      << ",\"mma\":{\"tf32\":" << mmaTf32 << ",\"bf16\":" << mmaBf16
      << ",\"f16\":" << mmaF16 << "},\"barriers\":" << barriers << "}";
  return out.str();
}

} // namespace fwp::emu
