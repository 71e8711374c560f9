//===- CudaModule.cpp - Modules, functions and launches -------------------===//
//
// cuModuleLoadDataEx parses the PTX and checks, before anything runs, that
// the emulator has semantics for every instruction and that the module's
// .target is not above the emulated chip; the JIT logs say why a module was
// refused. cuLaunchKernel checks the launch against the kernel and the chip
// at once, then runs (or, deferred, queues) it with its arguments copied.
//
//===----------------------------------------------------------------------===//

#include "DriverState.h"

#include <algorithm>
#include <cstring>

using namespace fwp::emu;
using namespace fwp::emu::driver;

namespace {

constexpr int kJitInfoLogBuffer = 3;
constexpr int kJitInfoLogBufferSizeBytes = 4;
constexpr int kJitErrorLogBuffer = 5;
constexpr int kJitErrorLogBufferSizeBytes = 6;
constexpr int kFuncAttrMaxDynamicSharedSizeBytes = 8;

std::vector<std::unique_ptr<ModuleObject>> &modules() {
  static auto *list = new std::vector<std::unique_ptr<ModuleObject>>();
  return *list;
}

void copyLog(const std::string &text, unsigned count, int *options,
             void **values, int bufferOption, int sizeOption) {
  char *buffer = nullptr;
  size_t size = 0;
  for (unsigned i = 0; i < count; ++i) {
    if (options[i] == bufferOption)
      buffer = static_cast<char *>(values[i]);
    if (options[i] == sizeOption)
      size = size_t(reinterpret_cast<uintptr_t>(values[i]));
  }
  if (buffer && size > 0) {
    size_t n = std::min(size - 1, text.size());
    std::memcpy(buffer, text.data(), n);
    buffer[n] = '\0';
  }
}

/// Why the emulated chip cannot run `module`, or an empty string.
std::string refusal(const Module &module, const Chip &chip) {
  if (module.targetSm > chip.sm)
    return "the module's .target sm_" + std::to_string(module.targetSm) +
           " is above the emulated sm_" + std::to_string(chip.sm);
  for (const auto &kernel : module.kernels)
    for (const Instruction &inst : kernel->body)
      if (!hasSemantics(inst))
        return "line " + std::to_string(inst.line) + ": kernel " +
               kernel->name + ": the emulator has no semantics for `" +
               inst.text + "`";
  return "";
}

} // namespace

extern "C" {

__attribute__((visibility("default"))) CUresult
cuModuleLoadDataEx(ModuleObject **module, const void *image,
                   unsigned numOptions, int *options, void **values) {
  FWP_CURRENT_DEVICE(device);
  if (!module || !image || (numOptions && (!options || !values)))
    return kInvalidValue;
  std::string error;
  auto parsed = parsePtx(static_cast<const char *>(image), error);
  if (parsed && error.empty())
    error = refusal(*parsed, device->chip);
  if (!error.empty()) {
    copyLog("fwp PTX emulator: " + error, numOptions, options, values,
            kJitErrorLogBuffer, kJitErrorLogBufferSizeBytes);
    return kInvalidPtx;
  }
  copyLog("fwp PTX emulator: " + std::to_string(parsed->kernels.size()) +
              " kernels for sm_" + std::to_string(device->chip.sm),
          numOptions, options, values, kJitInfoLogBuffer,
          kJitInfoLogBufferSizeBytes);
  auto object = std::make_unique<ModuleObject>();
  object->module = std::move(parsed);
  object->device = device;
  if (!settings().reportPath.empty())
    object->ptxasRegisters =
        ptxasRegisters(static_cast<const char *>(image), device->chip.sm);
  *module = object.get();
  modules().push_back(std::move(object));
  return kSuccess;
}

__attribute__((visibility("default"))) CUresult
cuModuleUnload(ModuleObject *module) {
  Lock lock(State::get().mutex);
  auto &list = modules();
  auto it = std::find_if(list.begin(), list.end(),
                         [&](auto &m) { return m.get() == module; });
  if (it == list.end())
    return kInvalidHandle;
  for (auto &device : State::get().devices)
    State::get().drain(nullptr, device.get());
  list.erase(it);
  return kSuccess;
}

__attribute__((visibility("default"))) CUresult
cuModuleGetFunction(Function **function, ModuleObject *module,
                    const char *name) {
  Lock lock(State::get().mutex);
  if (!function || !module || !name)
    return kInvalidValue;
  const Kernel *kernel = module->module->kernel(name);
  if (!kernel)
    return kNotFound;
  for (auto &f : module->functions)
    if (f->kernel == kernel) {
      *function = f.get();
      return kSuccess;
    }
  auto registers = module->ptxasRegisters.find(name);
  module->functions.push_back(std::make_unique<Function>(Function{
      kernel, 0,
      registers == module->ptxasRegisters.end() ? 0u : registers->second,
      module->device}));
  *function = module->functions.back().get();
  return kSuccess;
}

__attribute__((visibility("default"))) CUresult
cuFuncSetAttribute(Function *function, int attribute, int value) {
  FWP_CURRENT_DEVICE(device);
  if (!function)
    return kInvalidHandle;
  if (attribute != kFuncAttrMaxDynamicSharedSizeBytes)
    return kNotSupported;
  if (value < 0 || unsigned(value) + function->kernel->staticSharedBytes >
                       device->chip.maxSharedPerBlock)
    return kInvalidValue;
  function->maxDynamicShared = unsigned(value);
  return kSuccess;
}

__attribute__((visibility("default"))) CUresult
cuLaunchKernel(Function *function, unsigned gridX, unsigned gridY,
               unsigned gridZ, unsigned blockX, unsigned blockY,
               unsigned blockZ, unsigned sharedBytes, Stream *stream,
               void **kernelParams, void **extra) {
  FWP_CURRENT_DEVICE(device);
  if (!function)
    return kInvalidHandle;
  const Kernel &kernel = *function->kernel;
  if (function->device != device) {
    // A function belongs to the context that loaded its module (CUDA
    // driver API: a module is loaded into the current context).
    std::fprintf(stderr,
                 "fwp PTX emulator: kernel %s: launched in device %d's "
                 "context, loaded in device %d's\n",
                 kernel.name.c_str(), device->ordinal,
                 function->device->ordinal);
    return kInvalidContext;
  }
  if (extra || (!kernelParams && !kernel.parameters.empty())) {
    std::fprintf(stderr,
                 "fwp PTX emulator: kernel %s: launch without "
                 "kernelParams\n",
                 kernel.name.c_str());
    return kInvalidValue;
  }
  Dim3 grid{gridX, gridY, gridZ}, block{blockX, blockY, blockZ};
  LaunchOptions options = settings().launch;
  options.maxDynamicShared = function->maxDynamicShared;
  std::string problem =
      checkLaunch(kernel, grid, block, sharedBytes, device->chip, options);
  if (!problem.empty()) {
    std::fprintf(stderr, "fwp PTX emulator: kernel %s: %s\n",
                 kernel.name.c_str(), problem.c_str());
    return kInvalidValue;
  }
  std::vector<std::vector<uint8_t>> args;
  for (size_t i = 0; i < kernel.parameters.size(); ++i) {
    const auto *bytes = static_cast<const uint8_t *>(kernelParams[i]);
    args.emplace_back(bytes, bytes + kernel.parameters[i].size);
  }
  return State::get().submit(stream, device, [=]() mutable {
    return runLaunch(*device, *function, grid, block, sharedBytes, options,
                     std::move(args));
  });
}

} // extern "C"
