//===- train-sgd.cpp - Training fwp::FastWeightsAttention with SGD --------===//
//
//   fwp-train-sgd [--backend cpu|cuda] [--steps N] [--lr LR]
//
// A teacher-student task: a FastWeightsAttention with fixed random
// parameters (the teacher, seed 1) maps random input sequences to targets;
// a second one (the student, seed 2, same hyper-parameters) is trained by
// plain gradient descent on the mean squared error between its output and
// the targets, over a fixed training set. Each step is one forward, one
// backward and one SGD update of all six parameters.
//
// Prints the loss every 5 steps and a final "loss went from A to B" line.
// Exit status: 0 if the final loss is below half the initial one; 1 if not,
// or on any error; 2 on bad command-line arguments. --backend cuda falls back
// to the CPU, saying why, where the CUDA backend cannot be compiled or run.
//
//===----------------------------------------------------------------------===//

#include "fwp/FastWeightsAttention.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

namespace {

constexpr int64_t kHeads = 4, kDModel = 32, kNu = 1;
constexpr int64_t kSeqLen = 32, kBatch = 8;
constexpr uint64_t kTeacherSeed = 1, kStudentSeed = 2, kDataSeed = 3;

struct Options {
  fwp::jit::Backend backend = fwp::jit::Backend::Cpu;
  int steps = 40;
  float lr = 2.0f;
};

void usage(std::FILE *to) {
  fmt::print(to,
             "usage: fwp-train-sgd [--backend cpu|cuda] [--steps N] "
             "[--lr LR]\n"
             "  Trains a FastWeightsAttention student (seed {}) to match "
             "a teacher\n"
             "  (seed {}) with SGD on the mean squared error.\n"
             "  --backend  cpu (default) or cuda (falls back to cpu if "
             "unavailable)\n"
             "  --steps    SGD steps, default 40\n"
             "  --lr       learning rate, default 2\n",
             kStudentSeed, kTeacherSeed);
}

/// Parses argv into `options`; returns false (after a message) on bad input.
bool parse(int argc, char **argv, Options &options, bool &help) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      help = true;
      return true;
    }
    if (i + 1 >= argc) {
      fmt::print(stderr,
                 "fwp-train-sgd: {} needs a value (or unknown argument)\n",
                 arg);
      return false;
    }
    std::string value = argv[++i];
    char *end = nullptr;
    if (arg == "--backend") {
      if (value == "cpu") {
        options.backend = fwp::jit::Backend::Cpu;
      } else if (value == "cuda") {
        options.backend = fwp::jit::Backend::Cuda;
      } else {
        fmt::print(stderr,
                   "fwp-train-sgd: --backend must be cpu or cuda, got '{}'\n",
                   value);
        return false;
      }
    } else if (arg == "--steps") {
      long steps = std::strtol(value.c_str(), &end, 10);
      if (value.empty() || *end != '\0' || steps < 1 || steps > 1000000) {
        fmt::print(stderr,
                   "fwp-train-sgd: --steps must be an integer in "
                   "[1, 1000000], got '{}'\n",
                   value);
        return false;
      }
      options.steps = static_cast<int>(steps);
    } else if (arg == "--lr") {
      double lr = std::strtod(value.c_str(), &end);
      if (value.empty() || *end != '\0' || !std::isfinite(lr) || lr <= 0) {
        fmt::print(stderr,
                   "fwp-train-sgd: --lr must be a number > 0, got '{}'\n",
                   value);
        return false;
      }
      options.lr = static_cast<float>(lr);
    } else {
      fmt::print(stderr, "fwp-train-sgd: unknown argument '{}'\n", arg);
      return false;
    }
  }
  return true;
}

/// splitmix64 and Box-Muller: the same data on every platform.
std::vector<float> randomNormal(uint64_t seed, int64_t count) {
  uint64_t state = seed;
  auto next = [&state] {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  };
  std::vector<float> v(count);
  for (float &e : v) {
    double u1 = (static_cast<double>(next() >> 11) + 1.0) * 0x1.0p-53;
    double u2 = static_cast<double>(next() >> 11) * 0x1.0p-53;
    e = static_cast<float>(std::sqrt(-2.0 * std::log(u1)) *
                           std::cos(6.283185307179586 * u2));
  }
  return v;
}

