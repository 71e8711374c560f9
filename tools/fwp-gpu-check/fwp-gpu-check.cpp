//===- fwp-gpu-check.cpp - A GPU bundle's checks and benchmark ------------===//
//
//   fwp-gpu-check check BUNDLE                 every line of BUNDLE/checks.txt
//   fwp-gpu-check bench BUNDLE [--seconds S]   every line of BUNDLE/bench.txt
//
// Runs what `make gpu-bundle` (test/gpu-bundle) compiled and computed ahead
// of time, on a machine that has the entry points' device but no compiler:
// it links the runtime and the .npy code only (no MLIR, no LLVM).
//
// checks.txt, one check a line, fields separated by tabs:
//   ENTRY_DIR  CASE_DIR  BOUND  EXACT_ZEROS  LABEL
// runs the entry point in ENTRY_DIR on CASE_DIR's inputs (x.npy, w_q.npy,
// ..., dy.npy for a backward), and compares each output with
// CASE_DIR/expected/<output>.npy, computed by the float64 reference: the
// relative error max|got - expected| / max|expected| must be <= BOUND, and
// the outputs named in EXACT_ZEROS (comma-separated, or -) must be exactly
// zero. One line per check, then "checks: N passed, N failed".
//
// bench.txt, one shape a line:  FORWARD_DIR  BACKWARD_DIR  SEQ_LEN  BATCH
// LABEL; each entry point runs on random inputs already on the device (no
// copies timed), and the median time of the runs is printed.
//
// Paths in both files are relative to BUNDLE. Exit status: 0 when every
// check passed, 1 when one failed, 2 for a bundle that cannot be read or a
// device that cannot be used (with the reason).
//
//===----------------------------------------------------------------------===//

#include "fwp/Runtime/AttentionEntry.h"
#include "fwp/Runtime/Cuda.h"
#include "fwp/Runtime/Driver.h"
#include "fwp/Runtime/Plan.h"
#include "fwp/Support/EntryInputs.h"
#include "fwp/Support/Npy.h"
#include "fwp/Support/Random.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using fwp::rt::AttentionEntry;

/// A bundle file that cannot be used: exit status 2.
struct BundleError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The tab-separated fields of each non-empty, non-comment line of `path`,
/// each line with exactly `fields` of them.
std::vector<std::vector<std::string>> readTable(const std::string &path,
                                                size_t fields) {
  std::istringstream text(fwp::rt::readTextFile(path));
  std::vector<std::vector<std::string>> rows;
  std::string line;
  for (int number = 1; std::getline(text, line); ++number) {
    if (line.empty() || line[0] == '#')
      continue;
    std::vector<std::string> row;
    std::istringstream cells(line);
    for (std::string cell; std::getline(cells, cell, '\t');)
      row.push_back(cell);
    if (row.size() != fields)
      throw BundleError(fmt::format("{}:{}: {} tab-separated fields, expected "
                                    "{}",
                                    path, number, row.size(), fields));
    rows.push_back(std::move(row));
  }
  return rows;
}

/// Entry points by directory, each loaded once.
class Entries {
public:
  explicit Entries(std::string bundle) : bundle(std::move(bundle)) {}

  const AttentionEntry &get(const std::string &dir) {
    std::unique_ptr<AttentionEntry> &entry = loaded[dir];
    if (!entry)
      entry = AttentionEntry::load(bundle + "/" + dir);
    return *entry;
  }

  /// Fails with the reason where an entry needs a GPU and none is usable.
  void requireDevice(const AttentionEntry &entry) {
    std::string whyNot;
    if (entry.runsOnDevice() && !fwp::rt::cudaUsable(&whyNot))
      throw BundleError("no usable CUDA GPU: " + whyNot);
  }

private:
  std::string bundle;
  std::map<std::string, std::unique_ptr<AttentionEntry>> loaded;
};

double relativeError(const std::vector<double> &got,
                     const std::vector<double> &expected) {
  double maxDiff = 0, maxRef = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(got[i]))
      return INFINITY;
    maxDiff = std::max(maxDiff, std::abs(got[i] - expected[i]));
    maxRef = std::max(maxRef, std::abs(expected[i]));
  }
  return maxRef > 0 ? maxDiff / maxRef : maxDiff;
}

std::vector<std::string> splitCommas(const std::string &text) {
  std::vector<std::string> names;
  if (text == "-")
    return names;
  std::istringstream in(text);
  for (std::string name; std::getline(in, name, ',');)
    names.push_back(name);
  return names;
}

