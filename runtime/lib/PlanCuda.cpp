//===- PlanCuda.cpp - Launch plans on a CUDA GPU --------------------------===//

#include "fwp/Runtime/PlanCuda.h"

#include <fmt/format.h>

#include <utility>

namespace fwp::rt {
namespace {

std::string moduleList(const std::map<std::string, Module> &modules) {
  std::vector<std::string> names;
  for (const auto &entry : modules)
    names.push_back(entry.first);
  return names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", "));
}

std::string ptxFileName(const std::string &module) {
  return fmt::format("{}.ptx", module);
}

/// `ptx`, after checking (before the driver is touched) that it has every
/// module of `plan`.
const std::map<std::string, std::string> &
checkedPtx(const Plan &plan, const std::map<std::string, std::string> &ptx) {
  for (const std::string &module : plan.modules)
    if (!ptx.count(module))
      throw PlanError(fmt::format("{}: no PTX given for module '{}'",
                                  plan.sourceName, module));
  return ptx;
}

} // namespace

//===----------------------------------------------------------------------===//
// CudaPlanDevice
//===----------------------------------------------------------------------===//

CudaPlanDevice::CudaPlanDevice(const std::map<std::string, std::string> &ptx,
                               CUstream stream)
    : stream_(stream) {
  for (const auto &entry : ptx)
    loadModule(entry.first, entry.second, ptxFileName(entry.first));
}

CudaPlanDevice
CudaPlanDevice::fromDirectory(const std::string &dir,
                              const std::vector<std::string> &modules,
                              CUstream stream) {
  // Read every file before touching the driver, so that a missing file is
  // reported as such even without a GPU.
  std::vector<std::pair<std::string, std::string>> texts;
  for (const std::string &module : modules) {
    std::string path = fmt::format("{}/{}", dir, ptxFileName(module));
    texts.emplace_back(path, readTextFile(path));
  }
  CudaPlanDevice device(stream);
  for (size_t i = 0; i < modules.size(); ++i)
    device.loadModule(modules[i], texts[i].second, texts[i].first);
  return device;
}

CudaPlanDevice::~CudaPlanDevice() {
  // Modules and memory go in the context they were made in.
  DeviceScope scope(ordinal_);
  if (!buffers_.empty() && pending_) {
    try {
      synchronize();
    } catch (...) {
      // The buffers are freed regardless; cuMemFree waits for the device.
    }
  }
  buffers_.clear();
  functions_.clear();
  modules_.clear();
}

void CudaPlanDevice::loadModule(const std::string &name, const std::string &ptx,
                                const std::string &sourceName) {
  modules_.erase(name);
  modules_.emplace(name, Module(ptx, sourceName));
}

uint64_t CudaPlanDevice::alloc(size_t bytes) {
  if (bytes == 0)
    return 0;
  DeviceBuffer buffer(bytes);
  CUdeviceptr ptr = buffer.ptr();
  checkCuda(boundDriver().cuMemsetD8Async(ptr, 0, bytes, stream_),
            "cuMemsetD8Async");
  pending_ = true;
  buffers_.emplace(ptr, std::move(buffer));
  return ptr;
}

void CudaPlanDevice::free(uint64_t ptr) {
  auto it = buffers_.find(ptr);
  if (it == buffers_.end())
    return;
  if (pending_) {
    // Work on the stream may still use the buffer (e.g. a plan that failed
    // after launching); wait for it before freeing.
    try {
      synchronize();
    } catch (...) {
      pending_ = false;
    }
  }
  buffers_.erase(it);
}

DeviceBuffer CudaPlanDevice::release(uint64_t ptr) {
  auto it = buffers_.find(ptr);
  if (it == buffers_.end())
    return DeviceBuffer();
  DeviceBuffer buffer = std::move(it->second);
  buffers_.erase(it);
  return buffer;
}

void CudaPlanDevice::copy(uint64_t dst, uint64_t src, size_t bytes) {
  if (bytes == 0)
    return;
  checkCuda(boundDriver().cuMemcpyDtoDAsync(dst, src, bytes, stream_),
            "cuMemcpyDtoDAsync");
  pending_ = true;
}

CUfunction CudaPlanDevice::function(const std::string &module,
                                    const std::string &kernel) {
  auto key = std::make_pair(module, kernel);
  auto cached = functions_.find(key);
  if (cached != functions_.end())
    return cached->second;
  auto it = modules_.find(module);
  if (it == modules_.end())
    throw PlanError(fmt::format("no PTX loaded for module '{}' (loaded: {})",
                                module, moduleList(modules_)));
  CUfunction fn = it->second.function(kernel);
  functions_.emplace(key, fn);
  return fn;
}

