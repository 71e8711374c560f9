//===- PlanParser.cpp - Reading launch plans from text --------------------===//
//
// Line by line: each line is lexed into words and the punctuation of
// expressions, then read by the parser of the directive it starts with.
// Errors name the source and the line and say what was expected.
//
//===----------------------------------------------------------------------===//

#include "PlanParser.h"
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
namespace plan_parser {

using syntax::isSymbolName;
using syntax::kHeader;

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

} // namespace plan_parser

Plan Plan::parse(const std::string &text, const std::string &sourceName) {
  return plan_parser::Parser(sourceName).run(text);
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
