//===- Launch.h - Running a kernel on the emulator --------------*- C++ -*-===//

#ifndef FWP_EMULATOR_LAUNCH_H
#define FWP_EMULATOR_LAUNCH_H

#include "fwp/Emulator/Counters.h"
#include "fwp/Emulator/Memory.h"
#include "fwp/Emulator/Ptx.h"

#include <cstdint>
#include <string>

namespace fwp::emu {

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
  uint64_t count() const { return uint64_t(x) * y * z; }
};

/// What the emulated chip allows (the launch limits of an sm_80 or sm_90).
struct Chip {
  unsigned sm = 90;
  unsigned maxThreadsPerBlock = 1024;
  unsigned maxSharedPerBlock = 227 * 1024; // opt-in maximum
  unsigned defaultSharedPerBlock = 48 * 1024;
  static Chip forSm(unsigned sm);
};

struct LaunchOptions {
  /// Runs CTAs, warps and the lanes of a store in a random order (seeded);
  /// otherwise in index order.
  bool shuffle = false;
  uint64_t seed = 1;
  /// Host threads that take CTAs; 0 for all cores.
  unsigned hostThreads = 0;
  /// The compute-sanitizer-like checks (races, unwritten reads, ...).
  bool checks = true;
  /// Shared memory the kernel may use beyond the default 48 KiB
  /// (cuFuncSetAttribute's MaxDynamicSharedSizeBytes).
  unsigned maxDynamicShared = 0;
};

/// The driver's result codes the emulator can end a launch with.
enum class LaunchError : int {
  None = 0,
  InvalidValue = 1,
  LaunchOutOfResources = 701,
  IllegalAddress = 700,
  MisalignedAddress = 716,
  IllegalInstruction = 715,
  LaunchFailed = 719,
};

struct LaunchResult {
  LaunchError error = LaunchError::None;
  /// For an error: what, where (kernel, PTX line, thread, block, address).
  std::string report;
  Counters counters;
};

/// Whether the emulator has semantics for `inst` (a module with an
/// instruction it lacks is refused at load time, naming it).
bool hasSemantics(const Instruction &inst);

/// Why the launch would be refused (threads, shared memory over the
/// chip's or the kernel's limits), or an empty string.
std::string checkLaunch(const Kernel &kernel, Dim3 grid, Dim3 block,
                        unsigned dynamicShared, const Chip &chip,
                        const LaunchOptions &options);

/// Runs `kernel` to completion. `params` is the kernelParams array of
/// cuLaunchKernel: one pointer a parameter, in the kernel's order.
LaunchResult launch(const Kernel &kernel, Dim3 grid, Dim3 block,
                    unsigned dynamicShared, void **params, DeviceMemory &memory,
                    const Chip &chip, const LaunchOptions &options);

} // namespace fwp::emu

#endif // FWP_EMULATOR_LAUNCH_H
