//===- EmulatedDriverTest.cpp - The stand-in libcuda.so.1 itself ----------===//
//
// The stand-in driver through its C entry points, loaded by path as a
// program would load libcuda.so.1. Its settings are read once a process, so
// each case runs in a child process with the environment it needs: the
// counters report, deferred streams, several devices, sm_80, and the
// driver's answers to bad modules, bad launches and kernel faults.
//
//===----------------------------------------------------------------------===//

#include <gtest/gtest.h>

#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace {

using CUresult = int;
using CUdeviceptr = unsigned long long;

/// The entry points these tests call, resolved from the stand-in.
struct Api {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDeviceGetCount)(int *);
  CUresult (*cuDeviceGetName)(char *, int, int);
  CUresult (*cuDeviceGetAttribute)(int *, int, int);
  CUresult (*cuDevicePrimaryCtxRetain)(void **, int);
  CUresult (*cuCtxSetCurrent)(void *);
  CUresult (*cuCtxSynchronize)();
  CUresult (*cuStreamCreate)(void **, unsigned);
  CUresult (*cuStreamSynchronize)(void *);
  CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void *, size_t);
  CUresult (*cuMemcpyDtoH)(void *, CUdeviceptr, size_t);
  CUresult (*cuMemcpyDtoHAsync)(void *, CUdeviceptr, size_t, void *);
  CUresult (*cuModuleLoadDataEx)(void **, const void *, unsigned, int *,
                                 void **);
  CUresult (*cuModuleGetFunction)(void **, void *, const char *);
  CUresult (*cuLaunchKernel)(void *, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, unsigned, void *, void **,
                             void **);
  CUresult (*cuGetProcAddress)(const char *, void **, int, uint64_t);
};

template <typename F> void resolve(void *library, F &f, const char *name) {
  f = reinterpret_cast<F>(dlsym(library, name));
  if (!f) {
    std::fprintf(stderr, "missing %s\n", name);
    std::_Exit(3);
  }
}

Api load() {
  void *library = dlopen(FWP_EMULATED_CUDA_PATH, RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    std::fprintf(stderr, "%s\n", dlerror());
    std::_Exit(3);
  }
  Api api;
  resolve(library, api.cuInit, "cuInit");
  resolve(library, api.cuDeviceGetCount, "cuDeviceGetCount");
  resolve(library, api.cuDeviceGetName, "cuDeviceGetName");
  resolve(library, api.cuDeviceGetAttribute, "cuDeviceGetAttribute");
  resolve(library, api.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  resolve(library, api.cuCtxSetCurrent, "cuCtxSetCurrent");
  resolve(library, api.cuCtxSynchronize, "cuCtxSynchronize");
  resolve(library, api.cuStreamCreate, "cuStreamCreate");
  resolve(library, api.cuStreamSynchronize, "cuStreamSynchronize");
  resolve(library, api.cuMemAlloc, "cuMemAlloc_v2");
  resolve(library, api.cuMemcpyHtoD, "cuMemcpyHtoD_v2");
  resolve(library, api.cuMemcpyDtoH, "cuMemcpyDtoH_v2");
  resolve(library, api.cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2");
  resolve(library, api.cuModuleLoadDataEx, "cuModuleLoadDataEx");
  resolve(library, api.cuModuleGetFunction, "cuModuleGetFunction");
  resolve(library, api.cuLaunchKernel, "cuLaunchKernel");
  resolve(library, api.cuGetProcAddress, "cuGetProcAddress");
  return api;
}

/// Runs `body` in a child process with `environment` set ("NAME=VALUE"
/// entries); the child's exit status (0 when body returns true) and its
/// standard error.
std::pair<int, std::string> inChild(const std::vector<std::string> &environment,
                                    const std::function<bool(Api &)> &body) {
  char path[] = "/tmp/fwp-emulated-driver-XXXXXX";
  int log = mkstemp(path);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(log, 2);
    for (const std::string &entry : environment)
      putenv(const_cast<char *>(entry.c_str()));
    Api api = load();
    std::_Exit(body(api) ? 0 : 1);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  close(log);
  unlink(path);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, text.str()};
}

bool setUp(Api &api, int device = 0) {
  void *context = nullptr;
  return api.cuInit(0) == 0 &&
         api.cuDevicePrimaryCtxRetain(&context, device) == 0 &&
         api.cuCtxSetCurrent(context) == 0;
}

// out[i] = in[i] + 1 for i < 32; a load past the end when n > 32.
const char *const kPtx = R"(
.version 7.0
.target sm_80
.address_size 64
.visible .entry add_one(.param .u64 in, .param .u64 out, .param .u32 n)
{
  .reg .b32 %r<4>;
  .reg .f32 %f<3>;
  .reg .b64 %rd<6>;
  ld.param.u64 %rd1, [in];
  ld.param.u64 %rd2, [out];
  ld.param.u32 %r2, [n];
  mov.u32 %r1, %tid.x;
  mul.lo.u32 %r1, %r1, %r2;
  mul.wide.u32 %rd3, %r1, 4;
  add.s64 %rd4, %rd1, %rd3;
  add.s64 %rd5, %rd2, %rd3;
  ld.global.f32 %f1, [%rd4];
  add.f32 %f2, %f1, 0f3F800000;
  st.global.f32 [%rd5], %f2;
  ret;
}
)";

