//===- DriverState.cpp - The stand-in driver's devices and objects --------===//

#include "DriverState.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

namespace fwp::emu::driver {
namespace {

thread_local Context *currentContext = nullptr;

unsigned envNumber(const char *name, unsigned fallback) {
  const char *value = std::getenv(name);
  return value && *value ? unsigned(std::strtoul(value, nullptr, 10))
                         : fallback;
}

bool envFlag(const char *name, bool fallback) {
  const char *value = std::getenv(name);
  if (!value || !*value)
    return fallback;
  return std::strcmp(value, "0") != 0;
}

Settings readSettings() {
  Settings s;
  s.sm = envNumber("FWP_EMU_SM", 90);
  s.devices = int(envNumber("FWP_EMU_DEVICES", 1));
  const char *streams = std::getenv("FWP_EMU_STREAMS");
  s.deferred = streams && std::strcmp(streams, "deferred") == 0;
  s.launch.shuffle = envFlag("FWP_EMU_SHUFFLE", false);
  s.launch.seed = envNumber("FWP_EMU_SEED", 1);
  s.launch.hostThreads = envNumber("FWP_EMU_THREADS", 0);
  s.launch.checks = envFlag("FWP_EMU_CHECKS", true);
  if (const char *report = std::getenv("FWP_EMU_REPORT"))
    s.reportPath = report;
  return s;
}

} // namespace

const Settings &settings() {
  static const Settings s = readSettings();
  return s;
}

State &State::get() {
  static State *state = new State(); // never destroyed: used at exit
  return *state;
}

Device *State::current() {
  return currentContext ? currentContext->device : nullptr;
}

void setCurrentContext(Context *context) { currentContext = context; }

CUresult currentDevice(Device *&device) {
  State &state = State::get();
  if (!state.initialised)
    return kNotInitialized;
  device = state.current();
  if (!device)
    return kInvalidContext;
  return device->sticky;
}

Stream *State::defaultStream(Device *device) {
  for (auto &s : defaults_)
    if (s->device == device)
      return s.get();
  defaults_.push_back(std::make_unique<Stream>(Stream{device, {}}));
  return defaults_.back().get();
}

CUresult State::submit(Stream *stream, Device *device,
                       std::function<CUresult()> work) {
  if (device->sticky != kSuccess)
    return device->sticky;
  if (!settings().deferred)
    return work();
  (stream ? stream : defaultStream(device))->work.push_back(std::move(work));
  return kSuccess;
}

CUresult State::drain(Stream *stream, Device *device) {
  auto run = [&](Stream &s) {
    while (!s.work.empty()) {
      auto work = std::move(s.work.front());
      s.work.pop_front();
      if (device->sticky == kSuccess)
        work();
    }
  };
  if (stream) {
    run(*stream);
  } else {
    for (auto &s : streams)
      if (s->device == device)
        run(*s);
    run(*defaultStream(device));
  }
  return device->sticky;
}

CUresult runLaunch(Device &device, const Function &function, Dim3 grid,
                   Dim3 block, unsigned sharedBytes,
                   const LaunchOptions &options,
                   std::vector<std::vector<uint8_t>> args) {
  std::vector<void *> params;
  for (auto &arg : args)
    params.push_back(arg.data());
  LaunchResult result =
      launch(*function.kernel, grid, block, sharedBytes, params.data(),
             device.memory, device.chip, options);
  if (!settings().reportPath.empty()) {
    if (function.ptxasRegisters) {
      result.counters.registersPerThread = function.ptxasRegisters;
      result.counters.registersFromPtxas = true;
    }
    std::ofstream out(settings().reportPath, std::ios::app);
    out << result.counters.json(function.kernel->name) << "\n";
  }
  if (result.error == LaunchError::None)
    return kSuccess;
  std::fprintf(stderr, "fwp PTX emulator: %s\n", result.report.c_str());
  CUresult code = CUresult(result.error);
  if (result.error != LaunchError::InvalidValue &&
      result.error != LaunchError::LaunchOutOfResources)
    device.sticky = code;
  return code;
}

} // namespace fwp::emu::driver
