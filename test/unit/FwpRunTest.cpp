//===- FwpRunTest.cpp - End-to-end tests of the fwp-run tool --------------===//
//
// Writes inputs with the .npy writer into temporary directories, runs the
// fwp-run binary (FWP_RUN_PATH, set by CMake) and checks its outputs, exit
// status and messages.
//
//===----------------------------------------------------------------------===//

#include "TestUtils.h"

#include "fwp/Reference/Reference.h"
#include "fwp/Runtime/Cuda.h"
#include "fwp/Runtime/Driver.h"
#include "fwp/Support/Npy.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <stdlib.h>
#include <sys/wait.h>

#ifndef FWP_RUN_PATH
#error "FWP_RUN_PATH must name the fwp-run binary"
#endif

namespace fs = std::filesystem;
using fwp::npy::Array;
using fwp::rt::DType;

namespace {

struct Sizes {
  int64_t seqLen = 5, batch = 2, dModel = 8, heads = 2;
};

Array randomArray(std::vector<int64_t> shape, DType dtype, uint64_t seed,
                  double scale) {
  Array a;
  a.shape = std::move(shape);
  a.dtype = dtype;
  // Inputs stored as float32 (or float16) are exactly what the tool reads
  // back.
  a.values = fwp::test::randomValues(*fwp::rt::elementCount(a.shape), seed,
                                     scale, dtype == DType::F32);
  if (dtype == DType::F16)
    for (double &v : a.values)
      v = fwp::rt::fromF16(fwp::rt::toF16(static_cast<float>(v)));
  return a;
}

/// The inputs of one run, by file name.
using Inputs = std::map<std::string, Array>;

Inputs makeInputs(const Sizes &s, DType dtype, bool withDy) {
  int64_t t = s.seqLen, b = s.batch, d = s.dModel, h = s.heads;
  Inputs in;
  in["x.npy"] = randomArray({t, b, d}, dtype, 1, 1.0);
  in["w_q.npy"] = randomArray({d, d}, dtype, 2, 0.5);
  in["w_k.npy"] = randomArray({d, d}, dtype, 3, 0.5);
  in["w_v.npy"] = randomArray({d, d}, dtype, 4, 0.5);
  in["w_beta.npy"] = randomArray({h, d}, dtype, 5, 0.5);
  in["w_o.npy"] = randomArray({d, d}, dtype, 6, 0.5);
  in["b_o.npy"] = randomArray({d}, dtype, 7, 0.1);
  if (withDy)
    in["dy.npy"] = randomArray({t, b, d}, dtype, 8, 1.0);
  return in;
}

fwp::ref::AttentionParams paramsOf(const Inputs &in) {
  fwp::ref::AttentionParams p;
  p.wQ = in.at("w_q.npy").values;
  p.wK = in.at("w_k.npy").values;
  p.wV = in.at("w_v.npy").values;
  p.wBeta = in.at("w_beta.npy").values;
  p.wO = in.at("w_o.npy").values;
  p.bO = in.at("b_o.npy").values;
  return p;
}

fwp::ref::AttentionShape shapeOf(const Inputs &in) {
  const Array &x = in.at("x.npy");
  return {x.shape[0], x.shape[1], x.shape[2]};
}

fwp::ref::AttentionConfig
configOf(int64_t heads, int64_t nu = 1,
         fwp::ref::Rule rule = fwp::ref::Rule::Delta) {
  fwp::ref::AttentionConfig config;
  config.heads = heads;
  config.nu = nu;
  config.rule = rule;
  return config;
}

/// y of fwp::ref::attention on `inputs`.
std::vector<double> referenceY(const Inputs &inputs,
                               const fwp::ref::AttentionConfig &config) {
  return fwp::ref::attention(config, shapeOf(inputs), inputs.at("x.npy").values,
                             paramsOf(inputs))
      .y;
}

std::vector<double> referenceY(const Inputs &inputs, int64_t heads,
                               int64_t nu = 1,
                               fwp::ref::Rule rule = fwp::ref::Rule::Delta) {
  return referenceY(inputs, configOf(heads, nu, rule));
}

/// fwp::ref::attentionBackward on `inputs`, with their dy.
fwp::ref::AttentionGradients
referenceGradients(const Inputs &inputs, int64_t heads, int64_t nu = 1,
                   fwp::ref::Rule rule = fwp::ref::Rule::Delta) {
  return fwp::ref::attentionBackward(
      configOf(heads, nu, rule), shapeOf(inputs), inputs.at("x.npy").values,
      paramsOf(inputs), inputs.at("dy.npy").values);
}

/// The layer written out with plain loops, independently of the reference
/// library (delta-rule-math.md sections 1-3), zero initial state.
std::vector<double> naiveForward(const Inputs &in, int64_t heads, int64_t nu,
                                 double eps, bool deltaRule) {
  const Array &xa = in.at("x.npy");
  int64_t T = xa.shape[0], B = xa.shape[1], Dm = xa.shape[2];
  int64_t dk = Dm / heads, F = 2 * dk * nu;
  const auto &x = xa.values;
  const auto &wq = in.at("w_q.npy").values, &wk = in.at("w_k.npy").values,
             &wv = in.at("w_v.npy").values, &wb = in.at("w_beta.npy").values,
             &wo = in.at("w_o.npy").values, &bo = in.at("b_o.npy").values;

  auto dpfp = [&](const std::vector<double> &k) {
    std::vector<double> r(2 * dk), phi(F);
    for (int64_t j = 0; j < dk; ++j) {
      r[j] = std::max(k[j], 0.0);
      r[dk + j] = std::max(-k[j], 0.0);
    }
    double sum = 0;
    for (int64_t i = 1; i <= nu; ++i)
      for (int64_t j = 0; j < 2 * dk; ++j) {
        int64_t m = ((j - i) % (2 * dk) + 2 * dk) % (2 * dk);
        phi[(i - 1) * 2 * dk + j] = r[j] * r[m];
        sum += phi[(i - 1) * 2 * dk + j];
      }
    for (double &v : phi)
      v /= sum + eps;
    return phi;
  };

  std::vector<double> heads_out(T * B * Dm), y(T * B * Dm);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < heads; ++h) {
      std::vector<double> W(dk * F, 0.0); // d_v x D
      for (int64_t t = 0; t < T; ++t) {
        const double *xt = &x[(t * B + b) * Dm];
        std::vector<double> q(dk), k(dk), v(dk);
        for (int64_t r = 0; r < dk; ++r)
          for (int64_t c = 0; c < Dm; ++c) {
            q[r] += wq[(h * dk + r) * Dm + c] * xt[c];
            k[r] += wk[(h * dk + r) * Dm + c] * xt[c];
            v[r] += wv[(h * dk + r) * Dm + c] * xt[c];
          }
        double logit = 0;
        for (int64_t c = 0; c < Dm; ++c)
          logit += wb[h * Dm + c] * xt[c];
        double beta = 1.0 / (1.0 + std::exp(-logit));
        std::vector<double> Q = dpfp(q), K = dpfp(k);
        for (int64_t r = 0; r < dk; ++r) {
          double vbar = 0;
          for (int64_t f = 0; f < F; ++f)
            vbar += W[r * F + f] * K[f];
          double coef = deltaRule ? beta * (v[r] - vbar) : v[r];
          for (int64_t f = 0; f < F; ++f)
            W[r * F + f] += coef * K[f];
        }
        for (int64_t r = 0; r < dk; ++r) {
          double o = 0;
          for (int64_t f = 0; f < F; ++f)
            o += W[r * F + f] * Q[f];
          heads_out[(t * B + b) * Dm + h * dk + r] = o;
        }
      }
    }
  for (int64_t n = 0; n < T * B; ++n)
    for (int64_t r = 0; r < Dm; ++r) {
      double acc = bo[r];
      for (int64_t c = 0; c < Dm; ++c)
        acc += wo[r * Dm + c] * heads_out[n * Dm + c];
      y[n * Dm + r] = acc;
    }
  return y;
}

