//===- fwp-bench.cpp - Compiled forward against the float64 reference -----===//
//
//   fwp-bench [--quick] [--shape T,B,D,H,NU,RULE] [--training] [--csv FILE]
//
// Times the forward of the whole FastWeightsAttention module compiled by
// fwp::jit (float32, the default chunk of 64 steps) against the float64
// reference fwp::ref::attention at a few sizes, and checks the compiled
// output against the reference. With --training, a training step instead:
// the forward, then the backward of a random dL/dy (fwp::ref::attention
// and attentionBackward for the reference), checking y and every gradient. Each
// measurement warms up with one call (the first call after compiling), then
// repeats the call until at least 3 runs and at least 0.2 s have been spent, or
// 1 s has been spent, whichever comes first, and reports the median. See
// bench/README.md.
//
// Exit status: 0 if every row ran and its error is within 1e-4; 1 otherwise;
// 2 on bad usage.
//
//===----------------------------------------------------------------------===//

#include "fwp/JIT/JIT.h"
#include "fwp/Reference/Reference.h"
#include "fwp/Runtime/Driver.h"
#include "fwp/Support/Random.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <optional>
#include <string>
#include <vector>

namespace {

constexpr int kMinRuns = 3;
constexpr double kMinSeconds = 0.2;
constexpr double kMaxSeconds = 1.0;
constexpr double kTolerance = 1e-4;

//===----------------------------------------------------------------------===//
// Inputs
//===----------------------------------------------------------------------===//

using Random = fwp::SplitMix64;

/// One tensor, held as the float32 the compiled kernel reads and as the same
/// values widened to double for the reference: the error then measures the
/// computation, not the rounding of the inputs.
struct Tensor {
  std::vector<float> f32;
  std::vector<double> f64;
};

Tensor randomTensor(Random &rng, int64_t count, double stddev) {
  Tensor t;
  t.f32.resize(count);
  t.f64.resize(count);
  for (int64_t i = 0; i < count; ++i) {
    t.f32[i] = static_cast<float>(stddev * rng.normal());
    t.f64[i] = t.f32[i];
  }
  return t;
}

struct Size {
  int64_t seqLen, batch, dModel, heads, nu;
};

/// x ~ N(0, 1); every weight and the bias ~ N(0, 1/d_model), the scale of
/// nn.Linear's initialisation.
struct Problem {
  Tensor x, wQ, wK, wV, wBeta, wO, bO;
  Tensor dy; // dL/dy ~ N(0, 1), for --training
};

Problem makeProblem(const Size &s, uint64_t seed) {
  Random rng(seed);
  const int64_t d = s.dModel;
  const double w = 1.0 / std::sqrt(static_cast<double>(d));
  Problem p;
  p.x = randomTensor(rng, s.seqLen * s.batch * d, 1.0);
  p.wQ = randomTensor(rng, d * d, w);
  p.wK = randomTensor(rng, d * d, w);
  p.wV = randomTensor(rng, d * d, w);
  p.wBeta = randomTensor(rng, s.heads * d, w);
  p.wO = randomTensor(rng, d * d, w);
  p.bO = randomTensor(rng, d, w);
  p.dy = randomTensor(rng, s.seqLen * s.batch * d, 1.0);
  return p;
}

//===----------------------------------------------------------------------===//
// Timing
//===----------------------------------------------------------------------===//

double now() {
  using Clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
}

struct Timing {
  double medianMs = 0;
  int runs = 0;
};

/// Calls `f` once to warm up, then as described at the top of the file.
template <typename F> Timing measure(F &&f) {
  f();
  std::vector<double> seconds;
  double total = 0;
  while (total < kMaxSeconds &&
         (static_cast<int>(seconds.size()) < kMinRuns || total < kMinSeconds)) {
    double start = now();
    f();
    double elapsed = now() - start;
    seconds.push_back(elapsed);
    total += elapsed;
  }
  std::sort(seconds.begin(), seconds.end());
  std::size_t n = seconds.size();
  double median =
      n % 2 ? seconds[n / 2] : 0.5 * (seconds[n / 2 - 1] + seconds[n / 2]);
  return {median * 1e3, static_cast<int>(n)};
}

/// max |actual - expected| / max |expected|: the error relative to the
/// largest output, so that outputs near zero do not inflate it. NaN gives
/// infinity.
double relativeError(const std::vector<float> &actual,
                     const std::vector<double> &expected) {
  double worst = 0, scale = 0;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    double diff = std::fabs(static_cast<double>(actual[i]) - expected[i]);
    worst = std::isnan(diff) ? INFINITY : std::max(worst, diff);
    scale = std::max(scale, std::fabs(expected[i]));
  }
  return worst / (scale > 0 ? scale : 1.0);
}

