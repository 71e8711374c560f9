//===- LaunchPlan.cpp - Export compiled GPU modules as launch plans -------===//
//
// Walks the host function once, in program order, giving every buffer and
// every index value a plan name. Index arithmetic becomes `value` steps (one
// per SSA value, so nothing is computed twice), buffers become `alloc` and
// `view` steps, and each gpu.launch_func a `launch`. The steps are built as
// the runtime's structures (rt::Plan); nothing here writes plan text.
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

#include <fmt/format.h>

using namespace mlir;

namespace fwp {
namespace {

using rt::PlanExpr;
using rt::PlanLaunchArg;
using rt::PlanOp;
using rt::PlanStep;

/// The plan operator an arith operation computes.
PlanOp planOpOf(Operation *op) {
  return llvm::TypeSwitch<Operation *, PlanOp>(op)
      .Case([](arith::AddIOp) { return PlanOp::Add; })
      .Case([](arith::SubIOp) { return PlanOp::Sub; })
      .Case([](arith::MulIOp) { return PlanOp::Mul; })
      .Case([](arith::DivSIOp) { return PlanOp::DivS; })
      .Case([](arith::DivUIOp) { return PlanOp::DivU; })
      .Case([](arith::RemSIOp) { return PlanOp::RemS; })
      .Case([](arith::RemUIOp) { return PlanOp::RemU; })
      .Case([](arith::CeilDivSIOp) { return PlanOp::CeilDiv; })
      .Case([](arith::CeilDivUIOp) { return PlanOp::CeilDivU; })
      .Case([](arith::FloorDivSIOp) { return PlanOp::FloorDiv; })
      .Case([](arith::MinSIOp) { return PlanOp::MinS; })
      .Case([](arith::MaxSIOp) { return PlanOp::MaxS; })
      .Case([](arith::MinUIOp) { return PlanOp::MinU; })
      .Case([](arith::MaxUIOp) { return PlanOp::MaxU; });
}

rt::DType dtypeOf(MemRefType type) {
  Type element = type.getElementType();
  if (element.isF32())
    return rt::DType::F32;
  if (element.isBF16())
    return rt::DType::BF16;
  if (element.isF16())
    return rt::DType::F16;
  return rt::DType::F64;
}

LogicalResult checkBuffer(Operation *op, MemRefType type) {
  if (!type.getLayout().isIdentity())
    return op->emitError("launch plans take identity-layout buffers, got ")
           << type;
  Type element = type.getElementType();
  if (!element.isF32() && !element.isF64() && !element.isBF16() &&
      !element.isF16())
    return op->emitError("launch plans take f32, f64, bf16 and f16 "
                         "buffers, got ")
           << type;
  return success();
}

class PlanWriter {
public:
  explicit PlanWriter(rt::Plan &plan) : plan(plan) {}

  LogicalResult writeFunction(func::FuncOp func) {
    for (auto [i, arg] : llvm::enumerate(func.getArguments()))
      if (failed(writeArgument(func, arg, i)))
        return failure();
    for (Operation &op : func.getBody().front())
      if (failed(writeOp(op)))
        return failure();
    return success();
  }

private:
  LogicalResult writeArgument(func::FuncOp func, BlockArgument arg,
                              size_t index) {
    auto type = dyn_cast<MemRefType>(arg.getType());
    if (!type || failed(checkBuffer(func, type)))
      return func.emitError("launch plans take identity-layout f32/f64 "
                            "memref arguments, got ")
             << arg.getType();
    rt::PlanArg planArg;
    planArg.name = fmt::format("arg{}", index);
    planArg.dtype = dtypeOf(type);
    for (int64_t size : type.getShape())
      planArg.sizes.push_back(ShapedType::isDynamic(size)
                                  ? std::nullopt
                                  : std::optional<int64_t>(size));
    buffers[arg] = planArg.name;
    plan.args.push_back(std::move(planArg));
    return success();
  }