struct RunResult {
  int status = -1; // exit status, -1 if it did not exit normally
  std::string out, err;
};

std::string readText(const fs::path &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string quote(const std::string &s) {
  std::string q = "'";
  for (char c : s)
    q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

/// Names of the entries of `dir`, sorted; empty if it does not exist.
std::vector<std::string> listDir(const fs::path &dir) {
  std::vector<std::string> names;
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return names;
  for (const auto &entry : fs::directory_iterator(dir))
    names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

const std::vector<std::string> kGradientFiles = {
    "db_o.npy", "dw_beta.npy", "dw_k.npy", "dw_o.npy",
    "dw_q.npy", "dw_v.npy",    "dx.npy"};

/// The files of a backward run, sorted.
std::vector<std::string> gradientFilesAndY() {
  std::vector<std::string> files = kGradientFiles;
  files.push_back("y.npy");
  std::sort(files.begin(), files.end());
  return files;
}

class FwpRunTest : public ::testing::Test {
protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "fwpruntest-XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    ASSERT_NE(mkdtemp(buf.data()), nullptr);
    root = buf.data();
    in = root / "in";
    out = root / "out";
    fs::create_directory(in);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(root, ec);
  }

  void writeInputs(const Inputs &inputs) {
    for (const auto &[name, array] : inputs)
      fwp::npy::write((in / name).string(), array);
  }

  /// makeInputs(s, dtype, withDy), written to the inputs directory.
  Inputs writeNewInputs(const Sizes &s, DType dtype, bool withDy) {
    Inputs inputs = makeInputs(s, dtype, withDy);
    writeInputs(inputs);
    return inputs;
  }

  /// Runs fwp-run with `args` (already shell-quoted where needed).
  RunResult run(const std::string &args) {
    std::string cmd = quote(FWP_RUN_PATH) + " " + args + " >" +
                      quote((root / "stdout.txt").string()) + " 2>" +
                      quote((root / "stderr.txt").string());
    int rc = std::system(cmd.c_str());
    RunResult r;
    if (rc != -1 && WIFEXITED(rc))
      r.status = WEXITSTATUS(rc);
    r.out = readText(root / "stdout.txt");
    r.err = readText(root / "stderr.txt");
    return r;
  }

  /// The usual arguments with `extra` appended. They pin the reference
  /// backend unless `extra` names one: its results are exact, while the
  /// default depends on the machine (see the DefaultBackend tests).
  std::string args(const std::string &extra = "--heads 2") {
    std::string backend = extra.find("--backend") == std::string::npos
                              ? " --backend reference"
                              : "";
    return "--inputs " + quote(in.string()) + " --outputs " +
           quote(out.string()) + " " + extra + backend;
  }

  /// Runs with `arguments`, expects exit status 2, one line on stderr
  /// "fwp-run: ..." containing each of `parts`, and no output directory (or
  /// one left exactly as it was).
  void expectRefused(const std::string &arguments,
                     const std::vector<std::string> &parts) {
    std::vector<std::string> before = listDir(out);
    std::vector<std::string> rootBefore = listDir(root);
    RunResult r = run(arguments);
    EXPECT_EQ(r.status, 2) << "stderr: " << r.err;
    EXPECT_EQ(r.err.rfind("fwp-run: ", 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(r.err.back(), '\n');
    for (const std::string &part : parts)
      EXPECT_NE(r.err.find(part), std::string::npos)
          << "stderr: " << r.err << "expected to contain: " << part;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(listDir(out), before) << "outputs changed";
    // No temporary directory left behind next to the outputs either.
    std::vector<std::string> rootAfter = listDir(root);
    rootAfter.erase(std::remove_if(rootAfter.begin(), rootAfter.end(),
                                   [](const std::string &n) {
                                     return n == "stdout.txt" ||
                                            n == "stderr.txt";
                                   }),
                    rootAfter.end());
    rootBefore.erase(std::remove_if(rootBefore.begin(), rootBefore.end(),
                                    [](const std::string &n) {
                                      return n == "stdout.txt" ||
                                             n == "stderr.txt";
                                    }),
                     rootBefore.end());
    EXPECT_EQ(rootAfter, rootBefore);
  }

  void expectSuccess(const RunResult &r) {
    EXPECT_EQ(r.status, 0) << "stderr: " << r.err;
    EXPECT_EQ(r.err, "");
    EXPECT_EQ(r.out, "");
  }

  Array readOutput(const std::string &name) {
    return fwp::npy::read((out / name).string());
  }

  /// y.npy, expected in `dtype` and of shape [seq_len, batch, d_model].
  Array readY(const Sizes &s, DType dtype) {
    Array y = readOutput("y.npy");
    EXPECT_EQ(y.dtype, dtype);
    EXPECT_EQ(y.shape, (std::vector<int64_t>{s.seqLen, s.batch, s.dModel}));
    return y;
  }

  fs::path root, in, out;
};

void expectValues(const Array &a, const std::vector<double> &expected,
                  double tol = 0.0) {
  ASSERT_EQ(a.values.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    if (tol == 0.0)
      EXPECT_EQ(a.values[i], expected[i]) << "at " << i;
    else
      EXPECT_NEAR(a.values[i], expected[i],
                  tol * std::max(1.0, std::abs(expected[i])))
          << "at " << i;
  }
}

std::vector<double> roundToFloat(std::vector<double> v) {
  for (double &x : v)
    x = static_cast<float>(x);
  return v;
}

//===----------------------------------------------------------------------===//
// Working runs
//===----------------------------------------------------------------------===//

TEST_F(FwpRunTest, HelpPrintsUsage) {
  RunResult r = run("--help");
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out.rfind("OVERVIEW: runs the fast-weight attention layer", 0),
            0u)
      << r.out;
  EXPECT_NE(r.out.find("fwp-run --inputs DIR --outputs DIR --heads H"),
            std::string::npos);
  for (const char *option :
       {"--inputs=<DIR>", "--outputs=<DIR>", "--heads=<H>", "--nu=<N>",
        "--eps=<E>", "--rule=<value>", "=delta", "=sum", "--backend=<value>",
        "=reference", "=cpu", "=cuda", "--chunk-size=<C>", "--dump-ir=<DIR>",
        "--gpu-stages"})
    EXPECT_NE(r.out.find(option), std::string::npos) << option;
  // The layouts of the inputs.
  EXPECT_NE(r.out.find("w_beta.npy                          [heads, d_model]"),
            std::string::npos);
  // None of the hundreds of options LLVM registers.
  EXPECT_EQ(r.out.find("--color"), std::string::npos);
  EXPECT_EQ(r.out.find("General options"), std::string::npos);

  RunResult shortHelp = run("-h");
  EXPECT_EQ(shortHelp.status, 0);
  EXPECT_EQ(shortHelp.out, r.out);
}

TEST_F(FwpRunTest, ForwardFloat64MatchesIndependentLoops) {
  Sizes s;
  Inputs inputs = writeNewInputs(s, DType::F64, false);
  expectSuccess(run(args("--heads 2 --nu 2")));
  EXPECT_EQ(listDir(out), std::vector<std::string>{"y.npy"});
  Array y = readY(s, DType::F64);
  expectValues(y, naiveForward(inputs, 2, 2, 1e-6, true), 1e-12);
}

TEST_F(FwpRunTest, ForwardFloat64MatchesReferenceExactly) {
  Sizes s;
  s.heads = 4;
  Inputs inputs = writeNewInputs(s, DType::F64, false);
  expectSuccess(run(args("--heads 4 --backend reference")));
  expectValues(readOutput("y.npy"), referenceY(inputs, 4));
}

TEST_F(FwpRunTest, OptionsReachTheBackend) {
  // Sum rule, nu = 3, a large eps, "--opt=value" spelling.
  Sizes s;
  Inputs inputs = writeNewInputs(s, DType::F64, false);
  expectSuccess(run(args("--heads=2 --rule=sum --nu 3 --eps 0.5")));
  fwp::ref::AttentionConfig config = configOf(2, 3, fwp::ref::Rule::Sum);
  config.eps = 0.5;
  expectValues(readOutput("y.npy"), referenceY(inputs, config));
  expectValues(readOutput("y.npy"), naiveForward(inputs, 2, 3, 0.5, false),
               1e-12);
}

TEST_F(FwpRunTest, ForwardFloat32WritesFloat32) {
  Sizes s;
  Inputs inputs = writeNewInputs(s, DType::F32, false);
  expectSuccess(run(args("--heads 2")));
  Array y = readY(s, DType::F32);
  // The reference computes in float64 from the float32 inputs; only the
  // output is rounded.
  expectValues(y, roundToFloat(referenceY(inputs, 2)));
}

TEST_F(FwpRunTest, BackwardFloat64WritesAllGradients) {
  Sizes s;
  Inputs inputs = writeNewInputs(s, DType::F64, true);
  expectSuccess(run(args("--heads 2 --nu 2")));
  EXPECT_EQ(listDir(out), gradientFilesAndY());

  fwp::ref::AttentionGradients g = referenceGradients(inputs, 2, 2);
  int64_t t = s.seqLen, b = s.batch, d = s.dModel, h = s.heads;
  struct Expect {
    const char *name;
    std::vector<int64_t> shape;
    const std::vector<double> *values;
  } expects[] = {{"dx.npy", {t, b, d}, &g.x},       {"dw_q.npy", {d, d}, &g.wQ},
                 {"dw_k.npy", {d, d}, &g.wK},       {"dw_v.npy", {d, d}, &g.wV},
                 {"dw_beta.npy", {h, d}, &g.wBeta}, {"dw_o.npy", {d, d}, &g.wO},
                 {"db_o.npy", {d}, &g.bO}};
  for (const Expect &e : expects) {
    SCOPED_TRACE(e.name);
    Array a = readOutput(e.name);
    EXPECT_EQ(a.dtype, DType::F64);
    EXPECT_EQ(a.shape, e.shape);
    expectValues(a, *e.values);
  }
  // y is the forward's, as without dy.
  expectValues(readOutput("y.npy"), naiveForward(inputs, 2, 2, 1e-6, true),
               1e-12);
}

TEST_F(FwpRunTest, BackwardFloat32WritesFloat32Gradients) {
  Sizes s;
  s.heads = 1;
  Inputs inputs = writeNewInputs(s, DType::F32, true);
  expectSuccess(run(args("--heads 1 --rule sum")));
  fwp::ref::AttentionGradients g =
      referenceGradients(inputs, 1, 1, fwp::ref::Rule::Sum);
  std::map<std::string, const std::vector<double> *> expected = {
      {"dx.npy", &g.x},    {"dw_q.npy", &g.wQ},       {"dw_k.npy", &g.wK},
      {"dw_v.npy", &g.wV}, {"dw_beta.npy", &g.wBeta}, {"dw_o.npy", &g.wO},
      {"db_o.npy", &g.bO}};
  for (const auto &[name, values] : expected) {
    SCOPED_TRACE(name);
    Array a = readOutput(name);
    EXPECT_EQ(a.dtype, DType::F32);
    expectValues(a, roundToFloat(*values));
  }
  EXPECT_EQ(readOutput("dw_beta.npy").shape,
            (std::vector<int64_t>{1, s.dModel}));
}

TEST_F(FwpRunTest, CreatesMissingOutputDirectoryAndParents) {
  Sizes s;
  writeInputs(makeInputs(s, DType::F64, false));
  out = root / "a" / "b" / "out";
  expectSuccess(run(args("--heads 2")));
  EXPECT_EQ(listDir(out), std::vector<std::string>{"y.npy"});
  // Nothing but the output directory was left in its parent.
  EXPECT_EQ(listDir(root / "a" / "b"), std::vector<std::string>{"out"});
  // A trailing slash names the same directory.
  fs::remove_all(root / "a");
  expectSuccess(run("--inputs " + quote(in.string()) + " --outputs " +
                    quote(out.string() + "/") +
                    " --heads 2 --backend reference"));
  EXPECT_EQ(listDir(out), std::vector<std::string>{"y.npy"});
  EXPECT_EQ(listDir(root / "a" / "b"), std::vector<std::string>{"out"});
}

TEST_F(FwpRunTest, ReplacesOutputsInExistingDirectory) {
  Sizes s;
  writeInputs(makeInputs(s, DType::F64, true));
  fs::create_directory(out);
  std::ofstream(out / "notes.txt") << "keep me";
  expectSuccess(run(args("--heads 2")));
  std::vector<std::string> all = kGradientFiles;
  all.push_back("notes.txt");
  all.push_back("y.npy");
  std::sort(all.begin(), all.end());
  EXPECT_EQ(listDir(out), all);

  // A forward-only run removes the gradients of the earlier run, which would
  // not belong to the new y, and leaves other files alone.
  fs::remove(in / "dy.npy");
  Array y1 = readOutput("y.npy");
  expectSuccess(run(args("--heads 2 --rule sum")));
  EXPECT_EQ(listDir(out), (std::vector<std::string>{"notes.txt", "y.npy"}));
  EXPECT_EQ(readText(out / "notes.txt"), "keep me");
  EXPECT_NE(readOutput("y.npy").values, y1.values);
}

TEST_F(FwpRunTest, InputsDirectoryAsOutputs) {
  Sizes s;
  Inputs inputs = writeNewInputs(s, DType::F64, false);
  out = in;
  expectSuccess(run(args("--heads 2")));
  std::vector<std::string> names;
  for (const auto &entry : inputs)
    names.push_back(entry.first);
  names.push_back("y.npy");
  std::sort(names.begin(), names.end());
  EXPECT_EQ(listDir(in), names);
}

TEST_F(FwpRunTest, EmptySequence) {
  Sizes s;
  s.seqLen = 0;
  writeInputs(makeInputs(s, DType::F64, true));
  expectSuccess(run(args("--heads 2")));
  EXPECT_EQ(readOutput("y.npy").shape,
            (std::vector<int64_t>{0, s.batch, s.dModel}));
  EXPECT_EQ(readOutput("dx.npy").shape,
            (std::vector<int64_t>{0, s.batch, s.dModel}));
  Array dwq = readOutput("dw_q.npy");
  EXPECT_EQ(dwq.values, std::vector<double>(s.dModel * s.dModel, 0.0));
}

//===----------------------------------------------------------------------===//
// The cpu backend and the default choice
//===----------------------------------------------------------------------===//

/// max_i |y_i - ref_i| / max_i |ref_i|.
double relativeError(const Array &y, const std::vector<double> &ref) {
  EXPECT_EQ(y.values.size(), ref.size());
  double maxDiff = 0, maxRef = 0;
  for (size_t i = 0; i < ref.size() && i < y.values.size(); ++i) {
    maxDiff = std::max(maxDiff, std::abs(y.values[i] - ref[i]));
    maxRef = std::max(maxRef, std::abs(ref[i]));
  }
  return maxRef > 0 ? maxDiff / maxRef : maxDiff;
}

/// Checks every gradient file in `dir` against fwp::ref::attentionBackward
/// on the same inputs: max|g - gref| / max|gref| <= bound per gradient (the
/// sum rule's dw_beta must be exactly zero), each in the inputs' dtype and
/// its parameter's shape.
void expectGradientsNear(const fs::path &dir, const Inputs &inputs,
                         int64_t heads, int64_t nu, fwp::ref::Rule rule,
                         double bound) {
  fwp::ref::AttentionGradients g = referenceGradients(inputs, heads, nu, rule);
  const std::map<std::string, std::pair<const char *, std::vector<double> *>>
      expected = {{"dx.npy", {"x.npy", &g.x}},
                  {"dw_q.npy", {"w_q.npy", &g.wQ}},
                  {"dw_k.npy", {"w_k.npy", &g.wK}},
                  {"dw_v.npy", {"w_v.npy", &g.wV}},
                  {"dw_beta.npy", {"w_beta.npy", &g.wBeta}},
                  {"dw_o.npy", {"w_o.npy", &g.wO}},
                  {"db_o.npy", {"b_o.npy", &g.bO}}};
  for (const auto &[name, of] : expected) {
    SCOPED_TRACE(name);
    Array a = fwp::npy::read((dir / name).string());
    const Array &param = inputs.at(of.first);
    EXPECT_EQ(a.dtype, param.dtype);
    EXPECT_EQ(a.shape, param.shape);
    if (rule == fwp::ref::Rule::Sum && name == "dw_beta.npy")
      EXPECT_EQ(a.values, std::vector<double>(a.values.size(), 0.0));
    else
      EXPECT_LE(relativeError(a, *of.second), bound);
  }
}

TEST_F(FwpRunTest, CpuBackendFloat32MatchesReference) {
  Sizes s;
  s.seqLen = 11; // chunks of 4: two full, one partial
  Inputs inputs = writeNewInputs(s, DType::F32, false);
  expectSuccess(run(args("--heads 2 --nu 2 --backend cpu --chunk-size 4")));
  Array y = readY(s, DType::F32);
  EXPECT_LE(relativeError(y, referenceY(inputs, 2, 2)), 1e-5);

  // The default chunk size (64 > seq_len), the sum rule.
  expectSuccess(run(args("--heads 2 --rule sum --backend cpu")));
  EXPECT_LE(relativeError(readOutput("y.npy"),
                          referenceY(inputs, 2, 1, fwp::ref::Rule::Sum)),
            1e-5);
}

// --dump-ir: the IR before and after every stage of the cpu compilation,
// and the PTX and launch plans of the cuda one (which needs no GPU).
TEST_F(FwpRunTest, DumpIrWritesEveryStageAndThePtx) {
  writeNewInputs(Sizes(), DType::F32, false);
  fs::path dump = root / "ir";
  expectSuccess(
      run(args("--heads 2 --backend cpu --dump-ir " + quote(dump.string()))));
  // Only the entry point that runs is compiled: the forward (no dy.npy).
  fs::path cpuDir = dump / "cpu" / "forward";
  std::vector<std::string> cpu = listDir(cpuDir);
  ASSERT_FALSE(cpu.empty());
  EXPECT_EQ(cpu.front(), "00-input.mlir");
  EXPECT_NE(readText(cpuDir / "00-input.mlir").find("fwp.attention"),
            std::string::npos);
  // The kernels' configuration first, recorded on the function.
  EXPECT_TRUE(
      std::count(cpu.begin(), cpu.end(), "01-fwp-configure-kernels.mlir"));
  EXPECT_NE(readText(cpuDir / "01-fwp-configure-kernels.mlir")
                .find("fwp.kernel_config = #fwp.kernel_config<target = cpu"),
            std::string::npos);
  EXPECT_TRUE(std::count(cpu.begin(), cpu.end(), "02-fwp-widen-storage.mlir"));
  EXPECT_TRUE(
      std::count(cpu.begin(), cpu.end(), "03-fwp-decompose-attention.mlir"));
  // The last stage is the LLVM dialect.
  EXPECT_NE(readText(cpuDir / cpu.back()).find("llvm.func"), std::string::npos);
  EXPECT_FALSE(fs::exists(dump / "cpu" / "backward"));
  fs::path cudaDir = dump / "cuda" / "forward";
  std::vector<std::string> cuda = listDir(cudaDir);
  EXPECT_TRUE(std::count(cuda.begin(), cuda.end(), "plan.fwp"));
  EXPECT_TRUE(std::count(cuda.begin(), cuda.end(), "scan_state.ptx"));
  EXPECT_NE(readText(cudaDir / "scan_state.ptx").find(".target sm_90"),
            std::string::npos);
  expectRefused(
      args("--heads 2 --backend reference --dump-ir " + quote(dump.string())),
      {"fwp-run: --dump-ir needs a compiled backend (cpu or cuda)"});
}

// --gpu-stages: the CUDA kernels' scan as the chunk operations' kernels.
TEST_F(FwpRunTest, GpuStagesDumpsTheStagesKernels) {
  writeNewInputs(Sizes(), DType::F32, false);
  fs::path dump = root / "ir";
  expectSuccess(run(args("--heads 2 --backend cpu --gpu-stages --dump-ir " +
                         quote(dump.string()))));
  std::vector<std::string> cuda = listDir(dump / "cuda" / "forward");
  for (const char *kernel :
       {"chunk_wy.ptx", "chunk_states_output.ptx", "dpfp.ptx"})
    EXPECT_TRUE(std::count(cuda.begin(), cuda.end(), kernel)) << kernel;
  EXPECT_FALSE(std::count(cuda.begin(), cuda.end(), "scan_state.ptx"));
}

TEST_F(FwpRunTest, CpuBackendFloat64MatchesReference) {
  Sizes s;
  Inputs inputs = writeNewInputs(s, DType::F64, false);
  expectSuccess(run(args("--heads 2 --nu 3 --backend cpu --chunk-size 2")));
  Array y = readOutput("y.npy");
  EXPECT_EQ(y.dtype, DType::F64);
  EXPECT_LE(relativeError(y, referenceY(inputs, 2, 3)), 1e-10);
}

TEST_F(FwpRunTest, CpuBackendBackwardFloat32MatchesReference) {
  Sizes s;
  s.seqLen = 11; // chunks of 4: two full, one partial
  Inputs inputs = writeNewInputs(s, DType::F32, true);
  expectSuccess(run(args("--heads 2 --nu 2 --backend cpu --chunk-size 4")));
  EXPECT_EQ(listDir(out), gradientFilesAndY());
  EXPECT_LE(relativeError(readOutput("y.npy"), referenceY(inputs, 2, 2)), 1e-5);
  expectGradientsNear(out, inputs, 2, 2, fwp::ref::Rule::Delta, 1e-4);

  // The sum rule (dw_beta is zero), the default chunk size.
  expectSuccess(run(args("--heads 2 --rule sum --nu 3 --backend cpu")));
  expectGradientsNear(out, inputs, 2, 3, fwp::ref::Rule::Sum, 1e-4);
}

TEST_F(FwpRunTest, CpuBackendBackwardFloat64MatchesReference) {
  Sizes s;
  s.heads = 4;
  Inputs inputs = writeNewInputs(s, DType::F64, true);
  expectSuccess(run(args("--heads 4 --backend cpu --chunk-size 2")));
  expectGradientsNear(out, inputs, 4, 1, fwp::ref::Rule::Delta, 1e-9);
}

/// 16-bit storage: float16 files run a float16 kernel and give float16
/// outputs; --compute-type bf16 runs float32 files in bf16 (NumPy has no
/// bf16) and writes float32. Bounds: one rounding of each output
/// (AttentionCases.h's kForwardBf16Bound and kForwardF16Bound).
TEST_F(FwpRunTest, CpuBackendSixteenBitStorage) {
  Sizes s;
  s.seqLen = 11;
  Inputs f16 = writeNewInputs(s, DType::F16, false);
  expectSuccess(run(args("--heads 2 --nu 2 --backend cpu --chunk-size 4")));
  Array y = readOutput("y.npy");
  EXPECT_EQ(y.dtype, DType::F16);
  double f16Error = relativeError(y, referenceY(f16, 2, 2));
  EXPECT_LE(f16Error, 1.0 / 2048 + 1.01e-5);
  EXPECT_GT(f16Error, 0.0); // the outputs were rounded to f16

  // Float32 files holding bf16 values: the reference sees what the kernel
  // reads.
  Inputs bf16 = makeInputs(s, DType::F32, false);
  for (auto &[name, array] : bf16)
    for (double &v : array.values)
      v = fwp::rt::fromBf16(fwp::rt::toBf16(static_cast<float>(v)));
  writeInputs(bf16);
  expectSuccess(run(args("--heads 2 --nu 2 --backend cpu --chunk-size 4 "
                         "--compute-type bf16")));
  y = readOutput("y.npy");
  EXPECT_EQ(y.dtype, DType::F32);
  for (double v : y.values) // every output is a bf16 value
    EXPECT_EQ(v, fwp::rt::fromBf16(fwp::rt::toBf16(static_cast<float>(v))));
  EXPECT_LE(relativeError(y, referenceY(bf16, 2, 2)), 1.0 / 256 + 1.01e-5);

  expectRefused(args("--heads 2 --backend cpu --compute-type f8"),
                {"fwp-run: "});
}

TEST_F(FwpRunTest, CpuBackendEmptySequence) {
  Sizes s;
  s.seqLen = 0;
  writeInputs(makeInputs(s, DType::F32, false));
  expectSuccess(run(args("--heads 2 --backend cpu")));
  EXPECT_EQ(readOutput("y.npy").shape,
            (std::vector<int64_t>{0, s.batch, s.dModel}));

  // The backward: no dx rows, zero weight gradients.
  writeInputs(makeInputs(s, DType::F32, true));
  expectSuccess(run(args("--heads 2 --backend cpu")));
  EXPECT_EQ(readOutput("dx.npy").shape,
            (std::vector<int64_t>{0, s.batch, s.dModel}));
  for (const char *name : {"dw_q.npy", "dw_beta.npy", "db_o.npy"}) {
    SCOPED_TRACE(name);
    Array g = readOutput(name);
    EXPECT_EQ(g.dtype, DType::F32);
    EXPECT_EQ(g.values, std::vector<double>(g.values.size(), 0.0));
  }
}

/// Without --backend, fwp-run prints its choice as one line on stderr.
std::string expectChoiceLine(const std::string &err) {
  EXPECT_EQ(err.rfind("fwp-run: using backend ", 0), 0u) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_EQ(err.size() >= 2 ? err.substr(err.size() - 2) : err, ")\n") << err;
  size_t start = std::string("fwp-run: using backend ").size();
  return err.substr(start, err.find(' ', start) - start);
}

TEST_F(FwpRunTest, DefaultBackendSaysWhichItUses) {
  Sizes s;
  Inputs inputs = writeNewInputs(s, DType::F32, false);
  RunResult r = run("--inputs " + quote(in.string()) + " --outputs " +
                    quote(out.string()) + " --heads 2");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "");
  // cuda when a GPU is usable, else cpu, saying why. The stand-in driver
  // (the PTX emulator) is never chosen by default.
  if (fwp::rt::cudaUsable() && fwp::rt::Context::primary().isEmulator()) {
    EXPECT_EQ(expectChoiceLine(r.err), "cpu");
    EXPECT_NE(r.err.find("the CUDA driver is fwp's PTX emulator"),
              std::string::npos)
        << r.err;
  } else if (fwp::rt::cudaUsable()) {
    EXPECT_EQ(expectChoiceLine(r.err), "cuda");
  } else {
    EXPECT_EQ(expectChoiceLine(r.err), "cpu");
    EXPECT_NE(r.err.find("(no usable CUDA GPU: "), std::string::npos) << r.err;
  }
  EXPECT_LE(relativeError(readOutput("y.npy"), referenceY(inputs, 2)), 1e-5);
}

// Asked for by name, the cuda backend runs where the driver is, and says
// so when that is the emulator.
TEST_F(FwpRunTest, CudaBackendSaysWhenItRunsOnTheEmulator) {
  if (!fwp::rt::cudaUsable() || !fwp::rt::Context::primary().isEmulator())
    GTEST_SKIP() << "the CUDA driver here is not fwp's PTX emulator";
  Sizes s;
  Inputs inputs = writeNewInputs(s, DType::F32, false);
  RunResult r = run("--inputs " + quote(in.string()) + " --outputs " +
                    quote(out.string()) + " --heads 2 --backend cuda");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("backend cuda runs on fwp PTX emulator (sm_90), not "
                       "a GPU"),
            std::string::npos)
      << r.err;
  EXPECT_LE(relativeError(readOutput("y.npy"), referenceY(inputs, 2)), 1e-5);
}

TEST_F(FwpRunTest, DefaultBackendForTheBackwardIsCpu) {
  Sizes s;
  Inputs inputs = writeNewInputs(s, DType::F64, true);
  RunResult r = run("--inputs " + quote(in.string()) + " --outputs " +
                    quote(out.string()) + " --heads 2");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(expectChoiceLine(r.err), "cpu");
  EXPECT_EQ(listDir(out).size(), kGradientFiles.size() + 1);
  expectGradientsNear(out, inputs, 2, 1, fwp::ref::Rule::Delta, 1e-9);
}

//===----------------------------------------------------------------------===//
// Refusals: exit 2, one line naming the problem, no outputs
//===----------------------------------------------------------------------===//

TEST_F(FwpRunTest, RefusesBadCommandLines) {
  writeInputs(makeInputs(Sizes(), DType::F64, false));
  expectRefused(args("--heads 2 --bogus 1"),
                {"fwp-run: Unknown command line argument '--bogus'"});
  expectRefused(args("--heads"), {"fwp-run: option --heads needs a value"});
  expectRefused("--inputs --outputs " + quote(out.string()) + " --heads 2",
                {"fwp-run: option --inputs needs a value"});
  expectRefused("--outputs " + quote(out.string()) + " --heads 2",
                {"fwp-run: missing required option --inputs"});
  expectRefused("--inputs " + quote(in.string()) + " --heads 2",
                {"fwp-run: missing required option --outputs"});
  expectRefused(args(""), {"fwp-run: missing required option --heads"});
  expectRefused(args("--heads 2 extra"),
                {"fwp-run: Unknown command line argument 'extra'"});
  expectRefused(args("--heads 2 --heads 2"),
                {"fwp-run: option --heads is given more than once"});
  expectRefused(args("--heads two"),
                {"fwp-run: --heads expects an integer, got 'two'"});
  // Two bad values: the first one is named.
  expectRefused(args("--heads two --nu 1.5"),
                {"fwp-run: --heads expects an integer, got 'two'"});
  expectRefused(args("--heads 0"),
                {"fwp-run: --heads expects a positive integer, got '0'"});
  expectRefused(args("--heads 2 --nu 1.5"),
                {"fwp-run: --nu expects an integer, got '1.5'"});
  // Integers are decimal: 010 is ten, not eight.
  expectRefused(args("--heads 010"),
                {"fwp-run: --heads 10 does not divide d_model = 8"});
}

TEST_F(FwpRunTest, RefusesMissingFiles) {
  for (const char *name : {"x.npy", "w_q.npy", "w_k.npy", "w_v.npy",
                           "w_beta.npy", "w_o.npy", "b_o.npy"}) {
    SCOPED_TRACE(name);
    writeInputs(makeInputs(Sizes(), DType::F64, true));
    fs::remove(in / name);
    expectRefused(args(), {std::string("fwp-run: missing input file ") + name +
                           " in '" + in.string() + "'"});
  }
  fs::remove_all(in);
  expectRefused(args(), {"fwp-run: input directory '" + in.string() +
                         "' does not exist"});
}

TEST_F(FwpRunTest, RefusesShapesThatDoNotFit) {
  Sizes s; // seq 5, batch 2, d_model 8, heads 2
  struct Case {
    const char *name;
    std::vector<int64_t> shape;
    std::string message;
  } cases[] = {
      {"x.npy",
       {5, 8},
       "fwp-run: x.npy has shape [5, 8], expected [seq_len, batch, d_model]"},
      {"x.npy",
       {5, 2, 0},
       "fwp-run: x.npy has shape [5, 2, 0], expected d_model >= 1"},
      {"w_q.npy",
       {8, 8, 1},
       "fwp-run: w_q.npy has shape [8, 8, 1], expected [8, 8] (d_model = 8)"},
      {"w_k.npy",
       {8, 6},
       "fwp-run: w_k.npy has shape [8, 6], expected [8, 8] (d_model = 8)"},
      {"w_v.npy",
       {6, 8},
       "fwp-run: w_v.npy has shape [6, 8], expected [8, 8] (d_model = 8)"},
      {"w_beta.npy",
       {8},
       "fwp-run: w_beta.npy has shape [8], expected [2, 8] (heads = 2, "
       "d_model = 8)"},
      {"w_o.npy", {}, "fwp-run: w_o.npy has shape [], expected [8, 8]"},
      {"b_o.npy",
       {1, 8},
       "fwp-run: b_o.npy has shape [1, 8], expected [8] (d_model = 8)"},
      {"dy.npy",
       {5, 1, 8},
       "fwp-run: dy.npy has shape [5, 1, 8], expected [5, 2, 8] (the shape "
       "of x.npy)"},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.name);
    Inputs inputs = makeInputs(s, DType::F64, true);
    inputs[c.name] = randomArray(c.shape, DType::F64, 9, 1.0);
    writeInputs(inputs);
    expectRefused(args("--heads 2"), {c.message});
  }
}

