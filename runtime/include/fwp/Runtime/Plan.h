//===- Plan.h - Launch plans: the structure, parsing, printing --*- C++ -*-===//
//
// A launch plan (docs/launch-plan.md, format version 1) is the host side of a
// compiled fwp function: which buffers to allocate, which integer values to
// compute, which kernels to launch with which arguments. This header holds
// the plan as a structure (Plan), reads it from text (Plan::parse,
// PlanParser.cpp) and prints it back (Plan::str, PlanPrinter.cpp). The
// compiler builds the structure directly (fwp/Target/LaunchPlan.h); text is
// only for files and dumps. Carrying a plan out is PlanRun.h; running it on a
// GPU, PlanCuda.h.
//
// Errors: a malformed plan throws PlanError "<source>:<line>: <problem>".
//
// Syntax details the format document leaves open, as this runtime reads them:
// - Expressions may contain blanks: `dim(arg0, 0)`, `(add v0 (mul v1 2))`.
//   Integers are decimal with an optional '-'. `dim(NAME, I)` takes an
//   integer literal I in [0, rank of NAME).
// - Names (values, buffers) are [A-Za-z_][A-Za-z0-9_.$]*; module and kernel
//   names may also contain '-' (never '/').
// - f32 / f64 literals are anything C's strtod reads completely (decimal,
//   hexadecimal floats such as 0x1.8p+1, inf, nan); they are printed back as
//   written. PlanLaunchArg::floating writes the shortest decimal that reads
//   back exactly.
// - index-bits is required, right after the header. `module` lines come
//   before `arg` lines, and both before the steps.
// - A `copy` needs SRC and DST of the same dtype (checked when parsing).
// - `result NAME` must name an earlier `alloc` or a view (through any chain
//   of views) of one; an argument, a view of an argument or a value is
//   refused when parsing. A result may come anywhere among the steps, and
//   later steps may still use its buffer. The result is the buffer as NAME
//   sees it: a view's sizes, its allocation's address. Two results may name
//   the same allocation (a function returning one buffer twice); they then
//   share its memory, which is handed over once.
// - i32 and index launch arguments must fit their signed width at run time.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_RUNTIME_PLAN_H
#define FWP_RUNTIME_PLAN_H