  LogicalResult writeOp(Operation &op) {
    return llvm::TypeSwitch<Operation *, LogicalResult>(&op)
        .Case(
            [&](arith::ConstantOp constant) { return writeConstant(constant); })
        .Case([&](arith::IndexCastOp cast) {
          integers[cast.getResult()] = expr(cast.getIn());
          return success();
        })
        .Case<arith::AddIOp, arith::SubIOp, arith::MulIOp, arith::DivSIOp,
              arith::DivUIOp, arith::RemSIOp, arith::RemUIOp,
              arith::CeilDivSIOp, arith::CeilDivUIOp, arith::FloorDivSIOp,
              arith::MinSIOp, arith::MaxSIOp, arith::MinUIOp, arith::MaxUIOp>(
            [&](Operation *binary) {
              return defineValue(binary->getResult(0),
                                 PlanExpr::apply(planOpOf(binary),
                                                 expr(binary->getOperand(0)),
                                                 expr(binary->getOperand(1))));
            })
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
          plan.steps.push_back(PlanStep::copy(buffer(copy.getSource()),
                                              buffer(copy.getTarget())));
          return success();
        })
        .Case([&](gpu::LaunchFuncOp launch) { return writeLaunch(launch); })
        // The runtime frees every buffer of a plan when the plan ends.
        .Case([&](memref::DeallocOp) { return success(); })
        .Case([&](func::ReturnOp ret) {
          for (Value result : ret.getOperands())
            plan.steps.push_back(PlanStep::result(buffer(result)));
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
      integers[constant.getResult()] = PlanExpr::literal(integer.getInt());
      return success();
    }
    if (auto real = dyn_cast<FloatAttr>(value)) {
      reals[constant.getResult()] = real.getValueAsDouble();
      return success();
    }
    return constant.emitError("launch plans take integer and float "
                              "constants only");
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
    PlanOp op = isMin ? (isUnsigned ? PlanOp::MinU : PlanOp::MinS)
                      : (isUnsigned ? PlanOp::MaxU : PlanOp::MaxS);
    return defineValue(
        select.getResult(),
        PlanExpr::apply(op, expr(cmp.getLhs()), expr(cmp.getRhs())));
  }

  /// An affine expression over `operands` (dims first, then symbols) in
  /// plan arithmetic. Divisors and moduli of affine maps are positive
  /// constants, so floordiv and ceildiv carry over and mod is a - (a
  /// floordiv b) * b.
  PlanExpr affineExpr(AffineExpr e, ValueRange operands, unsigned numDims) {
    if (auto c = dyn_cast<AffineConstantExpr>(e))
      return PlanExpr::literal(c.getValue());
    if (auto d = dyn_cast<AffineDimExpr>(e))
      return expr(operands[d.getPosition()]);
    if (auto s = dyn_cast<AffineSymbolExpr>(e))
      return expr(operands[numDims + s.getPosition()]);
    auto binary = cast<AffineBinaryOpExpr>(e);
    PlanExpr lhs = affineExpr(binary.getLHS(), operands, numDims);
    PlanExpr rhs = affineExpr(binary.getRHS(), operands, numDims);
    switch (e.getKind()) {
    case AffineExprKind::Add:
      return PlanExpr::apply(PlanOp::Add, lhs, rhs);
    case AffineExprKind::Mul:
      return PlanExpr::apply(PlanOp::Mul, lhs, rhs);
    case AffineExprKind::FloorDiv:
      return PlanExpr::apply(PlanOp::FloorDiv, lhs, rhs);
    case AffineExprKind::CeilDiv:
      return PlanExpr::apply(PlanOp::CeilDiv, lhs, rhs);
    case AffineExprKind::Mod: {
      PlanExpr quotient = PlanExpr::apply(PlanOp::FloorDiv, lhs, rhs);
      return PlanExpr::apply(PlanOp::Sub, lhs,
                             PlanExpr::apply(PlanOp::Mul, quotient, rhs));
    }
    default:
      llvm_unreachable("not a binary affine expression");
    }
  }