struct Buffers {
  CUdeviceptr in = 0, out = 0;
  void *function = nullptr;
};

/// Loads kPtx and two buffers of 32 floats (in = 0..31).
bool prepare(Api &api, Buffers &b) {
  void *module = nullptr;
  std::vector<float> in(32);
  for (int i = 0; i < 32; ++i)
    in[i] = float(i);
  return api.cuModuleLoadDataEx(&module, kPtx, 0, nullptr, nullptr) == 0 &&
         api.cuModuleGetFunction(&b.function, module, "add_one") == 0 &&
         api.cuMemAlloc(&b.in, 128) == 0 && api.cuMemAlloc(&b.out, 128) == 0 &&
         api.cuMemcpyHtoD(b.in, in.data(), 128) == 0;
}

CUresult launch(Api &api, Buffers &b, unsigned stride, void *stream = nullptr,
                unsigned threads = 32) {
  void *params[] = {&b.in, &b.out, &stride};
  return api.cuLaunchKernel(b.function, 1, 1, 1, threads, 1, 1, 0, stream,
                            params, nullptr);
}

TEST(EmulatedDriverTest, RunsAKernelAndNamesItself) {
  auto [status, log] = inChild({}, [](Api &api) {
    Buffers b;
    char name[64];
    std::vector<float> out(32);
    if (!setUp(api) || !prepare(api, b) || launch(api, b, 1) != 0 ||
        api.cuMemcpyDtoH(out.data(), b.out, 128) != 0 ||
        api.cuDeviceGetName(name, sizeof name, 0) != 0)
      return false;
    for (int i = 0; i < 32; ++i)
      if (out[i] != float(i) + 1)
        return false;
    return std::strcmp(name, "fwp PTX emulator (sm_90)") == 0;
  });
  EXPECT_EQ(status, 0) << log;
}

TEST(EmulatedDriverTest, FaultIsStickyAndReportedWithKernelLineAndAddress) {
  auto [status, log] = inChild({}, [](Api &api) {
    Buffers b;
    if (!setUp(api) || !prepare(api, b))
      return false;
    CUresult fault = launch(api, b, 64); // lanes past the end of `in`
    float one;
    return fault == 700 && api.cuMemcpyDtoH(&one, b.out, 4) == 700 &&
           api.cuCtxSynchronize() == 700;
  });
  EXPECT_EQ(status, 0) << log;
  for (const char *part : {"kernel add_one", "PTX line 18",
                           "ld.global.f32 %f1, [%rd4]", "past the end"})
    EXPECT_NE(log.find(part), std::string::npos) << part << " in " << log;
}

