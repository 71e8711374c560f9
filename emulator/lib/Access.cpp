//===- Access.cpp - Memory accesses, their checks and counts --------------===//
//
// Every load and store goes through here, so that every access is checked
// as compute-sanitizer checks it: global bounds against the allocation map,
// alignment, reads of bytes never written, plain stores of the same bytes
// by two CTAs of a launch, shared bounds, shared races between barriers, and
// reads of a cp.async destination before its wait_group.
//
//===----------------------------------------------------------------------===//

#include "Interpreter.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <sstream>

namespace fwp::emu {
namespace {

std::string hex(uint64_t value) {
  std::ostringstream out;
  out << "0x" << std::hex << value;
  return out.str();
}

std::string threadName(const Cta &cta, unsigned thread) {
  unsigned x = thread % cta.block.x, y = thread / cta.block.x % cta.block.y,
           z = thread / (cta.block.x * cta.block.y);
  return "thread (" + std::to_string(x) + "," + std::to_string(y) + "," +
         std::to_string(z) + ")";
}

void checkAlignment(Exec &e, int lane, uint64_t address, unsigned bytes,
                    const char *space) {
  if (address % bytes != 0)
    fault(e, lane, LaunchError::MisalignedAddress,
          std::string("misaligned ") + space + " access of " +
              std::to_string(bytes) + " bytes at " + hex(address));
}

void checkWritten(Exec &e, int lane, const uint8_t *flags, unsigned bytes,
                  const char *space, uint64_t address) {
  if (!e.cta.options->checks)
    return;
  for (unsigned i = 0; i < bytes; ++i)
    if (!flags[i])
      fault(e, lane, LaunchError::LaunchFailed,
            std::string("read of ") + space + " memory never written at " +
                hex(address + i));
}

/// Two threads of a CTA touching one word, one of them writing, with no
/// barrier between: a race whatever the warps' order (and within a warp,
/// since Volta's threads need not run in lockstep).
template <typename Shadow>
void checkRace(Exec &e, int lane, Shadow &s, uint64_t cta, uint64_t word,
               uint8_t bytes, bool isWrite, bool sameValue, const char *space) {
  int thread = int(e.threadId(lane));
  if (s.cta != cta || s.epoch != e.cta.epoch) {
    s.cta = cta;
    s.epoch = e.cta.epoch;
    s.writer = s.reader = -1;
    s.writtenBytes = s.readBytes = 0;
  }
  // Threads touching different bytes of a word (16-bit stores side by
  // side) do not race; nor do stores of the value the word already holds
  // from the other thread's store: whichever lands last, the word holds
  // that value (Triton's lanes that hold copies of one element store it
  // alike).
  bool written = s.writer != -1 && s.writer != thread &&
                 (s.writtenBytes & bytes) && !(isWrite && sameValue);
  bool read =
      isWrite && s.reader != -1 && s.reader != thread && (s.readBytes & bytes);
  if (written || read) {
    int other = written ? s.writer : s.reader;
    fault(e, lane, LaunchError::LaunchFailed,
          std::string(space) + "-memory race at " + space + " " +
              hex(word * 4) + ": this " + (isWrite ? "write" : "read") +
              " and a " + (written ? "write" : "read") + " by " +
              (other >= 0 ? threadName(e.cta, unsigned(other))
                          : std::string("other threads")) +
              " with no barrier between");
  }
  int16_t &who = isWrite ? s.writer : s.reader;
  uint8_t &which = isWrite ? s.writtenBytes : s.readBytes;
  if (who == -1 || who == thread) {
    who = int16_t(thread);
    which |= bytes;
  } else if (isWrite) { // other bytes than the last writer's
    who = int16_t(thread);
    which = bytes;
  } else {
    who = -2;
    which |= bytes;
  }
}

/// The bytes of word `word` that [address, address + size) covers.
uint8_t bytesOfWord(uint64_t word, uint64_t address, unsigned size) {
  uint8_t mask = 0;
  for (uint64_t b = std::max(word * 4, address);
       b < std::min(word * 4 + 4, address + size); ++b)
    mask |= uint8_t(1u << (b - word * 4));
  return mask;
}

/// Two CTAs of one launch storing to the same bytes without atomics: the
/// result depends on their order. (Stores conflict where the bytes they
/// write intersect, the PTX memory model's overlap: 16-bit stores of two
/// CTAs side by side in one word do not.) A word's shadow holds its last
/// writer: the launch (bits 36 and up), the bytes that CTA wrote (bits 32 to
/// 35) and the CTA + 1 (bits 0 to 31).
void checkCtaWrite(Exec &e, int lane, const Allocation &a, uint64_t address,
                   unsigned bytes) {
  uint64_t offset = address - a.base;
  uint64_t launch = e.cta.launchId & 0xfffffffu, cta = e.cta.linearId + 1;
  for (uint64_t word = offset / 4; word <= (offset + bytes - 1) / 4; ++word) {
    uint64_t mine = bytesOfWord(word, offset, bytes);
    uint64_t before = __atomic_load_n(&a.writer[word], __ATOMIC_RELAXED);
    uint64_t after;
    do {
      bool sameLaunch = (before >> 36) == launch;
      bool sameCta = sameLaunch && (before & 0xffffffffu) == cta;
      uint64_t theirs = (before >> 32) & 0xf;
      if (sameLaunch && !sameCta && (theirs & mine))
        fault(e, lane, LaunchError::LaunchFailed,
              "global word at " + hex(a.base + word * 4) +
                  " written by two CTAs of one launch (block " +
                  std::to_string((before & 0xffffffffu) - 1) +
                  " and this one)"
                  " without atomics");
      uint64_t written = sameCta ? theirs | mine : mine;
      after = (launch << 36) | (written << 32) | cta;
    } while (!__atomic_compare_exchange_n(&a.writer[word], &before, after,
                                          /*weak=*/true, __ATOMIC_RELAXED,
                                          __ATOMIC_RELAXED));
  }
}

void checkSharedRace(Exec &e, int lane, uint64_t offset, unsigned bytes,
                     bool isWrite, bool sameValue) {
  for (uint64_t word = offset / 4; word <= (offset + bytes - 1) / 4; ++word)
    checkRace(e, lane, e.cta.sharedShadow[word], 0, word,
              bytesOfWord(word, offset, bytes), isWrite, sameValue, "shared");
}

/// CTAs on other host threads share global memory: a word's shadow is
/// updated under one of a few locks chosen by its address.
void checkGlobalRace(Exec &e, int lane, const Allocation &a, uint64_t address,
                     unsigned bytes, bool isWrite, bool sameValue) {
  static std::mutex locks[64];
  uint64_t cta = (e.cta.launchId << 32) | e.cta.linearId;
  for (uint64_t word = address / 4; word <= (address + bytes - 1) / 4; ++word) {
    std::lock_guard<std::mutex> lock(locks[(word >> 3) % 64]);
    checkRace(e, lane, a.shadow[word - a.base / 4], cta, word,
              bytesOfWord(word, address, bytes), isWrite, sameValue, "global");
  }
}

} // namespace

uint8_t *globalAddress(Exec &e, int lane, uint64_t address, unsigned bytes,
                       bool isWrite, bool isAtomic, const uint8_t *stored) {
  if (address >= kSharedWindow && address < kSharedWindow + (1ull << 32))
    return sharedAddress(e, lane, address - kSharedWindow, bytes, isWrite,
                         stored);
  const Allocation *a = e.cta.lastAllocation;
  if (!a || !a->contains(address, bytes))
    a = e.cta.lastAllocation = e.cta.memory->find(address, bytes);
  if (!a)
    fault(e, lane, LaunchError::IllegalAddress,
          "out-of-bounds global access of " + std::to_string(bytes) +
              " bytes: " + e.cta.memory->describe(address));
  checkAlignment(e, lane, address, bytes, "global");
  uint8_t *flags = a->written.get() + (address - a->base);
  if (isWrite || isAtomic) {
    if (e.cta.options->checks && !isAtomic)
      checkCtaWrite(e, lane, *a, address, bytes);
    std::fill(flags, flags + bytes, uint8_t(1));
  }
  if (!isWrite)
    checkWritten(e, lane, flags, bytes, "global", address);
  if (e.cta.options->checks && !isAtomic)
    checkGlobalRace(e, lane, *a, address, bytes, isWrite,
                    stored && std::memcmp(stored, a->at(address), bytes) == 0);
  return a->at(address);
}

uint8_t *sharedAddress(Exec &e, int lane, uint64_t offset, unsigned bytes,
                       bool isWrite, const uint8_t *stored) {
  Cta &cta = e.cta;
  if (offset + bytes > cta.shared.size() || offset + bytes < offset)
    fault(e, lane, LaunchError::IllegalAddress,
          "out-of-bounds shared access of " + std::to_string(bytes) +
              " bytes at offset " + std::to_string(offset) + " (the CTA has " +
              std::to_string(cta.shared.size()) + " bytes)");
  checkAlignment(e, lane, offset, bytes, "shared");
  if (cta.options->checks) {
    for (unsigned i = 0; i < bytes; ++i)
      if (cta.sharedPending[offset + i])
        fault(e, lane, LaunchError::LaunchFailed,
              std::string(isWrite ? "write to" : "read of") +
                  " a cp.async destination (shared offset " +
                  std::to_string(offset + i) +
                  ") before the cp.async.wait_group that completes it");
    checkSharedRace(
        e, lane, offset, bytes, isWrite,
        stored && std::memcmp(stored, cta.shared.data() + offset, bytes) == 0);
  }
  uint8_t *flags = cta.sharedWritten.data() + offset;
  if (isWrite)
    std::fill(flags, flags + bytes, uint8_t(1));
  else
    checkWritten(e, lane, flags, bytes, "shared", offset);
  return cta.shared.data() + offset;
}

uint64_t addressOf(Exec &e, const Operand &op, int lane) {
  if (op.kind != Operand::Kind::Address)
    fault(e, lane, LaunchError::IllegalInstruction,
          "operand is not an address");
  uint64_t base = op.reg >= 0 ? e.reg(op.reg)[lane] : 0;
  return base + uint64_t(op.offset);
}

void countGlobalAccess(Exec &e, const uint64_t *addresses, uint32_t mask,
                       unsigned bytes) {
  uint64_t sectors[kWarpSize * 2];
  int count = 0;
  forLanes(mask, [&](int lane) {
    for (uint64_t s = addresses[lane] / 32;
         s <= (addresses[lane] + bytes - 1) / 32; ++s)
      sectors[count++] = s;
  });
  std::sort(sectors, sectors + count);
  int distinct = int(std::unique(sectors, sectors + count) - sectors);
  Counters &c = e.cta.counters;
  c.globalBytesRequested += uint64_t(__builtin_popcount(mask)) * bytes;
  c.globalSectors += distinct;
  if (e.cta.sectors)
    e.cta.sectors->insert(sectors, sectors + distinct);
}

/// Shared memory serves 32 banks of 4-byte words a wavefront; lanes that
/// read one word share it. Accesses wider than 4 bytes go in phases of
/// 128 bytes (16 lanes of 8 bytes, 8 of 16).
void countSharedAccess(Exec &e, const uint64_t *offsets, uint32_t mask,
                       unsigned bytes) {
  unsigned lanesPerPhase = bytes <= 4 ? 32 : 128 / bytes;
  unsigned words = std::max(1u, bytes / 4);
  for (unsigned phase = 0; phase < kWarpSize; phase += lanesPerPhase) {
    uint64_t touched[kWarpSize * 4];
    int count = 0;
    for (unsigned lane = phase; lane < phase + lanesPerPhase; ++lane)
      if (mask & (1u << lane))
        for (unsigned w = 0; w < words; ++w)
          touched[count++] = offsets[lane] / 4 + w;
    if (count == 0)
      continue;
    std::sort(touched, touched + count);
    count = int(std::unique(touched, touched + count) - touched);
    unsigned perBank[32] = {};
    unsigned wavefronts = 1;
    for (int i = 0; i < count; ++i)
      wavefronts = std::max(wavefronts, ++perBank[touched[i] % 32]);
    e.cta.counters.sharedWavefronts += wavefronts;
    e.cta.counters.sharedBankConflicts += wavefronts - 1;
  }
}

void completeCopies(Exec &e, int lane, size_t keep) {
  auto &groups = e.warp.groups[lane];
  while (groups.size() > keep) {
    for (const PendingCopy &copy : groups.front()) {
      std::fill_n(e.cta.sharedPending.begin() + copy.destination, copy.bytes,
                  uint8_t(0));
      uint8_t *to = sharedAddress(e, lane, copy.destination, copy.bytes, true);
      std::fill_n(to, copy.bytes, uint8_t(0));
      if (copy.sourceBytes > 0) {
        uint8_t *from =
            globalAddress(e, lane, copy.source, copy.sourceBytes, false, false);
        std::copy_n(from, copy.sourceBytes, to);
      }
    }
    groups.erase(groups.begin());
  }
}

} // namespace fwp::emu
