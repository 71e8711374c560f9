//===- PtxOpcode.cpp - An instruction's opcode and modifiers --------------===//

#include "PtxOpcode.h"

#include <cstring>
#include <map>
#include <vector>

namespace fwp::emu {
namespace {

const std::map<std::string_view, Opcode> &opcodeTable() {
  static const std::map<std::string_view, Opcode> table = {
#define FWP_PTX_OPCODE(name, text) {text, Opcode::name},
#include "fwp/Emulator/Opcodes.def"
  };
  return table;
}

std::vector<std::string_view> splitDots(std::string_view word) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (start <= word.size()) {
    size_t dot = word.find('.', start);
    if (dot == std::string_view::npos)
      dot = word.size();
    parts.push_back(word.substr(start, dot - start));
    start = dot + 1;
  }
  return parts;
}

/// The longest prefix of `parts` that names an opcode (`cp.async.wait_group`
/// before `cp.async` before `cp`); how many parts it took, or 0.
size_t matchOpcode(const std::vector<std::string_view> &parts, Opcode &op) {
  const auto &table = opcodeTable();
  std::string name;
  size_t best = 0;
  for (size_t i = 0; i < parts.size() && i < 3; ++i) {
    name += (i ? "." : "") + std::string(parts[i]);
    auto it = table.find(name);
    if (it != table.end()) {
      op = it->second;
      best = i + 1;
    }
  }
  return best;
}

bool decodeRounding(std::string_view s, Rounding &r) {
  static const std::map<std::string_view, Rounding> table = {
      {"rn", Rounding::Rn},   {"rz", Rounding::Rz},   {"rm", Rounding::Rm},
      {"rp", Rounding::Rp},   {"rna", Rounding::Rna}, {"rni", Rounding::Rni},
      {"rzi", Rounding::Rzi}, {"rmi", Rounding::Rmi}, {"rpi", Rounding::Rpi}};
  auto it = table.find(s);
  if (it == table.end())
    return false;
  r = it->second;
  return true;
}

bool decodeCompare(std::string_view s, Compare &c) {
  static const std::map<std::string_view, Compare> table = {
      {"eq", Compare::Eq},   {"ne", Compare::Ne},   {"lt", Compare::Lt},
      {"le", Compare::Le},   {"gt", Compare::Gt},   {"ge", Compare::Ge},
      {"lo", Compare::Lo},   {"ls", Compare::Ls},   {"hi", Compare::Hi},
      {"hs", Compare::Hs},   {"equ", Compare::Equ}, {"neu", Compare::Neu},
      {"ltu", Compare::Ltu}, {"leu", Compare::Leu}, {"gtu", Compare::Gtu},
      {"geu", Compare::Geu}, {"num", Compare::Num}, {"nan", Compare::Nan}};
  auto it = table.find(s);
  if (it == table.end())
    return false;
  c = it->second;
  return true;
}

bool decodeSpace(std::string_view s, Space &space) {
  if (s == "global")
    space = Space::Global;
  else if (s == "shared" || s == "shared::cta")
    space = Space::Shared;
  else if (s == "param")
    space = Space::Param;
  else if (s == "local")
    space = Space::Local;
  else if (s == "const")
    space = Space::Const;
  else
    return false;
  return true;
}

/// Modifiers that change nothing the emulator models: caching hints,
/// memory-order scopes of a single-device machine, `sync` of instructions
/// that are always warp-synchronous here.
bool isIgnoredHint(std::string_view s) {
  static const char *const hints[] = {"ca",
                                      "cg",
                                      "cs",
                                      "lu",
                                      "cv",
                                      "wb",
                                      "wt",
                                      "nc",
                                      "sync",
                                      "relaxed",
                                      "gpu",
                                      "sys",
                                      "cta",
                                      "weak",
                                      "volatile",
                                      "L1::evict_last",
                                      "L1::evict_first",
                                      "L1::no_allocate",
                                      "L2::64B",
                                      "L2::128B",
                                      "L2::256B",
                                      "L1::evict_normal",
                                      "L2::cache_hint",
                                      "row",
                                      "col",
                                      "m8n8"};
  for (const char *hint : hints)
    if (s == hint)
      return true;
  return false;
}

bool decodeShape(std::string_view s, Instruction &inst) {
  unsigned m, n, k;
  char tail;
  std::string text(s);
  if (std::sscanf(text.c_str(), "m%un%uk%u%c", &m, &n, &k, &tail) != 3)
    return false;
  inst.shapeM = m;
  inst.shapeN = n;
  inst.shapeK = k;
  return true;
}

bool decodeAtomicOp(Opcode op, std::string_view s, Instruction &inst) {
  if (op != Opcode::Atom && op != Opcode::Red)
    return false;
  static const char *const ops[] = {"add",  "min", "max", "inc", "dec",
                                    "exch", "cas", "and", "or",  "xor"};
  for (const char *name : ops)
    if (s == name) {
      inst.atomicOp = name;
      return true;
    }
  return false;
}

/// Flags spelled as one suffix; false if `s` is none of them.
bool decodeFlag(Opcode op, std::string_view s, Instruction &inst) {
  bool isMulLike = op == Opcode::Mul || op == Opcode::Mad ||
                   op == Opcode::Mul24 || op == Opcode::Mad24;
  if (isMulLike && s == "lo")
    return inst.lo = true;
  if (isMulLike && s == "hi")
    return inst.hi = true;
  if (isMulLike && s == "wide")
    return inst.wide = true;
  struct Flag {
    const char *name;
    bool Instruction::*field;
  };
  static const Flag flags[] = {{"ftz", &Instruction::ftz},
                               {"sat", &Instruction::sat},
                               {"approx", &Instruction::approx},
                               {"full", &Instruction::full},
                               {"uni", &Instruction::uni},
                               {"trans", &Instruction::trans},
                               {"relu", &Instruction::relu},
                               {"cc", &Instruction::cc},
                               {"clamp", &Instruction::shiftClamp},
                               {"aligned", &Instruction::aligned},
                               {"to", &Instruction::to},
                               {"idx", &Instruction::idx},
                               {"l", &Instruction::left},
                               {"r", &Instruction::right},
                               {"wrap", &Instruction::wrap}};
  for (const Flag &flag : flags)
    if (s == flag.name)
      return inst.*flag.field = true;
  return false;
}

bool decodeShuffleMode(Opcode op, std::string_view s, Instruction &inst) {
  if (op != Opcode::Shfl)
    return false;
  static const std::map<std::string_view, ShuffleMode> table = {
      {"up", ShuffleMode::Up},
      {"down", ShuffleMode::Down},
      {"bfly", ShuffleMode::Bfly},
      {"idx", ShuffleMode::Idx}};
  auto it = table.find(s);
  if (it == table.end())
    return false;
  inst.shuffle = it->second;
  return true;
}

std::string decodeModifier(std::string_view s, Instruction &inst,
                           std::vector<Type> &types) {
  Opcode op = inst.op;
  bool isCompare = op == Opcode::Setp || op == Opcode::Set;
  if (Type t = typeFromSuffix(s); t != Type::None) {
    types.push_back(t);
  } else if (decodeShuffleMode(op, s, inst)) {
  } else if (isCompare && inst.compare == Compare::None &&
             decodeCompare(s, inst.compare)) {
  } else if (isCompare && (s == "and" || s == "or" || s == "xor")) {
    inst.combine = s == "and"  ? Opcode::And
                   : s == "or" ? Opcode::Or
                               : Opcode::Xor;
  } else if (decodeRounding(s, inst.rounding) || decodeSpace(s, inst.space) ||
             decodeFlag(op, s, inst) || decodeAtomicOp(op, s, inst) ||
             isIgnoredHint(s)) {
  } else if (s == "v2" || s == "v4") {
    inst.vector = s[1] - '0';
  } else if (s == "x1" || s == "x2" || s == "x4") {
    inst.matrices = s[1] - '0';
  } else if (op == Opcode::Mma && decodeShape(s, inst)) {
  } else if ((op == Opcode::Bar || op == Opcode::Barrier) &&
             (s == "arrive" || s == "red")) {
    return "bar." + std::string(s) + " is not supported";
  } else {
    return "unknown modifier ." + std::string(s);
  }
  return "";
}

/// Which of the type suffixes is which: cvt names destination then source,
/// mma d, a, b, c, mul.wide the source.
void assignTypes(const std::vector<Type> &types, Instruction &inst) {
  if (types.empty())
    return;
  inst.type = types.back();
  if (inst.op == Opcode::Cvt && types.size() == 2) {
    inst.type = types[0];
    inst.sourceType = types[1];
  } else if (inst.op == Opcode::Mma && types.size() == 4) {
    inst.type = types[0];
    inst.sourceType = types[1];
    inst.accumulatorType = types[3];
  } else if (types.size() == 2) {
    inst.sourceType = types[0];
  }
}

} // namespace

