//===- Options.cpp - Command line of fwp-run ------------------------------===//
//
// The options are llvm::cl options of a private category, so that --help
// lists only them. fwp-run reports a bad command line as one line naming the
// first problem, where llvm::cl would print a line per problem, most of them
// straight to llvm::errs():
//  - the value parsers below write to parseErrors(), the stream that
//    ParseCommandLineOptions writes its own errors (an unknown option or
//    argument) to;
//  - llvm::cl takes the argument after an option as its value even when that
//    is another option, and reports a value missing at the end on
//    llvm::errs(): checkValuesGiven catches both before parsing;
//  - a repeated option silently overrides the earlier one, and cl::Required
//    reports on llvm::errs(): both are checked after parsing.
// Only llvm::cl's own options (a bad value such as --help=3) still report
// on llvm::errs().
//
//===----------------------------------------------------------------------===//

#include "Options.h"
#include "Error.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <fmt/format.h>

#include <cmath>
#include <vector>

namespace fwp::run {

namespace {

namespace cl = llvm::cl;
using llvm::StringRef;

//===----------------------------------------------------------------------===//
// Value parsers
//===----------------------------------------------------------------------===//

/// Where every problem found while parsing goes, one a line.
llvm::raw_string_ostream &parseErrors() {
  static std::string text;
  static llvm::raw_string_ostream stream(text);
  return stream;
}

/// Records a value that does not parse; true, as a parser returns on error.
bool badValue(const std::string &problem) {
  parseErrors() << problem << '\n';
  return true;
}

/// Decimal integers: llvm::cl's own parser also reads "010" as octal.
class IntegerParser : public cl::parser<long long> {
public:
  using cl::parser<long long>::parser;

  bool parse(cl::Option &, StringRef name, StringRef text, long long &value) {
    if (!text.getAsInteger(10, value))
      return false;
    return badValue(
        fmt::format("--{} expects an integer, got '{}'", name, text));
  }
};

class NumberParser : public cl::parser<double> {
public:
  using cl::parser<double>::parser;

