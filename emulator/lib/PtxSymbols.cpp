//===- PtxSymbols.cpp - Placing what a kernel's operands name -------------===//

#include "PtxSymbols.h"

#include <algorithm>
#include <stdexcept>

namespace fwp::emu {
namespace {

class Resolver {
public:
  Resolver(Kernel &kernel, const KernelNames &names)
      : kernel_(kernel), names_(names) {}

  void run() {
    std::vector<Operand *> dynamicUses;
    for (Instruction &inst : kernel_.body)
      for (Operand &op : inst.operands)
        resolve(op, dynamicUses);
    kernel_.dynamicSharedOffset =
        alignUp(kernel_.staticSharedBytes, dynamicAlign_);
    for (Operand *op : dynamicUses)
      addToAddress(*op, kernel_.dynamicSharedOffset);
    for (const auto &[table, labels] : names_.pendingTables)
      for (const std::string &label : labels) {
        auto l = names_.labels.find(label);
        if (l == names_.labels.end())
          fail(".branchtargets names unknown label " + label);
        kernel_.branchTables[size_t(table)].push_back(l->second);
      }
  }

private:
  [[noreturn]] void fail(const std::string &what) const {
    throw std::runtime_error("line " + std::to_string(kernel_.line) +
                             ": kernel " + kernel_.name + ": " + what);
  }

  const SharedVariable *findShared(const std::string &name) const {
    for (const auto *vars : {&names_.localShared, &names_.moduleShared})
      for (const SharedVariable &var : *vars)
        if (var.name == name)
          return &var;
    return nullptr;
  }

  /// Static variables in the order the kernel first names them; the
  /// dynamic part (~0u here) goes after them, once their size is known.
  unsigned placeShared(const SharedVariable &var) {
    if (var.dynamic) {
      dynamicAlign_ = std::max(dynamicAlign_, var.align);
      return ~0u;
    }
    auto it = kernel_.sharedOffsets.find(var.name);
    if (it != kernel_.sharedOffsets.end())
      return it->second;
    unsigned offset = alignUp(kernel_.staticSharedBytes, var.align);
    kernel_.staticSharedBytes = offset + var.size;
    kernel_.sharedOffsets[var.name] = offset;
    return offset;
  }

  /// A variable's address is an immediate (`mov %r, var`) or a base
  /// (`[var+4]`).
  static void addToAddress(Operand &op, unsigned offset) {
    if (op.kind == Operand::Kind::Immediate)
      op.bits += offset;
    else
      op.offset += offset;
  }

  bool resolveLabel(Operand &op) const {
    for (const auto *labels : {&names_.labels, &names_.tableLabels})
      if (auto l = labels->find(op.symbol); l != labels->end()) {
        op.target = l->second;
        return true;
      }
    return false;
  }

  bool resolveParameter(Operand &op) const {
    for (const Parameter &param : kernel_.parameters)
      if (param.name == op.symbol) {
        if (op.kind != Operand::Kind::Address)
          fail("parameter " + op.symbol + " used as a value");
        op.offset += param.offset;
        return true;
      }
    return false;
  }

  void resolve(Operand &op, std::vector<Operand *> &dynamicUses) {
    for (Operand &element : op.elements)
      resolve(element, dynamicUses);
    if (op.symbol.empty())
      return;
    if ((op.kind == Operand::Kind::Label && resolveLabel(op)) ||
        resolveParameter(op))
      return;
    const SharedVariable *var = findShared(op.symbol);
    if (!var)
      fail("names unknown label or variable " + op.symbol);
    if (op.kind == Operand::Kind::Label)
      op.kind = Operand::Kind::Immediate; // the variable's address
    unsigned offset = placeShared(*var);
    if (offset == ~0u)
      dynamicUses.push_back(&op);
    else
      addToAddress(op, offset);
  }

  Kernel &kernel_;
  const KernelNames &names_;
  unsigned dynamicAlign_ = 16;
};

} // namespace

unsigned alignUp(unsigned value, unsigned align) {
  return align ? (value + align - 1) / align * align : value;
}

void resolveSymbols(Kernel &kernel, const KernelNames &names) {
  Resolver(kernel, names).run();
}

std::optional<Special> specialRegister(std::string_view name) {
  static const std::map<std::string_view, Special> table = {
      {"%tid.x", Special::TidX},
      {"%tid.y", Special::TidY},
      {"%tid.z", Special::TidZ},
      {"%ntid.x", Special::NtidX},
      {"%ntid.y", Special::NtidY},
      {"%ntid.z", Special::NtidZ},
      {"%ctaid.x", Special::CtaidX},
      {"%ctaid.y", Special::CtaidY},
      {"%ctaid.z", Special::CtaidZ},
      {"%nctaid.x", Special::NctaidX},
      {"%nctaid.y", Special::NctaidY},
      {"%nctaid.z", Special::NctaidZ},
      {"%laneid", Special::LaneId},
      {"%warpid", Special::WarpId},
      {"%nwarpid", Special::NwarpId},
      {"%smid", Special::SmId},
      {"%clock", Special::Clock},
      {"%clock64", Special::Clock64},
      {"%globaltimer", Special::GlobalTimer}};
  auto it = table.find(name);
  if (it == table.end())
    return std::nullopt;
  return it->second;
}

} // namespace fwp::emu
