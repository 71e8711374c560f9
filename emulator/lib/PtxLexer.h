//===- PtxLexer.h - PTX text to tokens --------------------------*- C++ -*-===//

#ifndef FWP_EMULATOR_PTXLEXER_H
#define FWP_EMULATOR_PTXLEXER_H

#include <string>
#include <string_view>
#include <vector>

namespace fwp::emu {

struct Token {
  enum class Kind { Word, Integer, Float32, Float64, String, Punct, End };
  Kind kind;
  std::string text; // a Word keeps its dots: `ld.global.f32`, `%tid.x`
  int line;
  size_t offset = 0; // where it starts in the PTX text
  bool is(const char *punct) const {
    return kind == Kind::Punct && text == punct;
  }
};

/// Splits PTX into tokens, dropping comments. On a character PTX does not
/// use, returns false with `error` naming the line.
bool lexPtx(std::string_view text, std::vector<Token> &tokens,
            std::string &error);

} // namespace fwp::emu

#endif // FWP_EMULATOR_PTXLEXER_H