#include "fwp/Runtime/ElementType.h"
#include "fwp/Runtime/Error.h"

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace fwp::rt {

/// A malformed plan, or a plan that cannot run with the arguments given.
class PlanError : public Error {
public:
  using Error::Error;
};

/// The integer operators of expressions, named as in the format.
enum class PlanOp {
  Add,
  Sub,
  Mul,
  DivS,
  DivU,
  RemS,
  RemU,
  CeilDiv,
  CeilDivU,
  FloorDiv,
  MinS,
  MaxS,
  MinU,
  MaxU
};

/// "add", "ceildiv", ...
const char *planOpName(PlanOp op);
std::optional<PlanOp> parsePlanOp(const std::string &name);

/// `a OP b` as MLIR's arith dialect computes it on i64: add, sub and mul wrap
/// around; divs / rems truncate toward zero; ceildiv / floordiv are
/// arith.ceildivsi / arith.floordivsi; divu, remu, ceildivu, minu, maxu
/// treat both operands as unsigned (ceildivu: arith.ceildivui). Throws
/// PlanError("division by zero") for a zero divisor and PlanError("...
/// overflows") for INT64_MIN / -1 (which MLIR leaves undefined).
int64_t applyPlanOp(PlanOp op, int64_t a, int64_t b);

/// An integer expression.
struct PlanExpr {
  enum class Kind { Constant, Value, Dim, Op };
  Kind kind = Kind::Constant;
  int64_t constant = 0;           // Constant; Dim: the dimension index
  std::string name;               // Value: the value; Dim: the buffer
  PlanOp op = PlanOp::Add;        // Op
  std::vector<PlanExpr> operands; // Op: two

  static PlanExpr literal(int64_t value);
  static PlanExpr value(const std::string &name);
  static PlanExpr dim(const std::string &buffer, int64_t index);
  static PlanExpr apply(PlanOp op, PlanExpr lhs, PlanExpr rhs);

  /// As written in a plan: `42`, `v0`, `dim(arg0, 1)`, `(ceildiv v0 64)`.
  std::string str() const;
  bool operator==(const PlanExpr &other) const;
  bool operator!=(const PlanExpr &other) const { return !(*this == other); }
};

/// `arg NAME DTYPE D0 D1 ...`: a function argument; nullopt sizes are `?`.
struct PlanArg {
  std::string name;
  DType dtype = DType::F32;
  std::vector<std::optional<int64_t>> sizes;
  int line = 0; // not compared

  /// "f32 [?, 2, 4]"
  std::string shapeStr() const;
  bool operator==(const PlanArg &other) const {
    return name == other.name && dtype == other.dtype && sizes == other.sizes;
  }
};

/// One argument of a `launch`.
struct PlanLaunchArg {
  enum class Kind { Memref, Index, I32, I64, F32, F64 };
  Kind kind = Kind::Memref;
  std::string buffer; // Memref
  PlanExpr expr;      // Index, I32, I64
  double real = 0;    // F32, F64: the literal's value
  std::string text;   // F32, F64: the literal as written

  /// `memref BUFFER`.
  static PlanLaunchArg memref(const std::string &buffer);
  /// `index EXPR`, `i32 EXPR` or `i64 EXPR` (`kind` says which).
  static PlanLaunchArg integer(Kind kind, PlanExpr expr);
  /// `f32 LITERAL` or `f64 LITERAL`: `value` (rounded to float for F32)
  /// written as the shortest decimal that reads back to exactly it.
  static PlanLaunchArg floating(Kind kind, double value);

  /// "memref", "index", "i32", ...
  static const char *kindName(Kind kind);
  std::string str() const;
  bool operator==(const PlanLaunchArg &other) const;
};

/// One step of a plan (value, alloc, view, copy, launch or result).
struct PlanStep {
  enum class Kind { Value, Alloc, View, Copy, Launch, Result };
  Kind kind = Kind::Value;
  int line = 0; // not compared

  std::string name;            // Value, Alloc, View: the name defined
  PlanExpr expr;               // Value
  DType dtype = DType::F32;    // Alloc (View: the source's, for reference)
  std::vector<PlanExpr> sizes; // Alloc, View
  std::string source;          // View, Copy, Result: the buffer used
  std::string dest;            // Copy

  std::string module, kernel;      // Launch
  std::array<PlanExpr, 3> grid;    // Launch
  std::array<PlanExpr, 3> block;   // Launch
  PlanExpr shared;                 // Launch
  std::vector<PlanLaunchArg> args; // Launch

  /// The steps other than `launch`, as a writer of plans makes them (a
  /// launch has too many parts for one call: fill in its fields).
  static PlanStep value(const std::string &name, PlanExpr expr);
  static PlanStep alloc(const std::string &name, DType dtype,
                        std::vector<PlanExpr> sizes);
  static PlanStep view(const std::string &name, const std::string &source,
                       DType dtype, std::vector<PlanExpr> sizes);
  static PlanStep copy(const std::string &source, const std::string &dest);
  static PlanStep result(const std::string &source);

  /// The directive: "value", "alloc", ...
  static const char *kindName(Kind kind);
  /// How errors name the step: "value v1", "alloc b0", "copy b0 arg1",
  /// "launch MODULE KERNEL", "result b0".
  std::string describe() const;
  /// The step as a plan line (no newline).
  std::string str() const;
  bool operator==(const PlanStep &other) const;
};

struct Plan {
  static constexpr int kVersion = 1;
  std::string sourceName; // not compared; errors start with it
  unsigned indexBits = 64;
  std::vector<std::string> modules;
  std::vector<PlanArg> args;
  std::vector<PlanStep> steps;

  /// Parses plan `text`; errors throw PlanError "<sourceName>:<line>: ...".
  static Plan parse(const std::string &text, const std::string &sourceName);
  /// The plan as text (canonical spacing, no comments) that parse() reads
  /// back to an equal plan, with every arg and step on the line numberLines
  /// gives it.
  std::string str() const;
  /// Sets the line of every arg and step to the line str() prints it on, so
  /// that the errors of a plan built in memory point into its text.
  void numberLines();
  bool operator==(const Plan &other) const {
    return indexBits == other.indexBits && modules == other.modules &&
           args == other.args && steps == other.steps;
  }
  bool operator!=(const Plan &other) const { return !(*this == other); }
};

/// The contents of the file at `path`, byte for byte; throws Error naming
/// the file if it cannot be read.
std::string readTextFile(const std::string &path);

/// Parses the plan file at `path`; errors name the file.
Plan loadPlanFile(const std::string &path);

/// Writes a compiled module directory: `<dir>/plan.fwp` (plan.str()) and
/// `<dir>/<module>.ptx` for each entry of `ptx`, creating `dir` if needed.
/// Every module the plan names must be in `ptx`, and every entry of `ptx`
/// must have a module name; throws PlanError otherwise and Error if a file
/// cannot be written.
void writePlanDirectory(const std::string &dir, const Plan &plan,
                        const std::map<std::string, std::string> &ptx);
/// The same for a plan given as text, which is parsed first (errors name
/// `<dir>/plan.fwp`) and written as given.
void writePlanDirectory(const std::string &dir, const std::string &planText,
                        const std::map<std::string, std::string> &ptx);

} // namespace fwp::rt

#endif // FWP_RUNTIME_PLAN_H