TEST(EmulatedDriverTest, DeferredStreamsRunOnlyWhenSynchronised) {
  auto [status, log] = inChild({"FWP_EMU_STREAMS=deferred"}, [](Api &api) {
    Buffers b;
    void *stream = nullptr;
    if (!setUp(api) || !prepare(api, b) ||
        api.cuStreamCreate(&stream, 0) != 0 || launch(api, b, 1, stream) != 0)
      return false;
    std::vector<float> out(32, -5.0f);
    if (api.cuMemcpyDtoHAsync(out.data(), b.out, 128, stream) != 0)
      return false;
    bool untouched = out[3] == -5.0f; // the copy waits for the sync
    return untouched && api.cuStreamSynchronize(stream) == 0 && out[3] == 4.0f;
  });
  EXPECT_EQ(status, 0) << log;
}

TEST(EmulatedDriverTest, CountersReportIsOneJsonLineALaunch) {
  std::string report = ::testing::TempDir() + "fwp-emu-report-" +
                       std::to_string(getpid()) + ".jsonl";
  std::remove(report.c_str());
  auto [status, log] = inChild({"FWP_EMU_REPORT=" + report}, [](Api &api) {
    Buffers b;
    return setUp(api) && prepare(api, b) && launch(api, b, 1) == 0 &&
           launch(api, b, 1) == 0;
  });
  EXPECT_EQ(status, 0) << log;
  std::ifstream in(report);
  std::string line;
  int lines = 0;
  while (std::getline(in, line)) {
    ++lines;
    EXPECT_NE(line.find("\"kernel\":\"add_one\""), std::string::npos) << line;
    // 32 lanes load 128 consecutive bytes: 4 sectors; the store as many.
    EXPECT_NE(line.find("\"global_sectors\":8"), std::string::npos) << line;
  }
  EXPECT_EQ(lines, 2);
  std::remove(report.c_str());
}

/// ptxas on PATH or in CUDA's default place, or "".
std::string findPtxas() {
  std::stringstream dirs(std::getenv("PATH") ? std::getenv("PATH") : "");
  std::string dir;
  while (std::getline(dirs, dir, ':'))
    if (access((dir + "/ptxas").c_str(), X_OK) == 0)
      return dir + "/ptxas";
  return access("/usr/local/cuda/bin/ptxas", X_OK) == 0
             ? "/usr/local/cuda/bin/ptxas"
             : "";
}

/// The registers `ptxas -v` reports for kPtx's kernel on sm_90.
int ptxasRegistersOfAddOne(const std::string &ptxas) {
  std::string ptx =
      ::testing::TempDir() + "fwp-add-one-" + std::to_string(getpid()) + ".ptx";
  std::ofstream(ptx) << kPtx;
  std::string command =
      ptxas + " -v --gpu-name sm_90 -o /dev/null " + ptx + " 2>&1";
  std::string output;
  if (FILE *pipe = popen(command.c_str(), "r")) {
    char buffer[1024];
    while (size_t n = fread(buffer, 1, sizeof buffer, pipe))
      output.append(buffer, n);
    pclose(pipe);
  }
  std::remove(ptx.c_str());
  size_t used = output.find("Used ");
  return used == std::string::npos ? -1 : std::atoi(&output[used + 5]);
}

/// The one line of the counters report of one launch of kPtx.
std::string reportOfOneLaunch(const std::string &ptxasSetting) {
  std::string report = ::testing::TempDir() + "fwp-emu-registers-" +
                       std::to_string(getpid()) + ".jsonl";
  std::remove(report.c_str());
  auto [status, log] =
      inChild({"FWP_EMU_REPORT=" + report, "FWP_EMU_PTXAS=" + ptxasSetting},
              [](Api &api) {
                Buffers b;
                return setUp(api) && prepare(api, b) && launch(api, b, 1) == 0;
              });
  EXPECT_EQ(status, 0) << log;
  std::ifstream in(report);
  std::string line;
  std::getline(in, line);
  std::remove(report.c_str());
  return line;
}

