//===- LaunchPlan.cpp - Export compiled GPU modules as launch plans -------===//
//
// Walks the host function once, in program order, giving every buffer and
// every index value a plan name. Index arithmetic becomes `value` steps (one
// per SSA value, so nothing is computed twice), buffers become `alloc` and
// `view` steps, and each gpu.launch_func a `launch`.
//
//===----------------------------------------------------------------------===//

#include "fwp/Target/LaunchPlan.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace fwp {
namespace {

class PlanWriter {
public:
  explicit PlanWriter(llvm::raw_string_ostream &os) : os(os) {}

  LogicalResult writeFunction(func::FuncOp func) {
    for (auto [i, arg] : llvm::enumerate(func.getArguments())) {
      auto type = dyn_cast<MemRefType>(arg.getType());
      if (!type || failed(checkBuffer(func, type)))
        return func.emitError("launch plans take identity-layout f32/f64 "
                              "memref arguments, got ")
               << arg.getType();
      std::string name = "arg" + std::to_string(i);
      names[arg] = name;
      os << "arg " << name << " " << dtype(type);
      for (int64_t size : type.getShape())
        os << " " << (ShapedType::isDynamic(size) ? "?" : std::to_string(size));
      os << "\n";
    }
    for (Operation &op : func.getBody().front())
      if (failed(writeOp(op)))
        return failure();
    return success();
  }

private:
  LogicalResult writeOp(Operation &op) {
    return llvm::TypeSwitch<Operation *, LogicalResult>(&op)
        .Case(
            [&](arith::ConstantOp constant) { return writeConstant(constant); })
        .Case([&](arith::IndexCastOp cast) {
          names[cast.getResult()] = expr(cast.getIn());
          return success();
        })
        .Case<arith::AddIOp, arith::SubIOp, arith::MulIOp, arith::DivSIOp,
              arith::DivUIOp, arith::RemSIOp, arith::RemUIOp,
              arith::CeilDivSIOp, arith::FloorDivSIOp, arith::MinSIOp,
              arith::MaxSIOp, arith::MinUIOp, arith::MaxUIOp>(
            [&](Operation *binary) { return writeBinary(binary); })
        .Case([&](arith::CmpIOp cmp) {
          // Kept for the select that uses it (a min or a max).
          comparisons[cmp.getResult()] = cmp;
          return success();
        })
        .Case([&](arith::SelectOp select) { return writeSelect(select); })
        .Case([&](affine::AffineApplyOp apply) {
          return defineValue(apply.getResult(),
                             affineExpr(apply.getAffineMap().getResult(0),
                                        apply.getMapOperands(),
                                        apply.getAffineMap().getNumDims()));
        })
        .Case<affine::AffineMinOp, affine::AffineMaxOp>(
            [&](Operation *minMax) { return writeAffineMinMax(minMax); })
        .Case([&](memref::DimOp dim) { return writeDim(dim); })
        .Case([&](memref::AllocOp alloc) { return writeAlloc(alloc); })
        .Case<memref::ExpandShapeOp, memref::CollapseShapeOp, memref::CastOp>(
            [&](Operation *view) { return writeView(view); })
        .Case([&](memref::CopyOp copy) {
          os << "copy " << names.lookup(copy.getSource()) << " "
             << names.lookup(copy.getTarget()) << "\n";
          return success();
        })
        .Case([&](gpu::LaunchFuncOp launch) { return writeLaunch(launch); })
        // The runtime frees every buffer of a plan when the plan ends.
        .Case([&](memref::DeallocOp) { return success(); })
        .Case([&](func::ReturnOp ret) {
          for (Value result : ret.getOperands())
            os << "result " << names.lookup(result) << "\n";
          return success();
        })
        .Default([&](Operation *other) {
          return other->emitError("operation not supported in a launch "
                                  "plan's host code: ")
                 << other->getName();
        });
  }