TEST_F(FwpRunTest, RefusesHeadsNotDividingDModel) {
  Sizes s;
  writeInputs(makeInputs(s, DType::F64, false));
  expectRefused(args("--heads 3"),
                {"fwp-run: --heads 3 does not divide d_model = 8"});
  expectRefused(args("--heads 16"),
                {"fwp-run: --heads 16 does not divide d_model = 8"});
}

TEST_F(FwpRunTest, RefusesNuOutOfRange) {
  writeInputs(makeInputs(Sizes(), DType::F64, false)); // d_k = 4
  expectRefused(args("--heads 2 --nu 0"),
                {"fwp-run: --nu 0 is out of range [1, 7] (d_k = "});
  expectRefused(args("--heads 2 --nu 8"),
                {"fwp-run: --nu 8 is out of range [1, 7]"});
  expectRefused(args("--heads 8 --nu 2"),
                {"fwp-run: --nu 2 is out of range [1, 1]"});
  expectRefused(args("--heads 2 --nu -3"),
                {"fwp-run: --nu -3 is out of range [1, 7]"});
}

TEST_F(FwpRunTest, RefusesBadEps) {
  writeInputs(makeInputs(Sizes(), DType::F64, false));
  // The value as read back: -1e-6 is shown as -1e-06.
  const std::pair<const char *, const char *> outOfRange[] = {
      {"0", "0"}, {"-1e-6", "-1e-06"}, {"nan", "nan"}, {"inf", "inf"}};
  for (const auto &[eps, shown] : outOfRange) {
    SCOPED_TRACE(eps);
    expectRefused(args(std::string("--heads 2 --eps=") + eps),
                  {std::string("fwp-run: --eps expects a finite number > 0, "
                               "got '") +
                   shown + "'"});
  }
  for (const char *eps : {"abc", "1e-6x", ""}) {
    SCOPED_TRACE(eps);
    expectRefused(
        args(std::string("--heads 2 --eps=") + eps),
        {std::string("fwp-run: --eps expects a number, got '") + eps + "'"});
  }
}