TEST(EmulatedDriverTest, CountersTakeRegistersFromPtxas) {
  std::string ptxas = findPtxas();
  if (ptxas.empty())
    GTEST_SKIP() << "no ptxas on this machine: the counters report the "
                    "PTX's virtual registers";
  int registers = ptxasRegistersOfAddOne(ptxas);
  ASSERT_GT(registers, 0) << "ptxas -v said no register count";
  std::string line = reportOfOneLaunch(ptxas);
  EXPECT_NE(
      line.find("\"registers_per_thread\":" + std::to_string(registers) + ","),
      std::string::npos)
      << line;
  EXPECT_NE(line.find("\"registers_source\":\"ptxas\""), std::string::npos)
      << line;
  // Without ptxas, the virtual registers the PTX uses: %r1-2, %f1-2 and
  // %rd1-5.
  line = reportOfOneLaunch("/nonexistent/ptxas");
  EXPECT_NE(line.find("\"registers_per_thread\":9,"), std::string::npos)
      << line;
  EXPECT_NE(line.find("\"registers_source\":\"ptx\""), std::string::npos)
      << line;
}

TEST(EmulatedDriverTest, DevicesAndChipByOption) {
  auto [status, log] =
      inChild({"FWP_EMU_DEVICES=2", "FWP_EMU_SM=80"}, [](Api &api) {
        int count = 0, major = 0, minor = 0, shared = 0;
        Buffers b;
        return api.cuInit(0) == 0 && api.cuDeviceGetCount(&count) == 0 &&
               count == 2 && api.cuDeviceGetAttribute(&major, 75, 1) == 0 &&
               api.cuDeviceGetAttribute(&minor, 76, 1) == 0 && major == 8 &&
               minor == 0 && api.cuDeviceGetAttribute(&shared, 97, 1) == 0 &&
               shared == 163 * 1024 && setUp(api, 1) && prepare(api, b) &&
               launch(api, b, 1) == 0;
      });
  EXPECT_EQ(status, 0) << log;
}

TEST(EmulatedDriverTest, RefusesModulesAndLaunchesItCannotRun) {
  auto [status, log] = inChild({"FWP_EMU_SM=80"}, [](Api &api) {
    if (!setUp(api))
      return false;
    std::string above = kPtx;
    above.replace(above.find("sm_80"), 5, "sm_90");
    char errors[256] = {};
    int options[] = {5, 6};
    void *values[] = {errors, reinterpret_cast<void *>(sizeof errors)};
    void *module = nullptr;
    bool refusedTarget = api.cuModuleLoadDataEx(&module, above.c_str(), 2,
                                                options, values) == 218 &&
                         std::strstr(errors, "sm_90") != nullptr;
    std::string unknown = kPtx;
    unknown.replace(unknown.find("add.f32"), 7, "frob.f32");
    bool refusedOpcode = api.cuModuleLoadDataEx(&module, unknown.c_str(), 2,
                                                options, values) == 218 &&
                         std::strstr(errors, "frob") != nullptr;
    Buffers b;
    bool refusedBlock =
        prepare(api, b) && launch(api, b, 1, nullptr, 2048) == 1;
    void *function = &b;
    bool noProcAddress =
        api.cuGetProcAddress("cuInit", &function, 12000, 0) == 500 &&
        function == nullptr;
    // A refused launch is not a fault: the context still works.
    return refusedTarget && refusedOpcode && refusedBlock && noProcAddress &&
           launch(api, b, 1) == 0;
  });
  EXPECT_EQ(status, 0) << log;
}

} // namespace