  LogicalResult writeConstant(arith::ConstantOp constant) {
    Attribute value = constant.getValue();
    if (auto integer = dyn_cast<IntegerAttr>(value)) {
      names[constant.getResult()] = std::to_string(integer.getInt());
      return success();
    }
    if (auto real = dyn_cast<FloatAttr>(value)) {
      std::string text;
      llvm::raw_string_ostream(text)
          << llvm::format("%.17g", real.getValueAsDouble());
      names[constant.getResult()] = text;
      return success();
    }
    return constant.emitError("launch plans take integer and float "
                              "constants only");
  }

  LogicalResult writeBinary(Operation *op) {
    StringRef name = llvm::TypeSwitch<Operation *, StringRef>(op)
                         .Case([](arith::AddIOp) { return "add"; })
                         .Case([](arith::SubIOp) { return "sub"; })
                         .Case([](arith::MulIOp) { return "mul"; })
                         .Case([](arith::DivSIOp) { return "divs"; })
                         .Case([](arith::DivUIOp) { return "divu"; })
                         .Case([](arith::RemSIOp) { return "rems"; })
                         .Case([](arith::RemUIOp) { return "remu"; })
                         .Case([](arith::CeilDivSIOp) { return "ceildiv"; })
                         .Case([](arith::FloorDivSIOp) { return "floordiv"; })
                         .Case([](arith::MinSIOp) { return "mins"; })
                         .Case([](arith::MaxSIOp) { return "maxs"; })
                         .Case([](arith::MinUIOp) { return "minu"; })
                         .Case([](arith::MaxUIOp) { return "maxu"; });
    return defineValue(op->getResult(0), "(" + name.str() + " " +
                                             expr(op->getOperand(0)) + " " +
                                             expr(op->getOperand(1)) + ")");
  }

  /// select(cmpi(p, a, b), a, b) is a min or a max (affine.min and max
  /// lower to it); other selects have no plan form.
  LogicalResult writeSelect(arith::SelectOp select) {
    arith::CmpIOp cmp = comparisons.lookup(select.getCondition());
    if (!cmp)
      return select.emitError("launch plans support select only as a min "
                              "or a max of two index values");
    using P = arith::CmpIPredicate;
    P pred = cmp.getPredicate();
    bool less =
        pred == P::slt || pred == P::sle || pred == P::ult || pred == P::ule;
    bool greater =
        pred == P::sgt || pred == P::sge || pred == P::ugt || pred == P::uge;
    bool isUnsigned =
        pred == P::ult || pred == P::ule || pred == P::ugt || pred == P::uge;
    bool same = select.getTrueValue() == cmp.getLhs() &&
                select.getFalseValue() == cmp.getRhs();
    bool swapped = select.getTrueValue() == cmp.getRhs() &&
                   select.getFalseValue() == cmp.getLhs();
    if ((!less && !greater) || (!same && !swapped))
      return select.emitError("launch plans support select only as a min "
                              "or a max of two index values");
    bool isMin = less == same;
    std::string op =
        std::string(isMin ? "min" : "max") + (isUnsigned ? "u" : "s");
    return defineValue(select.getResult(), "(" + op + " " + expr(cmp.getLhs()) +
                                               " " + expr(cmp.getRhs()) + ")");
  }

  /// An affine expression over `operands` (dims first, then symbols) in
  /// plan arithmetic. Divisors and moduli of affine maps are positive
  /// constants, so floordiv and ceildiv carry over and mod is a - (a
  /// floordiv b) * b.
  std::string affineExpr(AffineExpr e, ValueRange operands, unsigned numDims) {
    if (auto c = dyn_cast<AffineConstantExpr>(e))
      return std::to_string(c.getValue());
    if (auto d = dyn_cast<AffineDimExpr>(e))
      return expr(operands[d.getPosition()]);
    if (auto s = dyn_cast<AffineSymbolExpr>(e))
      return expr(operands[numDims + s.getPosition()]);
    auto binary = cast<AffineBinaryOpExpr>(e);
    std::string lhs = affineExpr(binary.getLHS(), operands, numDims);
    std::string rhs = affineExpr(binary.getRHS(), operands, numDims);
    switch (e.getKind()) {
    case AffineExprKind::Add:
      return "(add " + lhs + " " + rhs + ")";
    case AffineExprKind::Mul:
      return "(mul " + lhs + " " + rhs + ")";
    case AffineExprKind::FloorDiv:
      return "(floordiv " + lhs + " " + rhs + ")";
    case AffineExprKind::CeilDiv:
      return "(ceildiv " + lhs + " " + rhs + ")";
    case AffineExprKind::Mod:
      return "(sub " + lhs + " (mul (floordiv " + lhs + " " + rhs + ") " + rhs +
             "))";
    default:
      llvm_unreachable("not a binary affine expression");
    }
  }