//===----------------------------------------------------------------------===//
// Rows
//===----------------------------------------------------------------------===//

/// Floating-point operations of one forward, counted for the step-by-step
/// form: the five projections, then per step and head 6*D*d_v for the delta
/// rule (retrieve W k, update W, read W q) or 4*D*d_v for the sum rule. The
/// chunked form the compiler emits does more; this is a yardstick only.
double flops(const Size &s, fwp::jit::Rule rule) {
  const double n = static_cast<double>(s.seqLen * s.batch);
  const double dm = static_cast<double>(s.dModel);
  const double dv = dm / static_cast<double>(s.heads);
  const double d = 2.0 * dv * static_cast<double>(s.nu);
  const bool delta = rule == fwp::jit::Rule::Delta;
  double projections =
      2.0 * n * dm * dm * 4 + (delta ? 2.0 * n * dm * s.heads : 0);
  double scan = n * s.heads * (delta ? 6.0 : 4.0) * d * dv;
  return projections + scan;
}

/// A training step's yardstick: the forward's flops three times (a backward
/// product takes two of the forward's size).
double flops(const Size &s, fwp::jit::Rule rule, bool training) {
  return (training ? 3.0 : 1.0) * flops(s, rule);
}

struct Row {
  Size size;
  fwp::jit::Rule rule;
  fwp::jit::Backend backend;
  bool training;
  double compileMs = NAN;
  Timing reference, compiled;
  double error = NAN;
  std::string failure; // empty if the row ran
};

fwp::jit::KernelDesc describe(const Size &s, fwp::jit::Rule rule,
                              fwp::jit::Backend backend) {
  fwp::jit::KernelDesc desc;
  desc.rule = rule;
  desc.nu = s.nu;
  desc.heads = s.heads;
  desc.dHead = s.dModel / s.heads;
  desc.dtype = fwp::jit::DType::F32;
  desc.backend = backend;
  return desc; // chunkSize and eps keep their defaults
}

/// The largest relativeError of the pairs (actual, expected).
double
worstError(const std::vector<std::pair<const std::vector<float> *,
                                       const std::vector<double> *>> &pairs) {
  double worst = 0;
  for (auto [actual, expected] : pairs)
    worst = std::max(worst, relativeError(*actual, *expected));
  return worst;
}

/// The kernel of `desc`, compiled afresh.
std::shared_ptr<const fwp::jit::CompiledAttention>
compileKernel(const fwp::jit::KernelDesc &desc) {
  return fwp::jit::compileUncached(desc);
}