TEST_F(FwpRunTest, RefusesUnknownRule) {
  writeInputs(makeInputs(Sizes(), DType::F64, false));
  expectRefused(args("--heads 2 --rule linear"),
                {"fwp-run: unknown rule 'linear' (expected delta or sum)"});
}

TEST_F(FwpRunTest, RefusesUnavailableAndUnknownBackends) {
  writeInputs(makeInputs(Sizes(), DType::F64, false));
  if (!fwp::rt::cudaUsable())
    expectRefused(args("--heads 2 --backend cuda"),
                  {"fwp-run: backend 'cuda' needs a usable CUDA GPU: "});
  expectRefused(args("--heads 2 --backend tpu"),
                {"fwp-run: unknown backend 'tpu'"});
  expectRefused(args("--heads 2 --backend="),
                {"fwp-run: unknown backend '' (expected reference, cpu or "
                 "cuda)"});
}

TEST_F(FwpRunTest, RefusesBadChunkSize) {
  writeInputs(makeInputs(Sizes(), DType::F64, false));
  for (const char *c : {"0", "-4"}) {
    SCOPED_TRACE(c);
    expectRefused(
        args(std::string("--heads 2 --backend cpu --chunk-size=") + c),
        {std::string("fwp-run: --chunk-size expects a positive "
                     "integer, got '") +
         c + "'"});
  }
  for (const char *c : {"x", "1.5", ""}) {
    SCOPED_TRACE(c);
    expectRefused(
        args(std::string("--heads 2 --backend cpu --chunk-size=") + c),
        {std::string("fwp-run: --chunk-size expects an integer, got '") + c +
         "'"});
  }
}

