//===- Plan.cpp - Parsing and printing launch plans -----------------------===//

#include "fwp/Runtime/Plan.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

namespace fwp::rt {

//===----------------------------------------------------------------------===//
// DType, PlanOp
//===----------------------------------------------------------------------===//

const char *dtypeName(DType dtype) {
  return dtype == DType::F32 ? "f32" : "f64";
}

size_t dtypeBytes(DType dtype) { return dtype == DType::F32 ? 4 : 8; }

std::optional<DType> parseDType(const std::string &name) {
  if (name == "f32")
    return DType::F32;
  if (name == "f64")
    return DType::F64;
  return std::nullopt;
}

namespace {

constexpr PlanOp kAllOps[] = {
    PlanOp::Add,  PlanOp::Sub,  PlanOp::Mul,     PlanOp::DivS,     PlanOp::DivU,
    PlanOp::RemS, PlanOp::RemU, PlanOp::CeilDiv, PlanOp::FloorDiv, PlanOp::MinS,
    PlanOp::MaxS, PlanOp::MinU, PlanOp::MaxU};

const char *const kOpList = "add, sub, mul, divs, divu, rems, remu, ceildiv, "
                            "floordiv, mins, maxs, minu or maxu";

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
  const uint64_t ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
  const int64_t min = std::numeric_limits<int64_t>::min();
  bool divides = op == PlanOp::DivS || op == PlanOp::DivU ||
                 op == PlanOp::RemS || op == PlanOp::RemU ||
                 op == PlanOp::CeilDiv || op == PlanOp::FloorDiv;
  if (divides && b == 0)
    throw PlanError("division by zero");
  bool signedDivision =
      op == PlanOp::DivS || op == PlanOp::CeilDiv || op == PlanOp::FloorDiv;
  if (signedDivision && a == min && b == -1)
    throw PlanError(std::string(planOpName(op)) + " of " + std::to_string(a) +
                    " by -1 overflows");
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

//===----------------------------------------------------------------------===//
// PlanExpr, PlanArg, PlanLaunchArg, PlanStep
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

std::string PlanExpr::str() const {
  switch (kind) {
  case Kind::Constant:
    return std::to_string(constant);
  case Kind::Value:
    return name;
  case Kind::Dim:
    return "dim(" + name + ", " + std::to_string(constant) + ")";
  case Kind::Op: {
    std::string out = std::string("(") + planOpName(op);
    for (const PlanExpr &operand : operands)
      out += " " + operand.str();
    return out + ")";
  }
  }
  return "?";
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

std::string PlanArg::shapeStr() const {
  std::string out = std::string(dtypeName(dtype)) + " [";
  for (size_t i = 0; i < sizes.size(); ++i)
    out += (i ? ", " : "") +
           (sizes[i] ? std::to_string(*sizes[i]) : std::string("?"));
  return out + "]";
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

std::string PlanLaunchArg::str() const {
  std::string out = std::string(kindName(kind)) + " ";
  switch (kind) {
  case Kind::Memref:
    return out + buffer;
  case Kind::Index:
  case Kind::I32:
  case Kind::I64:
    return out + expr.str();
  case Kind::F32:
  case Kind::F64:
    return out + text;
  }
  return out;
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
  std::string out = kindName(kind);
  switch (kind) {
  case Kind::Value:
  case Kind::Alloc:
  case Kind::View:
    return out + " " + name;
  case Kind::Copy:
    return out + " " + source + " " + dest;
  case Kind::Launch:
    return out + " " + module + " " + kernel;
  case Kind::Result:
    return out + " " + source;
  }
  return out;
}

namespace {

std::string exprList(const std::vector<PlanExpr> &exprs) {
  std::string out;
  for (const PlanExpr &e : exprs)
    out += " " + e.str();
  return out;
}

} // namespace

std::string PlanStep::str() const {
  std::string out = kindName(kind);
  switch (kind) {
  case Kind::Value:
    return out + " " + name + " " + expr.str();
  case Kind::Alloc:
    return out + " " + name + " " + dtypeName(dtype) + exprList(sizes);
  case Kind::View:
    return out + " " + name + " " + source + exprList(sizes);
  case Kind::Copy:
    return out + " " + source + " " + dest;
  case Kind::Launch:
    out += " " + module + " " + kernel +
           exprList({grid[0], grid[1], grid[2], block[0], block[1], block[2],
                     shared});
    for (const PlanLaunchArg &arg : args)
      out += " " + arg.str();
    return out;
  case Kind::Result:
    return out + " " + source;
  }
  return out;
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

//===----------------------------------------------------------------------===//
// Parsing
//===----------------------------------------------------------------------===//

namespace {

struct Token {
  enum Kind { Word, LParen, RParen, Comma } kind;
  std::string text;
};

/// The tokens of `line` without its comment: words, '(', ')' and ','.
std::vector<Token> lex(const std::string &line) {
  std::vector<Token> tokens;
  std::string text = line.substr(0, line.find('#'));
  size_t i = 0;
  while (i < text.size()) {
    char c = text[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (c == '(' || c == ')' || c == ',') {
      Token::Kind kind = c == '('   ? Token::LParen
                         : c == ')' ? Token::RParen
                                    : Token::Comma;
      tokens.push_back({kind, std::string(1, c)});
      ++i;
    } else {
      size_t start = i;
      while (i < text.size() &&
             !std::isspace(static_cast<unsigned char>(text[i])) &&
             text[i] != '(' && text[i] != ')' && text[i] != ',')
        ++i;
      tokens.push_back({Token::Word, text.substr(start, i - start)});
    }
  }
  return tokens;
}

bool isNameStart(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}

bool isName(const std::string &s) {
  if (s.empty() || !isNameStart(s[0]))
    return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' ||
          c == '$'))
      return false;
  return true;
}

/// Module and kernel names: names that may also contain '-'.
bool isSymbolName(const std::string &s) {
  if (s.empty() || !isNameStart(s[0]))
    return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' ||
          c == '$' || c == '-'))
      return false;
  return true;
}

bool looksLikeInteger(const std::string &s) {
  size_t start = !s.empty() && s[0] == '-' ? 1 : 0;
  if (start == s.size())
    return false;
  for (size_t i = start; i < s.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(s[i])))
      return false;
  return true;
}

std::string joinNames(const std::set<std::string> &names) {
  std::string out;
  for (const std::string &name : names)
    out += (out.empty() ? "" : ", ") + name;
  return out.empty() ? "none" : out;
}

const char *const kHeader = "fwp-plan 1";

/// What a name stands for while parsing.
struct Symbol {
  bool isBuffer = false;
  DType dtype = DType::F32;
  size_t rank = 0;
  int line = 0;
  /// Buffers: the argument or alloc whose memory this is (itself, or the
  /// root of a view), and whether that is an argument.
  std::string root;
  bool rootIsArg = false;
};

class Parser {
public:
  explicit Parser(const std::string &sourceName) : source_(sourceName) {
    plan_.sourceName = sourceName;
  }
  Plan run(const std::string &text);

private:
  enum class Section { Header, IndexBits, Modules, Args, Steps };

