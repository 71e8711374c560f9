//===- Ptx.h - A PTX module, parsed for the interpreter ---------*- C++ -*-===//
//
// The parser turns PTX text into kernels of decoded instructions: every
// register is a slot number, every label an instruction index, every
// modifier a field, so that the interpreter never looks at text again.
// Semantics live in the interpreter (Execute*.cpp), taken from NVIDIA's PTX
// ISA; this file only says what an instruction names.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_EMULATOR_PTX_H
#define FWP_EMULATOR_PTX_H

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace fwp::emu {

/// PTX's fundamental types (ISA 5.2.1) plus the packed pairs and tf32.
enum class Type : uint8_t {
  None,
  Pred,
  B8,
  B16,
  B32,
  B64,
  B128,
  U8,
  U16,
  U32,
  U64,
  S8,
  S16,
  S32,
  S64,
  F16,
  F16x2,
  BF16,
  BF16x2,
  TF32,
  F32,
  F64,
};

/// Size in bytes of one value of `type` (a predicate counts as 1).
unsigned sizeOf(Type type);
bool isFloat(Type type);
bool isSigned(Type type);

enum class Space : uint8_t {
  None,
  Param,
  Global,
  Shared,
  Local,
  Const,
  Generic
};

/// Rounding modifiers (ISA 9.7.1.x: .rn .rz .rm .rp for floats, .rni ...
/// for float-to-integer, .rna for tf32).
enum class Rounding : uint8_t { None, Rn, Rz, Rm, Rp, Rna, Rni, Rzi, Rmi, Rpi };

/// shfl.sync's mode (ISA "Data Movement and Conversion Instructions:
/// shfl.sync"): how each lane's source lane is computed.
enum class ShuffleMode : uint8_t { None, Up, Down, Bfly, Idx };

/// setp's comparison (ISA 9.7.9.x): the ordered and unordered float forms.
enum class Compare : uint8_t {
  None,
  Eq,
  Ne,
  Lt,
  Le,
  Gt,
  Ge,
  Lo,
  Ls,
  Hi,
  Hs,
  Equ,
  Neu,
  Ltu,
  Leu,
  Gtu,
  Geu,
  Num,
  Nan,
};

/// The special registers the interpreter supplies.
enum class Special : uint8_t {
  TidX,
  TidY,
  TidZ,
  NtidX,
  NtidY,
  NtidZ,
  CtaidX,
  CtaidY,
  CtaidZ,
  NctaidX,
  NctaidY,
  NctaidZ,
  LaneId,
  WarpId,
  NwarpId,
  SmId,
  Clock,
  Clock64,
  GlobalTimer,
};

enum class Opcode : uint16_t {
#define FWP_PTX_OPCODE(name, text) name,
#include "fwp/Emulator/Opcodes.def"
};
const char *opcodeName(Opcode op);

struct Operand {
  enum class Kind : uint8_t {
    None,
    Register,  // reg
    Immediate, // bits (a float literal is stored as the bits of its type)
    Special,   // special
    Address,   // [reg + offset] or [symbol + offset]: reg < 0 for a symbol
    Vector,    // {regs...}: elements in `elements`
    Label,     // target: an instruction index
    Sink,      // `_`
  };
  Kind kind = Kind::None;
  bool negated = false; // `!%p`
  int reg = -1;         // a register slot; for Address, the base or -1
  uint64_t bits = 0;    // Immediate's value
  int64_t offset = 0;   // Address: symbol address plus offset
  Special special = Special::TidX;
  int target = -1;               // Label: an instruction or branch table
  std::string symbol;            // a variable's name, until it is placed
  std::vector<Operand> elements; // Vector
};

struct Instruction {
  Opcode op = Opcode::Invalid;
  int guard = -1; // predicate register slot, -1 for none
  bool guardNegated = false;
  Type type = Type::None;            // the (last) type suffix
  Type sourceType = Type::None;      // cvt's source; mma's A/B type
  Type accumulatorType = Type::None; // mma's C type
  Space space = Space::None;
  Rounding rounding = Rounding::None;
  Compare compare = Compare::None;
  Opcode combine = Opcode::Invalid;        // setp/set's .and/.or/.xor
  uint8_t vector = 1;                      // .v2/.v4
  uint8_t matrices = 0;                    // ldmatrix .x1/.x2/.x4
  ShuffleMode shuffle = ShuffleMode::None; // shfl's .up/.down/.bfly/.idx
  bool ftz = false, sat = false, approx = false, full = false;
  bool wide = false, hi = false, lo = false, uni = false, trans = false;
  bool relu = false, cc = false, shiftClamp = false, aligned = false;
  bool to = false, idx = false, left = false, right = false, wrap = false;
  uint16_t shapeM = 0, shapeN = 0, shapeK = 0; // mma
  std::string atomicOp; // atom's .add/.min/... (rare: kept as text)
  std::vector<Operand> operands;
  int line = 0;     // 1-based line in the module's text
  std::string text; // the instruction as written, for reports
};

struct Parameter {
  std::string name;
  Type type = Type::None;
  unsigned offset = 0, size = 0, align = 0;
};

struct Kernel {
  std::string name;
  std::vector<Parameter> parameters;
  unsigned parameterBytes = 0;
  std::vector<Instruction> body;
  std::vector<std::string> registerNames; // slot -> name
  std::vector<Type> registerTypes;
  unsigned staticSharedBytes = 0; // the module's and the kernel's .shared
  unsigned maxThreads = 0;        // .maxntid, 0 if none
  int line = 0;
  /// brx.idx's `.branchtargets` lists: instruction indices.
  std::vector<std::vector<int>> branchTables;
  /// Offset of each .shared variable the kernel uses, in its shared memory.
  std::map<std::string, unsigned> sharedOffsets;
  unsigned dynamicSharedOffset = 0; // where `.extern .shared` starts
  /// Per instruction: where lanes a branch there splits meet again (the
  /// first instruction of the immediate post-dominator), -1 for the exit.
  std::vector<int> reconvergence;
};

struct SharedVariable {
  std::string name;
  unsigned offset = 0, size = 0, align = 1;
  bool dynamic = false; // `.extern .shared` of unknown size
};

struct Module {
  unsigned ptxVersionMajor = 0, ptxVersionMinor = 0;
  unsigned targetSm = 0; // .target sm_NN
  unsigned addressSize = 64;
  std::vector<SharedVariable> shared; // module-scope .shared variables
  std::vector<std::unique_ptr<Kernel>> kernels;

  const Kernel *kernel(std::string_view name) const;
};

/// Parses PTX text. On failure returns null and sets `error` to
/// "line N: message (near `token`)".
std::unique_ptr<Module> parsePtx(std::string_view text, std::string &error);

} // namespace fwp::emu

#endif // FWP_EMULATOR_PTX_H
