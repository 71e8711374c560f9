//===- Ptx.cpp - Facts about PTX types and opcodes ------------------------===//

#include "fwp/Emulator/Ptx.h"

namespace fwp::emu {

unsigned sizeOf(Type type) {
  switch (type) {
  case Type::None:
    return 0;
  case Type::Pred:
  case Type::B8:
  case Type::U8:
  case Type::S8:
    return 1;
  case Type::B16:
  case Type::U16:
  case Type::S16:
  case Type::F16:
  case Type::BF16:
    return 2;
  case Type::B32:
  case Type::U32:
  case Type::S32:
  case Type::F32:
  case Type::TF32:
  case Type::F16x2:
  case Type::BF16x2:
    return 4;
  case Type::B64:
  case Type::U64:
  case Type::S64:
  case Type::F64:
    return 8;
  case Type::B128:
    return 16;
  }
  return 0;
}

bool isFloat(Type type) {
  switch (type) {
  case Type::F16:
  case Type::F16x2:
  case Type::BF16:
  case Type::BF16x2:
  case Type::TF32:
  case Type::F32:
  case Type::F64:
    return true;
  default:
    return false;
  }
}

bool isSigned(Type type) {
  return type == Type::S8 || type == Type::S16 || type == Type::S32 ||
         type == Type::S64;
}

const char *opcodeName(Opcode op) {
  static const char *const names[] = {
#define FWP_PTX_OPCODE(name, text) text,
#include "fwp/Emulator/Opcodes.def"
  };
  return names[static_cast<int>(op)];
}

} // namespace fwp::emu
