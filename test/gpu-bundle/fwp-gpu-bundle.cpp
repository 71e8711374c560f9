//===- fwp-gpu-bundle.cpp - Write the one-folder GPU check ----------------===//
//
//   fwp-gpu-bundle --out DIR --runner PATH --script PATH
//                  [--conformance PATH] [--backend cuda|cpu] [--chip sm_90]
//                  [--quick] [--no-bench]
//
// Writes DIR, everything a machine with a GPU and a CUDA driver but no
// compiler needs to check fwp's CUDA backend (docs/compiled-modules.md):
//
//   run.sh            the one command: the checks, then the benchmark
//   bin/fwp-gpu-check the runner (runtime only: no MLIR, no LLVM)
//   bin/fwp-ptx-conformance  with --conformance: the emulator's PTX
//                     instruction cases, which run.sh runs first (runtime
//                     only too)
//   modules/NN/       each kernel description's entry points, compiled here
//   checks/NNN/       one check's inputs and, under expected/, its outputs
//                     computed here by the float64 reference
//   checks.txt        ENTRY CASE BOUND EXACT_ZEROS LABEL, a check a line
//   bench.txt         FORWARD BACKWARD SEQ_LEN BATCH LABEL, a shape a line
//
// The checks are the CUDA tests' own: every case of AttentionCases.h,
// forward and backward, with its seed and bound. --backend cpu writes the
// same bundle for this host's CPU (how the bundle itself is tested without a
// GPU); --quick keeps three cases and the smallest benchmark shape;
// --no-bench leaves the benchmark out (the checks on the PTX emulator, whose
// speed is not a GPU's).
//
//===----------------------------------------------------------------------===//

#include "AttentionCases.h"

#include "fwp/JIT/JIT.h"
#include "fwp/Reference/Reference.h"
#include "fwp/Support/Npy.h"

#include "llvm/Support/CommandLine.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <map>

namespace fs = std::filesystem;
namespace cl = llvm::cl;
using fwp::jit::Backend;
using fwp::jit::DType;
using fwp::jit::EntryPoint;
using fwp::jit::KernelDesc;
using fwp::test::Case;
using fwp::test::CaseList;

namespace {

cl::opt<std::string> outDir("out", cl::Required, cl::desc("bundle folder"),
                            cl::value_desc("dir"));
cl::opt<std::string> runner("runner", cl::Required,
                            cl::desc("the fwp-gpu-check binary to ship"));
cl::opt<std::string> script("script", cl::Required,
                            cl::desc("the run.sh to ship"));
cl::opt<std::string> conformance(
    "conformance", cl::init(""),
    cl::desc("the fwp-ptx-conformance binary to ship (run.sh runs it first)"));
cl::opt<Backend>
    backend("backend", cl::init(Backend::Cuda), cl::desc("backend"),
            cl::values(clEnumValN(Backend::Cuda, "cuda", "NVIDIA GPUs"),
                       clEnumValN(Backend::Cpu, "cpu", "this host (to test)")));
cl::opt<std::string> chip("chip", cl::init(""),
                          cl::desc("CUDA chip (default sm_90)"));
cl::opt<bool> quick("quick", cl::desc("three cases, one small shape"));
cl::opt<bool> noBench("no-bench", cl::desc("the checks only, no benchmark"));

/// A benchmark shape: the module of `desc` on [seqLen, batch, d_model].
struct BenchShape {
  fwp::jit::Rule rule;
  int64_t heads, dHead, nu, seqLen, batch;
  DType dtype = DType::F32;
};

/// fwp-bench's shapes, and the forward issue's target shape (B=4, T=4096,
/// H=16, d_k=64, nu=1) in f32 and in bf16 (fla's peer runs in bf16).
const std::vector<BenchShape> kBenchShapes = {
    {fwp::jit::Rule::Delta, 4, 8, 1, 64, 1},
    {fwp::jit::Rule::Delta, 4, 16, 1, 256, 2},
    {fwp::jit::Rule::Delta, 4, 32, 2, 1024, 2},
    {fwp::jit::Rule::Delta, 4, 64, 1, 2048, 4},
    {fwp::jit::Rule::Sum, 4, 64, 1, 2048, 4},
    {fwp::jit::Rule::Delta, 16, 64, 1, 4096, 4},
    {fwp::jit::Rule::Delta, 16, 64, 1, 4096, 4, DType::BF16},
};

/// The bundle being written: entry points compiled once per description.
class Bundle {
public:
  explicit Bundle(fs::path root) : root(std::move(root)) {}