  [[noreturn]] void fail(const std::string &problem) const {
    throw PlanError(source_ + ":" + std::to_string(line_) + ": " + problem);
  }
  void collectDefinitions(const std::string &text);
  void parseLine();
  void parseHeader();
  void parseIndexBits();
  void parseModule();
  void parseArg();
  void parseValue();
  void parseAlloc();
  void parseView();
  void parseCopy();
  void parseLaunch();
  void parseResult();
  PlanLaunchArg parseLaunchArg();
  void enterSection(Section section, const std::string &directive);

  // Token access.
  bool atEnd() const { return pos_ == tokens_.size(); }
  const Token &peek() const { return tokens_[pos_]; }
  std::string word(const std::string &what);
  void expectEnd();
  [[noreturn]] void missing(const std::string &what) const;

  // Names.
  std::string newName(const std::string &what);
  std::string bufferName(const std::string &what);
  const Symbol &buffer(const std::string &name);
  [[noreturn]] void undefined(const std::string &name) const;
  void define(const std::string &name, Symbol symbol);

  // Expressions.
  PlanExpr expr(const std::string &what);
  PlanExpr parseExpr();
  PlanExpr parseDim();
  int64_t integer(const std::string &text) const;

  std::string source_;
  int line_ = 0;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  std::string usage_; // the syntax of the current directive, for messages
  Section section_ = Section::Header;
  Plan plan_;
  std::map<std::string, Symbol> symbols_;
  std::map<std::string, int> definitionLines_; // every definition, any line
  std::set<std::string> modules_;
};

Plan Parser::run(const std::string &text) {
  collectDefinitions(text);
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    ++line_;
    tokens_ = lex(line);
    pos_ = 0;
    if (!tokens_.empty())
      parseLine();
  }
  if (section_ == Section::Header)
    throw PlanError(source_ + ": missing header '" + kHeader + "'");
  if (section_ == Section::IndexBits)
    throw PlanError(source_ + ": missing 'index-bits 32' or 'index-bits 64'");
  return plan_;
}

/// Remembers where each name is defined, to tell "used before its
/// definition" from "unknown".
void Parser::collectDefinitions(const std::string &text) {
  std::istringstream in(text);
  int line = 0;
  for (std::string content; std::getline(in, content);) {
    ++line;
    std::vector<Token> tokens = lex(content);
    if (tokens.size() < 2 || tokens[1].kind != Token::Word)
      continue;
    const std::string &d = tokens[0].text;
    if (d == "arg" || d == "value" || d == "alloc" || d == "view")
      definitionLines_.emplace(tokens[1].text, line);
  }
}

void Parser::parseLine() {
  if (peek().kind != Token::Word)
    fail("expected a directive, found '" + peek().text + "'");
  std::string directive = tokens_[pos_++].text;
  if (section_ == Section::Header && directive != "fwp-plan")
    fail(std::string("missing header: expected '") + kHeader + "' before '" +
         directive + "'");
  if (directive == "fwp-plan")
    parseHeader();
  else if (directive == "index-bits")
    parseIndexBits();
  else if (section_ == Section::IndexBits)
    fail("expected 'index-bits 32' or 'index-bits 64' after the header, "
         "found '" +
         directive + "'");
  else if (directive == "module")
    parseModule();
  else if (directive == "arg")
    parseArg();
  else if (directive == "value")
    parseValue();
  else if (directive == "alloc")
    parseAlloc();
  else if (directive == "view")
    parseView();
  else if (directive == "copy")
    parseCopy();
  else if (directive == "launch")
    parseLaunch();
  else if (directive == "result")
    parseResult();
  else
    fail("unknown directive '" + directive +
         "' (expected index-bits, module, arg, value, alloc, view, copy, "
         "launch or result)");
}

void Parser::enterSection(Section section, const std::string &directive) {
  if (section_ > section) {
    if (section == Section::Modules)
      fail("'" + directive + "' lines must come before 'arg' lines and steps");
    fail("'" + directive + "' lines must come before the steps");
  }
  section_ = section;
}

void Parser::parseHeader() {
  usage_ = std::string("'") + kHeader + "'";
  if (section_ != Section::Header)
    fail("duplicate header 'fwp-plan'");
  std::string version = word("the version");
  expectEnd();
  if (version != std::to_string(Plan::kVersion))
    fail("unsupported plan version '" + version +
         "' (this runtime reads version 1)");
  section_ = Section::IndexBits;
}

void Parser::parseIndexBits() {
  usage_ = "'index-bits 32' or 'index-bits 64'";
  if (section_ != Section::IndexBits)
    fail("duplicate or misplaced 'index-bits' (it comes once, right after "
         "the header)");
  std::string bits = word("the number of bits");
  expectEnd();
  if (bits != "32" && bits != "64")
    fail("index-bits must be 32 or 64, not '" + bits + "'");
  plan_.indexBits = bits == "32" ? 32 : 64;
  section_ = Section::Modules;
}

void Parser::parseModule() {
  usage_ = "'module NAME'";
  enterSection(Section::Modules, "module");
  std::string name = word("the module name");
  expectEnd();
  if (!isSymbolName(name))
    fail("bad module name '" + name + "'");
  if (!modules_.insert(name).second)
    fail("duplicate module '" + name + "'");
  plan_.modules.push_back(name);
}

void Parser::parseArg() {
  usage_ = "'arg NAME DTYPE D0 D1 ...'";
  enterSection(Section::Args, "arg");
  PlanArg arg;
  arg.line = line_;
  arg.name = newName("the argument name");
  std::string dtype = word("the dtype");
  std::optional<DType> parsed = parseDType(dtype);
  if (!parsed)
    fail("bad dtype '" + dtype + "' (expected f32 or f64)");
  arg.dtype = *parsed;
  while (!atEnd()) {
    std::string size = word("a size");
    if (size == "?") {
      arg.sizes.push_back(std::nullopt);
      continue;
    }
    if (!looksLikeInteger(size) || size[0] == '-')
      fail("bad size '" + size + "' of argument '" + arg.name +
           "' (expected a non-negative integer or '?')");
    arg.sizes.push_back(integer(size));
  }
  define(arg.name, {true, arg.dtype, arg.sizes.size(), line_, arg.name, true});
  plan_.args.push_back(arg);
}

void Parser::parseValue() {
  usage_ = "'value NAME EXPR'";
  enterSection(Section::Steps, "value");
  PlanStep step;
  step.kind = PlanStep::Kind::Value;
  step.line = line_;
  step.name = newName("the value name");
  step.expr = expr("the expression");
  expectEnd();
  define(step.name, {false, DType::F32, 0, line_, "", false});
  plan_.steps.push_back(step);
}

void Parser::parseAlloc() {
  usage_ = "'alloc NAME DTYPE S0 S1 ...'";
  enterSection(Section::Steps, "alloc");
  PlanStep step;
  step.kind = PlanStep::Kind::Alloc;
  step.line = line_;
  step.name = newName("the buffer name");
  std::string dtype = word("the dtype");
  std::optional<DType> parsed = parseDType(dtype);
  if (!parsed)
    fail("bad dtype '" + dtype + "' (expected f32 or f64)");
  step.dtype = *parsed;
  while (!atEnd())
    step.sizes.push_back(expr("a size"));
  define(step.name,
         {true, step.dtype, step.sizes.size(), line_, step.name, false});
  plan_.steps.push_back(step);
}

void Parser::parseView() {
  usage_ = "'view NAME SRC S0 S1 ...'";
  enterSection(Section::Steps, "view");
  PlanStep step;
  step.kind = PlanStep::Kind::View;
  step.line = line_;
  step.name = newName("the view name");
  step.source = bufferName("the source buffer");
  const Symbol source = buffer(step.source);
  step.dtype = source.dtype;
  while (!atEnd())
    step.sizes.push_back(expr("a size"));
  define(step.name, {true, step.dtype, step.sizes.size(), line_, source.root,
                     source.rootIsArg});
  plan_.steps.push_back(step);
}

void Parser::parseCopy() {
  usage_ = "'copy SRC DST'";
  enterSection(Section::Steps, "copy");
  PlanStep step;
  step.kind = PlanStep::Kind::Copy;
  step.line = line_;
  step.source = bufferName("the source buffer");
  step.dest = bufferName("the destination buffer");
  expectEnd();
  DType from = buffer(step.source).dtype, to = buffer(step.dest).dtype;
  if (from != to)
    fail("copy from " + std::string(dtypeName(from)) + " buffer '" +
         step.source + "' to " + dtypeName(to) + " buffer '" + step.dest + "'");
  plan_.steps.push_back(step);
}

void Parser::parseLaunch() {
  usage_ = "'launch MODULE KERNEL GX GY GZ BX BY BZ SHARED ARGS...'";
  enterSection(Section::Steps, "launch");
  PlanStep step;
  step.kind = PlanStep::Kind::Launch;
  step.line = line_;
  step.module = word("MODULE");
  if (!modules_.count(step.module))
    fail("unknown module '" + step.module +
         "' (modules: " + joinNames(modules_) + ")");
  step.kernel = word("KERNEL");
  if (!isSymbolName(step.kernel))
    fail("bad kernel name '" + step.kernel + "'");
  const char *gridNames[] = {"GX", "GY", "GZ"};
  const char *blockNames[] = {"BX", "BY", "BZ"};
  for (int i = 0; i < 3; ++i)
    step.grid[i] = expr(gridNames[i]);
  for (int i = 0; i < 3; ++i)
    step.block[i] = expr(blockNames[i]);
  step.shared = expr("SHARED");
  usage_ = "'memref NAME', 'index EXPR', 'i32 EXPR', 'i64 EXPR', "
           "'f32 LITERAL' or 'f64 LITERAL'";
  while (!atEnd())
    step.args.push_back(parseLaunchArg());
  plan_.steps.push_back(step);
}

void Parser::parseResult() {
  usage_ = "'result NAME'";
  enterSection(Section::Steps, "result");
  PlanStep step;
  step.kind = PlanStep::Kind::Result;
  step.line = line_;
  step.source = bufferName("the buffer name");
  expectEnd();
  const Symbol &symbol = buffer(step.source);
  const char *rule = " (a result must be an alloc or a view of one)";
  if (symbol.rootIsArg && symbol.root == step.source)
    fail("cannot return argument '" + step.source +
         "': it belongs to the caller" + rule);
  if (symbol.rootIsArg)
    fail("cannot return '" + step.source + "', a view of argument '" +
         symbol.root + "': it belongs to the caller" + rule);
  plan_.steps.push_back(step);
}

PlanLaunchArg Parser::parseLaunchArg() {
  using Kind = PlanLaunchArg::Kind;
  PlanLaunchArg arg;
  std::string kind = word("a launch argument");
  if (kind == "memref") {
    arg.kind = Kind::Memref;
    arg.buffer = bufferName("the buffer after 'memref'");
  } else if (kind == "index" || kind == "i32" || kind == "i64") {
    arg.kind = kind == "index" ? Kind::Index
               : kind == "i32" ? Kind::I32
                               : Kind::I64;
    arg.expr = expr("the expression after '" + kind + "'");
  } else if (kind == "f32" || kind == "f64") {
    arg.kind = kind == "f32" ? Kind::F32 : Kind::F64;
    arg.text = word("the literal after '" + kind + "'");
    const char *begin = arg.text.c_str();
    char *end = nullptr;
    errno = 0;
    arg.real = arg.kind == Kind::F32 ? std::strtof(begin, &end)
                                     : std::strtod(begin, &end);
    if (end != begin + arg.text.size() || arg.text.empty())
      fail("bad " + kind + " literal '" + arg.text + "'");
    if (errno == ERANGE && std::isinf(arg.real))
      fail(kind + " literal '" + arg.text + "' is out of range");
  } else {
    fail("unknown launch argument kind '" + kind +
         "' (expected memref, index, i32, i64, f32 or f64)");
  }
  return arg;
}

std::string Parser::word(const std::string &what) {
  if (atEnd())
    missing(what);
  const Token &token = tokens_[pos_++];
  if (token.kind != Token::Word)
    fail("expected " + what + ", found '" + token.text + "'");
  return token.text;
}

void Parser::missing(const std::string &what) const {
  fail("missing " + what + " (expected " + usage_ + ")");
}

void Parser::expectEnd() {
  if (!atEnd() && peek().kind == Token::RParen)
    fail("unbalanced parentheses: unexpected ')'");
  if (!atEnd())
    fail("unexpected '" + peek().text + "' at the end of the line (expected " +
         usage_ + ")");
}

std::string Parser::newName(const std::string &what) {
  std::string name = word(what);
  if (!isName(name))
    fail("bad name '" + name + "'");
  auto it = symbols_.find(name);
  if (it != symbols_.end())
    fail("duplicate name '" + name + "' (first defined on line " +
         std::to_string(it->second.line) + ")");
  return name;
}

void Parser::define(const std::string &name, Symbol symbol) {
  symbols_[name] = symbol;
}

void Parser::undefined(const std::string &name) const {
  auto later = definitionLines_.find(name);
  if (later != definitionLines_.end() && later->second > line_)
    fail("'" + name + "' is used before its definition on line " +
         std::to_string(later->second));
  fail("unknown name '" + name + "'");
}

std::string Parser::bufferName(const std::string &what) {
  std::string name = word(what);
  buffer(name);
  return name;
}

const Symbol &Parser::buffer(const std::string &name) {
  auto it = symbols_.find(name);
  if (it == symbols_.end())
    undefined(name);
  if (!it->second.isBuffer)
    fail("'" + name + "' is a value, not a buffer");
  return it->second;
}

int64_t Parser::integer(const std::string &text) const {
  errno = 0;
  char *end = nullptr;
  long long value = std::strtoll(text.c_str(), &end, 10);
  if (errno == ERANGE)
    fail("integer '" + text + "' is out of range (64-bit signed)");
  return static_cast<int64_t>(value);
}

PlanExpr Parser::expr(const std::string &what) {
  if (atEnd())
    missing(what);
  return parseExpr();
}

PlanExpr Parser::parseExpr() {
  if (atEnd())
    fail("unbalanced parentheses: missing ')'");
  const Token &token = tokens_[pos_++];
  if (token.kind == Token::RParen)
    fail("unbalanced parentheses: unexpected ')'");
  if (token.kind == Token::Comma)
    fail("unexpected ',' in an expression");
  if (token.kind == Token::LParen) {
    if (atEnd())
      fail("unbalanced parentheses: missing ')'");
    if (peek().kind != Token::Word)
      fail("expected an operator after '(', found '" + peek().text + "'");
    std::string name = tokens_[pos_++].text;
    std::optional<PlanOp> op = parsePlanOp(name);
    if (!op)
      fail("unknown operator '" + name + "' (expected " + kOpList + ")");
    std::vector<PlanExpr> operands;
    while (!atEnd() && peek().kind != Token::RParen)
      operands.push_back(parseExpr());
    if (atEnd())
      fail("unbalanced parentheses: missing ')' after '(" + name + "'");
    ++pos_;
    if (operands.size() != 2)
      fail("operator '" + name + "' takes 2 operands, not " +
           std::to_string(operands.size()));
    return PlanExpr::apply(*op, std::move(operands[0]), std::move(operands[1]));
  }
  const std::string &text = token.text;
  if (text == "dim" && !atEnd() && peek().kind == Token::LParen)
    return parseDim();
  if (looksLikeInteger(text))
    return PlanExpr::literal(integer(text));
  if (!isName(text))
    fail("bad expression '" + text + "'");
  auto it = symbols_.find(text);
  if (it == symbols_.end())
    undefined(text);
  if (it->second.isBuffer)
    fail("'" + text +
         "' is a buffer, not an integer value (its sizes are "
         "dim(" +
         text + ", I))");
  return PlanExpr::value(text);
}

PlanExpr Parser::parseDim() {
  ++pos_; // '('
  const char *syntax = "expected 'dim(NAME, I)'";
  if (atEnd() || peek().kind != Token::Word)
    fail(std::string("bad dim: ") + syntax);
  std::string name = tokens_[pos_++].text;
  const Symbol &symbol = buffer(name);
  if (atEnd() || peek().kind != Token::Comma)
    fail(std::string("bad dim: ") + syntax);
  ++pos_;
  if (atEnd() || peek().kind != Token::Word || !looksLikeInteger(peek().text))
    fail(std::string("bad dim: ") + syntax + " with an integer I");
  int64_t index = integer(tokens_[pos_++].text);
  if (atEnd())
    fail("unbalanced parentheses: missing ')' after 'dim(" + name + "'");
  if (peek().kind != Token::RParen)
    fail(std::string("bad dim: ") + syntax);
  ++pos_;
  if (index < 0 || static_cast<uint64_t>(index) >= symbol.rank)
    fail("dim(" + name + ", " + std::to_string(index) + "): '" + name +
         "' has rank " + std::to_string(symbol.rank));
  return PlanExpr::dim(name, index);
}

} // namespace

