//===- Options.cpp - Command line of fwp-run ------------------------------===//

#include "Options.h"
#include "Error.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <set>

namespace fwp::run {

const char *usage() {
  return "usage: fwp-run --inputs DIR --outputs DIR --heads H [--nu N] "
         "[--eps E]\n"
         "               [--rule delta|sum] [--backend reference|cpu|cuda]\n"
         "               [--chunk-size C] [--dump-ir DIR]\n"
         "\n"
         "Runs the fast-weight attention layer on .npy inputs.\n"
         "\n"
         "options:\n"
         "  --inputs DIR    directory holding the inputs (below)\n"
         "  --outputs DIR   directory to write the outputs to (created if "
         "missing)\n"
         "  --heads H       number of heads; must divide d_model\n"
         "  --nu N          DPFP order, 1 <= N <= 2*d_k-1 (default 1)\n"
         "  --eps E         DPFP normaliser epsilon, > 0 (default 1e-6)\n"
         "  --rule R        fast-weight update: delta (default) or sum\n"
         "  --backend B     where to run the layer:\n"
         "                    reference  float64 loops, forward and backward\n"
         "                    cpu        compiled for this CPU, in the "
         "inputs'\n"
         "                               dtype, forward and backward\n"
         "                    cuda       compiled to PTX and run on the GPU "
         "by the\n"
         "                               CUDA runtime, forward and backward\n"
         "                  without --backend: cuda if a CUDA GPU is usable,\n"
         "                  else cpu; the choice is printed on stderr\n"
         "  --chunk-size C  steps per chunk of the compiled scan, 1 to 4096 "
         "(default 64)\n"
         "  --dump-ir DIR   write the IR before and after every stage of the\n"
         "                  compilation to DIR/<backend>/NN-<pass>.mlir, and\n"
         "                  the PTX and launch plans to DIR/cuda (cpu and "
         "cuda\n"
         "                  backends; the PTX needs no GPU)\n"
         "  --help          print this text and exit\n"
         "\n"
         "inputs (.npy, all float32 or all float64, little-endian, C order):\n"
         "  x.npy       [seq_len, batch, d_model]\n"
         "  w_q.npy, w_k.npy, w_v.npy, w_o.npy   [d_model, d_model]\n"
         "  w_beta.npy  [heads, d_model]\n"
         "  b_o.npy     [d_model]\n"
         "  dy.npy      [seq_len, batch, d_model]  optional: also run the "
         "backward\n"
         "\n"
         "outputs (in the inputs' dtype):\n"
         "  y.npy; with dy.npy also dx.npy, dw_q.npy, dw_k.npy, dw_v.npy,\n"
         "  dw_beta.npy, dw_o.npy, db_o.npy\n"
         "\n"
         "All outputs are written to a temporary place first and renamed into\n"
         "DIR at the end, so DIR never holds a partial set of new outputs.\n"
         "Without dy.npy, stale gradient files from an earlier run are "
         "removed\n"
         "from DIR.\n"
         "\n"
         "exit status: 0 success, 2 bad usage or bad inputs, 1 other "
         "failure\n";
}

namespace {

bool parseInt(const std::string &text, int64_t &out) {
  if (text.empty() || std::isspace(static_cast<unsigned char>(text[0])))
    return false;
  errno = 0;
  char *end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || *end != '\0')
    return false;
  out = v;
  return true;
}

bool parseDouble(const std::string &text, double &out) {
  if (text.empty() || std::isspace(static_cast<unsigned char>(text[0])))
    return false;
  errno = 0;
  char *end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (errno != 0 || *end != '\0' || !std::isfinite(v))
    return false;
  out = v;
  return true;
}

} // namespace

Options parseOptions(int argc, const char *const *argv) {
  Options opts;
  std::set<std::string> seen;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      opts.help = true;
      return opts;
    }
    if (arg.rfind("--", 0) != 0)
      throw UsageError("unexpected argument '" + arg + "' (see --help)");

    std::string name = arg, value;
    bool hasValue = false;
    size_t eq = arg.find('=');
    if (eq != std::string::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      hasValue = true;
    }
    static const std::set<std::string> known = {
        "--inputs", "--outputs", "--heads",      "--nu",     "--eps",
        "--rule",   "--backend", "--chunk-size", "--dump-ir"};
    if (!known.count(name))
      throw UsageError("unknown option '" + name + "' (see --help)");
    if (!hasValue) {
      // A following option is not taken for a value: "--inputs --heads 2"
      // is a missing value, not an input directory named "--heads".
      if (i + 1 >= argc || std::string(argv[i + 1]).rfind("--", 0) == 0)
        throw UsageError("option " + name + " needs a value");
      value = argv[++i];
    }
    if (!seen.insert(name).second)
      throw UsageError("option " + name + " is given more than once");

    if (name == "--inputs" || name == "--outputs") {
      if (value.empty())
        throw UsageError("option " + name + " needs a non-empty directory");
      (name == "--inputs" ? opts.inputs : opts.outputs) = value;
    } else if (name == "--heads") {
      if (!parseInt(value, opts.heads) || opts.heads < 1)
        throw UsageError("--heads expects a positive integer, got '" + value +
                         "'");
    } else if (name == "--nu") {
      if (!parseInt(value, opts.nu))
        throw UsageError("--nu expects an integer, got '" + value + "'");
    } else if (name == "--eps") {
      if (!parseDouble(value, opts.eps) || !(opts.eps > 0))
        throw UsageError("--eps expects a finite number > 0, got '" + value +
                         "'");
    } else if (name == "--rule") {
      if (value == "delta")
        opts.rule = ref::Rule::Delta;
      else if (value == "sum")
        opts.rule = ref::Rule::Sum;
      else
        throw UsageError("unknown rule '" + value +
                         "' (expected delta or sum)");
    } else if (name == "--backend") {
      if (value.empty())
        throw UsageError("option --backend needs a non-empty name");
      opts.backend = value;
    } else if (name == "--dump-ir") {
      if (value.empty())
        throw UsageError("option --dump-ir needs a non-empty directory");
      opts.dumpIr = value;
    } else if (name == "--chunk-size") {
      if (!parseInt(value, opts.chunkSize) || opts.chunkSize < 1)
        throw UsageError("--chunk-size expects a positive integer, got '" +
                         value + "'");
    }
  }
  for (const char *required : {"--inputs", "--outputs", "--heads"})
    if (!seen.count(required))
      throw UsageError(std::string("missing required option ") + required +
                       " (see --help)");
  return opts;
}

} // namespace fwp::run
