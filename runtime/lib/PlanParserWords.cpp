//===- PlanParserWords.cpp - Tokens, names and expressions of plans -------===//

#include "PlanParser.h"
#include "PlanSyntax.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>

namespace fwp::rt::plan_parser {
namespace {

using syntax::isName;

const char *const kOpList = "add, sub, mul, divs, divu, rems, remu, ceildiv, "
                            "ceildivu, floordiv, mins, maxs, minu or maxu";

bool isPunctuation(char c) { return c == '(' || c == ')' || c == ','; }

bool isBlank(char c) { return std::isspace(static_cast<unsigned char>(c)); }

} // namespace

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

} // namespace fwp::rt::plan_parser