/// A training step of the reference and of the compiled module, as
/// runCase's rows: forward, then backward of p.dy.
void runTrainingCase(const Size &s, fwp::jit::Rule rule,
                     const std::vector<fwp::jit::Backend> &backends,
                     const Problem &p, const fwp::ref::AttentionConfig &config,
                     const fwp::ref::AttentionParams &params,
                     std::vector<Row> &rows) {
  fwp::ref::AttentionShape shape{s.seqLen, s.batch, s.dModel};
  std::vector<double> expectedY;
  fwp::ref::AttentionGradients expected;
  Timing reference = measure([&] {
    expectedY = fwp::ref::attention(config, shape, p.x.f64, params).y;
    expected =
        fwp::ref::attentionBackward(config, shape, p.x.f64, params, p.dy.f64);
  });
  for (fwp::jit::Backend backend : backends) {
    Row row{s, rule, backend, /*training=*/true, NAN, reference, {}, NAN, {}};
    try {
      auto kernel = compileKernel(describe(s, rule, backend));
      // Both entry points at once, as a training step's first call wants
      // them: the compile time is the wall time of the two side by side.
      auto start = std::chrono::steady_clock::now();
      kernel->prepareAll();
      row.compileMs = std::chrono::duration<double, std::milli>(
                          std::chrono::steady_clock::now() - start)
                          .count();
      std::vector<float> y(expectedY.size()), dx(expected.x.size()),
          dwQ(expected.wQ.size()), dwK(expected.wK.size()),
          dwV(expected.wV.size()), dwBeta(expected.wBeta.size()),
          dwO(expected.wO.size()), dbO(expected.bO.size());
      row.compiled = measure([&] {
        kernel->forward(s.seqLen, s.batch, p.x.f32.data(), p.wQ.f32.data(),
                        p.wK.f32.data(), p.wV.f32.data(), p.wBeta.f32.data(),
                        p.wO.f32.data(), p.bO.f32.data(), y.data());
        kernel->backward(s.seqLen, s.batch, p.x.f32.data(), p.wQ.f32.data(),
                         p.wK.f32.data(), p.wV.f32.data(), p.wBeta.f32.data(),
                         p.wO.f32.data(), p.bO.f32.data(), p.dy.f32.data(),
                         dx.data(), dwQ.data(), dwK.data(), dwV.data(),
                         dwBeta.data(), dwO.data(), dbO.data());
      });
      std::vector<
          std::pair<const std::vector<float> *, const std::vector<double> *>>
          checked = {{&y, &expectedY},     {&dx, &expected.x},
                     {&dwQ, &expected.wQ}, {&dwK, &expected.wK},
                     {&dwV, &expected.wV}, {&dwO, &expected.wO},
                     {&dbO, &expected.bO}};
      if (rule == fwp::jit::Rule::Delta)
        checked.push_back({&dwBeta, &expected.wBeta});
      row.error = worstError(checked);
    } catch (const std::exception &e) {
      row.failure = e.what();
    }
    rows.push_back(row);
  }
}

/// Times the reference once per (size, rule) and the compiled forward (or
/// training step) on each backend, appending one row per backend.
void runCase(const Size &s, fwp::jit::Rule rule,
             const std::vector<fwp::jit::Backend> &backends, bool training,
             std::vector<Row> &rows) {
  Problem p = makeProblem(s, 0x5eed0000u + static_cast<uint64_t>(s.seqLen));

  fwp::ref::AttentionConfig config;
  config.heads = s.heads;
  config.nu = s.nu;
  config.rule = rule == fwp::jit::Rule::Delta ? fwp::ref::Rule::Delta
                                              : fwp::ref::Rule::Sum;
  fwp::ref::AttentionShape shape{s.seqLen, s.batch, s.dModel};
  fwp::ref::AttentionParams params{p.wQ.f64,    p.wK.f64, p.wV.f64,
                                   p.wBeta.f64, p.wO.f64, p.bO.f64};
  if (training)
    return runTrainingCase(s, rule, backends, p, config, params, rows);
  std::vector<double> expected;
  Timing reference = measure([&] {
    expected = fwp::ref::attention(config, shape, p.x.f64, params).y;
  });

  for (fwp::jit::Backend backend : backends) {
    Row row{s, rule, backend, training, NAN, reference, {}, NAN, {}};
    try {
      auto kernel = compileKernel(describe(s, rule, backend));
      std::vector<float> y(expected.size());
      row.compiled = measure([&] {
        kernel->forward(s.seqLen, s.batch, p.x.f32.data(), p.wQ.f32.data(),
                        p.wK.f32.data(), p.wV.f32.data(), p.wBeta.f32.data(),
                        p.wO.f32.data(), p.bO.f32.data(), y.data());
      });
      // After the first call, which compiles the forward.
      row.compileMs = kernel->compileSeconds() * 1e3;
      row.error = relativeError(y, expected);
    } catch (const std::exception &e) {
      row.failure = e.what();
    }
    rows.push_back(row);
  }
}

