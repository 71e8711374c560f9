//===- Memory.h - The emulated device's global memory -----------*- C++ -*-===//
//
// Device memory is host memory behind a map of allocations. Device addresses
// live in their own range (kDeviceBase up), never a host address, so host code
// that dereferences a device pointer faults at once. Each allocation starts
// filled with a poison pattern and marked unwritten; guard zones between
// allocations keep an access that runs off one from landing in the next.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_EMULATOR_MEMORY_H
#define FWP_EMULATOR_MEMORY_H

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace fwp::emu {

constexpr uint64_t kDeviceBase = 0x0000'5ee0'0000'0000ull;
/// Bytes kept free after every allocation; allocations are 256-aligned.
constexpr uint64_t kGuardBytes = 256;
/// The byte newly allocated global memory is filled with (0xff...ff reads as
/// a NaN in every float type and -1 as an integer).
constexpr uint8_t kPoisonByte = 0xff;

/// Who touched a word since the last barrier of the CTA that touched it
/// last, and which of its bytes, for the race check between the threads of
/// a CTA (-1: nobody, -2: more than one thread read it).
struct AccessShadow {
  uint64_t cta = 0; // (launch << 32) | CTA
  uint32_t epoch = 0;
  int16_t writer = -1, reader = -1;
  uint8_t writtenBytes = 0, readBytes = 0; // a bit a byte of the word
};

struct Allocation {
  uint64_t base = 0;
  size_t size = 0;
  std::unique_ptr<uint8_t[]> data;
  /// One flag a byte: written since allocation (by a copy, a memset or a
  /// kernel). Reads of unwritten bytes are reported.
  std::unique_ptr<uint8_t[]> written;
  /// One word a 4-byte word: the launch and CTA that last wrote it with a
  /// plain store ((launch << 32) | cta + 1), for the check that two CTAs of
  /// one launch never write the same word without atomics.
  std::unique_ptr<uint64_t[]> writer;
  /// One a 4-byte word: the race check within a CTA.
  std::unique_ptr<AccessShadow[]> shadow;

  bool contains(uint64_t address, size_t bytes) const {
    return address >= base && address - base + bytes <= size;
  }
  uint8_t *at(uint64_t address) const { return data.get() + (address - base); }
};

class DeviceMemory {
public:
  /// A new allocation of `bytes` (poisoned, unwritten); 0 if out of memory.
  uint64_t allocate(size_t bytes);
  /// False if `address` is not the base of a live allocation.
  bool release(uint64_t address);

  /// The allocation holding [address, address + bytes), or null.
  const Allocation *find(uint64_t address, size_t bytes) const;

  /// Host-side copies and fills; false (nothing done) unless the whole
  /// device range lies in one allocation.
  bool copyIn(uint64_t dst, const void *src, size_t bytes);
  bool copyOut(void *dst, uint64_t src, size_t bytes) const;
  bool copyWithin(uint64_t dst, uint64_t src, size_t bytes);
  bool fill(uint64_t dst, uint8_t value, size_t bytes);

  /// "0x... is N bytes past the end of an allocation of M bytes at 0x..."
  /// or "0x... is not in any allocation".
  std::string describe(uint64_t address) const;

private:
  mutable std::mutex mutex_;
  std::map<uint64_t, std::unique_ptr<Allocation>> allocations_;
  uint64_t next_ = kDeviceBase;
};

} // namespace fwp::emu

#endif // FWP_EMULATOR_MEMORY_H
