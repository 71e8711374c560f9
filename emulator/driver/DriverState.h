//===- DriverState.h - The stand-in driver's devices and objects -*- C++
//-*-===//
//
// What libcuda.so.1 keeps between calls: the settings read from the
// environment once, the devices (each with its memory and its sticky error),
// contexts, streams with their queues of work, modules and functions.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_EMULATOR_DRIVERSTATE_H
#define FWP_EMULATOR_DRIVERSTATE_H

#include "fwp/Emulator/Launch.h"

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace fwp::emu::driver {

using CUresult = int;
constexpr CUresult kSuccess = 0;
constexpr CUresult kInvalidValue = 1;
constexpr CUresult kOutOfMemory = 2;
constexpr CUresult kNotInitialized = 3;
constexpr CUresult kNoDevice = 100;
constexpr CUresult kInvalidDevice = 101;
constexpr CUresult kInvalidContext = 201;
constexpr CUresult kInvalidPtx = 218;
constexpr CUresult kInvalidHandle = 400;
constexpr CUresult kNotFound = 500;
constexpr CUresult kNotSupported = 801;

/// Read once from the environment (FWP_EMU_*; README of the emulator).
struct Settings {
  unsigned sm = 90;
  int devices = 1;
  bool deferred = false; // streams run their work only when synchronised
  LaunchOptions launch;
  std::string reportPath; // FWP_EMU_REPORT: one JSON line a launch
};
const Settings &settings();

struct Device;

struct Context {
  Device *device;
};

struct Device {
  int ordinal = 0;
  Chip chip;
  DeviceMemory memory;
  Context primary{this};
  /// A kernel fault poisons the context, as on a GPU: every later call
  /// returns it.
  CUresult sticky = kSuccess;
};

struct Function {
  const Kernel *kernel;
  unsigned maxDynamicShared = 0;
  unsigned ptxasRegisters = 0; // 0: not known
  /// The device of the context its module was loaded in: a module belongs
  /// to one context, and its functions launch there only.
  const Device *device = nullptr;
};

struct ModuleObject {
  std::unique_ptr<Module> module;
  const Device *device = nullptr; // whose context loaded it
  std::vector<std::unique_ptr<Function>> functions;
  std::map<std::string, unsigned> ptxasRegisters; // by kernel
};

/// Registers per thread of each kernel of `ptx`, from `ptxas -v` for
/// sm_`sm`; empty when ptxas is not found or fails.
std::map<std::string, unsigned> ptxasRegisters(const std::string &ptx,
                                               unsigned sm);

struct Stream {
  Device *device;
  std::deque<std::function<CUresult()>> work;
};

class State {
public:
  static State &get();
  std::recursive_mutex mutex;
  std::vector<std::unique_ptr<Device>> devices;
  bool initialised = false;
  Device *current(); // the calling thread's context's device, or null

  /// Runs `work` now, or queues it on `stream` in the deferred mode.
  CUresult submit(Stream *stream, Device *device,
                  std::function<CUresult()> work);
  /// Runs what `stream` (null: every stream of `device`) has queued.
  CUresult drain(Stream *stream, Device *device);
  std::vector<std::unique_ptr<Stream>> streams;
  Stream *defaultStream(Device *device);

private:
  std::vector<std::unique_ptr<Stream>> defaults_;
};

/// The calling thread's device, checked: the driver initialised, a current
/// context, no sticky error.
CUresult currentDevice(Device *&device);
/// Sets the calling thread's context (cuCtxSetCurrent).
void setCurrentContext(Context *context);

using Lock = std::lock_guard<std::recursive_mutex>;

/// Opens an entry point that works on the current device: takes the
/// driver's lock and returns the device's error, if any.
#define FWP_CURRENT_DEVICE(device)                                             \
  ::fwp::emu::driver::Lock lock(::fwp::emu::driver::State::get().mutex);       \
  ::fwp::emu::driver::Device *device = nullptr;                                \
  if (::fwp::emu::driver::CUresult status =                                    \
          ::fwp::emu::driver::currentDevice(device);                           \
      status != ::fwp::emu::driver::kSuccess)                                  \
  return status

/// cuGetErrorName, cuGetErrorString and cuDeviceGetAttribute's answers
/// (DriverInfo.cpp).
CUresult errorName(CUresult error, const char **name);
CUresult errorString(CUresult error, const char **text);
CUresult deviceAttribute(const Chip &chip, int attribute, int &value);

/// Runs a kernel (with the options cuLaunchKernel checked it against) and
/// turns a fault into the device's sticky error, with its report on
/// standard error.
CUresult runLaunch(Device &device, const Function &function, Dim3 grid,
                   Dim3 block, unsigned sharedBytes,
                   const LaunchOptions &options,
                   std::vector<std::vector<uint8_t>> args);

} // namespace fwp::emu::driver

#endif // FWP_EMULATOR_DRIVERSTATE_H
