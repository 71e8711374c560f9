//===- PlanParser.cpp - Reading launch plans from text --------------------===//
//
// Line by line: each line is lexed into words and the punctuation of
// expressions, then read by the parser of the directive it starts with.
// Errors name the source and the line and say what was expected.
//
//===----------------------------------------------------------------------===//

#include "PlanSyntax.h"

#include "fwp/Runtime/Plan.h"

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <utility>

namespace fwp::rt {
namespace {

using syntax::isName;
using syntax::isSymbolName;
using syntax::kHeader;

const char *const kOpList = "add, sub, mul, divs, divu, rems, remu, ceildiv, "
                            "floordiv, mins, maxs, minu or maxu";

struct Token {
  enum Kind { Word, LParen, RParen, Comma } kind;
  std::string text;
};

bool isPunctuation(char c) { return c == '(' || c == ')' || c == ','; }

bool isBlank(char c) { return std::isspace(static_cast<unsigned char>(c)); }

/// The tokens of `line` without its comment: words, '(', ')' and ','.
std::vector<Token> lex(const std::string &line) {
  std::vector<Token> tokens;
  std::string text = line.substr(0, line.find('#'));
  size_t i = 0;
  while (i < text.size()) {
    char c = text[i];
    if (isBlank(c)) {
      ++i;
    } else if (isPunctuation(c)) {
      Token::Kind kind = c == '('   ? Token::LParen
                         : c == ')' ? Token::RParen
                                    : Token::Comma;
      tokens.push_back({kind, std::string(1, c)});
      ++i;
    } else {
      size_t start = i;
      while (i < text.size() && !isBlank(text[i]) && !isPunctuation(text[i]))
        ++i;
      tokens.push_back({Token::Word, text.substr(start, i - start)});
    }
  }
  return tokens;
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
  return names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", "));
}

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

  /// Throws PlanError "<source>:<line>: <problem>".
  template <typename... Args>
  [[noreturn]] void fail(fmt::format_string<Args...> problem,
                         Args &&...args) const {
    throw PlanError(
        fmt::format("{}:{}: {}", source_, line_,
                    fmt::format(problem, std::forward<Args>(args)...)));
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
  double parseReal(const std::string &kind, const std::string &text);
  void enterSection(Section section, const std::string &directive);
  PlanStep beginStep(PlanStep::Kind kind, const char *usage);

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
  DType dtype();

  // Expressions.
  PlanExpr expr(const std::string &what);
  std::vector<PlanExpr> sizes();
  PlanExpr parseExpr();
  PlanExpr parseApply();
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
    throw PlanError(fmt::format("{}: missing header '{}'", source_, kHeader));
  if (section_ == Section::IndexBits)
    throw PlanError(
        fmt::format("{}: missing 'index-bits 32' or 'index-bits 64'", source_));
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
    fail("expected a directive, found '{}'", peek().text);
  std::string directive = tokens_[pos_++].text;
  if (section_ == Section::Header && directive != "fwp-plan")
    fail("missing header: expected '{}' before '{}'", kHeader, directive);
  if (directive == "fwp-plan")
    return parseHeader();
  if (directive == "index-bits")
    return parseIndexBits();
  if (section_ == Section::IndexBits)
    fail("expected 'index-bits 32' or 'index-bits 64' after the header, "
         "found '{}'",
         directive);
  static constexpr std::pair<const char *, void (Parser::*)()> kDirectives[] = {
      {"module", &Parser::parseModule}, {"arg", &Parser::parseArg},
      {"value", &Parser::parseValue},   {"alloc", &Parser::parseAlloc},
      {"view", &Parser::parseView},     {"copy", &Parser::parseCopy},
      {"launch", &Parser::parseLaunch}, {"result", &Parser::parseResult}};
  for (const auto &[name, parse] : kDirectives)
    if (directive == name)
      return (this->*parse)();
  fail("unknown directive '{}' (expected index-bits, module, arg, value, "
       "alloc, view, copy, launch or result)",
       directive);
}