  /// The entry directory (relative to the bundle) of `entry` of `desc`,
  /// compiled on first use.
  std::string module(const KernelDesc &desc, EntryPoint entry) {
    auto [it, added] = modules.try_emplace(desc.str(), modules.size());
    std::string dir = fmt::format("modules/{:02}/{}", it->second,
                                  fwp::rt::entryPointName(entry));
    if (!fs::exists(root / dir)) {
      fwp::jit::compileEntry(desc, entry, (root / dir).string());
      fmt::print("compiled {} {}\n", desc.str(),
                 fwp::rt::entryPointName(entry));
    }
    return dir;
  }

  /// A new check directory (relative to the bundle), created.
  std::string newCheck() {
    std::string dir = fmt::format("checks/{:03}", checks++);
    fs::create_directories(root / dir / "expected");
    return dir;
  }

  void write(const std::string &dir, const std::string &name,
             const std::vector<int64_t> &shape,
             const std::vector<double> &values, DType dtype) const {
    fwp::npy::write((root / dir / (name + ".npy")).string(),
                    {shape, dtype, values});
  }

  const fs::path root;

private:
  std::map<std::string, size_t> modules;
  size_t checks = 0;
};

/// The inputs of the forward (and dy), in the kernel's element type.
void writeInputs(const Bundle &bundle, const std::string &dir,
                 const fwp::test::Problem &p, DType dtype, bool withDy) {
  int64_t dm = p.shape.dModel, heads = p.config.heads;
  std::vector<int64_t> steps = {p.shape.seqLen, p.shape.batch, dm};
  bundle.write(dir, "x", steps, p.x, dtype);
  bundle.write(dir, "w_q", {dm, dm}, p.params.wQ, dtype);
  bundle.write(dir, "w_k", {dm, dm}, p.params.wK, dtype);
  bundle.write(dir, "w_v", {dm, dm}, p.params.wV, dtype);
  bundle.write(dir, "w_beta", {heads, dm}, p.params.wBeta, dtype);
  bundle.write(dir, "w_o", {dm, dm}, p.params.wO, dtype);
  bundle.write(dir, "b_o", {dm}, p.params.bO, dtype);
  if (withDy)
    bundle.write(dir, "dy", steps, p.dy, dtype);
}

/// One check: inputs, the reference's outputs, and its line of checks.txt.
std::string writeCheck(Bundle &bundle, const CaseList &list, size_t index,
                       EntryPoint entry) {
  const Case &c = list.cases[index];
  KernelDesc desc = c.desc(list.dtype, backend);
  desc.chip = backend == Backend::Cuda ? chip.getValue() : "";
  std::string module = bundle.module(desc, entry);
  std::string dir = bundle.newCheck();
  fwp::test::Problem p =
      makeProblem(c, list.dtype, list.firstSeed + 10 * index);
  bool forward = entry == EntryPoint::Forward;
  // NumPy has no bf16: 16-bit inputs go in float32 files, which hold them
  // exactly; the runner converts them to the entry's element type.
  writeInputs(bundle, dir, p,
              fwp::rt::dtypeBytes(list.dtype) == 2 ? DType::F32 : list.dtype,
              !forward);
  std::string expected = dir + "/expected";
  int64_t dm = p.shape.dModel, heads = p.config.heads;
  std::vector<int64_t> steps = {p.shape.seqLen, p.shape.batch, dm};
  if (forward) {
    bundle.write(expected, "y", steps,
                 fwp::ref::attention(p.config, p.shape, p.x, p.params).y,
                 DType::F64);
  } else {
    fwp::ref::AttentionGradients g =
        fwp::ref::attentionBackward(p.config, p.shape, p.x, p.params, p.dy);
    bundle.write(expected, "dx", steps, g.x, DType::F64);
    bundle.write(expected, "dw_q", {dm, dm}, g.wQ, DType::F64);
    bundle.write(expected, "dw_k", {dm, dm}, g.wK, DType::F64);
    bundle.write(expected, "dw_v", {dm, dm}, g.wV, DType::F64);
    bundle.write(expected, "dw_beta", {heads, dm}, g.wBeta, DType::F64);
    bundle.write(expected, "dw_o", {dm, dm}, g.wO, DType::F64);
    bundle.write(expected, "db_o", {dm}, g.bO, DType::F64);
  }
  // The sum rule has no beta: its gradient must be exactly zero.
  bool zeroBeta = !forward && c.rule == fwp::jit::Rule::Sum;
  return fmt::format("{}\t{}\t{:g}\t{}\t{} {} {}\n", module, dir, list.bound,
                     zeroBeta ? "dw_beta" : "-", list.test,
                     fwp::rt::dtypeName(list.dtype), c.name());
}

std::string writeChecks(Bundle &bundle) {
  std::string table = "# ENTRY\tCASE\tBOUND\tEXACT_ZEROS\tLABEL\n";
  for (EntryPoint entry : {EntryPoint::Forward, EntryPoint::Backward}) {
    const std::vector<CaseList> &lists = entry == EntryPoint::Forward
                                             ? fwp::test::forwardCaseLists()
                                             : fwp::test::backwardCaseLists();
    for (const CaseList &list : lists) {
      if (quick && list.test != "DeltaRuleSmallChunks" &&
          list.test != "SumRule")
        continue;
      size_t count =
          quick ? (list.test == "SumRule" ? 1 : 2) : list.cases.size();
      for (size_t i = 0; i < count; ++i)
        table += writeCheck(bundle, list, i, entry);
    }
  }
  return table;
}

std::string writeBench(Bundle &bundle) {
  std::string table = "# FORWARD\tBACKWARD\tSEQ_LEN\tBATCH\tLABEL\n";
  if (noBench)
    return table;
  for (const BenchShape &s : kBenchShapes) {
    KernelDesc desc;
    desc.rule = s.rule;
    desc.heads = s.heads;
    desc.dHead = s.dHead;
    desc.nu = s.nu;
    desc.dtype = s.dtype;
    desc.backend = backend;
    desc.chip = backend == Backend::Cuda ? chip.getValue() : "";
    std::string forward = bundle.module(desc, EntryPoint::Forward);
    std::string backward = bundle.module(desc, EntryPoint::Backward);
    table += fmt::format("{}\t{}\t{}\t{}\t{} {} T={} B={} H={} dk={} nu={}\n",
                         forward, backward, s.seqLen, s.batch,
                         fwp::rt::dtypeName(desc.dtype), fwp::ruleName(s.rule),
                         s.seqLen, s.batch, s.heads, s.dHead, s.nu);
    if (quick)
      break;
  }
  return table;
}

void writeText(const fs::path &path, const std::string &text) {
  std::ofstream out(path);
  out << text;
  if (!out)
    throw std::runtime_error(path.string() + ": cannot write");
}

void copyExecutable(const fs::path &from, const fs::path &to) {
  fs::copy_file(from, to, fs::copy_options::overwrite_existing);
  fs::permissions(to, fs::perms::owner_all | fs::perms::group_read |
                          fs::perms::group_exec | fs::perms::others_read |
                          fs::perms::others_exec);
}

} // namespace

int main(int argc, char **argv) {
  cl::ParseCommandLineOptions(argc, argv, "fwp GPU bundle writer\n");
  try {
    fs::path root(outDir.getValue());
    fs::remove_all(root);
    fs::create_directories(root / "bin");
    Bundle bundle(root);
    writeText(root / "checks.txt", writeChecks(bundle));
    writeText(root / "bench.txt", writeBench(bundle));
    copyExecutable(runner.getValue(), root / "bin" / "fwp-gpu-check");
    if (!conformance.empty())
      copyExecutable(conformance.getValue(),
                     root / "bin" / "fwp-ptx-conformance");
    copyExecutable(script.getValue(), root / "run.sh");
    writeText(root / "BUILD.txt",
              fmt::format("backend {}\ncompiler {}\n",
                          backend == Backend::Cuda ? "cuda" : "cpu",
                          fwp::jit::compilerBuildId()));
  } catch (const std::exception &error) {
    fmt::print(stderr, "fwp-gpu-bundle: {}\n", error.what());
    return 1;
  }
  return 0;
}