  bool parse(cl::Option &, StringRef name, StringRef text, double &value) {
    if (!text.getAsDouble(value))
      return false;
    return badValue(fmt::format("--{} expects a number, got '{}'", name, text));
  }
};

/// "a", "a or b", "a, b or c".
std::string alternatives(const std::vector<StringRef> &names) {
  if (names.size() < 2)
    return llvm::join(names, "");
  return fmt::format("{} or {}", llvm::join(llvm::drop_end(names), ", "),
                     names.back());
}

/// The names of an enumerated option (cl::values).
template <typename Enum> class NameParser : public cl::parser<Enum> {
public:
  using cl::parser<Enum>::parser;

  bool parse(cl::Option &, StringRef name, StringRef text, Enum &value) {
    unsigned index = this->findOption(text);
    if (index < this->getNumOptions()) {
      value = this->Values[index].V.getValue();
      return false;
    }
    std::vector<StringRef> names;
    for (unsigned i = 0; i < this->getNumOptions(); ++i)
      names.push_back(this->getOption(i));
    return badValue(fmt::format("unknown {} '{}' (expected {})", name, text,
                                alternatives(names)));
  }
};

//===----------------------------------------------------------------------===//
// Options
//===----------------------------------------------------------------------===//

cl::OptionCategory category("fwp-run options");

cl::opt<std::string> inputs("inputs", cl::cat(category), cl::value_desc("DIR"),
                            cl::desc("directory holding the inputs (below); "
                                     "required"));

cl::opt<std::string>
    outputs("outputs", cl::cat(category), cl::value_desc("DIR"),
            cl::desc("directory to write the outputs to (created if\n"
                     "missing); required"));

cl::opt<long long, false, IntegerParser>
    heads("heads", cl::cat(category), cl::value_desc("H"),
          cl::desc("number of heads; must divide d_model; required"));

cl::opt<long long, false, IntegerParser>
    nu("nu", cl::cat(category), cl::value_desc("N"), cl::init(1),
       cl::desc("DPFP order, 1 <= N <= 2*d_k-1 (default 1)"));

cl::opt<double, false, NumberParser>
    eps("eps", cl::cat(category), cl::value_desc("E"), cl::init(1e-6),
        cl::desc("DPFP normaliser epsilon, > 0 (default 1e-6)"));

cl::opt<ref::Rule, false, NameParser<ref::Rule>>
    rule("rule", cl::cat(category), cl::init(ref::Rule::Delta),
         cl::desc("fast-weight update"),
         cl::values(clEnumValN(ref::Rule::Delta, "delta",
                               "W += beta (v - W k) k^T (default)"),
                    clEnumValN(ref::Rule::Sum, "sum", "W += v k^T")));

cl::opt<BackendKind, false, NameParser<BackendKind>> backend(
    "backend", cl::cat(category),
    cl::desc("where to run the layer; without --backend: cuda if a\n"
             "CUDA GPU is usable, else cpu (the choice is printed on\n"
             "stderr)"),
    cl::values(clEnumValN(BackendKind::Reference, "reference",
                          "float64 loops, forward and backward"),
               clEnumValN(BackendKind::Cpu, "cpu",
                          "compiled for this CPU, in the inputs' dtype,\n"
                          "forward and backward"),
               clEnumValN(BackendKind::Cuda, "cuda",
                          "compiled to PTX and run on the GPU by the CUDA\n"
                          "runtime, forward and backward")));

const std::string chunkSizeHelp =
    fmt::format("steps per chunk of the compiled scan, 1 to {} (default {})",
                kMaxChunkSize, kDefaultChunkSize);
cl::opt<long long, false, IntegerParser>
    chunkSize("chunk-size", cl::cat(category), cl::value_desc("C"),
              cl::init(kDefaultChunkSize), cl::desc(chunkSizeHelp));

cl::opt<rt::DType, false, NameParser<rt::DType>> computeType(
    "compute-type", cl::cat(category),
    cl::desc("the element type the compiled backends (cpu, cuda) run in;\n"
             "inputs are rounded to it and outputs written in the\n"
             "inputs' dtype (default: the inputs' dtype; NumPy has no\n"
             "bf16, so bf16 needs this)"),
    cl::values(clEnumValN(rt::DType::F32, "f32", "float32"),
               clEnumValN(rt::DType::F64, "f64", "float64"),
               clEnumValN(rt::DType::BF16, "bf16",
                          "bfloat16 storage, float32 arithmetic"),
               clEnumValN(rt::DType::F16, "f16",
                          "IEEE half storage, float32 arithmetic")));

cl::opt<std::string>
    dumpIr("dump-ir", cl::cat(category), cl::value_desc("DIR"),
           cl::desc("write the IR before and after every stage of the\n"
                    "compilation to DIR/<backend>/NN-<pass>.mlir, and the PTX\n"
                    "and launch plans to DIR/cuda (cpu and cuda backends; the\n"
                    "PTX needs no GPU)"));

cl::opt<bool> gpuStages(
    "gpu-stages", cl::cat(category),
    cl::desc("the cuda backend's scan (and the PTX that --dump-ir writes)\n"
             "as kernels of the chunk operations: chunk_wy,\n"
             "chunk_states_output and the gradients', instead of the\n"
             "default scan_prepare, scan_state, ... (the cpu backend's own\n"
             "kernels are the same either way)"));

constexpr const char *kOverview =
    "runs the fast-weight attention layer on .npy inputs\n\n"
    "  fwp-run --inputs DIR --outputs DIR --heads H [options]\n";

cl::extrahelp layouts(R"(
INPUTS (.npy, all float16, all float32 or all float64, little-endian,
C order):

  x.npy                               [seq_len, batch, d_model]
  w_q.npy, w_k.npy, w_v.npy, w_o.npy  [d_model, d_model]
  w_beta.npy                          [heads, d_model]
  b_o.npy                             [d_model]
  dy.npy                              [seq_len, batch, d_model], optional:
                                      also run the backward

OUTPUTS (in the inputs' dtype):

  y.npy; with dy.npy also dx.npy, dw_q.npy, dw_k.npy, dw_v.npy,
  dw_beta.npy, dw_o.npy, db_o.npy

  All outputs are written to a temporary place first and renamed into
  DIR at the end, so DIR never holds a partial set of new outputs.
  Without dy.npy, stale gradient files from an earlier run are removed
  from DIR.

EXIT STATUS: 0 success, 2 bad usage or bad inputs, 1 other failure
)");

//===----------------------------------------------------------------------===//
// Checks
//===----------------------------------------------------------------------===//

/// Refuses an option that needs a value but is the last argument or is
/// followed by another option ("--inputs --heads 2" is a missing value, not
/// an input directory named "--heads").
void checkValuesGiven(int argc, const char *const *argv) {
  const auto &registered = cl::getRegisteredOptions();
  for (int i = 1; i < argc; ++i) {
    StringRef name = argv[i];
    if (name == "--")
      return; // the rest is not options
    if (!name.consume_front("-") || name.contains('='))
      continue;
    name.consume_front("-");
    cl::Option *option = registered.lookup(name);
    if (!option || option->getValueExpectedFlag() != cl::ValueRequired)
      continue;
    if (i + 1 == argc || StringRef(argv[i + 1]).starts_with("--"))
      throw UsageError(fmt::format("option --{} needs a value", name));
    ++i; // its value
  }
}

/// The first problem ParseCommandLineOptions or a parser reported, without
/// the "<program>: " llvm::cl starts its lines with (report() adds its own).
std::string firstProblem(StringRef errors, StringRef program) {
  StringRef line = errors.split('\n').first;
  line.consume_front(fmt::format("{}: ", program));
  // Empty when llvm::cl printed the problem itself (a bad value for one of
  // its own options, such as --help=3).
  return line.empty() ? "bad command line (see --help)" : line.str();
}

bool isOurs(const cl::Option &option) {
  return llvm::is_contained(option.Categories, &category);
}

void checkOccurrences() {
  for (const auto &entry : cl::getRegisteredOptions())
    if (isOurs(*entry.second) && entry.second->getNumOccurrences() > 1)
      throw UsageError(fmt::format("option --{} is given more than once",
                                   entry.second->ArgStr));
  const cl::Option *required[] = {&inputs, &outputs, &heads};
  for (const cl::Option *option : required)
    if (option->getNumOccurrences() == 0)
      throw UsageError(fmt::format("missing required option --{} (see --help)",
                                   option->ArgStr));
}

/// The value of a directory option, which may be absent but not empty.
std::string directory(const cl::opt<std::string> &option) {
  if (option.getNumOccurrences() > 0 && option.empty())
    throw UsageError(
        fmt::format("option --{} needs a non-empty directory", option.ArgStr));
  return option;
}

int64_t positive(const cl::opt<long long, false, IntegerParser> &option) {
  if (option < 1)
    throw UsageError(fmt::format("--{} expects a positive integer, got '{}'",
                                 option.ArgStr, option.getValue()));
  return option;
}

double positiveFinite(const cl::opt<double, false, NumberParser> &option) {
  if (!std::isfinite(option) || !(option > 0))
    throw UsageError(fmt::format("--{} expects a finite number > 0, got '{}'",
                                 option.ArgStr, option.getValue()));
  return option;
}

} // namespace

Options parseOptions(int argc, const char *const *argv) {
  cl::HideUnrelatedOptions(category);
  checkValuesGiven(argc, argv);
  if (!cl::ParseCommandLineOptions(argc, argv, kOverview, &parseErrors()))
    throw UsageError(
        firstProblem(parseErrors().str(), llvm::sys::path::filename(argv[0])));
  checkOccurrences();

  Options opts;
  opts.inputs = directory(inputs);
  opts.outputs = directory(outputs);
  opts.heads = positive(heads);
  opts.nu = nu;
  opts.eps = positiveFinite(eps);
  opts.rule = rule;
  if (backend.getNumOccurrences() > 0)
    opts.backend = backend;
  opts.chunkSize = positive(chunkSize);
  opts.dumpIr = directory(dumpIr);
  opts.gpuStages = gpuStages || kDefaultGpuStages;
  if (computeType.getNumOccurrences() > 0)
    opts.computeType = computeType;
  return opts;
}

} // namespace fwp::run
