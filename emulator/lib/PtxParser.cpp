//===- PtxParser.cpp - PTX text to decoded kernels ------------------------===//
//
// A recursive-descent reader for the PTX that compilers emit: module
// directives, .entry kernels with .param lists, .reg and .shared
// declarations, labels with .branchtargets, and instructions. Everything it
// does not understand is an error naming the line, never skipped.
//
//===----------------------------------------------------------------------===//

#include "PtxLexer.h"
#include "PtxOpcode.h"
#include "PtxSymbols.h"
#include "Reconvergence.h"

#include "fwp/Emulator/Ptx.h"

#include <cstdlib>
#include <optional>
#include <set>
#include <stdexcept>

namespace fwp::emu {
namespace {

struct ParseError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Parser {
public:
  Parser(std::string_view text, std::vector<Token> tokens, Module &module)
      : text_(text), tokens_(std::move(tokens)), module_(module) {}

  void parseModule() {
    while (peek().kind != Token::Kind::End)
      parseModuleStatement();
  }

private:
  const Token &peek(size_t ahead = 0) const {
    return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)];
  }
  const Token &next() {
    const Token &t = peek();
    if (pos_ < tokens_.size() - 1)
      ++pos_;
    return t;
  }
  [[noreturn]] void fail(const std::string &message) const {
    const Token &t = peek();
    std::string in = kernel_ ? "kernel " + kernel_->name + ": " : "";
    throw ParseError("line " + std::to_string(t.line) + ": " + in + message +
                     (t.kind == Token::Kind::End ? " (at the end)"
                                                 : " (near `" + t.text + "`)"));
  }
  bool accept(const char *text) {
    if (peek().text == text && peek().kind != Token::Kind::String) {
      next();
      return true;
    }
    return false;
  }
  void expect(const char *text) {
    if (!accept(text))
      fail(std::string("expected `") + text + "`");
  }
  std::string expectWord() {
    if (peek().kind != Token::Kind::Word)
      fail("expected a name");
    return next().text;
  }
  uint64_t expectInteger() {
    bool negative = accept("-");
    if (peek().kind != Token::Kind::Integer)
      fail("expected an integer");
    uint64_t value = parseInteger(next().text);
    return negative ? ~value + 1 : value;
  }
  uint64_t parseInteger(std::string text) const {
    if (!text.empty() && (text.back() == 'U' || text.back() == 'u'))
      text.pop_back();
    char *end = nullptr;
    uint64_t value = std::strtoull(text.c_str(), &end, 0);
    if (*end)
      fail("bad integer `" + text + "`");
    return value;
  }
  void skipLine() {
    int line = peek().line;
    while (peek().kind != Token::Kind::End && peek().line == line)
      next();
  }

  /// `.section NAME { ... }`: the DWARF sections that come with line
  /// information (Triton's and nvcc's), which execution does not read, as
  /// .file and .loc.
  void skipSection() {
    expectWord();
    if (!accept("{"))
      fail("expected { after .section");
    for (int depth = 1; depth > 0;) {
      if (peek().kind == Token::Kind::End)
        fail("unterminated .section");
      if (accept("{"))
        ++depth;
      else if (accept("}"))
        --depth;
      else
        next();
    }
  }

  void parseModuleStatement() {
    std::string word = expectWord();
    if (word == ".version") {
      module_.ptxVersionMajor = unsigned(expectInteger());
      std::string minor = expectWord(); // `.0` lexes as a word
      module_.ptxVersionMinor = unsigned(std::atoi(minor.c_str() + 1));
    } else if (word == ".target") {
      std::string target = expectWord();
      if (target.rfind("sm_", 0) != 0)
        fail("unknown target " + target);
      module_.targetSm = unsigned(std::atoi(target.c_str() + 3));
      while (accept(","))
        expectWord();
    } else if (word == ".address_size") {
      module_.addressSize = unsigned(expectInteger());
      if (module_.addressSize != 64)
        fail("only .address_size 64 is supported");
    } else if (word == ".file" || word == ".loc") {
      skipLine();
    } else if (word == ".section") {
      skipSection();
    } else if (word == ".visible" || word == ".weak" || word == ".extern") {
      bool isExtern = word == ".extern";
      if (peek().text == ".entry")
        return parseModuleStatement();
      if (peek().text == ".shared") {
        next();
        return parseSharedVariable(module_.shared, isExtern);
      }
      if (peek().text == ".func")
        fail("device functions (.func) are not supported");
      fail("unexpected directive after " + word);
    } else if (word == ".entry") {
      parseKernel();
    } else if (word == ".shared") {
      parseSharedVariable(module_.shared, false);
    } else if (word == ".func") {
      fail("device functions (.func) are not supported");
    } else {
      fail("unsupported directive " + word);
    }
  }