void Parser::enterSection(Section section, const std::string &directive) {
  if (section_ > section) {
    if (section == Section::Modules)
      fail("'{}' lines must come before 'arg' lines and steps", directive);
    fail("'{}' lines must come before the steps", directive);
  }
  section_ = section;
}

/// A step of `kind` on the current line, whose syntax is `usage`.
PlanStep Parser::beginStep(PlanStep::Kind kind, const char *usage) {
  usage_ = usage;
  enterSection(Section::Steps, PlanStep::kindName(kind));
  PlanStep step;
  step.kind = kind;
  step.line = line_;
  return step;
}

void Parser::parseHeader() {
  usage_ = fmt::format("'{}'", kHeader);
  if (section_ != Section::Header)
    fail("duplicate header 'fwp-plan'");
  std::string version = word("the version");
  expectEnd();
  if (version != fmt::format("{}", Plan::kVersion))
    fail("unsupported plan version '{}' (this runtime reads version {})",
         version, Plan::kVersion);
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
    fail("index-bits must be 32 or 64, not '{}'", bits);
  plan_.indexBits = bits == "32" ? 32 : 64;
  section_ = Section::Modules;
}

void Parser::parseModule() {
  usage_ = "'module NAME'";
  enterSection(Section::Modules, "module");
  std::string name = word("the module name");
  expectEnd();
  if (!isSymbolName(name))
    fail("bad module name '{}'", name);
  if (!modules_.insert(name).second)
    fail("duplicate module '{}'", name);
  plan_.modules.push_back(name);
}

void Parser::parseArg() {
  usage_ = "'arg NAME DTYPE D0 D1 ...'";
  enterSection(Section::Args, "arg");
  PlanArg arg;
  arg.line = line_;
  arg.name = newName("the argument name");
  arg.dtype = dtype();
  while (!atEnd()) {
    std::string size = word("a size");
    if (size == "?") {
      arg.sizes.push_back(std::nullopt);
      continue;
    }
    if (!looksLikeInteger(size) || size[0] == '-')
      fail("bad size '{}' of argument '{}' (expected a non-negative integer "
           "or '?')",
           size, arg.name);
    arg.sizes.push_back(integer(size));
  }
  define(arg.name, {true, arg.dtype, arg.sizes.size(), line_, arg.name, true});
  plan_.args.push_back(arg);
}

void Parser::parseValue() {
  PlanStep step = beginStep(PlanStep::Kind::Value, "'value NAME EXPR'");
  step.name = newName("the value name");
  step.expr = expr("the expression");
  expectEnd();
  define(step.name, {false, DType::F32, 0, line_, "", false});
  plan_.steps.push_back(step);
}

void Parser::parseAlloc() {
  PlanStep step =
      beginStep(PlanStep::Kind::Alloc, "'alloc NAME DTYPE S0 S1 ...'");
  step.name = newName("the buffer name");
  step.dtype = dtype();
  step.sizes = sizes();
  define(step.name,
         {true, step.dtype, step.sizes.size(), line_, step.name, false});
  plan_.steps.push_back(step);
}

void Parser::parseView() {
  PlanStep step = beginStep(PlanStep::Kind::View, "'view NAME SRC S0 S1 ...'");
  step.name = newName("the view name");
  step.source = bufferName("the source buffer");
  const Symbol source = buffer(step.source);
  step.dtype = source.dtype;
  step.sizes = sizes();
  define(step.name, {true, step.dtype, step.sizes.size(), line_, source.root,
                     source.rootIsArg});
  plan_.steps.push_back(step);
}

void Parser::parseCopy() {
  PlanStep step = beginStep(PlanStep::Kind::Copy, "'copy SRC DST'");
  step.source = bufferName("the source buffer");
  step.dest = bufferName("the destination buffer");
  expectEnd();
  DType from = buffer(step.source).dtype, to = buffer(step.dest).dtype;
  if (from != to)
    fail("copy from {} buffer '{}' to {} buffer '{}'", dtypeName(from),
         step.source, dtypeName(to), step.dest);
  plan_.steps.push_back(step);
}

