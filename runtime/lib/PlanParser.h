//===- PlanParser.h - The launch plan parser's parts -----------*- C++ -*-===//
//
// Internal to the runtime: the lexer and the parser of launch plans, shared
// by PlanParser.cpp (the directives) and PlanParserWords.cpp (tokens, names
// and expressions).
//
//===----------------------------------------------------------------------===//

#ifndef FWP_RUNTIME_LIB_PLANPARSER_H
#define FWP_RUNTIME_LIB_PLANPARSER_H

#include "fwp/Runtime/Plan.h"

#include <fmt/format.h>

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace fwp::rt::plan_parser {

struct Token {
  enum Kind { Word, LParen, RParen, Comma } kind;
  std::string text;
};

/// The tokens of `line` without its comment: words, '(', ')' and ','.
std::vector<Token> lex(const std::string &line);

/// Whether `s` is an integer literal: digits, perhaps after a '-'.
bool looksLikeInteger(const std::string &s);

/// "a, b, c", or "none".
std::string joinNames(const std::set<std::string> &names);

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

} // namespace fwp::rt::plan_parser

#endif // FWP_RUNTIME_LIB_PLANPARSER_H
