//===- PtxLexer.cpp - PTX text to tokens ----------------------------------===//

#include "PtxLexer.h"

#include <cctype>

namespace fwp::emu {
namespace {

bool isWordStart(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == '$' ||
         c == '%' || c == '.';
}
bool isWordChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' ||
         c == '.' || c == ':';
}

/// Float literals are written as their bits: 0fXXXXXXXX, 0dXXXXXXXXXXXXXXXX.
Token::Kind numberKind(std::string_view number) {
  if (number.size() > 2 && number[0] == '0' &&
      (number[1] == 'f' || number[1] == 'F'))
    return Token::Kind::Float32;
  if (number.size() > 2 && number[0] == '0' &&
      (number[1] == 'd' || number[1] == 'D'))
    return Token::Kind::Float64;
  return Token::Kind::Integer;
}

} // namespace

bool lexPtx(std::string_view text, std::vector<Token> &tokens,
            std::string &error) {
  int line = 1;
  size_t i = 0, n = text.size();
  while (i < n) {
    char c = text[i];
    if (c == '\n') {
      ++line;
      ++i;
    } else if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (text.substr(i, 2) == "//") {
      while (i < n && text[i] != '\n')
        ++i;
    } else if (text.substr(i, 2) == "/*") {
      size_t end = text.find("*/", i + 2);
      for (size_t j = i; j < std::min(end, n); ++j)
        line += text[j] == '\n';
      i = end == std::string_view::npos ? n : end + 2;
    } else if (c == '"') {
      size_t end = text.find('"', i + 1);
      if (end == std::string_view::npos) {
        error = "line " + std::to_string(line) + ": unterminated string";
        return false;
      }
      tokens.push_back({Token::Kind::String,
                        std::string(text.substr(i + 1, end - i - 1)), line, i});
      i = end + 1;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t start = i;
      while (i < n && std::isalnum(static_cast<unsigned char>(text[i])))
        ++i;
      std::string_view number = text.substr(start, i - start);
      tokens.push_back({numberKind(number), std::string(number), line, start});
    } else if (isWordStart(c)) {
      size_t start = i++;
      // `::` belongs to a word (`.shared::cta`); a lone `:` ends a label.
      while (i < n && isWordChar(text[i]) &&
             (text[i] != ':' || (i + 1 < n && text[i + 1] == ':') ||
              (i > 0 && text[i - 1] == ':')))
        ++i;
      tokens.push_back({Token::Kind::Word,
                        std::string(text.substr(start, i - start)), line,
                        start});
    } else if (std::string_view("{}[]();,:+-@!<>|=").find(c) !=
               std::string_view::npos) {
      tokens.push_back({Token::Kind::Punct, std::string(1, c), line, i});
      ++i;
    } else {
      error = "line " + std::to_string(line) + ": unexpected character '" +
              std::string(1, c) + "'";
      return false;
    }
  }
  tokens.push_back({Token::Kind::End, "", line, n});
  return true;
}

} // namespace fwp::emu