void CudaPlanDevice::launch(const std::string &module,
                            const std::string &kernel, Dim3 grid, Dim3 block,
                            unsigned shared,
                            const std::vector<std::vector<uint8_t>> &params) {
  CUfunction fn = function(module, kernel);
  // cuLaunchKernel reads each parameter through its pointer, with the size
  // the kernel's signature gives it.
  std::vector<void *> pointers;
  for (const std::vector<uint8_t> &param : params)
    pointers.push_back(const_cast<uint8_t *>(param.data()));
  rt::launch(fn, grid, block, shared, stream_,
             pointers.empty() ? nullptr : pointers.data());
  pending_ = true;
}

void CudaPlanDevice::synchronize() {
  checkCuda(boundDriver().cuStreamSynchronize(stream_), "cuStreamSynchronize");
  pending_ = false;
}

//===----------------------------------------------------------------------===//
// DeviceResult
//===----------------------------------------------------------------------===//

void DeviceResult::checkElementBytes(size_t bytes) const {
  if (bytes != dtypeBytes(ref_.dtype))
    throw Error(fmt::format("DeviceResult::toHost: element type of {} bytes "
                            "for a {} buffer",
                            bytes, ref_.shapeStr()));
}

//===----------------------------------------------------------------------===//
// CompiledPlan
//===----------------------------------------------------------------------===//

CompiledPlan::CompiledPlan(CudaPlanDevice device, Plan plan)
    : plan_(std::move(plan)), device_(std::move(device)) {}

CompiledPlan::CompiledPlan(Plan plan,
                           const std::map<std::string, std::string> &ptx,
                           CUstream stream)
    : plan_(std::move(plan)), device_(checkedPtx(plan_, ptx), stream) {}

CompiledPlan CompiledPlan::load(const std::string &dir, CUstream stream) {
  Plan plan = loadPlanFile(fmt::format("{}/plan.fwp", dir));
  CudaPlanDevice device =
      CudaPlanDevice::fromDirectory(dir, plan.modules, stream);
  return CompiledPlan(std::move(device), std::move(plan));
}

std::vector<DeviceResult>
CompiledPlan::run(const std::vector<BufferRef> &args) {
  PlanRun run(plan_, device_);
  run.run(args);
  // Take each allocation from the device once (results returning the same
  // allocation share it) before the run lets go of them: if anything here
  // throws, what is already taken is freed by its DeviceResult and the rest
  // by the run.
  std::vector<DeviceResult> results;
  std::map<uint64_t, std::shared_ptr<DeviceBuffer>> memory;
  for (const BufferRef &ref : run.results()) {
    std::shared_ptr<DeviceBuffer> &owner = memory[ref.ptr];
    if (!owner)
      owner = std::make_shared<DeviceBuffer>(device_.release(ref.ptr));
    results.emplace_back(ref, owner);
  }
  run.takeResults();
  return results;
}

//===----------------------------------------------------------------------===//
// DeviceScratch, CudaCallDevice
//===----------------------------------------------------------------------===//

void copyOrZeroOnDevice(const DeviceCall &call, uint64_t dst, uint64_t src,
                        size_t bytes) {
  if (bytes == 0)
    return;
  if (src)
    checkCuda(boundDriver().cuMemcpyDtoDAsync(dst, src, bytes, call.stream),
              "cuMemcpyDtoDAsync");
  else
    checkCuda(boundDriver().cuMemsetD8Async(dst, 0, bytes, call.stream),
              "cuMemsetD8Async");
  if (!call.streamOrdered())
    checkCuda(boundDriver().cuStreamSynchronize(call.stream),
              "cuStreamSynchronize");
}

DeviceScratch::DeviceScratch(const DeviceCall &call, size_t bytes)
    : call_(call) {
  if (bytes == 0)
    return;
  if (call.streamOrdered()) {
    ptr_ = call.allocate(bytes);
    if (!ptr_)
      throw Error(fmt::format("the caller's allocator gave no memory for {} "
                              "bytes of scratch",
                              bytes));
    // The kernels copy tiles of their scratch 16 bytes at a time.
    if (ptr_ % 16) {
      call.release(std::exchange(ptr_, 0));
      throw Error(fmt::format("the caller's allocator gave scratch that is "
                              "not aligned to 16 bytes ({} bytes)",
                              bytes));
    }
  } else {
    owned_ = DeviceBuffer(bytes);
    ptr_ = owned_.ptr();
  }
  checkCuda(boundDriver().cuMemsetD8Async(ptr_, 0, bytes, call.stream),
            "cuMemsetD8Async");
}