//===----------------------------------------------------------------------===//
// Plan
//===----------------------------------------------------------------------===//

Plan Plan::parse(const std::string &text, const std::string &sourceName) {
  return Parser(sourceName).run(text);
}

std::string Plan::str() const {
  std::ostringstream out;
  out << kHeader << "\n";
  out << "index-bits " << indexBits << "\n";
  for (const std::string &module : modules)
    out << "module " << module << "\n";
  for (const PlanArg &arg : args) {
    out << "arg " << arg.name << " " << dtypeName(arg.dtype);
    for (const std::optional<int64_t> &size : arg.sizes)
      out << " " << (size ? std::to_string(*size) : std::string("?"));
    out << "\n";
  }
  for (const PlanStep &step : steps)
    out << step.str() << "\n";
  return out.str();
}

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

Plan loadPlanFile(const std::string &path) {
  return Plan::parse(readTextFile(path), path);
}

namespace {

void writeTextFile(const std::string &path, const std::string &text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out)
    throw Error("cannot write file '" + path + "': " + std::strerror(errno));
  out << text;
  out.close();
  if (!out)
    throw Error("error writing file '" + path + "'");
}

} // namespace

void writePlanDirectory(const std::string &dir, const std::string &planText,
                        const std::map<std::string, std::string> &ptx) {
  std::string planPath = dir + "/plan.fwp";
  Plan plan = Plan::parse(planText, planPath);
  for (const std::string &module : plan.modules)
    if (!ptx.count(module))
      throw PlanError(planPath + ": no PTX given for module '" + module + "'");
  for (const auto &entry : ptx)
    if (!isSymbolName(entry.first))
      throw PlanError("bad module name '" + entry.first + "'");
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error)
    throw Error("cannot create directory '" + dir + "': " + error.message());
  writeTextFile(planPath, planText);
  for (const auto &entry : ptx)
    writeTextFile(dir + "/" + entry.first + ".ptx", entry.second);
}

} // namespace fwp::rt