  LogicalResult writeAffineMinMax(Operation *op) {
    bool isMin = isa<affine::AffineMinOp>(op);
    AffineMap map = isMin ? cast<affine::AffineMinOp>(op).getAffineMap()
                          : cast<affine::AffineMaxOp>(op).getAffineMap();
    ValueRange operands = op->getOperands();
    std::string result;
    for (AffineExpr e : map.getResults()) {
      std::string term = affineExpr(e, operands, map.getNumDims());
      result = result.empty() ? term
                              : "(" + std::string(isMin ? "mins " : "maxs ") +
                                    result + " " + term + ")";
    }
    return defineValue(op->getResult(0), result);
  }

  LogicalResult writeDim(memref::DimOp dim) {
    std::optional<int64_t> index = dim.getConstantIndex();
    if (!index)
      return dim.emitError("launch plans need constant dimension indices");
    return defineValue(dim.getResult(), "dim(" + names.lookup(dim.getSource()) +
                                            ", " + std::to_string(*index) +
                                            ")");
  }

  LogicalResult writeAlloc(memref::AllocOp alloc) {
    MemRefType type = alloc.getType();
    if (failed(checkBuffer(alloc, type)))
      return failure();
    std::string name = freshName("b");
    os << "alloc " << name << " " << dtype(type)
       << sizes(type, alloc.getDynamicSizes()) << "\n";
    names[alloc.getResult()] = name;
    return success();
  }

  /// Contiguous views keep the memory and change the sizes: the result's
  /// static sizes, and dim() of the result's source for the dynamic ones
  /// (expand_shape names them; collapse_shape multiplies them).
  LogicalResult writeView(Operation *op) {
    auto type = cast<MemRefType>(op->getResult(0).getType());
    if (failed(checkBuffer(op, type)))
      return failure();
    std::string source = names.lookup(op->getOperand(0));
    SmallVector<std::string> viewSizes;
    for (auto [i, size] : llvm::enumerate(type.getShape())) {
      if (!ShapedType::isDynamic(size)) {
        viewSizes.push_back(std::to_string(size));
        continue;
      }
      FailureOr<std::string> dynamic = dynamicViewSize(op, i, source);
      if (failed(dynamic))
        return failure();
      viewSizes.push_back(*dynamic);
    }
    std::string name = freshName("b");
    os << "view " << name << " " << source;
    for (const std::string &size : viewSizes)
      os << " " << size;
    os << "\n";
    names[op->getResult(0)] = name;
    return success();
  }

  FailureOr<std::string> dynamicViewSize(Operation *op, size_t i,
                                         StringRef source) {
    if (auto expand = dyn_cast<memref::ExpandShapeOp>(op)) {
      OpFoldResult size = expand.getMixedOutputShape()[i];
      if (auto value = dyn_cast<Value>(size))
        return expr(value);
      return std::to_string(*getConstantIntValue(size));
    }
    if (isa<memref::CastOp>(op))
      return "dim(" + source.str() + ", " + std::to_string(i) + ")";
    auto collapse = cast<memref::CollapseShapeOp>(op);
    std::string product = "1";
    for (int64_t dim : collapse.getReassociationIndices()[i])
      product = "(mul " + product + " dim(" + source.str() + ", " +
                std::to_string(dim) + "))";
    return product;
  }