TEST_F(FwpRunTest, RefusesMixedDtypes) {
  Inputs inputs = makeInputs(Sizes(), DType::F32, true);
  inputs["w_v.npy"].dtype = DType::F64;
  writeInputs(inputs);
  expectRefused(args(), {"fwp-run: w_v.npy is float64 but x.npy is float32 "
                         "(all inputs must have the same dtype)"});
  inputs = makeInputs(Sizes(), DType::F64, true);
  inputs["dy.npy"].dtype = DType::F32;
  writeInputs(inputs);
  expectRefused(args(), {"fwp-run: dy.npy is float32 but x.npy is float64"});
}

TEST_F(FwpRunTest, RefusesNonFiniteValues) {
  struct Case {
    const char *name;
    size_t index;
    double value;
    std::string message;
  } cases[] = {
      {"x.npy", 2 * 16 + 1 * 8 + 3, std::nan(""),
       "fwp-run: x.npy has a non-finite value (nan) at index [2, 1, 3]"},
      {"w_k.npy", 13, std::numeric_limits<double>::infinity(),
       "fwp-run: w_k.npy has a non-finite value (inf) at index [1, 5]"},
      {"b_o.npy", 7, -std::numeric_limits<double>::infinity(),
       "fwp-run: b_o.npy has a non-finite value (-inf) at index [7]"},
      {"dy.npy", 0, std::nan(""),
       "fwp-run: dy.npy has a non-finite value (nan) at index [0, 0, 0]"},
  };
  for (DType dtype : {DType::F64, DType::F32})
    for (const Case &c : cases) {
      SCOPED_TRACE(c.name);
      Inputs inputs = makeInputs(Sizes(), dtype, true);
      inputs[c.name].values[c.index] = c.value;
      writeInputs(inputs);
      expectRefused(args(), {c.message});
    }
}