//===----------------------------------------------------------------------===//
// Output
//===----------------------------------------------------------------------===//

void printHeader() {
  fmt::print("{:>5} {:>2} {:>7} {:>5} {:>2}  {:<5} {:<4} {:>10} {:>12} {:>11} "
             "{:>8} {:>6} {:>11}\n",
             "T", "B", "d_model", "heads", "nu", "rule", "back", "compile ms",
             "reference ms", "compiled ms", "speedup", "GF/s", "max rel err");
}

void printRow(const Row &r) {
  fmt::print("{:>5} {:>2} {:>7} {:>5} {:>2}  {:<5} {:<4} ", r.size.seqLen,
             r.size.batch, r.size.dModel, r.size.heads, r.size.nu,
             ruleName(r.rule), backendName(r.backend));
  if (!r.failure.empty()) {
    fmt::print("failed: {}\n", r.failure);
    return;
  }
  fmt::print("{:10.1f} {:12.3f} {:11.3f} {:7.2f}x {:6.2f} {:11.2e}{}\n",
             r.compileMs, r.reference.medianMs, r.compiled.medianMs,
             r.reference.medianMs / r.compiled.medianMs,
             flops(r.size, r.rule, r.training) / (r.compiled.medianMs * 1e6),
             r.error, r.error <= kTolerance ? "" : "  > tolerance");
  std::fflush(stdout);
}

bool writeCsv(const std::string &path, const std::vector<Row> &rows) {
  std::FILE *f = std::fopen(path.c_str(), "w");
  if (!f)
    return false;
  fmt::print(f, "seq_len,batch,d_model,heads,nu,rule,backend,compile_ms,"
                "reference_ms,reference_runs,compiled_ms,compiled_runs,"
                "speedup,compiled_gflops,max_rel_err,failure\n");
  for (const Row &r : rows) {
    fmt::print(f, "{},{},{},{},{},{},{},", r.size.seqLen, r.size.batch,
               r.size.dModel, r.size.heads, r.size.nu, ruleName(r.rule),
               backendName(r.backend));
    if (r.failure.empty()) {
      fmt::print(
          f, "{:.3f},{:.6f},{},{:.6f},{},{:.3f},{:.3f},{:.3e},\n", r.compileMs,
          r.reference.medianMs, r.reference.runs, r.compiled.medianMs,
          r.compiled.runs, r.reference.medianMs / r.compiled.medianMs,
          flops(r.size, r.rule, r.training) / (r.compiled.medianMs * 1e6),
          r.error);
    } else {
      // Quote the message, doubling its quotes; newlines become spaces.
      std::string quoted;
      for (char c : r.failure)
        quoted += c == '"' ? std::string("\"\"")
                           : std::string(1, c == '\n' ? ' ' : c);
      fmt::print(f, ",{:.6f},{},,,,,,\"{}\"\n", r.reference.medianMs,
                 r.reference.runs, quoted);
    }
  }
  return std::fclose(f) == 0;
}

struct Case {
  Size size;
  std::vector<fwp::jit::Rule> rules;
};

/// "T,B,D,H,NU,RULE" as one case; nothing if it is not of that form.
std::optional<Case> parseShape(const std::string &text) {
  long long sizes[5];
  char rule[8] = {};
  int consumed = 0;
  if (std::sscanf(text.c_str(), "%lld,%lld,%lld,%lld,%lld,%7[a-z]%n", &sizes[0],
                  &sizes[1], &sizes[2], &sizes[3], &sizes[4], rule,
                  &consumed) != 6 ||
      consumed != static_cast<int>(text.size()))
    return std::nullopt;
  for (long long size : sizes)
    if (size < 1)
      return std::nullopt;
  if (sizes[2] % sizes[3] != 0)
    return std::nullopt;
  std::optional<fwp::UpdateRule> parsed = fwp::parseRule(rule);
  if (!parsed)
    return std::nullopt;
  return Case{{sizes[0], sizes[1], sizes[2], sizes[3], sizes[4]}, {*parsed}};
}