void Parser::parseLaunch() {
  PlanStep step =
      beginStep(PlanStep::Kind::Launch,
                "'launch MODULE KERNEL GX GY GZ BX BY BZ SHARED ARGS...'");
  step.module = word("MODULE");
  if (!modules_.count(step.module))
    fail("unknown module '{}' (modules: {})", step.module, joinNames(modules_));
  step.kernel = word("KERNEL");
  if (!isSymbolName(step.kernel))
    fail("bad kernel name '{}'", step.kernel);
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
  PlanStep step = beginStep(PlanStep::Kind::Result, "'result NAME'");
  step.source = bufferName("the buffer name");
  expectEnd();
  const Symbol &symbol = buffer(step.source);
  const char *rule = "(a result must be an alloc or a view of one)";
  if (symbol.rootIsArg && symbol.root == step.source)
    fail("cannot return argument '{}': it belongs to the caller {}",
         step.source, rule);
  if (symbol.rootIsArg)
    fail("cannot return '{}', a view of argument '{}': it belongs to the "
         "caller {}",
         step.source, symbol.root, rule);
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
    arg.expr = expr(fmt::format("the expression after '{}'", kind));
  } else if (kind == "f32" || kind == "f64") {
    arg.kind = kind == "f32" ? Kind::F32 : Kind::F64;
    arg.text = word(fmt::format("the literal after '{}'", kind));
    arg.real = parseReal(kind, arg.text);
  } else {
    fail("unknown launch argument kind '{}' (expected memref, index, i32, "
         "i64, f32 or f64)",
         kind);
  }
  return arg;
}

/// The value of an f32 (`kind`) or f64 literal, read as strtof / strtod do
/// so that an f32 literal is the float it names.
double Parser::parseReal(const std::string &kind, const std::string &text) {
  const char *begin = text.c_str();
  char *end = nullptr;
  errno = 0;
  double real =
      kind == "f32" ? std::strtof(begin, &end) : std::strtod(begin, &end);
  if (end != begin + text.size() || text.empty())
    fail("bad {} literal '{}'", kind, text);
  if (errno == ERANGE && std::isinf(real))
    fail("{} literal '{}' is out of range", kind, text);
  return real;
}

std::string Parser::word(const std::string &what) {
  if (atEnd())
    missing(what);
  const Token &token = tokens_[pos_++];
  if (token.kind != Token::Word)
    fail("expected {}, found '{}'", what, token.text);
  return token.text;
}

void Parser::missing(const std::string &what) const {
  fail("missing {} (expected {})", what, usage_);
}

void Parser::expectEnd() {
  if (!atEnd() && peek().kind == Token::RParen)
    fail("unbalanced parentheses: unexpected ')'");
  if (!atEnd())
    fail("unexpected '{}' at the end of the line (expected {})", peek().text,
         usage_);
}

DType Parser::dtype() {
  std::string name = word("the dtype");
  std::optional<DType> parsed = parseDType(name);
  if (!parsed)
    fail("bad dtype '{}' (expected f32, f64, bf16 or f16)", name);
  return *parsed;
}

std::string Parser::newName(const std::string &what) {
  std::string name = word(what);
  if (!isName(name))
    fail("bad name '{}'", name);
  auto it = symbols_.find(name);
  if (it != symbols_.end())
    fail("duplicate name '{}' (first defined on line {})", name,
         it->second.line);
  return name;
}

void Parser::define(const std::string &name, Symbol symbol) {
  symbols_[name] = symbol;
}

void Parser::undefined(const std::string &name) const {
  auto later = definitionLines_.find(name);
  if (later != definitionLines_.end() && later->second > line_)
    fail("'{}' is used before its definition on line {}", name, later->second);
  fail("unknown name '{}'", name);
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
    fail("'{}' is a value, not a buffer", name);
  return it->second;
}

int64_t Parser::integer(const std::string &text) const {
  errno = 0;
  char *end = nullptr;
  long long value = std::strtoll(text.c_str(), &end, 10);
  if (errno == ERANGE)
    fail("integer '{}' is out of range (64-bit signed)", text);
  return static_cast<int64_t>(value);
}

