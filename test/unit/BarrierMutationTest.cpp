//===- BarrierMutationTest.cpp - Removing any scan barrier is caught ------===//
//
// A mutation test of the CUDA scan's barriers on the stand-in driver (the
// PTX emulator): for each kernel of the delta and sum rules' launch plans,
// each `bar.sync` in turn is removed from the PTX in a copy of the disk
// cache, and the scan runs from that copy through the real runtime. The
// removal must be caught: by the emulator (a race, a read of memory never
// written, ...: the launch fails with a report) or by outputs or gradients
// no longer matching the float64 reference. A barrier whose removal is not
// caught is redundant (the compiler should not emit it) or a gap in the
// emulator's checks: the test fails naming each with its neighbouring PTX
// lines, for someone to decide which.
//
// Each mutant runs in a forked child: a kernel fault is the driver's sticky
// error, which fails every later launch of its process. The parent never
// starts the driver (a plan is loaded into it on its first run), so each
// child starts a fresh one, with the emulator settings of its schedule.
//
//===----------------------------------------------------------------------===//

#include "TestUtils.h"

#include "fwp/JIT/Scan.h"
#include "fwp/Reference/Reference.h"
#include "fwp/Runtime/Cuda.h"
#include "fwp/Runtime/ModuleInfo.h"
#include "fwp/Runtime/Plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <sstream>
#include <thread>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

namespace fs = std::filesystem;
using fwp::jit::Rule;
using fwp::jit::ScanDesc;
using fwp::test::randomFloats;

namespace {

// Small enough to emulate a few hundred times: three chunks of 16 (the last
// one partial), so that the state is carried from chunk to chunk twice.
constexpr int64_t kSeqLen = 40, kBatch = 1, kHeads = 1;
// The plans cap their grid-stride grids at 512 CTAs; at 2, each CTA loops
// over several chunks, as on long sequences, exercising the loop's barriers.
constexpr int kGridCap = 2;
// A mutant that runs longer than this is stuck (e.g. a deadlock).
constexpr int kChildSeconds = 120;

/// How the emulator orders a CTA's warps (FWP_EMU_SHUFFLE, FWP_EMU_SEED). In
/// order, each warp runs to its barrier before the next starts, which hides
/// some missing barriers; shuffled, warps interleave a few instructions at a
/// time. A mutant is caught if any schedule catches it.
struct Schedule {
  bool shuffle;
  unsigned seed;
  const char *name;
};
const std::vector<Schedule> kSchedules = {
    {false, 1, "in-order"}, {true, 1, "shuffled-1"}, {true, 2, "shuffled-2"}};

std::string readFile(const fs::path &path) {
  std::stringstream text;
  text << std::ifstream(path).rdbuf();
  return text.str();
}

std::vector<std::string> splitLines(const std::string &text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  return lines;
}

std::string unindent(const std::string &s) {
  size_t begin = s.find_first_not_of(" \t");
  return begin == std::string::npos ? "" : s.substr(begin);
}

/// One scan problem (f32 values, q and k raw: DPFP is fused into the scan)
/// and the float64 reference's results on it.
struct Problem {
  ScanDesc desc;
  std::vector<float> q, k, v, beta, initial, dy, dFinal;
  std::map<std::string, std::vector<double>> expected; // by result name
  explicit Problem(Rule rule) {
    desc.backend = fwp::jit::Backend::Cuda;
    desc.rule = rule;
    desc.dtype = fwp::jit::DType::F32;
    desc.dInput = desc.dValue = desc.chunkSize = 16;
    desc.nu = 1;
    desc.initial = desc.dFinalState = true;
    const int64_t D = desc.dFeature(), rows = kSeqLen * kBatch * kHeads,
                  states = kBatch * kHeads * desc.dValue * D;
    q = randomFloats(rows * desc.dInput, 1, 1.0);
    k = randomFloats(rows * desc.dInput, 2, 1.0);
    v = randomFloats(rows * desc.dValue, 3, 1.0);
    initial = randomFloats(states, 5, 0.5);
    dy = randomFloats(rows * desc.dValue, 6, 1.0);
    dFinal = randomFloats(states, 7, 0.5);
    if (rule == Rule::Delta)
      for (float b : randomFloats(rows, 4, 3.0))
        beta.push_back(1 / (1 + std::exp(-b)));
    fwp::ref::Rule refRule =
        rule == Rule::Delta ? fwp::ref::Rule::Delta : fwp::ref::Rule::Sum;
    fwp::ref::ScanShape shape{kSeqLen, kBatch, kHeads, D, desc.dValue};
    fwp::ref::ScanInputs in{features(q), features(k), wide(v), wide(beta),
                            wide(initial)};
    fwp::ref::ScanOutputs out = fwp::ref::scan(refRule, shape, in);
    fwp::ref::ScanGradients grad =
        fwp::ref::scanBackward(refRule, shape, in, wide(dy), wide(dFinal));
    expected = {{"y", out.y},
                {"final_state", out.finalState},
                {"dq", features(q, &grad.q)},
                {"dk", features(k, &grad.k)},
                {"dv", grad.v},
                {"dbeta", grad.beta},
                {"d_initial", grad.initialState}};
  }

