//===- Manifest.cpp - Parsing and writing kernel manifests ----------------===//

#include "fwp/Runtime/Manifest.h"

#include <cctype>
#include <limits>
#include <set>
#include <sstream>

namespace fwp::rt {
namespace {

constexpr int64_t kMaxGridX = std::numeric_limits<int32_t>::max();
constexpr int64_t kMaxGridYZ = 65535;
const char *const kKernelSyntax = "'kernel <name> grid <x> <y> <z> "
                                  "block <x> <y> <z> shared <bytes>'";

bool isIdentifier(const std::string &s) {
  if (s.empty() || !(std::isalpha((unsigned char)s[0]) || s[0] == '_'))
    return false;
  for (char c : s)
    if (!(std::isalnum((unsigned char)c) || c == '_'))
      return false;
  return true;
}

/// Parses a decimal literal no greater than `max`.
std::optional<uint64_t> parseUnsigned(const std::string &s, uint64_t max) {
  if (s.empty() || s.size() > 19)
    return std::nullopt;
  uint64_t value = 0;
  for (char c : s) {
    if (!std::isdigit((unsigned char)c))
      return std::nullopt;
    value = value * 10 + uint64_t(c - '0');
  }
  return value <= max ? std::optional<uint64_t>(value) : std::nullopt;
}

bool isLiteral(const std::string &factor) {
  return std::isdigit((unsigned char)factor[0]);
}

std::vector<std::string> split(const std::string &text, char separator) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(text);
  while (std::getline(in, part, separator))
    parts.push_back(part);
  if (!text.empty() && text.back() == separator)
    parts.push_back("");
  return parts;
}

/// The whitespace-separated tokens of `line`, without its comment.
std::vector<std::string> tokenize(const std::string &line) {
  std::istringstream in(line.substr(0, line.find('#')));
  std::vector<std::string> tokens;
  for (std::string token; in >> token;)
    tokens.push_back(token);
  return tokens;
}

std::string join(const std::vector<std::string> &parts, const char *sep) {
  std::string out;
  for (const std::string &part : parts)
    out += (out.empty() ? "" : sep) + part;
  return out;
}

std::string sizeNames(const Sizes &sizes) {
  std::vector<std::string> names;
  for (const auto &entry : sizes)
    names.push_back(entry.first);
  return names.empty() ? "none" : join(names, ", ");
}

} // namespace

//===----------------------------------------------------------------------===//
// ArgKind, SizeExpr
//===----------------------------------------------------------------------===//

const char *argKindName(ArgKind kind) {
  switch (kind) {
  case ArgKind::Ptr:
    return "ptr";
  case ArgKind::I64:
    return "i64";
  case ArgKind::I32:
    return "i32";
  case ArgKind::F32:
    return "f32";
  case ArgKind::F64:
    return "f64";
  }
  return "?";
}

std::optional<ArgKind> parseArgKind(const std::string &name) {
  for (ArgKind kind :
       {ArgKind::Ptr, ArgKind::I64, ArgKind::I32, ArgKind::F32, ArgKind::F64})
    if (name == argKindName(kind))
      return kind;
  return std::nullopt;
}

std::optional<SizeExpr> SizeExpr::parse(const std::string &text) {
  SizeExpr expr;
  for (const std::string &factor : split(text, '*')) {
    bool valid = isIdentifier(factor) ||
                 parseUnsigned(factor, kMaxGridX).value_or(0) > 0;
    if (!valid)
      return std::nullopt;
    expr.factors.push_back(factor);
  }
  if (expr.factors.empty())
    return std::nullopt;
  return expr;
}

int64_t SizeExpr::evaluate(const Sizes &sizes) const {
  int64_t product = 1;
  for (const std::string &factor : factors) {
    auto it = sizes.find(factor);
    if (!isLiteral(factor) && it == sizes.end())
      throw LaunchError("size '" + factor + "' used by '" + str() +
                        "' was not provided (provided: " + sizeNames(sizes) +
                        ")");
    int64_t value = isLiteral(factor) ? std::stoll(factor) : it->second;
    if (value < 0 || (value > 0 && product > kMaxGridX * kMaxGridX / value))
      throw LaunchError("'" + str() + "' is out of range (size '" + factor +
                        "' = " + std::to_string(value) + ")");
    product *= value;
  }
  return product;
}

std::string SizeExpr::str() const { return join(factors, "*"); }

//===----------------------------------------------------------------------===//
// KernelSpec
//===----------------------------------------------------------------------===//

LaunchShape KernelSpec::resolveShape(const Sizes &sizes) const {
  LaunchShape shape;
  unsigned *gridDims[3] = {&shape.grid.x, &shape.grid.y, &shape.grid.z};
  for (int i = 0; i < 3; ++i) {
    const char *axis = i == 0 ? "x" : i == 1 ? "y" : "z";
    int64_t limit = i == 0 ? kMaxGridX : kMaxGridYZ;
    int64_t value;
    try {
      value = grid[i].evaluate(sizes);
    } catch (const LaunchError &e) {
      throw LaunchError("kernel '" + name + "': grid " + axis + ": " +
                        e.what());
    }
    if (value < 1 || value > limit)
      throw LaunchError("kernel '" + name + "': grid " + axis + " '" +
                        grid[i].str() + "' = " + std::to_string(value) +
                        " is outside [1, " + std::to_string(limit) + "]");
    *gridDims[i] = static_cast<unsigned>(value);
  }
  shape.block = {block[0], block[1], block[2]};
  shape.sharedBytes = sharedBytes;
  return shape;
}

bool KernelSpec::operator==(const KernelSpec &other) const {
  return name == other.name && grid == other.grid && block == other.block &&
         sharedBytes == other.sharedBytes && args == other.args;
}