  LogicalResult writeLaunch(gpu::LaunchFuncOp launch) {
    if (launch.getClusterSizeX())
      return launch.emitError("launch plans do not support clusters");
    os << "launch " << launch.getKernelModuleName().getValue() << " "
       << launch.getKernelName().getValue();
    for (Value size : {launch.getGridSizeX(), launch.getGridSizeY(),
                       launch.getGridSizeZ(), launch.getBlockSizeX(),
                       launch.getBlockSizeY(), launch.getBlockSizeZ()})
      os << " " << expr(size);
    Value shared = launch.getDynamicSharedMemorySize();
    os << " " << (shared ? expr(shared) : "0");
    for (Value operand : launch.getKernelOperands()) {
      FailureOr<std::string> arg = kernelArgument(launch, operand);
      if (failed(arg))
        return failure();
      os << " " << *arg;
    }
    os << "\n";
    return success();
  }

  FailureOr<std::string> kernelArgument(gpu::LaunchFuncOp launch,
                                        Value operand) {
    Type type = operand.getType();
    if (auto memref = dyn_cast<MemRefType>(type)) {
      if (failed(checkBuffer(launch, memref)))
        return failure();
      return "memref " + names.lookup(operand);
    }
    if (type.isIndex())
      return "index " + expr(operand);
    if (type.isInteger(32) || type.isInteger(64))
      return (type.isInteger(32) ? "i32 " : "i64 ") + expr(operand);
    if (type.isF32() || type.isF64())
      if (operand.getDefiningOp<arith::ConstantOp>())
        return (type.isF32() ? "f32 " : "f64 ") + expr(operand);
    return launch.emitError("launch plans cannot pass kernel argument of "
                            "type ")
           << type;
  }

  LogicalResult defineValue(Value value, const std::string &expression) {
    std::string name = freshName("v");
    os << "value " << name << " " << expression << "\n";
    names[value] = name;
    return success();
  }

  /// The plan name, or literal, of an index value.
  std::string expr(Value value) {
    std::string name = names.lookup(value);
    assert(!name.empty() && "value used before the plan defined it");
    return name;
  }

  std::string sizes(MemRefType type, ValueRange dynamicSizes) {
    std::string text;
    unsigned next = 0;
    for (int64_t size : type.getShape())
      text += " " + (ShapedType::isDynamic(size) ? expr(dynamicSizes[next++])
                                                 : std::to_string(size));
    return text;
  }

  static LogicalResult checkBuffer(Operation *op, MemRefType type) {
    if (!type.getLayout().isIdentity())
      return op->emitError("launch plans take identity-layout buffers, got ")
             << type;
    if (!type.getElementType().isF32() && !type.getElementType().isF64())
      return op->emitError("launch plans take f32 and f64 buffers, got ")
             << type;
    return success();
  }

  static StringRef dtype(MemRefType type) {
    return type.getElementType().isF32() ? "f32" : "f64";
  }

  std::string freshName(StringRef prefix) {
    return prefix.str() + std::to_string(counter++);
  }

  llvm::raw_string_ostream &os;
  llvm::DenseMap<Value, std::string> names;
  llvm::DenseMap<Value, arith::CmpIOp> comparisons;
  unsigned counter = 0;
};

} // namespace

FailureOr<ExportedPlan> exportLaunchPlan(ModuleOp module, StringRef function,
                                         unsigned indexBits) {
  auto func = module.lookupSymbol<func::FuncOp>(function);
  if (!func)
    return module.emitError("no host function @") << function;
  ExportedPlan exported;
  llvm::raw_string_ostream os(exported.plan);
  os << "fwp-plan 1\nindex-bits " << indexBits << "\n";
  for (auto binary : module.getOps<gpu::BinaryOp>()) {
    for (Attribute object : binary.getObjects()) {
      auto gpuObject = cast<gpu::ObjectAttr>(object);
      if (gpuObject.getFormat() != gpu::CompilationTarget::Assembly)
        return binary.emitError("launch plans need PTX text (format isa)");
      exported.ptx[binary.getName().str()] =
          gpuObject.getObject().getValue().str();
    }
    os << "module " << binary.getName() << "\n";
  }
  if (failed(PlanWriter(os).writeFunction(func)))
    return failure();
  return exported;
}

} // namespace fwp
