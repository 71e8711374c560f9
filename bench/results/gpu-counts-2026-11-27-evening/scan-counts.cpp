// One ScanDesc forward + backward on the emulator, for its counters.
#include "fwp/JIT/Scan.h"
#include "fwp/Runtime/Cuda.h"
#include "fwp/Runtime/ElementType.h"
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <vector>
using namespace fwp;
int main(int argc, char **argv) {
  bool stages = argc > 1 && std::string(argv[1]) == "stages";
  jit::ScanDesc d;
  d.backend = jit::Backend::Cuda;
  d.rule = jit::Rule::Delta;
  d.dtype = jit::DType::BF16;
  d.dInput = 64;
  d.dValue = 64;
  d.nu = 1;
  d.chunkSize = 64;
  d.gpuStages = stages;
  auto scan = jit::compileScanUncached(d, "");
  const int64_t T = 512, B = 2, H = 2, D = 128;
  size_t rows = T * B * H, states = B * H * d.dValue * D;
  std::mt19937 gen(1);
  std::normal_distribution<float> n(0, 1);
  auto buf = [&](size_t count, bool random) {
    std::vector<uint16_t> v(count);
    for (auto &e : v)
      e = rt::toBf16(random ? n(gen) * 0.5f : 0.f);
    return rt::DeviceBuffer::fromHost(v);
  };
  auto q = buf(rows * 64, true), k = buf(rows * 64, true),
       v = buf(rows * 64, true);
  std::vector<uint16_t> bv(rows);
  for (auto &e : bv)
    e = rt::toBf16(0.5f);
  auto beta = rt::DeviceBuffer::fromHost(bv);
  auto dy = buf(rows * 64, true), y = buf(rows * 64, false),
       fin = buf(states, false);
  auto gi = buf(states, false);
  auto gq = buf(rows * 64, false), gk = buf(rows * 64, false),
       gv = buf(rows * 64, false), gb = buf(rows, false);
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
                        p(fin), call);
  scan->backwardOnDevice(T, B, H, p(q), p(k), p(v), p(beta), nullptr, p(dy),
                         nullptr, p(gq), p(gk), p(gv), p(gb), p(gi), call);
  stream.synchronize();
  std::printf("done\n");
}