  void parseSharedVariable(std::vector<SharedVariable> &into, bool isExtern) {
    SharedVariable var;
    if (accept(".align"))
      var.align = unsigned(expectInteger());
    Type type = typeFromSuffix(expectWord().substr(1));
    if (type == Type::None || type == Type::Pred)
      fail("a .shared variable needs a data type");
    var.name = expectWord();
    unsigned count = 1;
    if (accept("[")) {
      if (accept("]")) {
        if (!isExtern)
          fail("only an .extern .shared array may have no size");
        var.dynamic = true;
        count = 0;
      } else {
        count = unsigned(expectInteger());
        expect("]");
      }
    }
    var.size = count * sizeOf(type);
    var.align = std::max(var.align, sizeOf(type));
    expect(";");
    into.push_back(var);
  }

  void parseParameter(Kernel &kernel) {
    expect(".param");
    Parameter param;
    unsigned align = 0;
    if (accept(".align"))
      align = unsigned(expectInteger());
    param.type = typeFromSuffix(expectWord().substr(1));
    if (param.type == Type::None)
      fail("a parameter needs a type");
    if (accept(".ptr")) { // `.ptr.global.align 16`: a pointer's hints
      while (peek().kind == Token::Kind::Word && peek().text[0] == '.')
        if (next().text == ".align")
          expectInteger();
    }
    param.name = expectWord();
    unsigned count = 1;
    if (accept("[")) {
      count = unsigned(expectInteger());
      expect("]");
    }
    param.size = count * sizeOf(param.type);
    param.align = std::max(align, sizeOf(param.type));
    param.offset = alignUp(kernel.parameterBytes, param.align);
    kernel.parameterBytes = param.offset + param.size;
    kernel.parameters.push_back(param);
  }

  void parseKernel() {
    auto kernel = std::make_unique<Kernel>();
    kernel->line = peek().line;
    kernel->name = expectWord();
    kernel_ = kernel.get();
    registers_.clear();
    declaredPrefixes_.clear();
    declaredNames_.clear();
    labels_.clear();
    tableLabels_.clear();
    localShared_.clear();
    expect("(");
    if (!accept(")")) {
      do
        parseParameter(*kernel);
      while (accept(","));
      expect(")");
    }
    parsePerformanceDirectives(*kernel);
    expect("{");
    parseBody(*kernel);
    resolveSymbols(*kernel, {labels_, tableLabels_, pendingTables_,
                             localShared_, module_.shared});
    pendingTables_.clear();
    kernel->reconvergence = reconvergencePoints(*kernel);
    module_.kernels.push_back(std::move(kernel));
    kernel_ = nullptr;
  }

  void parsePerformanceDirectives(Kernel &kernel) {
    while (peek().kind == Token::Kind::Word) {
      std::string word = next().text;
      if (word == ".maxntid" || word == ".reqntid") {
        unsigned threads = unsigned(expectInteger());
        while (accept(","))
          threads *= unsigned(expectInteger());
        kernel.maxThreads = threads;
      } else if (word == ".minnctapersm" || word == ".maxnreg" ||
                 word == ".maxnctapersm") {
        expectInteger();
      } else {
        fail("unsupported kernel directive " + word);
      }
    }
  }

  void parseBody(Kernel &kernel) {
    int depth = 1;
    while (depth > 0) {
      if (peek().kind == Token::Kind::End)
        fail("unterminated kernel body");
      if (accept("{")) {
        ++depth;
      } else if (accept("}")) {
        --depth;
      } else if (peek().text == ".reg") {
        next();
        parseRegisterDeclaration();
      } else if (peek().text == ".shared") {
        next();
        parseSharedVariable(localShared_, false);
      } else if (peek().text == ".loc" || peek().text == ".file") {
        skipLine();
      } else if (peek().text == ".pragma") {
        next();
        next();
        expect(";");
      } else if (peek().text == ".local") {
        fail(".local memory is not supported");
      } else if (peek().kind == Token::Kind::Word && peek(1).is(":")) {
        parseLabel(kernel);
      } else {
        parseInstruction(kernel);
      }
    }
  }

  void parseRegisterDeclaration() {
    Type type = typeFromSuffix(expectWord().substr(1));
    if (type == Type::None)
      fail("a register declaration needs a type");
    do {
      std::string name = expectWord();
      if (accept("<")) {
        expectInteger();
        expect(">");
        declaredPrefixes_[name] = type;
      } else {
        declaredNames_[name] = type;
      }
    } while (accept(","));
    expect(";");
  }

  void parseLabel(Kernel &kernel) {
    std::string name = next().text;
    next(); // `:`
    if (accept(".branchtargets")) {
      std::vector<int> targets;
      std::vector<std::string> names;
      do
        names.push_back(expectWord());
      while (accept(","));
      expect(";");
      tableLabels_[name] = int(kernel.branchTables.size());
      kernel.branchTables.emplace_back();
      pendingTables_.push_back({int(kernel.branchTables.size()) - 1, names});
      return;
    }
    if (labels_.count(name))
      fail("label " + name + " defined twice");
    labels_[name] = int(kernel.body.size());
  }