DeviceScratch::~DeviceScratch() {
  if (!ptr_)
    return;
  if (call_.streamOrdered()) {
    call_.release(ptr_); // later work on the stream may reuse it: in order
    return;
  }
  // cuMemFree does not wait for work on other streams that still use it.
  if (boundDriverQuietly())
    driver().cuStreamSynchronize(call_.stream);
}

uint64_t CudaCallDevice::alloc(size_t bytes) {
  if (bytes == 0)
    return 0;
  auto scratch = std::make_unique<DeviceScratch>(call_, bytes);
  uint64_t ptr = scratch->ptr();
  scratch_.emplace(ptr, std::move(scratch));
  return ptr;
}

void CudaCallDevice::free(uint64_t ptr) { scratch_.erase(ptr); }

void CudaCallDevice::copy(uint64_t dst, uint64_t src, size_t bytes) {
  if (bytes == 0)
    return;
  checkCuda(boundDriver().cuMemcpyDtoDAsync(dst, src, bytes, call_.stream),
            "cuMemcpyDtoDAsync");
}

void CudaCallDevice::launch(const std::string &module,
                            const std::string &kernel, Dim3 grid, Dim3 block,
                            unsigned shared,
                            const std::vector<std::vector<uint8_t>> &params) {
  CUfunction fn = modules_.function(module, kernel);
  std::vector<void *> pointers;
  for (const std::vector<uint8_t> &param : params)
    pointers.push_back(const_cast<uint8_t *>(param.data()));
  rt::launch(fn, grid, block, shared, call_.stream,
             pointers.empty() ? nullptr : pointers.data());
}

void CudaCallDevice::synchronize() {
  if (!call_.streamOrdered())
    checkCuda(boundDriver().cuStreamSynchronize(call_.stream),
              "cuStreamSynchronize");
}

//===----------------------------------------------------------------------===//
// DevicePlan
//===----------------------------------------------------------------------===//

DevicePlan::DevicePlan(Plan plan, std::map<std::string, std::string> ptx)
    : plan_(std::move(plan)), ptx_(std::move(ptx)) {
  checkedPtx(plan_, ptx_);
}

std::unique_ptr<DevicePlan> DevicePlan::load(const std::string &dir) {
  Plan plan = loadPlanFile(fmt::format("{}/plan.fwp", dir));
  std::map<std::string, std::string> ptx;
  for (const std::string &module : plan.modules)
    ptx[module] = readTextFile(fmt::format("{}/{}", dir, ptxFileName(module)));
  return std::make_unique<DevicePlan>(std::move(plan), std::move(ptx));
}

CudaPlanDevice &DevicePlan::device(int ordinal) const {
  std::unique_ptr<CudaPlanDevice> &loaded = loaded_[ordinal];
  if (!loaded)
    loaded = std::make_unique<CudaPlanDevice>(ptx_);
  return *loaded;
}

void DevicePlan::run(const std::vector<BufferRef> &args,
                     const DeviceCall &call) const {
  std::lock_guard<std::mutex> lock(mutex_);
  DeviceScope scope(call.device);
  CudaCallDevice device(this->device(call.device), call);
  PlanRun run(plan_, device);
  run.run(args);
}

void DevicePlan::runOnHost(const std::vector<HostArg> &args) const {
  std::vector<DeviceBuffer> memory;
  std::vector<BufferRef> refs;
  for (const HostArg &arg : args) {
    BufferRef ref = arg.shape;
    std::optional<int64_t> elements = ref.elementCount();
    if (!elements)
      throw Error(
          fmt::format("a buffer of {} elements overflows", ref.shapeStr()));
    size_t bytes = static_cast<size_t>(*elements) * dtypeBytes(ref.dtype);
    memory.emplace_back(bytes);
    if (arg.data)
      memory.back().copyFromHost(arg.data, bytes);
    ref.ptr = memory.back().ptr();
    refs.push_back(std::move(ref));
  }
  run(refs);
  for (size_t i = 0; i < args.size(); ++i)
    if (args[i].out)
      memory[i].copyToHost(args[i].out, memory[i].size());
}

} // namespace fwp::rt
