//===- GpuBundleTest.cpp - The one-folder GPU check, tested here ----------===//
//
// The GPU bundle (make gpu-bundle) is run on a machine this suite never
// sees, so its machinery is tested here on the CPU: a bundle written for
// this host's CPU (--backend cpu --quick) must pass its checks against the
// float64 reference's answers, a wrong expectation must fail, a damaged
// module must be refused, and the runner must link neither MLIR nor LLVM.
// A CUDA bundle is written too: complete, small, and either passing on a
// GPU or refused with the reason where there is none.
//
//===----------------------------------------------------------------------===//

#include "fwp/Support/Npy.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace {

struct Result {
  int status;
  std::string output;
};

/// Runs `command` in a shell; its exit status and its stdout and stderr.
Result run(const std::string &command) {
  Result result{-1, ""};
  FILE *pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe)
    return result;
  char buffer[512];
  while (fgets(buffer, sizeof buffer, pipe))
    result.output += buffer;
  int status = pclose(pipe);
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

fs::path freshDir(const std::string &name) {
  fs::path dir =
      fs::path(::testing::TempDir()) / (name + "-" + std::to_string(getpid()));
  fs::remove_all(dir);
  return dir;
}

/// Writes a --quick bundle for `backend` into `dir`.
Result writeBundle(const fs::path &dir, const std::string &backend) {
  return run(std::string(FWP_GPU_BUNDLE_PATH) + " --quick --backend " +
             backend + " --out " + dir.string() +
             " --runner " FWP_GPU_CHECK_PATH
             " --script " FWP_GPU_BUNDLE_SCRIPT);
}

uintmax_t treeBytes(const fs::path &dir) {
  uintmax_t bytes = 0;
  for (const auto &entry : fs::recursive_directory_iterator(dir))
    if (entry.is_regular_file())
      bytes += entry.file_size();
  return bytes;
}

TEST(GpuBundleTest, RunnerLinksNeitherMlirNorLlvm) {
  Result libraries = run("ldd " FWP_GPU_CHECK_PATH);
  ASSERT_NE(libraries.output.find("libc.so"), std::string::npos)
      << libraries.output;
  EXPECT_EQ(libraries.output.find("libMLIR"), std::string::npos)
      << libraries.output;
  EXPECT_EQ(libraries.output.find("libLLVM"), std::string::npos)
      << libraries.output;
}

TEST(GpuBundleTest, CpuBundlePassesItsChecksAndCatchesWrongAnswers) {
  fs::path dir = freshDir("fwp-bundle-cpu");
  Result written = writeBundle(dir, "cpu");
  ASSERT_EQ(written.status, 0) << written.output;

  // The one command: 6 checks (3 forward, 3 backward), then the figures.
  Result all = run("bash " + (dir / "run.sh").string() + " --seconds 0");
  std::printf("%s", all.output.c_str());
  EXPECT_EQ(all.status, 0);
  EXPECT_NE(all.output.find("checks: 6 passed, 0 failed"), std::string::npos);
  EXPECT_NE(all.output.find("device: host CPU"), std::string::npos);
  EXPECT_NE(all.output.find("bench forward"), std::string::npos);
  EXPECT_NE(all.output.find("bench backward"), std::string::npos);

  // An expectation off by 1e-3 relative: that check, and only it, fails.
  fs::path y = dir / "checks" / "000" / "expected" / "y.npy";
  fwp::npy::Array expected = fwp::npy::read(y.string());
  for (double &v : expected.values)
    v *= 1.001;
  fwp::npy::write(y.string(), expected);
  Result wrong =
      run(std::string(FWP_GPU_CHECK_PATH) + " check " + dir.string());
  EXPECT_EQ(wrong.status, 1) << wrong.output;
  EXPECT_NE(wrong.output.find("FAIL forward"), std::string::npos)
      << wrong.output;
  EXPECT_NE(wrong.output.find("y off by"), std::string::npos) << wrong.output;
  EXPECT_NE(wrong.output.find("checks: 5 passed, 1 failed"), std::string::npos)
      << wrong.output;

  // A damaged module is refused, naming the file, never run.
  fs::path so = dir / "modules" / "00" / "forward" / "kernel.so";
  std::ofstream(so, std::ios::app) << "x";
  Result damaged =
      run(std::string(FWP_GPU_CHECK_PATH) + " check " + dir.string());
  EXPECT_EQ(damaged.status, 2) << damaged.output;
  EXPECT_NE(damaged.output.find("kernel.so"), std::string::npos)
      << damaged.output;
  fs::remove_all(dir);
}

TEST(GpuBundleTest, CudaBundleIsCompleteAndSmall) {
  fs::path dir = freshDir("fwp-bundle-cuda");
  Result written = writeBundle(dir, "cuda");
  ASSERT_EQ(written.status, 0) << written.output;
  int entries = 0;
  for (const auto &module : fs::directory_iterator(dir / "modules"))
    for (const char *entry : {"forward", "backward"})
      if (fs::exists(module.path() / entry)) {
        ++entries;
        EXPECT_TRUE(fs::exists(module.path() / entry / "plan.fwp"));
        EXPECT_TRUE(fs::exists(module.path() / entry / "module.txt"));
      }
  EXPECT_EQ(entries, 6); // 2 case descriptions and 1 bench shape, x2
  // A quick bundle's modules and checks: the whole bundle must stay well
  // under the device's 64 MiB (make gpu-bundle prints its size). The
  // runner is left out: a sanitizer build's is 50 MB, a release one 0.7.
  EXPECT_LT(treeBytes(dir / "modules") + treeBytes(dir / "checks"), 8u << 20);

  Result checked = run("bash " + (dir / "run.sh").string() + " --seconds 0");
  std::printf("%s", checked.output.c_str());
  if (checked.status == 2) {
    // No GPU here: refused with the reason, nothing reported as passed.
    EXPECT_NE(checked.output.find("no usable CUDA GPU"), std::string::npos);
    EXPECT_EQ(checked.output.find("PASS"), std::string::npos);
  } else {
    EXPECT_EQ(checked.status, 0);
    EXPECT_NE(checked.output.find("checks: 6 passed, 0 failed"),
              std::string::npos);
  }
  fs::remove_all(dir);
}

} // namespace
