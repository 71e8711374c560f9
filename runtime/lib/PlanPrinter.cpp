//===- PlanPrinter.cpp - Writing launch plans as text ---------------------===//
//
// The one place plan text is made: Plan::str and the str() of its parts, in
// the canonical form (single blanks, no comments) that Plan::parse reads back
// to an equal plan, and the files of a compiled module directory.
//
//===----------------------------------------------------------------------===//

#include "PlanSyntax.h"

#include "fwp/Runtime/Files.h"
#include "fwp/Runtime/Plan.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace fwp::rt {
namespace {

/// Lines before the first module: the header and index-bits.
constexpr int kPreambleLines = 2;

/// " E0 E1 ...": each expression after a blank.
std::string exprList(const std::vector<PlanExpr> &exprs) {
  std::string out;
  for (const PlanExpr &e : exprs)
    fmt::format_to(std::back_inserter(out), " {}", e.str());
  return out;
}

std::string argLine(const PlanArg &arg) {
  std::string out = fmt::format("arg {} {}", arg.name, dtypeName(arg.dtype));
  for (const std::optional<int64_t> &size : arg.sizes)
    out += size ? fmt::format(" {}", *size) : std::string(" ?");
  return out;
}

std::string launchLine(const PlanStep &step) {
  std::string out = fmt::format(
      "launch {} {}{}", step.module, step.kernel,
      exprList({step.grid[0], step.grid[1], step.grid[2], step.block[0],
                step.block[1], step.block[2], step.shared}));
  for (const PlanLaunchArg &arg : step.args)
    fmt::format_to(std::back_inserter(out), " {}", arg.str());
  return out;
}

/// Checks that `ptx` has every one of `modules` and only names fit for
/// files, then writes `<dir>/plan.fwp` (`planText`) and the PTX files.
void writeDirectory(const std::string &dir, const std::string &planText,
                    const std::vector<std::string> &modules,
                    const std::map<std::string, std::string> &ptx) {
  std::string planPath = fmt::format("{}/plan.fwp", dir);
  for (const std::string &module : modules)
    if (!ptx.count(module))
      throw PlanError(
          fmt::format("{}: no PTX given for module '{}'", planPath, module));
  for (const auto &entry : ptx)
    if (!syntax::isSymbolName(entry.first))
      throw PlanError(fmt::format("bad module name '{}'", entry.first));
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error)
    throw Error(
        fmt::format("cannot create directory '{}': {}", dir, error.message()));
  writeFile(planPath, planText);
  for (const auto &entry : ptx)
    writeFile(fmt::format("{}/{}.ptx", dir, entry.first), entry.second);
}

} // namespace

std::string PlanExpr::str() const {
  switch (kind) {
  case Kind::Constant:
    return fmt::format("{}", constant);
  case Kind::Value:
    return name;
  case Kind::Dim:
    return fmt::format("dim({}, {})", name, constant);
  case Kind::Op:
    return fmt::format("({}{})", planOpName(op), exprList(operands));
  }
  return "?";
}

std::string PlanLaunchArg::str() const {
  switch (kind) {
  case Kind::Memref:
    return fmt::format("{} {}", kindName(kind), buffer);
  case Kind::Index:
  case Kind::I32:
  case Kind::I64:
    return fmt::format("{} {}", kindName(kind), expr.str());
  case Kind::F32:
  case Kind::F64:
    return fmt::format("{} {}", kindName(kind), text);
  }
  return kindName(kind);
}

std::string PlanStep::str() const {
  const char *directive = kindName(kind);
  switch (kind) {
  case Kind::Value:
    return fmt::format("{} {} {}", directive, name, expr.str());
  case Kind::Alloc:
    return fmt::format("{} {} {}{}", directive, name, dtypeName(dtype),
                       exprList(sizes));
  case Kind::View:
    return fmt::format("{} {} {}{}", directive, name, source, exprList(sizes));
  case Kind::Launch:
    return launchLine(*this);
  case Kind::Copy:
  case Kind::Result:
    return describe(); // their lines are how errors name them
  }
  return directive;
}

std::string Plan::str() const {
  std::string out =
      fmt::format("{}\nindex-bits {}\n", syntax::kHeader, indexBits);
  for (const std::string &module : modules)
    fmt::format_to(std::back_inserter(out), "module {}\n", module);
  for (const PlanArg &arg : args)
    fmt::format_to(std::back_inserter(out), "{}\n", argLine(arg));
  for (const PlanStep &step : steps)
    fmt::format_to(std::back_inserter(out), "{}\n", step.str());
  return out;
}

void Plan::numberLines() {
  int line = kPreambleLines + static_cast<int>(modules.size());
  for (PlanArg &arg : args)
    arg.line = ++line;
  for (PlanStep &step : steps)
    step.line = ++line;
}

void writePlanDirectory(const std::string &dir, const Plan &plan,
                        const std::map<std::string, std::string> &ptx) {
  writeDirectory(dir, plan.str(), plan.modules, ptx);
}

void writePlanDirectory(const std::string &dir, const std::string &planText,
                        const std::map<std::string, std::string> &ptx) {
  Plan plan = Plan::parse(planText, fmt::format("{}/plan.fwp", dir));
  writeDirectory(dir, planText, plan.modules, ptx);
}

} // namespace fwp::rt
