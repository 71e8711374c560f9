//===- Cuda.cpp - Context, streams, buffers, modules, launch --------------===//

#include "fwp/Runtime/Cuda.h"

#include <fmt/format.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

namespace fwp::rt {
namespace {

/// Largest dynamic shared memory a kernel may use without opting in.
constexpr unsigned kDefaultSharedLimit = 48 * 1024;
constexpr size_t kJitLogBytes = 16 * 1024;

} // namespace

const Driver &boundDriver() {
  Context::primary().makeCurrent();
  return driver();
}

bool boundDriverQuietly() {
  try {
    boundDriver();
    return true;
  } catch (...) {
    return false;
  }
}

//===----------------------------------------------------------------------===//
// Context
//===----------------------------------------------------------------------===//

Context::Context(int ordinal) {
  const Driver &d = driver();
  checkCuda(d.cuDeviceGet(&device_, ordinal),
            fmt::format("cuDeviceGet (device {})", ordinal).c_str());
  checkCuda(d.cuDevicePrimaryCtxRetain(&context_, device_),
            "cuDevicePrimaryCtxRetain");
}

Context &Context::forDevice(int ordinal) {
  // Made on first use and kept for the process, like the primary
  // contexts they retain; a failed construction is retried next time.
  static std::mutex mutex;
  static std::map<int, std::unique_ptr<Context>> contexts;
  std::lock_guard<std::mutex> lock(mutex);
  auto &context = contexts[ordinal];
  if (!context)
    context.reset(new Context(ordinal));
  return *context;
}

Context &Context::primary() { return forDevice(DeviceScope::current()); }

namespace {
thread_local int currentOrdinal = 0;
} // namespace

DeviceScope::DeviceScope(int ordinal) : previous_(currentOrdinal) {
  currentOrdinal = ordinal;
}

DeviceScope::~DeviceScope() { currentOrdinal = previous_; }

int DeviceScope::current() { return currentOrdinal; }

void Context::makeCurrent() const {
  checkCuda(driver().cuCtxSetCurrent(context_), "cuCtxSetCurrent");
}

void Context::synchronize() const {
  makeCurrent();
  checkCuda(driver().cuCtxSynchronize(), "cuCtxSynchronize");
}

std::string Context::deviceName() const {
  char name[256] = {};
  checkCuda(driver().cuDeviceGetName(name, sizeof(name) - 1, device_),
            "cuDeviceGetName");
  return name;
}

bool Context::isEmulator() const {
  return deviceName().rfind("fwp PTX emulator", 0) == 0;
}

int Context::computeCapability() const {
  int major = 0, minor = 0;
  const Driver &d = driver();
  checkCuda(
      d.cuDeviceGetAttribute(&major, kDevAttrComputeCapabilityMajor, device_),
      "cuDeviceGetAttribute");
  checkCuda(
      d.cuDeviceGetAttribute(&minor, kDevAttrComputeCapabilityMinor, device_),
      "cuDeviceGetAttribute");
  return major * 10 + minor;
}

//===----------------------------------------------------------------------===//
// Stream
//===----------------------------------------------------------------------===//

Stream::Stream(unsigned flags) {
  checkCuda(boundDriver().cuStreamCreate(&stream_, flags), "cuStreamCreate");
}

Stream::~Stream() {
  if (stream_ && boundDriverQuietly())
    driver().cuStreamDestroy(stream_);
}

Stream::Stream(Stream &&other) noexcept
    : stream_(std::exchange(other.stream_, nullptr)) {}

Stream &Stream::operator=(Stream &&other) noexcept {
  std::swap(stream_, other.stream_);
  return *this;
}

void Stream::synchronize() const {
  checkCuda(boundDriver().cuStreamSynchronize(stream_), "cuStreamSynchronize");
}

//===----------------------------------------------------------------------===//
// DeviceBuffer
//===----------------------------------------------------------------------===//

DeviceBuffer::DeviceBuffer(size_t bytes) {
  if (bytes == 0)
    return;
  checkCuda(boundDriver().cuMemAlloc(&ptr_, bytes), "cuMemAlloc");
  size_ = bytes;
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_ && boundDriverQuietly())
    driver().cuMemFree(ptr_);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer &&other) noexcept
    : ptr_(std::exchange(other.ptr_, 0)), size_(std::exchange(other.size_, 0)) {
}

DeviceBuffer &DeviceBuffer::operator=(DeviceBuffer &&other) noexcept {
  std::swap(ptr_, other.ptr_);
  std::swap(size_, other.size_);
  return *this;
}

void DeviceBuffer::checkFits(size_t bytes, const char *operation) const {
  if (bytes > size_)
    throw Error(fmt::format("DeviceBuffer::{}: {} bytes do not fit in a "
                            "buffer of {} bytes",
                            operation, bytes, size_));
}

