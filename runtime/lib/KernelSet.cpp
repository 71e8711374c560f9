//===- KernelSet.cpp - Launching ahead-of-time kernels by name ------------===//

#include "fwp/Runtime/KernelSet.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <utility>

namespace fwp::rt {

//===----------------------------------------------------------------------===//
// ArgValue
//===----------------------------------------------------------------------===//

ArgValue ArgValue::ptr(CUdeviceptr value) {
  Storage s;
  s.ptr = value;
  return ArgValue(ArgKind::Ptr, s);
}

ArgValue ArgValue::i64(int64_t value) {
  Storage s;
  s.i64 = value;
  return ArgValue(ArgKind::I64, s);
}

ArgValue ArgValue::i32(int32_t value) {
  Storage s;
  s.i32 = value;
  return ArgValue(ArgKind::I32, s);
}

ArgValue ArgValue::f32(float value) {
  Storage s;
  s.f32 = value;
  return ArgValue(ArgKind::F32, s);
}

ArgValue ArgValue::f64(double value) {
  Storage s;
  s.f64 = value;
  return ArgValue(ArgKind::F64, s);
}

//===----------------------------------------------------------------------===//
// Checking launches
//===----------------------------------------------------------------------===//

namespace {

std::string argList(const KernelSpec &kernel) {
  std::string out;
  for (const ArgSpec &arg : kernel.args)
    out += (out.empty() ? "" : ", ") + arg.name;
  return out.empty() ? "none" : out;
}

std::string kernelList(const Manifest &manifest) {
  std::string out;
  for (const KernelSpec &kernel : manifest.kernels)
    out += (out.empty() ? "" : ", ") + kernel.name;
  return out.empty() ? "none" : out;
}

void *checkedArg(const KernelSpec &kernel, const ArgSpec &arg,
                 const ArgValues &values) {
  auto it = values.find(arg.name);
  std::string where = "kernel '" + kernel.name + "': argument '" + arg.name;
  if (it == values.end())
    throw LaunchError(where + "' (" + argKindName(arg.kind) +
                      ") was not supplied");
  if (it->second.kind() != arg.kind)
    throw LaunchError(where + "' is " + argKindName(arg.kind) + " but " +
                      argKindName(it->second.kind()) + " was supplied");
  return it->second.address();
}

void checkNoExtraArgs(const KernelSpec &kernel, const ArgValues &values) {
  std::set<std::string> declared;
  for (const ArgSpec &arg : kernel.args)
    declared.insert(arg.name);
  for (const auto &entry : values)
    if (!declared.count(entry.first))
      throw LaunchError("kernel '" + kernel.name + "' has no argument '" +
                        entry.first + "' (arguments: " + argList(kernel) + ")");
}

} // namespace

std::vector<void *> packArgs(const KernelSpec &kernel,
                             const ArgValues &values) {
  std::vector<void *> args;
  for (const ArgSpec &arg : kernel.args)
    args.push_back(checkedArg(kernel, arg, values));
  checkNoExtraArgs(kernel, values);
  return args;
}

PreparedLaunch prepareLaunch(const Manifest &manifest,
                             const std::string &kernel, const Sizes &sizes,
                             const ArgValues &values) {
  PreparedLaunch launch;
  launch.kernel = manifest.find(kernel);
  if (!launch.kernel)
    throw LaunchError("no kernel '" + kernel + "' in the manifest (kernels: " +
                      kernelList(manifest) + ")");
  launch.shape = launch.kernel->resolveShape(sizes);
  launch.args = packArgs(*launch.kernel, values);
  return launch;
}

//===----------------------------------------------------------------------===//
// KernelSet
//===----------------------------------------------------------------------===//

KernelSet::KernelSet(Manifest manifest, const std::string &ptx,
                     const std::string &sourceName)
    : manifest_(std::move(manifest)), module_(ptx, sourceName) {
  for (const KernelSpec &kernel : manifest_.kernels)
    functions_[kernel.name] = module_.function(kernel.name);
}

KernelSet KernelSet::load(const std::string &basePath) {
  Manifest manifest = loadManifestFile(basePath + ".manifest");
  std::string ptxPath = basePath + ".ptx";
  return KernelSet(std::move(manifest), readTextFile(ptxPath), ptxPath);
}

CUfunction KernelSet::function(const std::string &kernel) const {
  auto it = functions_.find(kernel);
  if (it == functions_.end())
    throw LaunchError("no kernel '" + kernel + "' in " + module_.sourceName() +
                      " (kernels: " + kernelList(manifest_) + ")");
  return it->second;
}

void KernelSet::launch(const std::string &kernel, const Sizes &sizes,
                       const ArgValues &values, CUstream stream) const {
  PreparedLaunch prepared = prepareLaunch(manifest_, kernel, sizes, values);
  const LaunchShape &shape = prepared.shape;
  rt::launch(function(kernel), shape.grid, shape.block, shape.sharedBytes,
             stream, prepared.args.data());
}

//===----------------------------------------------------------------------===//
// Files
//===----------------------------------------------------------------------===//

std::string readTextFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw Error("cannot read file '" + path + "': " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad())
    throw Error("error reading file '" + path + "'");
  return text.str();
}

Manifest loadManifestFile(const std::string &path) {
  return Manifest::parse(readTextFile(path), path);
}

} // namespace fwp::rt
