//===- fwp-run.cpp - Run fast-weight attention on .npy files --------------===//
//
//   fwp-run --inputs DIR --outputs DIR --heads H [--nu 1] [--eps 1e-6]
//           [--rule delta|sum] [--backend reference|cpu|cuda]
//           [--chunk-size 64] [--dump-ir DIR]
//
// Reads x, the layer's parameters and optionally dy from DIR/*.npy, runs the
// forward (and, given dy, the backward) on the chosen backend and writes y
// (and the gradients) as .npy files of the inputs' dtype. See --help.
//
// Exit status: 0 on success; 2 on bad usage or bad inputs; 1 on any other
// failure. Every failure prints exactly one line "fwp-run: ..." on stderr and
// leaves the outputs directory as it was. Without --backend, the one line
// "fwp-run: using backend B (why)" on stderr says which backend ran.
//
//===----------------------------------------------------------------------===//

#include "Backend.h"
#include "Error.h"
#include "IO.h"
#include "Options.h"

#include "fwp/Runtime/Cuda.h"

#include <fmt/format.h>

#include <cstdio>
#include <new>
#include <string>
#include <string_view>

using namespace fwp;
using namespace fwp::run;

namespace {

/// Prints `message` as one line "fwp-run: ..." on stderr: any newline in it
/// (say, from a file name or compiler diagnostics) is escaped.
void report(const std::string &message) {
  std::string escaped;
  for (char c : message) {
    if (c == '\n')
      escaped += "\\n";
    else if (c == '\r')
      escaped += "\\r";
    else
      escaped += c;
  }
  fmt::print(stderr, "fwp-run: {}\n", escaped);
}

/// Wraps a backend result as an output file, checking its size.
OutputFile output(const char *name, std::vector<int64_t> shape, rt::DType dtype,
                  std::vector<double> values, const run::Backend &backend) {
  // -1 for no count: the shapes come from the inputs', whose counts fit.
  int64_t expected = rt::elementCount(shape).value_or(-1);
  if (values.size() != static_cast<uint64_t>(expected))
    throw std::runtime_error(fmt::format(
        "internal error: backend '{}' returned {} values for {}, expected {} "
        "(shape {})",
        backend.name(), values.size(), name, expected,
        npy::formatShape(shape)));
  return OutputFile{name,
                    npy::Array{std::move(shape), dtype, std::move(values)}};
}

int runTool(int argc, char **argv) {
  Options opts = parseOptions(argc, argv);
  BackendSettings settings;
  settings.chunkSize = opts.chunkSize;
  settings.dumpIr = opts.dumpIr;
  settings.gpuStages = opts.gpuStages;
  settings.computeType = opts.computeType;
  // A backend named on the command line is checked before the inputs are
  // read; the default one depends on them (does dy.npy ask for the
  // backward?), so it is chosen after.
  std::unique_ptr<run::Backend> backend;
  if (opts.backend) {
    backend = createBackend(*opts.backend, settings);
    if (std::string_view(backend->name()) == "cuda" && rt::cudaUsable() &&
        rt::Context::primary().isEmulator())
      report(fmt::format("backend cuda runs on {}, not a GPU",
                         rt::Context::primary().deviceName()));
  }
  checkOutputPath(opts.outputs);
  Problem p = loadInputs(opts);
  if (!backend) {
    BackendChoice choice = chooseBackend(p.hasDy, settings);
    backend = std::move(choice.backend);
    report(fmt::format("using backend {} ({})", backend->name(), choice.why));
  }
  if (!opts.dumpIr.empty() && std::string_view(backend->name()) == "reference")
    throw UsageError("--dump-ir needs a compiled backend (cpu or cuda); the "
                     "reference is not compiled");
  if (p.hasDy && !backend->hasBackward())
    throw UsageError(
        fmt::format("backend '{}' computes the forward only", backend->name()));

  const int64_t t = p.shape.seqLen, b = p.shape.batch, d = p.shape.dModel;
  const int64_t h = p.config.heads;
  std::vector<OutputFile> files;
  ref::AttentionOutputs fwd =
      backend->forward(p.config, p.shape, p.x, p.params, p.dtype);
  files.push_back(
      output("y.npy", {t, b, d}, p.dtype, std::move(fwd.y), *backend));

  const std::vector<std::string> gradientNames = {
      "dx.npy",      "dw_q.npy", "dw_k.npy", "dw_v.npy",
      "dw_beta.npy", "dw_o.npy", "db_o.npy"};
  if (p.hasDy) {
    ref::AttentionGradients g =
        backend->backward(p.config, p.shape, p.x, p.params, p.dy, p.dtype);
    files.push_back(
        output("dx.npy", {t, b, d}, p.dtype, std::move(g.x), *backend));
    files.push_back(
        output("dw_q.npy", {d, d}, p.dtype, std::move(g.wQ), *backend));
    files.push_back(
        output("dw_k.npy", {d, d}, p.dtype, std::move(g.wK), *backend));
    files.push_back(
        output("dw_v.npy", {d, d}, p.dtype, std::move(g.wV), *backend));
    files.push_back(
        output("dw_beta.npy", {h, d}, p.dtype, std::move(g.wBeta), *backend));
    files.push_back(
        output("dw_o.npy", {d, d}, p.dtype, std::move(g.wO), *backend));
    files.push_back(
        output("db_o.npy", {d}, p.dtype, std::move(g.bO), *backend));
  }
  // Without dy, gradient files left by an earlier run would not belong to
  // the new y.npy: they are removed.
  writeOutputs(opts.outputs, files,
               p.hasDy ? std::vector<std::string>{} : gradientNames);
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  try {
    return runTool(argc, argv);
  } catch (const UsageError &e) {
    report(e.what());
    return 2;
  } catch (const std::bad_alloc &) {
    report("out of memory");
    return 1;
  } catch (const std::exception &e) {
    report(e.what());
    return 1;
  } catch (...) {
    report("unexpected error");
    return 1;
  }
}
