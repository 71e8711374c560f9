//===- PtxKernelsTest.cpp - What the CUDA JIT makes, checked without a GPU
//-===//
//
// For every kernel description the JIT tests use (JitForwardTest.cpp,
// JitBackwardTest.cpp), the CUDA backend's output, forward and backward:
//
// - every PTX module assembles with ptxas for sm_90 with no spills (skipped,
//   saying so, where ptxas is not installed);
// - every launch of its launch plans, carried out on a recording device,
//   passes exactly the parameters (count and widths) that the kernel's PTX
//   entry declares, with grids and blocks in range; each plan's text reads
//   back to itself.
//
//===----------------------------------------------------------------------===//

#include "fwp/Emulator/Launch.h"
#include "fwp/JIT/JIT.h"
#include "fwp/Runtime/Driver.h"
#include "fwp/Runtime/PlanRun.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <string>
#include <unistd.h>
#include <vector>

using fwp::jit::DType;
using fwp::jit::KernelDesc;
using fwp::jit::Rule;

namespace {

struct DescCase {
  Rule rule;
  int64_t heads, dHead, nu, chunk;
  DType dtype = DType::F32;
};

/// The descriptions of the JIT tests (and one float64 of each rule, one
/// bf16 and one f16).
const DescCase kDescs[] = {
    {Rule::Delta, 1, 3, 3, 4},
    {Rule::Delta, 1, 4, 1, 8},
    {Rule::Delta, 1, 64, 2, 64},
    {Rule::Delta, 1, 64, 3, 16},
    {Rule::Delta, 2, 16, 2, 8},
    {Rule::Delta, 2, 3, 2, 2},
    {Rule::Delta, 2, 4, 1, 3},
    {Rule::Delta, 2, 4, 2, 8},
    {Rule::Delta, 2, 4, 3, 8},
    {Rule::Delta, 2, 64, 2, 16},
    {Rule::Delta, 3, 4, 3, 8},
    {Rule::Delta, 4, 16, 2, 64},
    {Rule::Delta, 6, 16, 1, 16},
    {Rule::Delta, 8, 4, 2, 16},
    {Rule::Sum, 1, 4, 1, 4},
    {Rule::Sum, 1, 64, 1, 16},
    {Rule::Sum, 2, 3, 2, 2},
    {Rule::Sum, 2, 3, 3, 3},
    {Rule::Sum, 2, 4, 2, 8},
    {Rule::Sum, 2, 64, 1, 64},
    {Rule::Sum, 3, 16, 1, 16},
    {Rule::Sum, 4, 4, 2, 16},
    {Rule::Sum, 5, 16, 3, 8},
    {Rule::Sum, 7, 4, 1, 8},
    {Rule::Delta, 2, 4, 3, 8, DType::F64},
    {Rule::Sum, 3, 16, 1, 16, DType::F64},
    {Rule::Delta, 2, 16, 2, 8, DType::BF16},
    {Rule::Sum, 1, 64, 1, 64, DType::F16},
};

KernelDesc cudaDesc(const DescCase &c) {
  KernelDesc d;
  d.rule = c.rule;
  d.heads = c.heads;
  d.dHead = c.dHead;
  d.nu = c.nu;
  d.chunkSize = c.chunk;
  d.dtype = c.dtype;
  d.backend = fwp::jit::Backend::Cuda;
  return d;
}

std::string findPtxas() {
  for (const char *candidate : {"/usr/local/cuda/bin/ptxas", "/usr/bin/ptxas"})
    if (std::filesystem::exists(candidate))
      return candidate;
  return "";
}

/// Runs `command`, returning its exit status and output.
std::pair<int, std::string> run(const std::string &command) {
  std::string output;
  FILE *pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe)
    return {-1, "popen failed"};
  char buffer[4096];
  while (size_t n = fread(buffer, 1, sizeof buffer, pipe))
    output.append(buffer, n);
  int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

/// A fresh directory for this process's PTX files.
std::filesystem::path scratchDir(const std::string &name) {
  std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) /
                              (name + "-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

/// The spill bytes (stores and loads) ptxas -v reports over all kernels.
int spillBytes(const std::string &ptxasOutput) {
  static const std::regex spills(
      R"((\d+) bytes spill stores, (\d+) bytes spill loads)");
  int bytes = 0;
  for (std::sregex_iterator it(ptxasOutput.begin(), ptxasOutput.end(), spills),
       end;
       it != end; ++it)
    bytes += std::stoi((*it)[1]) + std::stoi((*it)[2]);
  return bytes;
}

TEST(PtxKernelsTest, EveryKernelAssemblesForSm90WithoutSpills) {
  std::string ptxas = findPtxas();
  if (ptxas.empty())
    GTEST_SKIP() << "ptxas not found (install the CUDA toolkit to check PTX)";
  std::filesystem::path dir = scratchDir("fwp-ptx-kernels");
  int kernels = 0;
  for (const DescCase &c : kDescs) {
    KernelDesc desc = cudaDesc(c);
    SCOPED_TRACE(desc.str());
    auto code = fwp::jit::compile(desc)->deviceCode();
    ASSERT_FALSE(code.forwardPtx.empty());
    ASSERT_FALSE(code.backwardPtx.empty());
    std::vector<std::pair<std::string, std::string>> modules;
    for (const auto &[module, ptx] : code.forwardPtx)
      modules.emplace_back("forward-" + module, ptx);
    for (const auto &[module, ptx] : code.backwardPtx)
      modules.emplace_back("backward-" + module, ptx);
    for (const auto &[module, ptx] : modules) {
      std::filesystem::path file = dir / (module + ".ptx");
      std::ofstream(file) << ptx;
      auto [status, output] =
          run(ptxas + " -arch=sm_90 -v " + file.string() + " -o /dev/null");
      EXPECT_EQ(status, 0) << module << ":\n" << output;
      EXPECT_EQ(spillBytes(output), 0) << module << ":\n" << output;
      ++kernels;
    }
  }
  std::printf("[ ptxas    ] %d kernels assemble for sm_90 with 0 spill bytes\n",
              kernels);
}

/// Every instruction the compiler emits for the descriptions above is one
/// the PTX emulator (emulator/) has semantics for: a new opcode or form
/// fails here, naming it, before a CUDA test meets it on the emulator.
TEST(PtxKernelsTest, EmulatorRunsEveryInstructionTheCompilerEmits) {
  std::set<std::string> missing;
  int instructions = 0;
  for (const DescCase &c : kDescs) {
    KernelDesc desc = cudaDesc(c);
    SCOPED_TRACE(desc.str());
    auto code = fwp::jit::compile(desc)->deviceCode();
    for (const auto *modules : {&code.forwardPtx, &code.backwardPtx})
      for (const auto &[module, ptx] : *modules) {
        std::string error;
        auto parsed = fwp::emu::parsePtx(ptx, error);
        ASSERT_TRUE(parsed) << module << ": " << error;
        for (const auto &kernel : parsed->kernels)
          for (const fwp::emu::Instruction &inst : kernel->body) {
            ++instructions;
            if (!fwp::emu::hasSemantics(inst))
              missing.insert(inst.text + " (" + kernel->name + ")");
          }
      }
  }
  for (const std::string &text : missing)
    ADD_FAILURE() << "the emulator has no semantics for " << text;
  std::printf("[ emulator ] %d instructions, %zu without semantics\n",
              instructions, missing.size());
}

/// The byte widths of the parameters of PTX entry `kernel`.
std::vector<size_t> entryParameterWidths(const std::string &ptx,
                                         const std::string &kernel) {
  size_t start = ptx.find(".entry " + kernel + "(");
  if (start == std::string::npos)
    return {};
  std::string params = ptx.substr(start, ptx.find(')', start) - start);
  std::regex param(R"(\.param\s+\.([busf])(\d+))");
  std::vector<size_t> widths;
  for (std::sregex_iterator it(params.begin(), params.end(), param), end;
       it != end; ++it)
    widths.push_back(std::stoul((*it)[2]) / 8);
  return widths;
}

/// Records launches; memory is fake (nothing is read or written).
class RecordingDevice : public fwp::rt::PlanDevice {
public:
  explicit RecordingDevice(const std::map<std::string, std::string> &ptx)
      : ptx(ptx) {}
  uint64_t alloc(size_t) override { return next += 1 << 20; }
  void free(uint64_t) override {}
  void copy(uint64_t, uint64_t, size_t) override {}
  void launch(const std::string &module, const std::string &kernel,
              fwp::rt::Dim3 grid, fwp::rt::Dim3 block, unsigned shared,
              const std::vector<std::vector<uint8_t>> &params) override {
    SCOPED_TRACE(module + " " + kernel);
    auto it = ptx.find(module);
    ASSERT_NE(it, ptx.end());
    std::vector<size_t> widths = entryParameterWidths(it->second, kernel);
    ASSERT_EQ(widths.size(), params.size());
    for (size_t i = 0; i < widths.size(); ++i)
      EXPECT_EQ(params[i].size(), widths[i]) << "parameter " << i;
    EXPECT_GE(grid.x * grid.y * grid.z, 1u);
    EXPECT_LE(block.x * block.y * block.z, 1024u);
    EXPECT_EQ(shared, 0u);
    ++launches;
  }
  int launches = 0;

private:
  const std::map<std::string, std::string> &ptx;
  uint64_t next = 0;
};

/// At issue 9's shape (16 heads, d_k = 64, nu = 1: 128 features; chunk 64)
/// the products of the scan kernels and of the dense layers' kernels
/// (fwp-dense-to-tiles: the projections, the output layer, their input
/// and weight gradients), forward and backward, run on the tensor
/// cores (tf32x3 by default: mma.sync m16n8k8 tf32 with f32 accumulators)
/// from operands in shared memory (staged with cp.async, or kept there;
/// ldmatrix and ld.shared out), and each kernel assembles for sm_90 and sm_80
/// with no spills; its registers and shared memory are printed.
TEST(PtxKernelsTest, KernelsUseTensorCores) {
  std::string ptxas = findPtxas();
  if (ptxas.empty())
    GTEST_SKIP() << "ptxas not found (install the CUDA toolkit to check PTX)";
  std::filesystem::path dir = scratchDir("fwp-ptx-mma");
  std::regex registers(R"(Used (\d+) registers)");
  std::regex shared(R"((\d+) bytes smem)");
  auto count = [](const std::string &text, const std::string &what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos;
         at = text.find(what, at + 1))
      ++n;
    return n;
  };
  const std::string mma = "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32";
  for (const char *chip : {"sm_90", "sm_80"}) {
    KernelDesc desc = cudaDesc({Rule::Delta, 16, 64, 1, 64});
    desc.chip = chip;
    SCOPED_TRACE(desc.str());
    auto code = fwp::jit::compile(desc)->deviceCode();
    const std::pair<const char *, const std::map<std::string, std::string> *>
        kernels[] = {{"scan_prepare", &code.forwardPtx},
                     {"scan_state", &code.forwardPtx},
                     {"scan_state_grad", &code.backwardPtx},
                     {"scan_chunk_grad", &code.backwardPtx},
                     {"dense_rows", &code.forwardPtx},
                     {"dense_rows", &code.backwardPtx},
                     {"dense_weight_grad", &code.backwardPtx}};
    for (auto [kernel, module] : kernels) {
      auto found = module->find(kernel);
      ASSERT_NE(found, module->end()) << kernel;
      const std::string &ptx = found->second;
      size_t mmas = count(ptx, mma);
      EXPECT_GT(mmas, 0u) << kernel << " has no " << mma;
      // Operands come from shared memory: staged there (cp.async), or
      // tiles the kernel keeps there (fwp-gpu-tiles).
      EXPECT_GT(count(ptx, "ldmatrix.sync.aligned") + count(ptx, "ld.shared"),
                0u)
          << kernel;
      std::filesystem::path file =
          dir / (std::string(kernel) + "-" + chip + ".ptx");
      std::ofstream(file) << ptx;
      auto [status, output] = run(ptxas + " -arch=" + chip + " -v " +
                                  file.string() + " -o /dev/null");
      ASSERT_EQ(status, 0) << kernel << ":\n" << output;
      std::smatch used, smem;
      ASSERT_TRUE(std::regex_search(output, used, registers)) << output;
      ASSERT_TRUE(std::regex_search(output, smem, shared)) << output;
      int spills = spillBytes(output);
      EXPECT_EQ(spills, 0) << output;
      std::printf("[ ptxas    ] %s %s: %zu mma.sync, %zu cp.async, %zu "
                  "ldmatrix (static); %s registers, %s bytes shared, %d "
                  "spill bytes\n",
                  chip, kernel, mmas, count(ptx, "cp.async.ca.shared.global"),
                  count(ptx, "ldmatrix.sync.aligned"), used[1].str().c_str(),
                  smem[1].str().c_str(), spills);
    }
  }
}

TEST(PtxKernelsTest, PlansPassWhatEveryKernelDeclares) {
  for (const DescCase &c : kDescs) {
    KernelDesc desc = cudaDesc(c);
    SCOPED_TRACE(desc.str());
    auto code = fwp::jit::compile(desc)->deviceCode();
    fwp::rt::DType dtype = c.dtype;
    int64_t dm = desc.dModel(), seqLen = 37, batch = 2;
    std::vector<int64_t> steps = {seqLen, batch, dm}, square = {dm, dm},
                         gate = {desc.heads, dm}, bias = {dm};
    std::vector<std::vector<int64_t>> shapes = {steps, square, square, square,
                                                gate,  square, bias};
    for (bool backward : {false, true}) {
      std::vector<std::vector<int64_t>> args = shapes;
      if (backward) {
        args.push_back(steps); // dy
        args.insert(args.end(), shapes.begin(), shapes.end());
      } else {
        args.push_back(steps); // y
      }
      std::vector<fwp::rt::BufferRef> refs;
      for (size_t i = 0; i < args.size(); ++i)
        refs.push_back({0x1000 * (i + 1), args[i], dtype});
      const std::string &text = backward ? code.backwardPlan : code.forwardPlan;
      fwp::rt::Plan plan = fwp::rt::Plan::parse(text, "plan");
      // The exporter's plan, printed by the runtime, reads back to itself.
      EXPECT_EQ(plan.str(), text);
      RecordingDevice device(backward ? code.backwardPtx : code.forwardPtx);
      fwp::rt::execute(plan, device, refs);
      EXPECT_GT(device.launches, 0);
    }
  }
}

// Compiling for the GPU needs no GPU; running does, and says so.
TEST(PtxKernelsTest, WithoutAGpuTheFirstCallSaysWhy) {
  std::string whyNot;
  if (fwp::rt::cudaUsable(&whyNot))
    GTEST_SKIP() << "a CUDA GPU is usable here: nothing to refuse";
  KernelDesc desc = cudaDesc(kDescs[0]);
  auto kernel = fwp::jit::compile(desc);
  int64_t dm = desc.dModel();
  std::vector<float> x(dm), w(dm * dm), wBeta(desc.heads * dm), b(dm), y(dm);
  try {
    kernel->forward(1, 1, x.data(), w.data(), w.data(), w.data(), wBeta.data(),
                    w.data(), b.data(), y.data());
    ADD_FAILURE() << "forward ran without a GPU";
  } catch (const std::runtime_error &e) {
    EXPECT_NE(std::string(e.what()).find(whyNot), std::string::npos)
        << e.what();
  }
}

} // namespace