TEST_F(FwpRunTest, RefusesMalformedNpyFiles) {
  writeInputs(makeInputs(Sizes(), DType::F64, false));
  std::ofstream(in / "w_q.npy") << "not an npy file";
  expectRefused(
      args(), {"fwp-run: " + (in / "w_q.npy").string() + ": not an .npy file"});
}

TEST_F(FwpRunTest, RefusesOutputPathThatIsAFile) {
  writeInputs(makeInputs(Sizes(), DType::F64, false));
  std::ofstream(root / "file") << "x";
  out = root / "file";
  RunResult r = run(args());
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "fwp-run: output path '" + out.string() +
                       "' exists and is not a directory\n");
  EXPECT_EQ(readText(out), "x");
}

TEST_F(FwpRunTest, RefusalLeavesExistingOutputsAlone) {
  Sizes s;
  writeInputs(makeInputs(s, DType::F64, true));
  expectSuccess(run(args()));
  std::string y = readText(out / "y.npy");
  std::string dx = readText(out / "dx.npy");
  Inputs bad = makeInputs(s, DType::F64, true);
  bad["w_o.npy"] = randomArray({4, 4}, DType::F64, 1, 1.0);
  writeInputs(bad);
  expectRefused(args(), {"fwp-run: w_o.npy has shape [4, 4]"});
  EXPECT_EQ(readText(out / "y.npy"), y);
  EXPECT_EQ(readText(out / "dx.npy"), dx);
}

} // namespace