PlanExpr Parser::expr(const std::string &what) {
  if (atEnd())
    missing(what);
  return parseExpr();
}

/// The size expressions that end an `alloc` or `view` line.
std::vector<PlanExpr> Parser::sizes() {
  std::vector<PlanExpr> result;
  while (!atEnd())
    result.push_back(expr("a size"));
  return result;
}

PlanExpr Parser::parseExpr() {
  if (atEnd())
    fail("unbalanced parentheses: missing ')'");
  const Token &token = tokens_[pos_++];
  if (token.kind == Token::RParen)
    fail("unbalanced parentheses: unexpected ')'");
  if (token.kind == Token::Comma)
    fail("unexpected ',' in an expression");
  if (token.kind == Token::LParen)
    return parseApply();
  const std::string &text = token.text;
  if (text == "dim" && !atEnd() && peek().kind == Token::LParen)
    return parseDim();
  if (looksLikeInteger(text))
    return PlanExpr::literal(integer(text));
  if (!isName(text))
    fail("bad expression '{}'", text);
  auto it = symbols_.find(text);
  if (it == symbols_.end())
    undefined(text);
  if (it->second.isBuffer)
    fail("'{0}' is a buffer, not an integer value (its sizes are "
         "dim({0}, I))",
         text);
  return PlanExpr::value(text);
}

/// `(OP A B)`, after its '('.
PlanExpr Parser::parseApply() {
  if (atEnd())
    fail("unbalanced parentheses: missing ')'");
  if (peek().kind != Token::Word)
    fail("expected an operator after '(', found '{}'", peek().text);
  std::string name = tokens_[pos_++].text;
  std::optional<PlanOp> op = parsePlanOp(name);
  if (!op)
    fail("unknown operator '{}' (expected {})", name, kOpList);
  std::vector<PlanExpr> operands;
  while (!atEnd() && peek().kind != Token::RParen)
    operands.push_back(parseExpr());
  if (atEnd())
    fail("unbalanced parentheses: missing ')' after '({}'", name);
  ++pos_;
  if (operands.size() != 2)
    fail("operator '{}' takes 2 operands, not {}", name, operands.size());
  return PlanExpr::apply(*op, std::move(operands[0]), std::move(operands[1]));
}

/// `dim(NAME, I)`, at its '('.
PlanExpr Parser::parseDim() {
  ++pos_; // '('
  const char *syntax = "expected 'dim(NAME, I)'";
  if (atEnd() || peek().kind != Token::Word)
    fail("bad dim: {}", syntax);
  std::string name = tokens_[pos_++].text;
  const Symbol &symbol = buffer(name);
  if (atEnd() || peek().kind != Token::Comma)
    fail("bad dim: {}", syntax);
  ++pos_;
  if (atEnd() || peek().kind != Token::Word || !looksLikeInteger(peek().text))
    fail("bad dim: {} with an integer I", syntax);
  int64_t index = integer(tokens_[pos_++].text);
  if (atEnd())
    fail("unbalanced parentheses: missing ')' after 'dim({}'", name);
  if (peek().kind != Token::RParen)
    fail("bad dim: {}", syntax);
  ++pos_;
  if (index < 0 || static_cast<uint64_t>(index) >= symbol.rank)
    fail("dim({0}, {1}): '{0}' has rank {2}", name, index, symbol.rank);
  return PlanExpr::dim(name, index);
}

} // namespace

Plan Plan::parse(const std::string &text, const std::string &sourceName) {
  return Parser(sourceName).run(text);
}

std::string readTextFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw Error(
        fmt::format("cannot read file '{}': {}", path, std::strerror(errno)));
  std::string text{std::istreambuf_iterator<char>(in),
                   std::istreambuf_iterator<char>()};
  if (in.bad())
    throw Error(fmt::format("error reading file '{}'", path));
  return text;
}

Plan loadPlanFile(const std::string &path) {
  return Plan::parse(readTextFile(path), path);
}

} // namespace fwp::rt
