//===- IO.cpp - Reading fwp-run's inputs, writing its outputs -------------===//

#include "IO.h"
#include "Error.h"

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <stdexcept>

#include <stdlib.h>
#include <sys/stat.h>

namespace fs = std::filesystem;

namespace fwp::run {

namespace {

/// Reads `dir/name`; returns nullopt if it is absent and `optional`.
std::optional<npy::Array> loadFile(const fs::path &dir, const char *name,
                                   bool optional) {
  fs::path path = dir / name;
  std::error_code ec;
  fs::file_status st = fs::status(path, ec);
  if (!fs::exists(st)) {
    if (optional)
      return std::nullopt;
    throw UsageError(
        fmt::format("missing input file {} in '{}'", name, dir.string()));
  }
  try {
    return npy::read(path.string());
  } catch (const std::runtime_error &e) {
    throw UsageError(e.what());
  }
}

void expectShape(const char *name, const npy::Array &a,
                 const std::vector<int64_t> &expected, const std::string &why) {
  if (a.shape != expected)
    throw UsageError(fmt::format("{} has shape {}, expected {} ({})", name,
                                 npy::formatShape(a.shape),
                                 npy::formatShape(expected), why));
}

void expectDtype(const char *name, const npy::Array &a, rt::DType dtype) {
  if (a.dtype != dtype)
    throw UsageError(fmt::format(
        "{} is {} but x.npy is {} (all inputs must have the same dtype)", name,
        npy::numpyName(a.dtype), npy::numpyName(dtype)));
}

void expectFinite(const char *name, const npy::Array &a) {
  for (size_t i = 0; i < a.values.size(); ++i) {
    double v = a.values[i];
    if (std::isfinite(v))
      continue;
    // The C-order multi-index of element i.
    std::vector<int64_t> index(a.shape.size());
    uint64_t rest = i;
    for (size_t d = a.shape.size(); d-- > 0;) {
      index[d] = static_cast<int64_t>(rest % a.shape[d]);
      rest /= a.shape[d];
    }
    const char *what = std::isnan(v) ? "nan" : v > 0 ? "inf" : "-inf";
    throw UsageError(fmt::format("{} has a non-finite value ({}) at index {}",
                                 name, what, npy::formatShape(index)));
  }
}

std::string stripTrailingSlashes(std::string dir) {
  while (dir.size() > 1 && dir.back() == '/')
    dir.pop_back();
  return dir;
}

fs::path makeTempDir(const fs::path &pattern) {
  std::string s = pattern.string();
  std::vector<char> buf(s.begin(), s.end());
  buf.push_back('\0');
  if (!mkdtemp(buf.data()))
    throw std::runtime_error(fmt::format(
        "cannot create temporary directory '{}': {}", s, std::strerror(errno)));
  return fs::path(buf.data());
}

void removeQuietly(const fs::path &path) {
  std::error_code ec;
  fs::remove_all(path, ec);
}

void renameOrThrow(const fs::path &from, const fs::path &to) {
  if (std::rename(from.c_str(), to.c_str()) != 0)
    throw std::runtime_error(fmt::format("cannot rename '{}' to '{}': {}",
                                         from.string(), to.string(),
                                         std::strerror(errno)));
}

} // namespace

Problem loadInputs(const Options &opts) {
  fs::path dir(opts.inputs);
  std::error_code ec;
  fs::file_status st = fs::status(dir, ec);
  if (!fs::exists(st))
    throw UsageError(
        fmt::format("input directory '{}' does not exist", opts.inputs));
  if (!fs::is_directory(st))
    throw UsageError(
        fmt::format("input path '{}' is not a directory", opts.inputs));

  Problem p;
  p.config.heads = opts.heads;
  p.config.nu = opts.nu;
  p.config.eps = opts.eps;
  p.config.rule = opts.rule;

  // x fixes the sizes and the dtype.
  npy::Array x = *loadFile(dir, "x.npy", false);
  if (x.shape.size() != 3)
    throw UsageError(
        fmt::format("x.npy has shape {}, expected [seq_len, batch, d_model]",
                    npy::formatShape(x.shape)));
  if (x.shape[2] < 1)
    throw UsageError(fmt::format("x.npy has shape {}, expected d_model >= 1",
                                 npy::formatShape(x.shape)));
  expectFinite("x.npy", x);
  p.dtype = x.dtype;
  p.shape.seqLen = x.shape[0];
  p.shape.batch = x.shape[1];
  int64_t d = p.shape.dModel = x.shape[2];
  p.x = std::move(x.values);

  // Options that must fit the sizes.
  int64_t heads = opts.heads;
  if (d % heads != 0)
    throw UsageError(fmt::format(
        "--heads {} does not divide d_model = {} (x.npy has shape {})", heads,
        d, npy::formatShape(x.shape)));
  int64_t dk = d / heads;
  if (opts.nu < 1 || opts.nu > 2 * dk - 1)
    throw UsageError(fmt::format(
        "--nu {} is out of range [1, {}] (d_k = d_model / heads = {})", opts.nu,
        2 * dk - 1, dk));

  std::string dm = fmt::format("d_model = {}", d);
  struct Param {
    const char *name;
    std::vector<int64_t> shape;
    std::string why;
    std::vector<double> *dest;
  } params[] = {
      {"w_q.npy", {d, d}, dm, &p.params.wQ},
      {"w_k.npy", {d, d}, dm, &p.params.wK},
      {"w_v.npy", {d, d}, dm, &p.params.wV},
      {"w_beta.npy",
       {heads, d},
       fmt::format("heads = {}, {}", heads, dm),
       &p.params.wBeta},
      {"w_o.npy", {d, d}, dm, &p.params.wO},
      {"b_o.npy", {d}, dm, &p.params.bO},
  };
  for (Param &param : params) {
    npy::Array a = *loadFile(dir, param.name, false);
    expectShape(param.name, a, param.shape, param.why);
    expectDtype(param.name, a, p.dtype);
    expectFinite(param.name, a);
    *param.dest = std::move(a.values);
  }

  if (std::optional<npy::Array> dy = loadFile(dir, "dy.npy", true)) {
    expectShape("dy.npy", *dy, {p.shape.seqLen, p.shape.batch, d},
                "the shape of x.npy");
    expectDtype("dy.npy", *dy, p.dtype);
    expectFinite("dy.npy", *dy);
    p.hasDy = true;
    p.dy = std::move(dy->values);
  }
  return p;
}

void checkOutputPath(const std::string &dir) {
  std::error_code ec;
  fs::file_status st = fs::status(stripTrailingSlashes(dir), ec);
  if (fs::exists(st) && !fs::is_directory(st))
    throw UsageError(
        fmt::format("output path '{}' exists and is not a directory", dir));
}

void writeOutputs(const std::string &dirArg,
                  const std::vector<OutputFile> &files,
                  const std::vector<std::string> &staleNames) {
  fs::path target(stripTrailingSlashes(dirArg));
  std::error_code ec;
  fs::file_status st = fs::status(target, ec);
  bool exists = fs::exists(st);
  if (exists && !fs::is_directory(st))
    throw std::runtime_error(
        fmt::format("output path '{}' exists and is not a directory", dirArg));

  fs::path tmp;
  if (exists) {
    tmp = makeTempDir(target / ".fwp-run.tmp-XXXXXX");
  } else {
    fs::path parent = target.parent_path();
    if (!parent.empty()) {
      fs::create_directories(parent, ec);
      if (ec)
        throw std::runtime_error(fmt::format("cannot create directory '{}': {}",
                                             parent.string(), ec.message()));
    }
    tmp = makeTempDir(fmt::format("{}.tmp-XXXXXX", target.string()));
  }

  try {
    for (const OutputFile &file : files)
      npy::write((tmp / file.name).string(), file.array);

    if (!exists) {
      // mkdtemp made the directory 0700; give it the usual mode.
      mode_t mask = umask(0);
      umask(mask);
      if (chmod(tmp.c_str(), 0777 & ~mask) != 0)
        throw std::runtime_error(fmt::format("cannot set the mode of '{}': {}",
                                             tmp.string(),
                                             std::strerror(errno)));
      renameOrThrow(tmp, target);
      return;
    }

    for (const OutputFile &file : files)
      renameOrThrow(tmp / file.name, target / file.name);
    for (const std::string &name : staleNames) {
      bool ours = false;
      for (const OutputFile &file : files)
        ours |= file.name == name;
      if (ours)
        continue;
      fs::remove(target / name, ec);
      if (ec)
        throw std::runtime_error(
            fmt::format("cannot remove stale output '{}': {}",
                        (target / name).string(), ec.message()));
    }
    removeQuietly(tmp);
  } catch (...) {
    removeQuietly(tmp);
    throw;
  }
}

} // namespace fwp::run