//===----------------------------------------------------------------------===//
// Parsing
//===----------------------------------------------------------------------===//

namespace {

class Parser {
public:
  explicit Parser(const std::string &sourceName) : source_(sourceName) {}
  Manifest run(const std::string &text);

private:
  [[noreturn]] void fail(const std::string &problem) const {
    throw ManifestError(source_ + ":" + std::to_string(line_) + ": " + problem);
  }
  void parseDirective(const std::vector<std::string> &tokens);
  void parseHeader(const std::vector<std::string> &tokens);
  void parseKernel(const std::vector<std::string> &tokens);
  void parseArg(const std::vector<std::string> &tokens);
  SizeExpr gridDim(const std::string &token) const;
  unsigned literal(const std::string &token, const char *what,
                   unsigned min) const;

  std::string source_;
  int line_ = 0;
  bool sawHeader_ = false;
  Manifest manifest_;
  std::set<std::string> kernelNames_, argNames_;
};

Manifest Parser::run(const std::string &text) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    ++line_;
    std::vector<std::string> tokens = tokenize(line);
    if (!tokens.empty())
      parseDirective(tokens);
  }
  if (!sawHeader_)
    throw ManifestError(source_ + ": missing header 'fwp-kernels 1'");
  return manifest_;
}

void Parser::parseDirective(const std::vector<std::string> &tokens) {
  const std::string &directive = tokens[0];
  if (!sawHeader_ && directive != "fwp-kernels")
    fail("missing header: expected 'fwp-kernels 1' before '" + directive + "'");
  if (directive == "fwp-kernels")
    parseHeader(tokens);
  else if (directive == "kernel")
    parseKernel(tokens);
  else if (directive == "arg")
    parseArg(tokens);
  else
    fail("unknown directive '" + directive + "' (expected 'kernel' or 'arg')");
}

void Parser::parseHeader(const std::vector<std::string> &tokens) {
  if (sawHeader_)
    fail("duplicate header 'fwp-kernels'");
  if (tokens.size() != 2)
    fail("malformed header (expected 'fwp-kernels 1')");
  if (tokens[1] != std::to_string(Manifest::kVersion))
    fail("unsupported manifest version '" + tokens[1] +
         "' (this runtime reads version 1)");
  sawHeader_ = true;
}

SizeExpr Parser::gridDim(const std::string &token) const {
  std::optional<SizeExpr> expr = SizeExpr::parse(token);
  if (!expr)
    fail("bad grid dimension '" + token +
         "' (expected factors joined by '*', each a positive integer or a "
         "size name)");
  return *expr;
}

unsigned Parser::literal(const std::string &token, const char *what,
                         unsigned min) const {
  std::optional<uint64_t> value =
      parseUnsigned(token, std::numeric_limits<unsigned>::max());
  if (!value || *value < min)
    fail(std::string("bad ") + what + " '" + token + "' (expected an integer" +
         (min ? " >= " + std::to_string(min) : std::string()) + ")");
  return static_cast<unsigned>(*value);
}

void Parser::parseKernel(const std::vector<std::string> &t) {
  if (t.size() != 12 || t[2] != "grid" || t[6] != "block" || t[10] != "shared")
    fail(std::string("malformed kernel line (expected ") + kKernelSyntax + ")");
  if (!isIdentifier(t[1]))
    fail("bad kernel name '" + t[1] + "'");
  if (!kernelNames_.insert(t[1]).second)
    fail("duplicate kernel '" + t[1] + "'");
  KernelSpec kernel;
  kernel.name = t[1];
  for (int i = 0; i < 3; ++i) {
    kernel.grid[i] = gridDim(t[3 + i]);
    kernel.block[i] = literal(t[7 + i], "block dimension", 1);
  }
  kernel.sharedBytes = literal(t[11], "shared memory size", 0);
  manifest_.kernels.push_back(kernel);
  argNames_.clear();
}

void Parser::parseArg(const std::vector<std::string> &tokens) {
  if (manifest_.kernels.empty())
    fail("'arg' before any 'kernel'");
  if (tokens.size() != 3)
    fail("malformed arg line (expected 'arg <kind> <name>')");
  std::optional<ArgKind> kind = parseArgKind(tokens[1]);
  if (!kind)
    fail("unknown arg kind '" + tokens[1] +
         "' (expected ptr, i64, i32, f32 or f64)");
  if (!isIdentifier(tokens[2]))
    fail("bad arg name '" + tokens[2] + "'");
  if (!argNames_.insert(tokens[2]).second)
    fail("duplicate arg '" + tokens[2] + "' in kernel '" +
         manifest_.kernels.back().name + "'");
  manifest_.kernels.back().args.push_back({*kind, tokens[2]});
}

} // namespace

//===----------------------------------------------------------------------===//
// Manifest
//===----------------------------------------------------------------------===//

Manifest Manifest::parse(const std::string &text,
                         const std::string &sourceName) {
  return Parser(sourceName).run(text);
}

std::string Manifest::serialize() const {
  std::ostringstream out;
  out << "fwp-kernels " << kVersion << "\n";
  for (const KernelSpec &k : kernels) {
    out << "kernel " << k.name << " grid " << k.grid[0].str() << " "
        << k.grid[1].str() << " " << k.grid[2].str() << " block " << k.block[0]
        << " " << k.block[1] << " " << k.block[2] << " shared " << k.sharedBytes
        << "\n";
    for (const ArgSpec &arg : k.args)
      out << "arg " << argKindName(arg.kind) << " " << arg.name << "\n";
  }
  return out.str();
}

const KernelSpec *Manifest::find(const std::string &name) const {
  for (const KernelSpec &kernel : kernels)
    if (kernel.name == name)
      return &kernel;
  return nullptr;
}

} // namespace fwp::rt
