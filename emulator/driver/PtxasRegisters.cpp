//===- PtxasRegisters.cpp - Registers per thread, as ptxas allocates them -===//
//
// The counters report the registers a kernel's threads use, which decide
// how many CTAs fit on a multiprocessor. PTX declares virtual registers;
// the real count is ptxas's. When a report is asked for and ptxas is found
// (FWP_EMU_PTXAS, else PATH, else /usr/local/cuda/bin), each module is
// assembled once at load, for the emulated chip, and `ptxas -v` says.
//
//===----------------------------------------------------------------------===//

#include "DriverState.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <unistd.h>

namespace fwp::emu::driver {
namespace {

bool isExecutable(const std::string &path) {
  return !path.empty() && access(path.c_str(), X_OK) == 0;
}

std::string findPtxas() {
  if (const char *chosen = std::getenv("FWP_EMU_PTXAS"))
    return isExecutable(chosen) ? chosen : "";
  if (const char *path = std::getenv("PATH")) {
    std::stringstream dirs(path);
    std::string dir;
    while (std::getline(dirs, dir, ':'))
      if (isExecutable(dir + "/ptxas"))
        return dir + "/ptxas";
  }
  return isExecutable("/usr/local/cuda/bin/ptxas") ? "/usr/local/cuda/bin/ptxas"
                                                   : "";
}

} // namespace

std::map<std::string, unsigned> ptxasRegisters(const std::string &ptx,
                                               unsigned sm) {
  static const std::string ptxas = findPtxas();
  std::map<std::string, unsigned> registers;
  if (ptxas.empty())
    return registers;
  char path[] = "/tmp/fwp-emulator-XXXXXX.ptx";
  int file = mkstemps(path, 4);
  if (file < 0)
    return registers;
  close(file);
  std::ofstream(path) << ptx;
  std::string command = "'" + ptxas + "' -v --gpu-name sm_" +
                        std::to_string(sm) + " -o /dev/null '" + path +
                        "' 2>&1";
  std::string output;
  if (FILE *pipe = popen(command.c_str(), "r")) {
    char buffer[4096];
    while (size_t n = fread(buffer, 1, sizeof buffer, pipe))
      output.append(buffer, n);
    pclose(pipe);
  }
  std::remove(path);
  // "Compiling entry function 'k' for 'sm_90'" ... "Used 156 registers"
  const std::string entry = "Compiling entry function '", used = "Used ";
  std::string kernel;
  std::stringstream lines(output);
  std::string line;
  while (std::getline(lines, line)) {
    if (size_t at = line.find(entry); at != std::string::npos) {
      size_t begin = at + entry.size();
      kernel = line.substr(begin, line.find('\'', begin) - begin);
    } else if (size_t at = line.find(used);
               at != std::string::npos && !kernel.empty() &&
               line.find(" registers", at) != std::string::npos) {
      registers[kernel] =
          unsigned(std::strtoul(&line[at + used.size()], nullptr, 10));
    }
  }
  return registers;
}

} // namespace fwp::emu::driver
