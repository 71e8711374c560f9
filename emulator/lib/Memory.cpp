//===- Memory.cpp - The emulated device's global memory -------------------===//

#include "fwp/Emulator/Memory.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <sstream>

namespace fwp::emu {

uint64_t DeviceMemory::allocate(size_t bytes) {
  auto allocation = std::make_unique<Allocation>();
  size_t size = std::max<size_t>(bytes, 1);
  allocation->data.reset(new (std::nothrow) uint8_t[size]);
  allocation->written.reset(new (std::nothrow) uint8_t[size]);
  allocation->writer.reset(new (std::nothrow) uint64_t[(size + 3) / 4]);
  allocation->shadow.reset(new (std::nothrow) AccessShadow[(size + 3) / 4]);
  if (!allocation->data || !allocation->written || !allocation->writer ||
      !allocation->shadow)
    return 0;
  std::memset(allocation->data.get(), kPoisonByte, size);
  std::memset(allocation->written.get(), 0, size);
  std::memset(allocation->writer.get(), 0, (size + 3) / 4 * 8);
  allocation->size = bytes;
  std::lock_guard<std::mutex> lock(mutex_);
  allocation->base = next_;
  next_ += (size + kGuardBytes + 255) / 256 * 256;
  uint64_t base = allocation->base;
  allocations_[base] = std::move(allocation);
  return base;
}

bool DeviceMemory::release(uint64_t address) {
  std::lock_guard<std::mutex> lock(mutex_);
  return allocations_.erase(address) == 1;
}

const Allocation *DeviceMemory::find(uint64_t address, size_t bytes) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = allocations_.upper_bound(address);
  if (it == allocations_.begin())
    return nullptr;
  --it;
  return it->second->contains(address, bytes) ? it->second.get() : nullptr;
}

bool DeviceMemory::copyIn(uint64_t dst, const void *src, size_t bytes) {
  const Allocation *a = find(dst, bytes);
  if (!a)
    return false;
  std::memcpy(a->at(dst), src, bytes);
  std::memset(a->written.get() + (dst - a->base), 1, bytes);
  return true;
}

bool DeviceMemory::copyOut(void *dst, uint64_t src, size_t bytes) const {
  const Allocation *a = find(src, bytes);
  if (!a)
    return false;
  std::memcpy(dst, a->at(src), bytes);
  return true;
}

bool DeviceMemory::copyWithin(uint64_t dst, uint64_t src, size_t bytes) {
  const Allocation *to = find(dst, bytes), *from = find(src, bytes);
  if (!to || !from)
    return false;
  std::memmove(to->at(dst), from->at(src), bytes);
  std::memmove(to->written.get() + (dst - to->base),
               from->written.get() + (src - from->base), bytes);
  return true;
}

bool DeviceMemory::fill(uint64_t dst, uint8_t value, size_t bytes) {
  const Allocation *a = find(dst, bytes);
  if (!a)
    return false;
  std::memset(a->at(dst), value, bytes);
  std::memset(a->written.get() + (dst - a->base), 1, bytes);
  return true;
}

std::string DeviceMemory::describe(uint64_t address) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::ostringstream out;
  out << "0x" << std::hex << address << std::dec;
  auto it = allocations_.upper_bound(address);
  if (it != allocations_.begin()) {
    const Allocation &a = *std::prev(it)->second;
    if (address >= a.base + a.size) {
      out << " is " << address - (a.base + a.size)
          << " bytes past the end of an allocation of " << a.size
          << " bytes at 0x" << std::hex << a.base;
      return out.str();
    }
  }
  out << " is not in any allocation";
  return out.str();
}

} // namespace fwp::emu