void usage(std::FILE *out) {
  fmt::print(out,
             "usage: fwp-bench [--quick] [--shape T,B,D,H,NU,RULE] "
             "[--training] [--csv FILE]\n"
             "  --quick     the two smallest sizes only\n"
             "  --training  time a training step (forward, then backward)\n"
             "  --shape     one size only: sequence length, batch, "
             "d_model, heads, nu,\n"
             "              rule (delta or sum), e.g. 2048,4,256,4,1,delta\n"
             "  --csv FILE  also write the table to FILE as CSV\n");
}

} // namespace

int main(int argc, char **argv) {
  bool quick = false, training = false;
  std::string csvPath, shape;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--quick")) {
      quick = true;
    } else if (!std::strcmp(argv[i], "--training")) {
      training = true;
    } else if (!std::strcmp(argv[i], "--shape") && i + 1 < argc) {
      shape = argv[++i];
    } else if (!std::strcmp(argv[i], "--csv") && i + 1 < argc) {
      csvPath = argv[++i];
    } else if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
      usage(stdout);
      return 0;
    } else {
      fmt::print(stderr, "fwp-bench: unknown or incomplete option '{}'\n",
                 argv[i]);
      usage(stderr);
      return 2;
    }
  }

  using fwp::jit::Rule;
  std::vector<Case> cases = {
      {{64, 1, 32, 4, 1}, {Rule::Delta, Rule::Sum}},
      {{256, 2, 64, 4, 1}, {Rule::Delta, Rule::Sum}},
      {{1024, 2, 128, 4, 2}, {Rule::Delta, Rule::Sum}},
      {{2048, 4, 256, 4, 1}, {Rule::Delta}},
  };
  if (quick)
    cases.resize(2);
  if (!shape.empty()) {
    std::optional<Case> only = parseShape(shape);
    if (!only) {
      fmt::print(stderr,
                 "fwp-bench: --shape '{}' is not T,B,D,H,NU,RULE with "
                 "positive sizes, H dividing D and RULE delta or sum\n",
                 shape);
      return 2;
    }
    cases = {*only};
  }

  // The CUDA backend joins the table only if a device is usable and the
  // backend compiles the first case.
  std::vector<fwp::jit::Backend> backends = {fwp::jit::Backend::Cpu};
  std::string cudaLine;
  std::string why;
  if (!fwp::rt::cudaUsable(&why)) {
    cudaLine = fmt::format("cuda: skipped ({})", why);
  } else {
    try {
      fwp::jit::compile(describe(cases.front().size,
                                 cases.front().rules.front(),
                                 fwp::jit::Backend::Cuda));
      backends.push_back(fwp::jit::Backend::Cuda);
      cudaLine = "cuda: rows 'cuda' above (compiled ms includes the copies "
                 "between host and device)";
    } catch (const std::exception &e) {
      cudaLine = fmt::format("cuda: device usable, backend not: {}", e.what());
    }
  }

  fmt::print("fwp-bench: {} of FastWeightsAttention, compiled float32 "
             "(chunk 64) vs float64 reference\n"
             "median of >= {} runs and >= {:.1f} s (or one run past {:.0f} s), "
             "after one warm-up call\n\n",
             training ? "training step (forward + backward)" : "forward",
             kMinRuns, kMinSeconds, kMaxSeconds);
  printHeader();
  std::vector<Row> rows;
  for (const Case &c : cases)
    for (Rule rule : c.rules) {
      std::size_t first = rows.size();
      runCase(c.size, rule, backends, training, rows);
      for (std::size_t i = first; i < rows.size(); ++i)
        printRow(rows[i]);
    }
  fmt::print("\n{}\n", cudaLine);

  int status = 0;
  for (const Row &r : rows)
    if (!r.failure.empty() || !(r.error <= kTolerance))
      status = 1;
  if (!csvPath.empty() && !writeCsv(csvPath, rows)) {
    fmt::print(stderr, "fwp-bench: cannot write '{}': {}\n", csvPath,
               std::strerror(errno));
    status = 1;
  }
  return status;
}