/// Runs one check; returns "" if it passed, else what failed. `summary`
/// gets the worst error and the output it was in.
std::string runCheck(const AttentionEntry &entry, const std::string &caseDir,
                     double bound, const std::vector<std::string> &zeros,
                     std::string &summary) {
  const fwp::rt::ModuleInfo &info = entry.info();
  fwp::npy::EntryInputs in;
  try {
    in = fwp::npy::readEntryInputs(caseDir, info);
  } catch (const fwp::npy::ShapeError &error) {
    throw BundleError(error.what());
  }
  const fwp::rt::AttentionSignature &signature = in.signature;
  std::vector<std::vector<char>> out;
  std::vector<const void *> inPointers;
  std::vector<void *> outPointers;
  for (const std::vector<char> &buffer : in.buffers)
    inPointers.push_back(buffer.data());
  // Every output element must be overwritten: start from NaN.
  for (const fwp::rt::AttentionBuffer &buffer : signature.outputs) {
    fwp::npy::Array nans{buffer.sizes, info.dtype, {}};
    nans.values.assign(*fwp::rt::elementCount(buffer.sizes), NAN);
    out.push_back(fwp::npy::toBytes(nans, info.dtype));
    outPointers.push_back(out.back().data());
  }
  entry.run(in.seqLen, in.batch, inPointers, outPointers);

  std::string failures;
  double worst = -1;
  std::string worstName;
  for (size_t i = 0; i < out.size(); ++i) {
    const std::string &name = signature.outputs[i].name;
    std::vector<double> got =
        fwp::npy::fromBytes(out[i].data(), signature.outputs[i].sizes,
                            info.dtype)
            .values;
    if (std::find(zeros.begin(), zeros.end(), name) != zeros.end()) {
      if (!std::all_of(got.begin(), got.end(),
                       [](double v) { return v == 0.0; }))
        failures += fmt::format(" {} is not exactly zero;", name);
      continue;
    }
    std::string path = fmt::format("{}/expected/{}.npy", caseDir, name);
    fwp::npy::Array expected = fwp::npy::read(path);
    if (expected.shape != signature.outputs[i].sizes)
      throw BundleError(
          fmt::format("{}: shape {}, expected {}", path,
                      fwp::npy::formatShape(expected.shape),
                      fwp::npy::formatShape(signature.outputs[i].sizes)));
    double error = relativeError(got, expected.values);
    if (!(error <= bound))
      failures += fmt::format(" {} off by {:.3g};", name, error);
    if (!(error <= worst)) {
      worst = error;
      worstName = name;
    }
  }
  summary =
      fmt::format("relerr {:.3g} ({}) bound {:g}", worst, worstName, bound);
  return failures;
}

