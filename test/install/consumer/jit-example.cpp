//===- jit-example.cpp - README's JIT example, built outside fwp's tree ---===//
//
// The forward of README's "From C++" on the CPU in float64, compared with
// fwp's float64 reference. Exits 0 when every output is within 1e-12.
//
//===----------------------------------------------------------------------===//

#include "fwp/JIT/JIT.h"
#include "fwp/Reference/Reference.h"

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

int main() {
  const int64_t heads = 2, dHead = 4, dModel = heads * dHead, T = 5, B = 2;
  fwp::jit::KernelDesc desc;
  desc.heads = heads;
  desc.dHead = dHead;
  desc.dtype = fwp::jit::DType::F64;
  auto kernel = fwp::jit::compile(desc);

  std::mt19937 generator(7);
  std::normal_distribution<double> normal(0.0, 0.5);
  auto random = [&](size_t n) {
    std::vector<double> values(n);
    for (double &v : values)
      v = normal(generator);
    return values;
  };
  std::vector<double> x = random(T * B * dModel);
  fwp::ref::AttentionParams p{random(dModel * dModel), random(dModel * dModel),
                              random(dModel * dModel), random(heads * dModel),
                              random(dModel * dModel), random(dModel)};
  std::vector<double> y(T * B * dModel);
  kernel->forward(T, B, x.data(), p.wQ.data(), p.wK.data(), p.wV.data(),
                  p.wBeta.data(), p.wO.data(), p.bO.data(), y.data());

  fwp::ref::AttentionConfig config;
  config.heads = heads;
  std::vector<double> expected =
      fwp::ref::attention(config, {T, B, dModel}, x, p).y;
  double worst = 0;
  for (size_t i = 0; i < y.size(); ++i)
    worst = std::fmax(worst, std::fabs(y[i] - expected[i]));
  std::printf("fwp from an installed package: %zu outputs, largest difference "
              "from the float64 reference %.3g\n",
              y.size(), worst);
  return worst <= 1e-12 ? 0 : 1;
}
