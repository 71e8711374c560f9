// A bare fwp scan (fwp::jit::ScanDesc, the Python package's) forward then
// backward on the stand-in driver, for the emulator's counters
// (FWP_EMU_REPORT): scan-counts [stages|tile] T B H D_IN D_V.
// Delta rule, bf16, DPFP nu = 1 (D = 2 D_IN), C = 64.
#include "fwp/JIT/Scan.h"
#include "fwp/Runtime/Cuda.h"
#include "fwp/Runtime/ElementType.h"

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

using namespace fwp;

int main(int argc, char **argv) {
  if (argc != 7) {
    std::fprintf(stderr, "usage: %s stages|tile T B H D_IN D_V\n", argv[0]);
    return 2;
  }
  const int64_t T = std::atoll(argv[2]), B = std::atoll(argv[3]),
                H = std::atoll(argv[4]);
  jit::ScanDesc d;
  d.backend = jit::Backend::Cuda;
  d.rule = jit::Rule::Delta;
  d.dtype = jit::DType::BF16;
  d.dInput = std::atoll(argv[5]);
  d.dValue = std::atoll(argv[6]);
  d.nu = 1;
  d.chunkSize = 64;
  d.gpuStages = std::string(argv[1]) == "stages";
  // Compiled into $FWP_CACHE_DIR where set, so that the launch plans can be
  // read afterwards (bench/plan_memory.py).
  const char *cache = std::getenv("FWP_CACHE_DIR");
  auto scan = jit::compileScanUncached(d, cache ? cache : "");
  size_t rows = T * B * H, states = B * H * d.dValue * 2 * d.dInput;
  std::mt19937 gen(1);
  std::normal_distribution<float> normal(0, 1);
  auto buffer = [&](size_t count, float scale) {
    std::vector<uint16_t> v(count);
    for (auto &e : v)
      e = rt::toBf16(scale * normal(gen));
    return rt::DeviceBuffer::fromHost(v);
  };
  auto q = buffer(rows * d.dInput, 0.5f), k = buffer(rows * d.dInput, 0.5f),
       v = buffer(rows * d.dValue, 0.5f), dy = buffer(rows * d.dValue, 0.5f);
  std::vector<uint16_t> halves(rows, rt::toBf16(0.5f));
  auto beta = rt::DeviceBuffer::fromHost(halves);
  auto y = buffer(rows * d.dValue, 0), final = buffer(states, 0),
       dInitial = buffer(states, 0), dq = buffer(rows * d.dInput, 0),
       dk = buffer(rows * d.dInput, 0), dv = buffer(rows * d.dValue, 0),
       dbeta = buffer(rows, 0);
  rt::Stream stream;
  std::vector<std::unique_ptr<rt::DeviceBuffer>> scratch;
  rt::DeviceCall call;
  call.stream = stream.handle();
  call.allocate = [&](size_t bytes) {
    scratch.push_back(std::make_unique<rt::DeviceBuffer>(bytes));
    return scratch.back()->ptr();
  };
  call.release = [](uint64_t) {};
  auto p = [](const rt::DeviceBuffer &b) {
    return reinterpret_cast<void *>(b.ptr());
  };
  scan->forwardOnDevice(T, B, H, p(q), p(k), p(v), p(beta), nullptr, p(y),
                        p(final), call);
  stream.synchronize();
  // The launches so far are the forward's: say how many the report holds.
  size_t lines = 0;
  if (const char *report = std::getenv("FWP_EMU_REPORT"))
    if (FILE *f = std::fopen(report, "r")) {
      for (int c; (c = std::fgetc(f)) != EOF;)
        lines += c == '\n';
      std::fclose(f);
    }
  std::printf("forward launches %zu\n", lines);
  std::fflush(stdout);
  scan->backwardOnDevice(T, B, H, p(q), p(k), p(v), p(beta), nullptr, p(dy),
                         nullptr, p(dq), p(dk), p(dv), p(dbeta), p(dInitial),
                         call);
  stream.synchronize();
  std::printf("backward done\n");
}