  static std::vector<double> wide(const std::vector<float> &values) {
    return std::vector<double>(values.begin(), values.end());
  }
  /// DPFP features of the raw q or k rows, or (given the features'
  /// gradient) the rows' gradient.
  std::vector<double>
  features(const std::vector<float> &raw,
           const std::vector<double> *grad = nullptr) const {
    const size_t d = desc.dInput, D = desc.dFeature();
    std::vector<double> out;
    for (size_t r = 0; r < raw.size() / d; ++r) {
      std::vector<double> row(raw.begin() + r * d, raw.begin() + (r + 1) * d);
      std::vector<double> part =
          grad ? fwp::ref::dpfpBackward(
                     row, {grad->begin() + r * D, grad->begin() + (r + 1) * D},
                     desc.nu, desc.eps)
               : fwp::ref::dpfp(row, desc.nu, desc.eps);
      out.insert(out.end(), part.begin(), part.end());
    }
    return out;
  }
};

/// Runs the forward and/or backward plan in `cacheDir` on the problem;
/// returns the results that do not match the reference ("dq off by 0.3,
/// ..."), empty if all do. Throws what the runtime throws.
std::string runAndCompare(const Problem &p, const std::string &cacheDir,
                          bool forward, bool backward) {
  auto scan = fwp::jit::compileScanUncached(p.desc, cacheDir);
  // NaN-filled, so that an element a mutant leaves unwritten cannot match.
  std::map<std::string, std::vector<float>> got;
  for (const auto &[name, ref] : p.expected)
    got[name].assign(ref.size(), NAN);
  auto out = [&](const char *name) {
    return got[name].empty() ? nullptr : got[name].data();
  };
  const float *beta = p.beta.empty() ? nullptr : p.beta.data();
  if (forward)
    scan->forward(kSeqLen, kBatch, kHeads, p.q.data(), p.k.data(), p.v.data(),
                  beta, p.initial.data(), out("y"), out("final_state"));
  if (backward)
    scan->backward(kSeqLen, kBatch, kHeads, p.q.data(), p.k.data(), p.v.data(),
                   beta, p.initial.data(), p.dy.data(), p.dFinal.data(),
                   out("dq"), out("dk"), out("dv"), out("dbeta"),
                   out("d_initial"));
  std::string mismatches;
  for (const auto &[name, ref] : p.expected) {
    bool isOutput = name == "y" || name == "final_state";
    if (!(isOutput ? forward : backward))
      continue;
    // f32 with the products in tf32x3: CudaScanTest's bounds.
    double error = fwp::test::relativeError(Problem::wide(got[name]), ref);
    if (!(error <= (isOutput ? 1e-5 : 1e-4)))
      mismatches += (mismatches.empty() ? "" : ", ") + name + " off by " +
                    std::to_string(error);
  }
  return mismatches;
}

/// One compiled kernel: a module's PTX, held by one or both launch plans
/// (cache entries) of a scan.
struct Kernel {
  std::string module, ptx;
  std::vector<std::string> entries; // entry directory names under v1/
  bool inForward = false, inBackward = false;
  std::string label() const {
    return module + (inForward && inBackward ? " [fwd+bwd]"
                     : inForward             ? " [fwd]"
                                             : " [bwd]");
  }
  /// The 1-based PTX lines of its barriers.
  std::vector<int> barrierLines() const {
    std::vector<std::string> lines = splitLines(ptx);
    std::vector<int> barriers;
    for (size_t i = 0; i < lines.size(); ++i)
      if (unindent(lines[i]).rfind("bar.sync", 0) == 0)
        barriers.push_back(int(i + 1));
    return barriers;
  }
};

/// The kernels of the scan compiled into `cacheDir`, each distinct PTX text
/// once (both plans run the same scan_prepare, for instance).
std::vector<Kernel> kernelsInCache(const fs::path &cacheDir) {
  std::vector<Kernel> kernels;
  for (const auto &entry : fs::directory_iterator(cacheDir / "v1")) {
    fwp::rt::ModuleInfo info = fwp::rt::readModuleInfo(entry.path());
    for (const std::string &module :
         fwp::rt::Plan::parse(readFile(entry.path() / "plan.fwp"), "plan.fwp")
             .modules) {
      std::string ptx = readFile(entry.path() / (module + ".ptx"));
      auto same = std::find_if(kernels.begin(), kernels.end(), [&](auto &k) {
        return k.module == module && k.ptx == ptx;
      });
      Kernel &kernel = same != kernels.end()
                           ? *same
                           : kernels.emplace_back(Kernel{module, ptx, {}});
      kernel.entries.push_back(entry.path().filename());
      (info.entry == fwp::rt::EntryPoint::Forward ? kernel.inForward
                                                  : kernel.inBackward) = true;
    }
  }
  return kernels;
}

/// Applies `edit` to `<entry>/<file>` and updates the entry's manifest (the
/// cache would otherwise reject the entry and compile it afresh).
void editCacheFile(const fs::path &entry, const std::string &file,
                   const std::function<std::string(std::string)> &edit) {
  fwp::rt::ModuleInfo info = fwp::rt::readModuleInfo(entry);
  std::string edited = edit(readFile(entry / file)); // before truncating it
  std::ofstream(entry / file) << edited;
  std::vector<std::string> files;
  for (const auto &f : info.files)
    files.push_back(f.name);
  fwp::rt::writeModuleInfo(entry, info, files);
}

void capGrids(const fs::path &cacheDir) {
  for (const auto &entry : fs::directory_iterator(cacheDir / "v1"))
    editCacheFile(entry.path(), "plan.fwp", [](const std::string &plan) {
      return std::regex_replace(plan,
                                std::regex(R"(\(mins (v[0-9]+) [0-9]+\))"),
                                "(mins $1 " + std::to_string(kGridCap) + ")");
    });
}

/// Copies the cache `from` to `to` with the barrier at `line` of `kernel`
/// removed: commented out, so that the emulator's reports name the lines of
/// the original PTX.
void writeMutant(const fs::path &from, const fs::path &to, const Kernel &kernel,
                 int line) {
  fs::copy(from, to, fs::copy_options::recursive);
  std::vector<std::string> lines = splitLines(kernel.ptx);
  lines[line - 1] = "\t// " + unindent(lines[line - 1]) + " (removed)";
  std::string mutated;
  for (const std::string &l : lines)
    mutated += l + "\n";
  for (const std::string &entry : kernel.entries)
    editCacheFile(to / "v1" / entry, kernel.module + ".ptx",
                  [&](const std::string &) { return mutated; });
}

enum class Verdict { Reported, Mismatched, NotCaught, Skipped, Broken };
const char *const kVerdictNames[] = {"emulator report", "wrong results",
                                     "NOT CAUGHT", "skipped", "test broken"};

struct Outcome {
  Verdict verdict = Verdict::Broken;
  std::string detail;
};

/// A running child, and the files its standard error and its verdict
/// ("<kind>\t<detail>") go to.
struct Child {
  pid_t pid = -1;
  fs::path stderrPath, verdictPath;
  std::chrono::steady_clock::time_point started;
};

std::string childVerdict(const Problem &problem, const fs::path &cacheDir,
                         bool forward, bool backward) {
  std::string why;
  if (!fwp::rt::cudaUsable(&why))
    return "skip\t" + why;
  // On a GPU a missing barrier goes unnoticed or not, by chance.
  if (!fwp::rt::Context::primary().isEmulator())
    return "skip\tneeds the PTX emulator (the stand-in CUDA driver)";
  try {
    size_t compilations = fwp::jit::diskCacheCounts().compilations;
    std::string mismatches =
        runAndCompare(problem, cacheDir, forward, backward);
    if (fwp::jit::diskCacheCounts().compilations != compilations)
      return "broken\tthe cache entry was rejected and compiled afresh";
    return mismatches.empty() ? "match\t" : "mismatch\t" + mismatches;
  } catch (const std::exception &e) {
    return std::string("threw\t") + e.what();
  }
}

Child startChild(const Problem &problem, const fs::path &cacheDir,
                 const fs::path &filePrefix, bool forward, bool backward,
                 const Schedule &schedule) {
  Child child{-1, filePrefix.string() + ".stderr",
              filePrefix.string() + ".verdict",
              std::chrono::steady_clock::now()};
  std::fflush(nullptr); // or the child writes what is buffered once more
  child.pid = fork();
  if (child.pid < 0)
    throw std::runtime_error("fork failed");
  if (child.pid > 0)
    return child;
  dup2(open(child.stderrPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644),
       STDERR_FILENO);
  // One host thread: CTAs run in a fixed order, the verdict is the same on
  // every run.
  setenv("FWP_EMU_THREADS", "1", 1);
  setenv("FWP_EMU_SHUFFLE", schedule.shuffle ? "1" : "0", 1);
  setenv("FWP_EMU_SEED", std::to_string(schedule.seed).c_str(), 1);
  std::ofstream(child.verdictPath)
      << childVerdict(problem, cacheDir, forward, backward);
  _exit(0); // no destructors, no gtest output: the parent reports
}

Outcome finishChild(const Child &child, int status) {
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return {Verdict::Broken,
            "the child died (wait status " + std::to_string(status) + ")"};
  std::string text = readFile(child.verdictPath);
  size_t tab = text.find('\t');
  std::string kind = text.substr(0, tab), detail = text.substr(tab + 1);
  const std::string prefix = "fwp PTX emulator: ";
  std::string report;
  for (const std::string &line : splitLines(readFile(child.stderrPath)))
    if (report.empty() && line.rfind(prefix, 0) == 0)
      report = line.substr(prefix.size());
  if (kind == "threw" && !report.empty())
    return {Verdict::Reported, report};
  static const std::map<std::string, Verdict> verdicts = {
      {"mismatch", Verdict::Mismatched},
      {"match", Verdict::NotCaught},
      {"skip", Verdict::Skipped}};
  auto verdict = verdicts.find(kind);
  return verdict != verdicts.end() ? Outcome{verdict->second, detail}
                                   : Outcome{Verdict::Broken, text};
}

/// Runs jobs 0 .. jobs-1 in children, as many at once as there are cores,
/// each under one schedule after another until one catches it. A child that
/// outlives kChildSeconds is killed.
std::vector<Outcome>
runJobs(size_t jobs,
        const std::function<Child(size_t job, const Schedule &)> &startJob) {
  std::vector<Outcome> outcomes(jobs);
  std::vector<std::pair<size_t, size_t>> pending; // job, schedule
  for (size_t job = jobs; job-- > 0;)
    pending.push_back({job, 0});
  struct Running {
    size_t job, schedule;
    Child child;
  };
  std::map<pid_t, Running> running;
  size_t parallel = std::max(1u, std::thread::hardware_concurrency());
  while (!pending.empty() || !running.empty()) {
    while (!pending.empty() && running.size() < parallel) {
      auto [job, schedule] = pending.back();
      pending.pop_back();
      Child child = startJob(job, kSchedules[schedule]);
      running[child.pid] = {job, schedule, child};
    }
    int status = 0;
    auto done = running.find(waitpid(-1, &status, WNOHANG));
    if (done == running.end()) {
      for (auto &[pid, run] : running)
        if (std::chrono::steady_clock::now() - run.child.started >
            std::chrono::seconds(kChildSeconds))
          kill(pid, SIGKILL);
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      continue;
    }
    Running run = done->second;
    running.erase(done);
    Outcome outcome = finishChild(run.child, status);
    bool caught = outcome.verdict != Verdict::NotCaught;
    if (!caught && run.schedule + 1 < kSchedules.size())
      pending.push_back({run.job, run.schedule + 1});
    else
      outcomes[run.job] = {outcome.verdict,
                           caught ? std::string("[") +
                                        kSchedules[run.schedule].name + "] " +
                                        outcome.detail
                                  : "under every schedule"};
  }
  return outcomes;
}

/// A kernel with one barrier removed, in a cache of its own; with no
/// kernel, the unmutated scan.
struct Mutant {
  const Kernel *kernel;
  int line;
  fs::path cacheDir;
};

/// Runs each mutant (the plans that hold its kernel) in child processes.
std::vector<Outcome> runMutants(const Problem &problem,
                                const std::vector<Mutant> &mutants) {
  return runJobs(mutants.size(), [&](size_t job, const Schedule &schedule) {
    const Mutant &m = mutants[job];
    return startChild(problem, m.cacheDir,
                      m.cacheDir.string() + "-" + schedule.name,
                      !m.kernel || m.kernel->inForward,
                      !m.kernel || m.kernel->inBackward, schedule);
  });
}

class BarrierMutationTest : public ::testing::TestWithParam<Rule> {};

TEST_P(BarrierMutationTest, RemovingAnyBarrierIsCaught) {
  Problem problem(GetParam());
  struct RemovedOnExit {
    fs::path dir;
    ~RemovedOnExit() { fs::remove_all(dir); }
  } workDir{fs::path(::testing::TempDir()) /
            ("fwp-barrier-mutation-" + std::to_string(getpid()) + "-" +
             fwp::ruleName(GetParam()))};
  fs::path original = workDir.dir / "original";
  fs::create_directories(original);
  fwp::jit::compileScanUncached(problem.desc, original)->prepare();
  capGrids(original);
  // The unmutated scan must match under every schedule, or no verdict below
  // means anything.
  Outcome unmutated = runMutants(problem, {{nullptr, 0, original}})[0];
  if (unmutated.verdict == Verdict::Skipped)
    GTEST_SKIP() << unmutated.detail;
  ASSERT_EQ(unmutated.verdict, Verdict::NotCaught)
      << "the unmutated scan: " << unmutated.detail;

  std::vector<Kernel> kernels = kernelsInCache(original);
  std::vector<Mutant> mutants;
  for (const Kernel &kernel : kernels)
    for (int line : kernel.barrierLines()) {
      fs::path cacheDir =
          workDir.dir / (kernel.module + "-" + kernel.entries[0] + "-" +
                         std::to_string(line));
      writeMutant(original, cacheDir, kernel, line);
      mutants.push_back({&kernel, line, cacheDir});
    }
  ASSERT_FALSE(mutants.empty()) << "no barriers in " << original;
  std::vector<Outcome> outcomes = runMutants(problem, mutants);
  std::printf("%-22s %5s  %-15s %s\n", "kernel", "line", "caught by",
              "[schedule] how");
  std::string notCaught;
  for (size_t i = 0; i < mutants.size(); ++i) {
    const Mutant &m = mutants[i];
    const Outcome &o = outcomes[i];
    std::printf("%-22s %5d  %-15s %s\n", m.kernel->label().c_str(), m.line,
                kVerdictNames[int(o.verdict)], o.detail.substr(0, 150).c_str());
    EXPECT_TRUE(o.verdict != Verdict::Broken && o.verdict != Verdict::Skipped)
        << m.kernel->label() << " line " << m.line << ": " << o.detail;
    if (o.verdict != Verdict::NotCaught)
      continue;
    // Its neighbours, to decide if it is redundant or the checks miss it.
    std::vector<std::string> lines = splitLines(m.kernel->ptx);
    notCaught += "\n  " + m.kernel->label() + " PTX line " +
                 std::to_string(m.line) + ":";
    for (int l = std::max(1, m.line - 4);
         l <= std::min(int(lines.size()), m.line + 4); ++l)
      notCaught += "\n    " + std::to_string(l) +
                   (l == m.line ? " > " : "   ") + unindent(lines[l - 1]);
  }
  EXPECT_TRUE(notCaught.empty())
      << "removing these barriers changed nothing that the emulator or the "
         "reference sees (redundant barriers, or gaps in the checks):"
      << notCaught;
}

INSTANTIATE_TEST_SUITE_P(Rules, BarrierMutationTest,
                         ::testing::Values(Rule::Delta, Rule::Sum),
                         [](const auto &info) {
                           return fwp::ruleName(info.param);
                         });

} // namespace
