//===- NpyHeader.cpp - The dict of an .npy header -------------------------===//
//
// A hand-written parser for the small subset of Python literals numpy
// writes in a header (strings, True/False, tuples of non-negative ints).
//
//===----------------------------------------------------------------------===//

#include "NpyHeader.h"

#include <fmt/format.h>

#include <cctype>
#include <limits>
#include <stdexcept>

namespace fwp::npy::detail {

void fail(const std::string &name, const std::string &problem) {
  throw std::runtime_error(fmt::format("{}: {}", name, problem));
}

namespace {

class HeaderParser {
public:
  HeaderParser(const std::string &text, const std::string &name)
      : text(text), name(name) {}

  Dict parse() {
    Dict dict;
    skipSpace();
    if (!consume('{'))
      error("the header is not a dict (expected '{')");
    skipSpace();
    while (!consume('}')) {
      std::string key = parseString("a dict key");
      if (key != "descr" && key != "fortran_order" && key != "shape")
        error(fmt::format("unexpected key '{}'", key));
      skipSpace();
      if (!consume(':'))
        error(fmt::format("expected ':' after key '{}'", key));
      skipSpace();
      Value value = parseValue(key);
      if (key == "descr")
        store(dict.hasDescr, dict.descr, key, value);
      else if (key == "fortran_order")
        store(dict.hasFortran, dict.fortran, key, value);
      else
        store(dict.hasShape, dict.shape, key, value);
      skipSpace();
      if (consume(','))
        skipSpace();
      else if (peek() != '}')
        error(fmt::format("expected ',' or '}}' after the value of '{}'", key));
    }
    skipSpace();
    if (pos != text.size())
      error("unexpected text after the dict");
    if (!dict.hasDescr)
      error("missing key 'descr'");
    if (!dict.hasFortran)
      error("missing key 'fortran_order'");
    if (!dict.hasShape)
      error("missing key 'shape'");
    return dict;
  }

private:
  const std::string &text;
  const std::string &name;
  size_t pos = 0;

  [[noreturn]] void error(const std::string &problem) {
    fail(name, fmt::format("malformed .npy header: {}", problem));
  }

  char peek() const { return pos < text.size() ? text[pos] : '\0'; }

  bool consume(char c) {
    if (pos < text.size() && text[pos] == c) {
      ++pos;
      return true;
    }
    return false;
  }

  bool consumeWord(const char *word) {
    size_t len = std::strlen(word);
    if (text.compare(pos, len, word) != 0)
      return false;
    // The word must not run on into an identifier ("Falsey").
    if (pos + len < text.size()) {
      char next = text[pos + len];
      if (std::isalnum(static_cast<unsigned char>(next)) || next == '_')
        return false;
    }
    pos += len;
    return true;
  }

  void skipSpace() {
    while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\t' ||
                                 text[pos] == '\n' || text[pos] == '\r'))
      ++pos;
  }

  void store(bool &has, Value &slot, const std::string &key,
             const Value &value) {
    if (has)
      error(fmt::format("duplicate key '{}'", key));
    has = true;
    slot = value;
  }

  std::string parseString(const char *what) {
    char quote = peek();
    if (quote != '\'' && quote != '"')
      error(fmt::format("expected {} (a quoted string)", what));
    ++pos;
    std::string out;
    while (true) {
      if (pos >= text.size())
        error("unterminated string");
      char c = text[pos++];
      if (c == quote)
        return out;
      if (c == '\n')
        error("unterminated string");
      if (c == '\\') {
        if (pos >= text.size())
          error("unterminated string");
        char e = text[pos++];
        if (e != '\\' && e != '\'' && e != '"')
          error("unsupported escape sequence in a string");
        c = e;
      }
      out += c;
    }
  }

  Value parseValue(const std::string &key) {
    size_t start = pos;
    Value value;
    char c = peek();
    if (c == '\'' || c == '"') {
      value.kind = Value::String;
      value.str = parseString("a string");
    } else if (consumeWord("True")) {
      value.kind = Value::Bool;
      value.boolean = true;
    } else if (consumeWord("False")) {
      value.kind = Value::Bool;
      value.boolean = false;
    } else if (c == '(') {
      value.kind = Value::Tuple;
      value.tuple = parseTuple(key);
    } else if (c == '[' && key == "descr") {
      fail(name, "structured dtypes are not supported");
    } else {
      error(fmt::format("unsupported value for '{}'", key));
    }
    value.text = text.substr(start, pos - start);
    return value;
  }

  int64_t parseInt(const std::string &key) {
    if (peek() == '-')
      fail(name, fmt::format("bad shape: negative dimension in '{}'", key));
    if (!std::isdigit(static_cast<unsigned char>(peek())))
      error(fmt::format("bad shape tuple: expected an integer in '{}'", key));
    int64_t v = 0;
    while (std::isdigit(static_cast<unsigned char>(peek()))) {
      int digit = text[pos++] - '0';
      if (v > (std::numeric_limits<int64_t>::max() - digit) / 10)
        error(fmt::format("bad shape tuple: dimension too large in '{}'", key));
      v = v * 10 + digit;
    }
    consume('L'); // Python 2 long literal, as old numpy wrote them.
    return v;
  }

  std::vector<int64_t> parseTuple(const std::string &key) {
    std::vector<int64_t> out;
    consume('(');
    skipSpace();
    if (consume(')'))
      return out;
    bool sawComma = false;
    while (true) {
      out.push_back(parseInt(key));
      skipSpace();
      if (consume(')'))
        break;
      if (!consume(','))
        error(fmt::format("bad shape tuple: expected ',' or ')' in '{}'", key));
      sawComma = true;
      skipSpace();
      if (consume(')'))
        break;
    }
    // "(3)" is the integer 3 in Python, not a tuple.
    if (out.size() == 1 && !sawComma)
      error(fmt::format("bad shape tuple: '{}' is not a tuple", key));
    return out;
  }
};

} // namespace

Dict parseHeader(const std::string &text, const std::string &name) {
  return HeaderParser(text, name).parse();
}

} // namespace fwp::npy::detail