Type typeFromSuffix(std::string_view s) {
  static const std::map<std::string_view, Type> table = {
      {"pred", Type::Pred},   {"b8", Type::B8},     {"b16", Type::B16},
      {"b32", Type::B32},     {"b64", Type::B64},   {"b128", Type::B128},
      {"u8", Type::U8},       {"u16", Type::U16},   {"u32", Type::U32},
      {"u64", Type::U64},     {"s8", Type::S8},     {"s16", Type::S16},
      {"s32", Type::S32},     {"s64", Type::S64},   {"f16", Type::F16},
      {"f16x2", Type::F16x2}, {"bf16", Type::BF16}, {"bf16x2", Type::BF16x2},
      {"tf32", Type::TF32},   {"f32", Type::F32},   {"f64", Type::F64}};
  auto it = table.find(s);
  return it == table.end() ? Type::None : it->second;
}

std::string decodeOpcode(std::string_view word, Instruction &inst) {
  std::vector<std::string_view> parts = splitDots(word);
  size_t used = matchOpcode(parts, inst.op);
  if (used == 0)
    return "unknown instruction '" + std::string(parts[0]) + "'";
  std::vector<Type> types;
  for (size_t i = used; i < parts.size(); ++i) {
    // `shared::cta` and `L1::evict_last` were split at their dots only if
    // they had any; a part is whole here.
    std::string problem = decodeModifier(parts[i], inst, types);
    if (!problem.empty())
      return problem + " in '" + std::string(word) + "'";
  }
  assignTypes(types, inst);
  return "";
}

} // namespace fwp::emu