  LogicalResult writeAffineMinMax(Operation *op) {
    bool isMin = isa<affine::AffineMinOp>(op);
    AffineMap map = isMin ? cast<affine::AffineMinOp>(op).getAffineMap()
                          : cast<affine::AffineMaxOp>(op).getAffineMap();
    ValueRange operands = op->getOperands();
    std::optional<PlanExpr> result;
    for (AffineExpr e : map.getResults()) {
      PlanExpr term = affineExpr(e, operands, map.getNumDims());
      result = result ? PlanExpr::apply(isMin ? PlanOp::MinS : PlanOp::MaxS,
                                        *result, term)
                      : term;
    }
    return defineValue(op->getResult(0), *result);
  }

  LogicalResult writeDim(memref::DimOp dim) {
    std::optional<int64_t> index = dim.getConstantIndex();
    if (!index)
      return dim.emitError("launch plans need constant dimension indices");
    return defineValue(dim.getResult(),
                       PlanExpr::dim(buffer(dim.getSource()), *index));
  }

  LogicalResult writeAlloc(memref::AllocOp alloc) {
    MemRefType type = alloc.getType();
    if (failed(checkBuffer(alloc, type)))
      return failure();
    std::string name = freshName("b");
    plan.steps.push_back(PlanStep::alloc(name, dtypeOf(type),
                                         sizes(type, alloc.getDynamicSizes())));
    buffers[alloc.getResult()] = name;
    return success();
  }

  /// Contiguous views keep the memory and change the sizes: the result's
  /// static sizes, and dim() of the result's source for the dynamic ones
  /// (expand_shape names them; collapse_shape multiplies them).
  LogicalResult writeView(Operation *op) {
    auto type = cast<MemRefType>(op->getResult(0).getType());
    if (failed(checkBuffer(op, type)))
      return failure();
    std::string source = buffer(op->getOperand(0));
    std::vector<PlanExpr> viewSizes;
    for (auto [i, size] : llvm::enumerate(type.getShape()))
      viewSizes.push_back(ShapedType::isDynamic(size)
                              ? dynamicViewSize(op, i, source)
                              : PlanExpr::literal(size));
    std::string name = freshName("b");
    plan.steps.push_back(
        PlanStep::view(name, source, dtypeOf(type), std::move(viewSizes)));
    buffers[op->getResult(0)] = name;
    return success();
  }

  PlanExpr dynamicViewSize(Operation *op, size_t i, const std::string &source) {
    if (auto expand = dyn_cast<memref::ExpandShapeOp>(op)) {
      OpFoldResult size = expand.getMixedOutputShape()[i];
      if (auto value = dyn_cast<Value>(size))
        return expr(value);
      return PlanExpr::literal(*getConstantIntValue(size));
    }
    if (isa<memref::CastOp>(op))
      return PlanExpr::dim(source, i);
    // getReassociationIndices() returns a new vector: keep it alive while
    // iterating over one of its groups.
    SmallVector<ReassociationIndices, 4> groups =
        cast<memref::CollapseShapeOp>(op).getReassociationIndices();
    PlanExpr product = PlanExpr::literal(1);
    for (int64_t dim : groups[i])
      product = PlanExpr::apply(PlanOp::Mul, std::move(product),
                                PlanExpr::dim(source, dim));
    return product;
  }

