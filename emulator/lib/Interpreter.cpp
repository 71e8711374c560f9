//===- Interpreter.cpp - Launches, CTAs and warps -------------------------===//
//
// CTAs run on host threads, each to completion. Within a CTA, warps run one
// at a time until they reach a barrier or exit (in shuffled mode, for a
// random number of instructions, in a random order), so that any order the
// hardware may choose between barriers can be tried. A warp executes the
// instruction at its lanes' lowest program counter for all lanes standing
// there: divergent lanes reconverge where their paths meet.
//
//===----------------------------------------------------------------------===//

#include "Interpreter.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

namespace fwp::emu {
namespace {

std::atomic<uint64_t> launchCounter{0};

std::string dim(unsigned x, unsigned y, unsigned z) {
  return "(" + std::to_string(x) + "," + std::to_string(y) + "," +
         std::to_string(z) + ")";
}

InstructionClass classify(const Instruction &inst) {
  switch (inst.op) {
  case Opcode::Bra:
  case Opcode::Brx:
  case Opcode::Exit:
  case Opcode::Ret:
    return InstructionClass::Control;
  case Opcode::Bar:
  case Opcode::Barrier:
    return InstructionClass::Barrier;
  case Opcode::Mma:
    return InstructionClass::TensorCore;
  case Opcode::Ldmatrix:
    return InstructionClass::SharedMemory;
  case Opcode::CpAsync:
  case Opcode::CpAsyncCommitGroup:
  case Opcode::CpAsyncWaitGroup:
  case Opcode::CpAsyncWaitAll:
    return InstructionClass::AsyncCopy;
  case Opcode::Atom:
  case Opcode::Red:
    return InstructionClass::Atomic;
  case Opcode::Ld:
  case Opcode::St:
    return inst.space == Space::Shared  ? InstructionClass::SharedMemory
           : inst.space == Space::Param ? InstructionClass::ParamMemory
                                        : InstructionClass::GlobalMemory;
  case Opcode::Cvt:
  case Opcode::Cvta:
    return InstructionClass::Conversion;
  default:
    return isFloat(inst.type) ? InstructionClass::FloatArithmetic
                              : InstructionClass::IntegerArithmetic;
  }
}

struct Program {
  std::vector<Handler> handlers;
  std::vector<InstructionClass> classes;
};

uint32_t guardMask(Warp &warp, const Instruction &inst, uint32_t active) {
  if (inst.guard < 0)
    return active;
  const uint64_t *p = warp.registers.data() + inst.guard * kWarpSize;
  uint32_t mask = 0;
  forLanes(active, [&](int lane) {
    if ((p[lane] != 0) != inst.guardNegated)
      mask |= 1u << lane;
  });
  return mask;
}

/// Drops finished paths: those whose lanes all exited and those that
/// reached their reconvergence point (the path below holds their lanes).
void popFinishedPaths(Warp &warp) {
  uint32_t live = warp.live();
  while (!warp.paths.empty()) {
    const Path &top = warp.paths.back();
    if ((top.mask & live) != 0 && top.pc != top.reconvergence)
      return;
    warp.paths.pop_back();
  }
}

/// After a branch: the lanes of `active` went where warp.pc says. One
/// target moves the path; several split it, each side to run in turn until
/// the branch's reconvergence point, where the current path resumes with
/// all of them.
void followBranch(Cta &cta, Warp &warp, int branchPc, uint32_t active) {
  active &= warp.live();
  if (!active)
    return;
  int targets[kWarpSize];
  uint32_t masks[kWarpSize];
  int count = 0;
  forLanes(active, [&](int lane) {
    int i = 0;
    while (i < count && targets[i] != warp.pc[lane])
      ++i;
    if (i == count) {
      targets[count] = warp.pc[lane];
      masks[count++] = 0;
    }
    masks[i] |= 1u << lane;
  });
  if (count == 1) {
    warp.paths.back().pc = targets[0];
    return;
  }
  int reconvergence = cta.kernel->reconvergence[size_t(branchPc)];
  warp.paths.back().pc = reconvergence;
  std::vector<int> order(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i)
    order[size_t(i)] = count - 1 - i; // the first target found runs first
  if (cta.options->shuffle)
    std::shuffle(order.begin(), order.end(), cta.random);
  for (int i : order)
    warp.paths.push_back({targets[i], masks[i], reconvergence});
}

bool isBarrier(const Instruction &inst) {
  return inst.op == Opcode::Bar || inst.op == Opcode::Barrier;
}

/// Runs `warp` until a barrier, its exit, or `budget` instructions.
void runWarp(Cta &cta, Warp &warp, const Program &program, uint64_t budget) {
  const std::vector<Instruction> &body = cta.kernel->body;
  while (budget-- > 0) {
    popFinishedPaths(warp);
    if (warp.paths.empty())
      return;
    int pc = warp.paths.back().pc;
    uint32_t active = warp.paths.back().mask & warp.live();
    if (pc < 0 || size_t(pc) >= body.size()) {
      Exec e{cta, warp, body.back(), active, active};
      fault(e, __builtin_ctz(active), LaunchError::IllegalInstruction,
            "ran past the end of the kernel");
    }
    const Instruction &inst = body[size_t(pc)];
    uint32_t mask = guardMask(warp, inst, active);
    Exec e{cta, warp, inst, active, mask};
    forLanes(active, [&](int lane) { warp.pc[lane] = pc + 1; });
    InstructionClass cls = program.classes[size_t(pc)];
    cta.counters.warpInstructions[size_t(cls)]++;
    cta.counters.activeLanes += __builtin_popcount(mask);
    if (isBarrier(inst) && mask) {
      if (mask != warp.live())
        fault(e, __builtin_ctz(mask), LaunchError::IllegalInstruction,
              "bar.sync reached by part of a warp (" +
                  std::to_string(__builtin_popcount(mask)) + " of its " +
                  std::to_string(__builtin_popcount(warp.live())) + " lanes)");
      warp.atBarrier = true;
      warp.paths.back().pc = pc + 1;
      cta.counters.barriers++;
      return;
    }
    program.handlers[size_t(pc)](e);
    if (cls == InstructionClass::Control)
      followBranch(cta, warp, pc, active);
    else
      warp.paths.back().pc = pc + 1;
  }
}

void initialiseCta(Cta &cta, unsigned sharedBytes, unsigned registerCount) {
  unsigned threads = unsigned(cta.block.count());
  cta.shared.assign(sharedBytes, 0);
  cta.sharedWritten.assign(sharedBytes, 0);
  cta.sharedPending.assign(sharedBytes, 0);
  cta.sharedShadow.assign((sharedBytes + 3) / 4, AccessShadow{});
  unsigned warps = (threads + kWarpSize - 1) / kWarpSize;
  cta.warps.assign(warps, Warp{});
  for (unsigned w = 0; w < warps; ++w) {
    Warp &warp = cta.warps[w];
    warp.index = w;
    unsigned lanes = std::min(kWarpSize, int(threads - w * kWarpSize));
    warp.lanes = lanes == 32 ? ~0u : (1u << lanes) - 1;
    warp.registers.assign(size_t(registerCount) * kWarpSize, 0);
    warp.paths.push_back({0, warp.lanes, -2});
  }
}

/// Shuffled: a random warp each time, for a random number of instructions.
void runCta(Cta &cta, const Program &program) {
  std::vector<unsigned> order(cta.warps.size());
  for (unsigned i = 0; i < order.size(); ++i)
    order[i] = i;
  bool shuffle = cta.options->shuffle;
  for (;;) {
    bool anyLive = false;
    if (shuffle)
      std::shuffle(order.begin(), order.end(), cta.random);
    for (unsigned w : order) {
      Warp &warp = cta.warps[w];
      if (!warp.live() || warp.atBarrier)
        continue;
      anyLive = true;
      // A lane's exit checks its pending cp.async copies (ExecuteControl).
      runWarp(cta, warp, program, shuffle ? 1 + cta.random() % 64 : UINT64_MAX);
    }
    bool waiting = false, running = false;
    for (Warp &warp : cta.warps) {
      waiting |= warp.live() && warp.atBarrier;
      running |= warp.live() && !warp.atBarrier;
    }
    if (running)
      continue;
    if (!waiting && !anyLive)
      return;
    for (Warp &warp : cta.warps)
      warp.atBarrier = false;
    cta.epoch++;
  }
}

Dim3 ctaIndex(uint64_t linear, Dim3 grid) {
  return {unsigned(linear % grid.x), unsigned(linear / grid.x % grid.y),
          unsigned(linear / (uint64_t(grid.x) * grid.y))};
}

} // namespace

std::string checkLaunch(const Kernel &kernel, Dim3 grid, Dim3 block,
                        unsigned dynamicShared, const Chip &chip,
                        const LaunchOptions &options) {
  if (grid.count() == 0 || block.count() == 0)
    return "a grid or block with no threads";
  if (block.count() > chip.maxThreadsPerBlock)
    return std::to_string(block.count()) + " threads a block, more than the " +
           std::to_string(chip.maxThreadsPerBlock) + " of sm_" +
           std::to_string(chip.sm);
  if (kernel.maxThreads && block.count() > kernel.maxThreads)
    return std::to_string(block.count()) +
           " threads a block, more than the kernel's .maxntid " +
           std::to_string(kernel.maxThreads);
  unsigned limit =
      std::max(chip.defaultSharedPerBlock,
               std::min(options.maxDynamicShared + kernel.staticSharedBytes,
                        chip.maxSharedPerBlock));
  unsigned shared = kernel.dynamicSharedOffset + dynamicShared;
  if (shared > limit)
    return std::to_string(shared) +
           " bytes of shared memory a block, more "
           "than the " +
           std::to_string(limit) +
           " allowed (raise it with "
           "cuFuncSetAttribute)";
  return "";
}

Chip Chip::forSm(unsigned sm) {
  Chip chip;
  chip.sm = sm;
  chip.maxSharedPerBlock = sm >= 90 ? 227 * 1024 : 163 * 1024;
  return chip;
}

std::string where(const Exec &e, int lane, const std::string &what) {
  const Cta &cta = e.cta;
  unsigned t = e.warp.index * kWarpSize + unsigned(lane);
  return "kernel " + cta.kernel->name + ", PTX line " +
         std::to_string(e.inst.line) + " (`" + e.inst.text + "`), block " +
         dim(cta.id.x, cta.id.y, cta.id.z) + " thread " +
         dim(t % cta.block.x, t / cta.block.x % cta.block.y,
             t / (cta.block.x * cta.block.y)) +
         ": " + what;
}

void fault(const Exec &e, int lane, LaunchError error,
           const std::string &what) {
  throw Fault(error, where(e, lane, what));
}

uint64_t special(const Exec &e, Special which, int lane) {
  const Cta &cta = e.cta;
  unsigned t = e.warp.index * kWarpSize + unsigned(lane);
  switch (which) {
  case Special::TidX:
    return t % cta.block.x;
  case Special::TidY:
    return t / cta.block.x % cta.block.y;
  case Special::TidZ:
    return t / (cta.block.x * cta.block.y);
  case Special::NtidX:
    return cta.block.x;
  case Special::NtidY:
    return cta.block.y;
  case Special::NtidZ:
    return cta.block.z;
  case Special::CtaidX:
    return cta.id.x;
  case Special::CtaidY:
    return cta.id.y;
  case Special::CtaidZ:
    return cta.id.z;
  case Special::NctaidX:
    return cta.grid.x;
  case Special::NctaidY:
    return cta.grid.y;
  case Special::NctaidZ:
    return cta.grid.z;
  case Special::LaneId:
    return unsigned(lane);
  case Special::WarpId:
    return e.warp.index;
  case Special::NwarpId:
    return cta.warps.size();
  case Special::SmId:
    return 0;
  case Special::Clock:
  case Special::Clock64:
  case Special::GlobalTimer:
    return cta.counters.totalWarpInstructions();
  }
  return 0;
}

LaunchResult launch(const Kernel &kernel, Dim3 grid, Dim3 block,
                    unsigned dynamicShared, void **params, DeviceMemory &memory,
                    const Chip &chip, const LaunchOptions &options) {
  LaunchResult result;
  std::string problem =
      checkLaunch(kernel, grid, block, dynamicShared, chip, options);
  if (!problem.empty()) {
    result.error = LaunchError::InvalidValue;
    result.report = "kernel " + kernel.name + ": " + problem;
    return result;
  }
  Program program;
  for (const Instruction &inst : kernel.body) {
    program.handlers.push_back(handlerFor(inst));
    program.classes.push_back(classify(inst));
    if (!program.handlers.back()) {
      result.error = LaunchError::IllegalInstruction;
      result.report = "kernel " + kernel.name + ", PTX line " +
                      std::to_string(inst.line) +
                      ": the emulator has no "
                      "semantics for `" +
                      inst.text + "`";
      return result;
    }
  }
  std::vector<uint8_t> paramBytes(kernel.parameterBytes);
  for (size_t i = 0; i < kernel.parameters.size(); ++i)
    std::memcpy(paramBytes.data() + kernel.parameters[i].offset, params[i],
                kernel.parameters[i].size);

  uint64_t launchId = ++launchCounter;
  uint64_t ctaCount = grid.count();
  std::vector<uint64_t> ctaOrder(ctaCount);
  for (uint64_t i = 0; i < ctaCount; ++i)
    ctaOrder[i] = i;
  std::mt19937_64 random(options.seed);
  if (options.shuffle)
    std::shuffle(ctaOrder.begin(), ctaOrder.end(), random);

  std::atomic<uint64_t> nextCta{0};
  std::atomic<bool> failed{false};
  std::mutex resultMutex;
  std::unordered_set<uint64_t> sectors;
  unsigned sharedBytes = kernel.dynamicSharedOffset + dynamicShared;
  unsigned registerCount = unsigned(kernel.registerNames.size());
  auto worker = [&](unsigned seed) {
    Cta cta;
    Counters counters;
    std::unordered_set<uint64_t> mySectors;
    while (!failed) {
      uint64_t i = nextCta++;
      if (i >= ctaCount)
        break;
      cta.kernel = &kernel;
      cta.linearId = ctaOrder[i];
      cta.id = ctaIndex(cta.linearId, grid);
      cta.grid = grid;
      cta.block = block;
      cta.launchId = launchId;
      cta.params = paramBytes.data();
      cta.memory = &memory;
      cta.options = &options;
      cta.sectors = &mySectors;
      cta.lastAllocation = nullptr;
      cta.counters = Counters{};
      cta.epoch = 1;
      cta.random.seed(options.seed * 1000003 + cta.linearId + seed);
      initialiseCta(cta, sharedBytes, registerCount);
      try {
        runCta(cta, program);
      } catch (const Fault &f) {
        std::lock_guard<std::mutex> lock(resultMutex);
        if (!failed.exchange(true)) {
          result.error = f.error;
          result.report = f.what();
        }
      }
      counters.add(cta.counters);
    }
    std::lock_guard<std::mutex> lock(resultMutex);
    result.counters.add(counters);
    sectors.insert(mySectors.begin(), mySectors.end());
  };
  unsigned threads = options.hostThreads
                         ? options.hostThreads
                         : std::max(1u, std::thread::hardware_concurrency());
  threads = unsigned(std::min<uint64_t>(threads, ctaCount));
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t)
    pool.emplace_back(worker, t);
  worker(0);
  for (std::thread &t : pool)
    t.join();
  result.counters.ctas = ctaCount;
  result.counters.distinctGlobalSectors = sectors.size();
  result.counters.threadsPerCta = unsigned(block.count());
  result.counters.sharedBytesPerCta = sharedBytes;
  result.counters.registersPerThread = registerCount;
  return result;
}

} // namespace fwp::emu
