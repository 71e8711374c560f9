//===- Plan.cpp - The parts of a launch plan and its integer arithmetic ---===//
//
// Making, naming and comparing the parts of a plan, and the arithmetic of
// its expressions. Reading plans is PlanParser.cpp; writing them,
// PlanPrinter.cpp.
//
//===----------------------------------------------------------------------===//

#include "fwp/Runtime/Plan.h"

#include <fmt/format.h>

#include <cstring>
#include <limits>

namespace fwp::rt {

//===----------------------------------------------------------------------===//
// PlanOp
//===----------------------------------------------------------------------===//

namespace {

constexpr PlanOp kAllOps[] = {
    PlanOp::Add,      PlanOp::Sub,      PlanOp::Mul,  PlanOp::DivS,
    PlanOp::DivU,     PlanOp::RemS,     PlanOp::RemU, PlanOp::CeilDiv,
    PlanOp::CeilDivU, PlanOp::FloorDiv, PlanOp::MinS, PlanOp::MaxS,
    PlanOp::MinU,     PlanOp::MaxU};

bool isDivision(PlanOp op) {
  return op == PlanOp::DivS || op == PlanOp::DivU || op == PlanOp::RemS ||
         op == PlanOp::RemU || op == PlanOp::CeilDiv ||
         op == PlanOp::CeilDivU || op == PlanOp::FloorDiv;
}

/// The divisions whose quotient INT64_MIN / -1 does not fit.
bool isSignedQuotient(PlanOp op) {
  return op == PlanOp::DivS || op == PlanOp::CeilDiv || op == PlanOp::FloorDiv;
}

/// `a OP b` once the divisor is known to be safe.
int64_t applyChecked(PlanOp op, int64_t a, int64_t b) {
  const uint64_t ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
  switch (op) {
  case PlanOp::Add:
    return static_cast<int64_t>(ua + ub);
  case PlanOp::Sub:
    return static_cast<int64_t>(ua - ub);
  case PlanOp::Mul:
    return static_cast<int64_t>(ua * ub);
  case PlanOp::DivS:
    return a / b;
  case PlanOp::DivU:
    return static_cast<int64_t>(ua / ub);
  case PlanOp::RemS:
    return b == -1 ? 0 : a % b;
  case PlanOp::RemU:
    return static_cast<int64_t>(ua % ub);
  case PlanOp::CeilDiv: {
    int64_t q = a / b, r = a % b;
    return r != 0 && ((r > 0) == (b > 0)) ? q + 1 : q;
  }
  case PlanOp::CeilDivU:
    return static_cast<int64_t>(ua / ub + (ua % ub != 0));
  case PlanOp::FloorDiv: {
    int64_t q = a / b, r = a % b;
    return r != 0 && ((r > 0) != (b > 0)) ? q - 1 : q;
  }
  case PlanOp::MinS:
    return a < b ? a : b;
  case PlanOp::MaxS:
    return a > b ? a : b;
  case PlanOp::MinU:
    return ua < ub ? a : b;
  case PlanOp::MaxU:
    return ua > ub ? a : b;
  }
  return 0;
}

} // namespace

const char *planOpName(PlanOp op) {
  switch (op) {
  case PlanOp::Add:
    return "add";
  case PlanOp::Sub:
    return "sub";
  case PlanOp::Mul:
    return "mul";
  case PlanOp::DivS:
    return "divs";
  case PlanOp::DivU:
    return "divu";
  case PlanOp::RemS:
    return "rems";
  case PlanOp::RemU:
    return "remu";
  case PlanOp::CeilDiv:
    return "ceildiv";
  case PlanOp::CeilDivU:
    return "ceildivu";
  case PlanOp::FloorDiv:
    return "floordiv";
  case PlanOp::MinS:
    return "mins";
  case PlanOp::MaxS:
    return "maxs";
  case PlanOp::MinU:
    return "minu";
  case PlanOp::MaxU:
    return "maxu";
  }
  return "?";
}

std::optional<PlanOp> parsePlanOp(const std::string &name) {
  for (PlanOp op : kAllOps)
    if (name == planOpName(op))
      return op;
  return std::nullopt;
}

int64_t applyPlanOp(PlanOp op, int64_t a, int64_t b) {
  if (isDivision(op) && b == 0)
    throw PlanError("division by zero");
  if (isSignedQuotient(op) && a == std::numeric_limits<int64_t>::min() &&
      b == -1)
    throw PlanError(fmt::format("{} of {} by -1 overflows", planOpName(op), a));
  return applyChecked(op, a, b);
}

//===----------------------------------------------------------------------===//
// PlanExpr
//===----------------------------------------------------------------------===//

PlanExpr PlanExpr::literal(int64_t value) {
  PlanExpr e;
  e.kind = Kind::Constant;
  e.constant = value;
  return e;
}

PlanExpr PlanExpr::value(const std::string &name) {
  PlanExpr e;
  e.kind = Kind::Value;
  e.name = name;
  return e;
}

PlanExpr PlanExpr::dim(const std::string &buffer, int64_t index) {
  PlanExpr e;
  e.kind = Kind::Dim;
  e.name = buffer;
  e.constant = index;
  return e;
}

PlanExpr PlanExpr::apply(PlanOp op, PlanExpr lhs, PlanExpr rhs) {
  PlanExpr e;
  e.kind = Kind::Op;
  e.op = op;
  e.operands.push_back(std::move(lhs));
  e.operands.push_back(std::move(rhs));
  return e;
}

bool PlanExpr::operator==(const PlanExpr &other) const {
  if (kind != other.kind)
    return false;
  switch (kind) {
  case Kind::Constant:
    return constant == other.constant;
  case Kind::Value:
    return name == other.name;
  case Kind::Dim:
    return name == other.name && constant == other.constant;
  case Kind::Op:
    return op == other.op && operands == other.operands;
  }
  return false;
}

//===----------------------------------------------------------------------===//
// PlanArg, PlanLaunchArg
//===----------------------------------------------------------------------===//

std::string PlanArg::shapeStr() const {
  std::vector<std::string> dims;
  for (const std::optional<int64_t> &size : sizes)
    dims.push_back(size ? fmt::format("{}", *size) : "?");
  return fmt::format("{} [{}]", dtypeName(dtype), fmt::join(dims, ", "));
}

PlanLaunchArg PlanLaunchArg::memref(const std::string &buffer) {
  PlanLaunchArg arg;
  arg.kind = Kind::Memref;
  arg.buffer = buffer;
  return arg;
}

PlanLaunchArg PlanLaunchArg::integer(Kind kind, PlanExpr expr) {
  PlanLaunchArg arg;
  arg.kind = kind;
  arg.expr = std::move(expr);
  return arg;
}

PlanLaunchArg PlanLaunchArg::floating(Kind kind, double value) {
  PlanLaunchArg arg;
  arg.kind = kind;
  // fmt writes the shortest text that reads back to exactly the value (of
  // the float for F32, so "0.1" rather than the double's 17 digits), which
  // the parser's strtof / strtod turn back into `real`.
  if (kind == Kind::F32) {
    float single = static_cast<float>(value);
    arg.real = single;
    arg.text = fmt::format("{}", single);
  } else {
    arg.real = value;
    arg.text = fmt::format("{}", value);
  }
  return arg;
}

const char *PlanLaunchArg::kindName(Kind kind) {
  switch (kind) {
  case Kind::Memref:
    return "memref";
  case Kind::Index:
    return "index";
  case Kind::I32:
    return "i32";
  case Kind::I64:
    return "i64";
  case Kind::F32:
    return "f32";
  case Kind::F64:
    return "f64";
  }
  return "?";
}

bool PlanLaunchArg::operator==(const PlanLaunchArg &other) const {
  if (kind != other.kind)
    return false;
  switch (kind) {
  case Kind::Memref:
    return buffer == other.buffer;
  case Kind::Index:
  case Kind::I32:
  case Kind::I64:
    return expr == other.expr;
  case Kind::F32:
  case Kind::F64:
    // Bit equality, so that NaN literals compare equal to themselves.
    return std::memcmp(&real, &other.real, sizeof(real)) == 0;
  }
  return false;
}

//===----------------------------------------------------------------------===//
// PlanStep
//===----------------------------------------------------------------------===//

namespace {

PlanStep stepOf(PlanStep::Kind kind, const std::string &name = "") {
  PlanStep step;
  step.kind = kind;
  step.name = name;
  return step;
}

} // namespace

PlanStep PlanStep::value(const std::string &name, PlanExpr expr) {
  PlanStep step = stepOf(Kind::Value, name);
  step.expr = std::move(expr);
  return step;
}

PlanStep PlanStep::alloc(const std::string &name, DType dtype,
                         std::vector<PlanExpr> sizes) {
  PlanStep step = stepOf(Kind::Alloc, name);
  step.dtype = dtype;
  step.sizes = std::move(sizes);
  return step;
}

PlanStep PlanStep::view(const std::string &name, const std::string &source,
                        DType dtype, std::vector<PlanExpr> sizes) {
  PlanStep step = alloc(name, dtype, std::move(sizes));
  step.kind = Kind::View;
  step.source = source;
  return step;
}

PlanStep PlanStep::copy(const std::string &source, const std::string &dest) {
  PlanStep step = stepOf(Kind::Copy);
  step.source = source;
  step.dest = dest;
  return step;
}

PlanStep PlanStep::result(const std::string &source) {
  PlanStep step = stepOf(Kind::Result);
  step.source = source;
  return step;
}

const char *PlanStep::kindName(Kind kind) {
  switch (kind) {
  case Kind::Value:
    return "value";
  case Kind::Alloc:
    return "alloc";
  case Kind::View:
    return "view";
  case Kind::Copy:
    return "copy";
  case Kind::Launch:
    return "launch";
  case Kind::Result:
    return "result";
  }
  return "?";
}

std::string PlanStep::describe() const {
  const char *directive = kindName(kind);
  switch (kind) {
  case Kind::Value:
  case Kind::Alloc:
  case Kind::View:
    return fmt::format("{} {}", directive, name);
  case Kind::Copy:
    return fmt::format("{} {} {}", directive, source, dest);
  case Kind::Launch:
    return fmt::format("{} {} {}", directive, module, kernel);
  case Kind::Result:
    return fmt::format("{} {}", directive, source);
  }
  return directive;
}

bool PlanStep::operator==(const PlanStep &other) const {
  if (kind != other.kind)
    return false;
  switch (kind) {
  case Kind::Value:
    return name == other.name && expr == other.expr;
  case Kind::Alloc:
    return name == other.name && dtype == other.dtype && sizes == other.sizes;
  case Kind::View:
    return name == other.name && source == other.source && sizes == other.sizes;
  case Kind::Copy:
    return source == other.source && dest == other.dest;
  case Kind::Launch:
    return module == other.module && kernel == other.kernel &&
           grid == other.grid && block == other.block &&
           shared == other.shared && args == other.args;
  case Kind::Result:
    return source == other.source;
  }
  return false;
}

} // namespace fwp::rt