  LogicalResult writeLaunch(gpu::LaunchFuncOp launch) {
    if (launch.getClusterSizeX())
      return launch.emitError("launch plans do not support clusters");
    PlanStep step;
    step.kind = PlanStep::Kind::Launch;
    step.module = launch.getKernelModuleName().getValue().str();
    step.kernel = launch.getKernelName().getValue().str();
    step.grid = {expr(launch.getGridSizeX()), expr(launch.getGridSizeY()),
                 expr(launch.getGridSizeZ())};
    step.block = {expr(launch.getBlockSizeX()), expr(launch.getBlockSizeY()),
                  expr(launch.getBlockSizeZ())};
    Value shared = launch.getDynamicSharedMemorySize();
    step.shared = shared ? expr(shared) : PlanExpr::literal(0);
    for (Value operand : launch.getKernelOperands()) {
      FailureOr<PlanLaunchArg> arg = kernelArgument(launch, operand);
      if (failed(arg))
        return failure();
      step.args.push_back(std::move(*arg));
    }
    plan.steps.push_back(std::move(step));
    return success();
  }

  FailureOr<PlanLaunchArg> kernelArgument(gpu::LaunchFuncOp launch,
                                          Value operand) {
    using Kind = PlanLaunchArg::Kind;
    Type type = operand.getType();
    if (auto memref = dyn_cast<MemRefType>(type)) {
      if (failed(checkBuffer(launch, memref)))
        return failure();
      return PlanLaunchArg::memref(buffer(operand));
    }
    if (type.isIndex())
      return PlanLaunchArg::integer(Kind::Index, expr(operand));
    if (type.isInteger(32) || type.isInteger(64))
      return PlanLaunchArg::integer(type.isInteger(32) ? Kind::I32 : Kind::I64,
                                    expr(operand));
    auto real = reals.find(operand);
    if ((type.isF32() || type.isF64()) && real != reals.end())
      return PlanLaunchArg::floating(type.isF32() ? Kind::F32 : Kind::F64,
                                     real->second);
    return launch.emitError("launch plans cannot pass kernel argument of "
                            "type ")
           << type;
  }

  LogicalResult defineValue(Value value, PlanExpr expression) {
    std::string name = freshName("v");
    plan.steps.push_back(PlanStep::value(name, std::move(expression)));
    integers[value] = PlanExpr::value(name);
    return success();
  }

  /// The plan expression (a value's name, or a literal) of an index value.
  PlanExpr expr(Value value) const {
    auto it = integers.find(value);
    assert(it != integers.end() && "value used before the plan defined it");
    return it->second;
  }

  /// The plan name of a buffer.
  std::string buffer(Value value) const {
    auto it = buffers.find(value);
    assert(it != buffers.end() && "buffer used before the plan defined it");
    return it->second;
  }

  std::vector<PlanExpr> sizes(MemRefType type, ValueRange dynamicSizes) {
    std::vector<PlanExpr> result;
    unsigned next = 0;
    for (int64_t size : type.getShape())
      result.push_back(ShapedType::isDynamic(size) ? expr(dynamicSizes[next++])
                                                   : PlanExpr::literal(size));
    return result;
  }

  std::string freshName(const char *prefix) {
    return fmt::format("{}{}", prefix, counter++);
  }

  rt::Plan &plan;
  llvm::DenseMap<Value, std::string> buffers;
  llvm::DenseMap<Value, PlanExpr> integers; // index and integer values
  llvm::DenseMap<Value, double> reals;      // float constants
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
  rt::Plan &plan = exported.plan;
  plan.sourceName = function.str();
  plan.indexBits = indexBits;
  for (auto binary : module.getOps<gpu::BinaryOp>()) {
    for (Attribute object : binary.getObjects()) {
      auto gpuObject = cast<gpu::ObjectAttr>(object);
      if (gpuObject.getFormat() != gpu::CompilationTarget::Assembly)
        return binary.emitError("launch plans need PTX text (format isa)");
      exported.ptx[binary.getName().str()] =
          gpuObject.getObject().getValue().str();
    }
    plan.modules.push_back(binary.getName().str());
  }
  if (failed(PlanWriter(plan).writeFunction(func)))
    return failure();
  plan.numberLines();
  return exported;
}

} // namespace fwp