  int registerSlot(const std::string &name) {
    auto it = registers_.find(name);
    if (it != registers_.end())
      return it->second;
    Type type = Type::None;
    if (auto d = declaredNames_.find(name); d != declaredNames_.end()) {
      type = d->second;
    } else {
      size_t digits = name.find_last_not_of("0123456789");
      auto p = declaredPrefixes_.find(name.substr(0, digits + 1));
      if (digits + 1 == name.size() || p == declaredPrefixes_.end())
        fail("undeclared register " + name);
      type = p->second;
    }
    int slot = int(kernel_->registerNames.size());
    kernel_->registerNames.push_back(name);
    kernel_->registerTypes.push_back(type);
    registers_[name] = slot;
    return slot;
  }

  Operand parseAddress() {
    Operand op;
    op.kind = Operand::Kind::Address;
    if (peek().kind == Token::Kind::Integer) {
      op.offset = int64_t(expectInteger());
    } else {
      std::string base = expectWord();
      if (base[0] == '%')
        op.reg = registerSlot(base);
      else
        op.symbol = base;
      if (accept("+"))
        op.offset = int64_t(expectInteger());
      else if (accept("-"))
        op.offset = -int64_t(expectInteger());
    }
    expect("]");
    return op;
  }

  Operand parseOperand() {
    Operand op;
    if (accept("[")) {
      return parseAddress();
    } else if (accept("{")) {
      op.kind = Operand::Kind::Vector;
      do
        op.elements.push_back(parseOperand());
      while (accept(","));
      expect("}");
    } else if (accept("!")) {
      op = parseOperand();
      if (op.kind != Operand::Kind::Register)
        fail("`!` needs a predicate register");
      op.negated = true;
    } else if (peek().kind == Token::Kind::Float32 ||
               peek().kind == Token::Kind::Float64) {
      op.kind = Operand::Kind::Immediate;
      op.bits = std::strtoull(next().text.c_str() + 2, nullptr, 16);
    } else if (peek().kind == Token::Kind::Integer || peek().is("-")) {
      op.kind = Operand::Kind::Immediate;
      op.bits = expectInteger();
    } else {
      std::string word = expectWord();
      if (word == "_") {
        op.kind = Operand::Kind::Sink;
      } else if (auto special = specialRegister(word)) {
        op.kind = Operand::Kind::Special;
        op.special = *special;
      } else if (word[0] == '%' || declaredNames_.count(word)) {
        // Registers of an inner scope may have plain names (`tmp`).
        op.kind = Operand::Kind::Register;
        op.reg = registerSlot(word);
      } else {
        op.kind = Operand::Kind::Label; // a label or a variable: see resolve
        op.symbol = word;
      }
    }
    if (accept("|")) { // setp's second destination: `%p1|%p2`
      Operand pair;
      pair.kind = Operand::Kind::Vector;
      pair.elements = {op, parseOperand()};
      return pair;
    }
    return op;
  }

  void parseInstruction(Kernel &kernel) {
    Instruction inst;
    inst.line = peek().line;
    size_t start = pos_;
    if (accept("@")) {
      bool negated = accept("!");
      std::string name = expectWord();
      inst.guard = registerSlot(name);
      inst.guardNegated = negated;
    }
    std::string word = expectWord();
    std::string problem = decodeOpcode(word, inst);
    if (!problem.empty())
      fail(problem);
    if (!accept(";")) {
      do
        inst.operands.push_back(parseOperand());
      while (accept(","));
      expect(";");
    }
    // The instruction as written, without its `;`.
    size_t from = tokens_[start].offset, to = tokens_[pos_ - 1].offset;
    inst.text = std::string(text_.substr(from, to - from));
    kernel.body.push_back(std::move(inst));
  }

  std::string_view text_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  Module &module_;
  Kernel *kernel_ = nullptr;
  std::map<std::string, int> registers_;
  std::map<std::string, Type> declaredPrefixes_, declaredNames_;
  std::map<std::string, int> labels_, tableLabels_;
  std::vector<std::pair<int, std::vector<std::string>>> pendingTables_;
  std::vector<SharedVariable> localShared_;
};

} // namespace

const Kernel *Module::kernel(std::string_view name) const {
  for (const auto &k : kernels)
    if (k->name == name)
      return k.get();
  return nullptr;
}

std::unique_ptr<Module> parsePtx(std::string_view text, std::string &error) {
  std::vector<Token> tokens;
  if (!lexPtx(text, tokens, error))
    return nullptr;
  auto module = std::make_unique<Module>();
  try {
    Parser(text, std::move(tokens), *module).parseModule();
  } catch (const std::runtime_error &e) { // ParseError, or resolveSymbols'
    error = e.what();
    return nullptr;
  }
  if (module->targetSm == 0) {
    error = "line 1: no .target directive";
    return nullptr;
  }
  return module;
}

} // namespace fwp::emu