void DeviceBuffer::copyFromHost(const void *src, size_t bytes) {
  checkFits(bytes, "copyFromHost");
  if (bytes)
    checkCuda(boundDriver().cuMemcpyHtoD(ptr_, src, bytes), "cuMemcpyHtoD");
}

void DeviceBuffer::copyToHost(void *dst, size_t bytes) const {
  checkFits(bytes, "copyToHost");
  if (bytes)
    checkCuda(boundDriver().cuMemcpyDtoH(dst, ptr_, bytes), "cuMemcpyDtoH");
}

void DeviceBuffer::copyFromHostAsync(const void *src, size_t bytes,
                                     const Stream &stream) {
  checkFits(bytes, "copyFromHostAsync");
  if (bytes)
    checkCuda(
        boundDriver().cuMemcpyHtoDAsync(ptr_, src, bytes, stream.handle()),
        "cuMemcpyHtoDAsync");
}

void DeviceBuffer::copyToHostAsync(void *dst, size_t bytes,
                                   const Stream &stream) const {
  checkFits(bytes, "copyToHostAsync");
  if (bytes)
    checkCuda(
        boundDriver().cuMemcpyDtoHAsync(dst, ptr_, bytes, stream.handle()),
        "cuMemcpyDtoHAsync");
}

void DeviceBuffer::zero() {
  if (size_)
    checkCuda(boundDriver().cuMemsetD8(ptr_, 0, size_), "cuMemsetD8");
}

void DeviceBuffer::zeroAsync(const Stream &stream) {
  if (size_)
    checkCuda(boundDriver().cuMemsetD8Async(ptr_, 0, size_, stream.handle()),
              "cuMemsetD8Async");
}

//===----------------------------------------------------------------------===//
// Module
//===----------------------------------------------------------------------===//

namespace {

/// Text of a JIT log buffer, without trailing NULs or newlines.
std::string logText(const std::vector<char> &log) {
  std::string text(log.data());
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r'))
    text.pop_back();
  return text;
}

std::string loadFailure(CUresult result, const std::string &sourceName,
                        const std::vector<char> &errorLog) {
  std::string message =
      fmt::format("cuModuleLoadDataEx failed: {} while loading {}",
                  describeCudaResult(result), sourceName);
  std::string log = logText(errorLog);
  return log.empty() ? message
                     : fmt::format("{}; JIT error log:\n{}", message, log);
}

} // namespace

Module::Module(const std::string &ptx, const std::string &sourceName)
    : sourceName_(sourceName) {
  std::vector<char> infoLog(kJitLogBytes, '\0'), errorLog(kJitLogBytes, '\0');
  CUjit_option options[] = {kJitInfoLogBuffer, kJitInfoLogBufferSizeBytes,
                            kJitErrorLogBuffer, kJitErrorLogBufferSizeBytes};
  void *values[] = {infoLog.data(), reinterpret_cast<void *>(kJitLogBytes - 1),
                    errorLog.data(),
                    reinterpret_cast<void *>(kJitLogBytes - 1)};
  CUresult result = boundDriver().cuModuleLoadDataEx(&module_, ptx.c_str(), 4,
                                                     options, values);
  if (result != kCudaSuccess)
    throw CudaError(loadFailure(result, sourceName_, errorLog));
}

Module::~Module() {
  if (module_ && boundDriverQuietly())
    driver().cuModuleUnload(module_);
}

Module::Module(Module &&other) noexcept
    : module_(std::exchange(other.module_, nullptr)),
      sourceName_(std::move(other.sourceName_)) {}

Module &Module::operator=(Module &&other) noexcept {
  std::swap(module_, other.module_);
  std::swap(sourceName_, other.sourceName_);
  return *this;
}

CUfunction Module::function(const std::string &name) const {
  CUfunction function = nullptr;
  CUresult result =
      boundDriver().cuModuleGetFunction(&function, module_, name.c_str());
  if (result != kCudaSuccess)
    throw CudaError(fmt::format(
        "kernel '{}' not found in {}: cuModuleGetFunction failed: {}", name,
        sourceName_, describeCudaResult(result)));
  return function;
}

//===----------------------------------------------------------------------===//
// Launch
//===----------------------------------------------------------------------===//

void launch(CUfunction function, Dim3 grid, Dim3 block, unsigned sharedBytes,
            CUstream stream, void **args) {
  const Driver &d = boundDriver();
  if (sharedBytes > kDefaultSharedLimit)
    checkCuda(d.cuFuncSetAttribute(function, kFuncAttrMaxDynamicSharedSizeBytes,
                                   static_cast<int>(sharedBytes)),
              "cuFuncSetAttribute");
  checkCuda(d.cuLaunchKernel(function, grid.x, grid.y, grid.z, block.x, block.y,
                             block.z, sharedBytes, stream, args, nullptr),
            "cuLaunchKernel");
}

} // namespace fwp::rt