int check(const std::string &bundle) {
  auto rows = readTable(bundle + "/checks.txt", 5);
  Entries entries(bundle);
  int passed = 0, failed = 0;
  for (const auto &row : rows) {
    const std::string &label = row[4];
    const AttentionEntry &entry = entries.get(row[0]);
    entries.requireDevice(entry);
    std::string name = fwp::rt::entryPointName(entry.info().entry);
    std::string summary, failures;
    try {
      failures = runCheck(entry, bundle + "/" + row[1], std::stod(row[2]),
                          splitCommas(row[3]), summary);
    } catch (const BundleError &) {
      throw;
    } catch (const std::exception &error) {
      failures = std::string(" ") + error.what();
    }
    bool ok = failures.empty();
    (ok ? passed : failed) += 1;
    fmt::print("{} {:<8} {}: {}{}\n", ok ? "PASS" : "FAIL", name, label,
               summary, ok ? "" : " --" + failures);
  }
  fmt::print("checks: {} passed, {} failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}

//===----------------------------------------------------------------------===//
// bench
//===----------------------------------------------------------------------===//

/// Random inputs and room for the outputs of one entry point, on the
/// device for a GPU entry, else on the host.
class Buffers {
public:
  Buffers(const AttentionEntry &entry, int64_t seqLen, int64_t batch,
          uint64_t seed) {
    const fwp::rt::ModuleInfo &info = entry.info();
    fwp::rt::AttentionSignature signature = fwp::rt::attentionSignature(
        info.entry, seqLen, batch, info.heads, info.dModel);
    fwp::SplitMix64 random(seed);
    // Weights ~ N(0, 1/d_model), as nn.Linear's scale; x, dy ~ N(0, 1).
    double weightScale = 1.0 / std::sqrt(static_cast<double>(info.dModel));
    for (const fwp::rt::AttentionBuffer &buffer : signature.inputs) {
      bool steps = buffer.name == "x" || buffer.name == "dy";
      fwp::npy::Array values{buffer.sizes, info.dtype, {}};
      values.values.resize(*fwp::rt::elementCount(buffer.sizes));
      for (double &v : values.values)
        v = random.normal() * (steps ? 1.0 : weightScale);
      add(entry, fwp::npy::toBytes(values, info.dtype), true);
    }
    for (const fwp::rt::AttentionBuffer &buffer : signature.outputs)
      add(entry,
          std::vector<char>(*fwp::rt::elementCount(buffer.sizes) *
                            fwp::rt::dtypeBytes(info.dtype)),
          false);
  }

  void run(const AttentionEntry &entry, int64_t seqLen, int64_t batch) const {
    if (entry.runsOnDevice())
      entry.runOnDevice(seqLen, batch, deviceIn, deviceOut);
    else
      entry.run(seqLen, batch, hostIn, hostOut);
  }

private:
  void add(const AttentionEntry &entry, std::vector<char> bytes, bool input) {
    if (entry.runsOnDevice()) {
      device.push_back(fwp::rt::DeviceBuffer::fromHost(bytes));
      (input ? deviceIn : deviceOut).push_back(device.back().ptr());
      return;
    }
    host.push_back(std::move(bytes));
    if (input)
      hostIn.push_back(host.back().data());
    else
      hostOut.push_back(host.back().data());
  }

  std::vector<fwp::rt::DeviceBuffer> device;
  std::vector<uint64_t> deviceIn, deviceOut;
  // Moving a vector keeps its elements where they are, so the pointers in
  // hostIn and hostOut stay valid as `host` grows.
  std::vector<std::vector<char>> host;
  std::vector<const void *> hostIn;
  std::vector<void *> hostOut;
};

/// Median milliseconds of runs of `entry` after two warm-up runs: at least
/// 5 runs and `seconds` in all, at most 200.
double medianMilliseconds(const AttentionEntry &entry, int64_t seqLen,
                          int64_t batch, double seconds, int &runs) {
  Buffers buffers(entry, seqLen, batch, 7);
  for (int i = 0; i < 2; ++i)
    buffers.run(entry, seqLen, batch);
  std::vector<double> times;
  double total = 0;
  while (times.size() < 200 && (times.size() < 5 || total < seconds)) {
    auto start = std::chrono::steady_clock::now();
    buffers.run(entry, seqLen, batch);
    double t =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    times.push_back(t);
    total += t;
  }
  runs = static_cast<int>(times.size());
  std::sort(times.begin(), times.end());
  return times[times.size() / 2] * 1e3;
}

int bench(const std::string &bundle, double seconds) {
  auto rows = readTable(bundle + "/bench.txt", 5);
  Entries entries(bundle);
  bool printedDevice = false;
  for (const auto &row : rows) {
    int64_t seqLen = std::stoll(row[2]), batch = std::stoll(row[3]);
    for (const std::string &dir : {row[0], row[1]}) {
      const AttentionEntry &entry = entries.get(dir);
      entries.requireDevice(entry);
      if (!printedDevice) {
        fmt::print("device: {}\n",
                   entry.runsOnDevice()
                       ? fwp::rt::Context::primary().deviceName()
                       : std::string("host CPU"));
        printedDevice = true;
      }
      int runs = 0;
      double ms = medianMilliseconds(entry, seqLen, batch, seconds, runs);
      fmt::print("bench {:<8} {}: {:.3f} ms (median of {} runs)\n",
                 fwp::rt::entryPointName(entry.info().entry), row[4], ms, runs);
    }
  }
  return 0;
}

int usage() {
  fmt::print(stderr, "usage: fwp-gpu-check check BUNDLE\n"
                     "       fwp-gpu-check bench BUNDLE [--seconds S]\n");
  return 2;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 3)
    return usage();
  std::string command = argv[1], bundle = argv[2];
  try {
    if (command == "check" && argc == 3)
      return check(bundle);
    if (command == "bench" && (argc == 3 || argc == 5)) {
      double seconds = 1.0;
      if (argc == 5) {
        if (std::string(argv[3]) != "--seconds")
          return usage();
        char *end = nullptr;
        seconds = std::strtod(argv[4], &end);
        if (*end || !(seconds >= 0))
          return usage();
      }
      return bench(bundle, seconds);
    }
    return usage();
  } catch (const std::exception &error) {
    fmt::print(stderr, "fwp-gpu-check: {}\n", error.what());
    return 2;
  }
}