fwp::FastWeightsAttention makeModule(fwp::jit::Backend backend, uint64_t seed) {
  fwp::FastWeightsAttentionOptions o;
  o.backend = backend;
  o.rule = fwp::jit::Rule::Delta;
  o.seed = seed;
  return fwp::FastWeightsAttention(kHeads, kDModel, fwp::DPFP{kNu, 1e-6},
                                   /*dropoutProb=*/0.1, o);
}

/// Mean squared error of y against target, and dL/dy.
double mseLoss(const std::vector<float> &y, const std::vector<float> &target,
               std::vector<float> &dy) {
  double sum = 0;
  const double n = static_cast<double>(y.size());
  dy.resize(y.size());
  for (std::size_t i = 0; i < y.size(); ++i) {
    double d = static_cast<double>(y[i]) - target[i];
    sum += d * d;
    dy[i] = static_cast<float>(2.0 * d / n);
  }
  return sum / n;
}

int train(const Options &options) {
  fwp::jit::Backend backend = options.backend;
  if (backend == fwp::jit::Backend::Cuda) {
    try {
      makeModule(backend, kTeacherSeed).kernel();
    } catch (const std::exception &e) {
      fmt::print("cuda backend unavailable ({}); falling back to cpu\n",
                 e.what());
      backend = fwp::jit::Backend::Cpu;
    }
  }
  fwp::FastWeightsAttention teacher = makeModule(backend, kTeacherSeed);
  fwp::FastWeightsAttention student = makeModule(backend, kStudentSeed);

  fmt::print("fwp-train-sgd: FastWeightsAttention, delta rule, heads={} "
             "d_model={} nu={}, T={} B={}, backend {}\n",
             kHeads, kDModel, kNu, kSeqLen, kBatch,
             backend == fwp::jit::Backend::Cuda ? "cuda" : "cpu");
  fmt::print("teacher seed {}, student seed {}, {} SGD steps, lr {:g}, "
             "loss = mean squared error\n",
             kTeacherSeed, kStudentSeed, options.steps,
             static_cast<double>(options.lr));

  const std::vector<float> x =
      randomNormal(kDataSeed, kSeqLen * kBatch * kDModel);
  const std::vector<float> target = teacher.forward(x, kSeqLen, kBatch);

  std::vector<float> dy;
  double initial = 0, loss = 0;
  for (int step = 0; step <= options.steps; ++step) {
    std::vector<float> y = student.forward(x, kSeqLen, kBatch);
    loss = mseLoss(y, target, dy);
    if (!std::isfinite(loss)) {
      fmt::print("step {:3}  loss {}: diverged (try a smaller --lr)\n", step,
                 std::isnan(loss) ? "nan" : "inf");
      return 1;
    }
    if (step == 0)
      initial = loss;
    if (step % 5 == 0 || step == options.steps)
      fmt::print("step {:3}  loss {:.6f}\n", step, loss);
    if (step == options.steps)
      break;
    fwp::FastWeightsAttention::Gradients g = student.backward(dy);
    student.sgdStep(g.parameters, options.lr);
  }

  const bool ok = loss < 0.5 * initial;
  fmt::print("loss went from {:.6f} to {:.6f} (x{:.3f}) in {} steps: {}\n",
             initial, loss, loss / initial, options.steps,
             ok ? "OK" : "FAIL, expected below half the initial loss");
  return ok ? 0 : 1;
}

} // namespace

int main(int argc, char **argv) {
  Options options;
  bool help = false;
  if (!parse(argc, argv, options, help)) {
    usage(stderr);
    return 2;
  }
  if (help) {
    usage(stdout);
    return 0;
  }
  try {
    return train(options);
  } catch (const std::exception &e) {
    fmt::print(stderr, "fwp-train-sgd: {}\n", e.what());
    return 1;
  }
}
