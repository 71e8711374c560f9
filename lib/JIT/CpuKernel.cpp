//===- CpuKernel.cpp - fwp.attention JIT-compiled for the host ------------===//
//
// One kernel = one module holding
//
//   func.func @fwp_attention(%x: tensor<?x?xDMxT>, %w_q, %w_k, %w_v: DMxDM,
//                            %w_beta: HxDM, %w_o: DMxDM, %b_o: DM,
//                            %y: memref<?x?xDMxT>)
//     %r = fwp.attention %x, ... heads = H nu = N eps = E rule = R
//     bufferization.materialize_in_destination %r in restrict writable %y
//
// lowered by fwp-to-cpu and handed to MLIR's ExecutionEngine.
//
// Why %y is a memref argument rather than the result: fwp-to-cpu turns
// results into out-parameters only for static shapes; a dynamically shaped
// result would come back as a buffer malloc'ed by the kernel. Writing into
// the caller's buffer keeps every allocation on the caller's side.
//
//===----------------------------------------------------------------------===//

#include "Kernel.h"

#include "fwp/Dialect/FwpDialect.h"
#include "fwp/Dialect/FwpOps.h"
#include "fwp/Pipelines/Pipelines.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/ExecutionEngine/CRunnerUtils.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"

#include <mutex>
#include <stdexcept>

using namespace mlir;

namespace fwp::jit {

namespace {

constexpr const char *kFunctionName = "fwp_attention";
constexpr const char *kEntryPoint = "_mlir_ciface_fwp_attention";

void initializeLlvmOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
}

/// Collects every diagnostic emitted on a context while alive, so that a
/// failure can be reported with the MLIR messages instead of printing them
/// to stderr.
class DiagnosticCollector {
public:
  explicit DiagnosticCollector(MLIRContext &ctx)
      : handler(&ctx, [this](Diagnostic &diag) {
          append(diag);
          return success();
        }) {}

  const std::string &text() const { return messages; }

private:
  void append(Diagnostic &diag) {
    llvm::raw_string_ostream os(messages);
    if (!messages.empty())
      os << "\n";
    os << diag.getLocation() << ": " << severity(diag.getSeverity()) << ": "
       << diag;
    for (Diagnostic &note : diag.getNotes())
      os << "\n" << note.getLocation() << ": note: " << note;
  }

  static const char *severity(DiagnosticSeverity s) {
    switch (s) {
    case DiagnosticSeverity::Error:
      return "error";
    case DiagnosticSeverity::Warning:
      return "warning";
    case DiagnosticSeverity::Note:
      return "note";
    case DiagnosticSeverity::Remark:
      return "remark";
    }
    return "diagnostic";
  }

  std::string messages;
  ScopedDiagnosticHandler handler;
};

[[noreturn]] void fail(const KernelDesc &desc, const std::string &stage,
                       const std::string &details) {
  throw std::runtime_error("compiling the kernel (" + desc.str() +
                           ") failed in " + stage + ":\n" + details);
}

//===----------------------------------------------------------------------===//
// Building the module
//===----------------------------------------------------------------------===//

/// The argument types of @fwp_attention, in the order of ForwardArgs.
SmallVector<Type> argumentTypes(Builder &b, const KernelDesc &desc) {
  Type t = desc.dtype == DType::F32 ? Type(b.getF32Type()) : b.getF64Type();
  int64_t dm = desc.dModel(), dyn = ShapedType::kDynamic;
  auto square = RankedTensorType::get({dm, dm}, t);
  return {RankedTensorType::get({dyn, dyn, dm}, t),
          square,
          square,
          square,
          RankedTensorType::get({desc.heads, dm}, t),
          square,
          RankedTensorType::get({dm}, t),
          MemRefType::get({dyn, dyn, dm}, t)};
}

func::FuncOp buildFunction(OpBuilder &b, Location loc, const KernelDesc &desc) {
  SmallVector<Type> types = argumentTypes(b, desc);
  auto fn =
      func::FuncOp::create(b, loc, kFunctionName, b.getFunctionType(types, {}));
  // The C interface (_mlir_ciface_*) takes one memref descriptor pointer
  // per argument: StridedMemRefType on our side.
  fn->setAttr("llvm.emit_c_interface", b.getUnitAttr());
  // The caller's inputs are const: bufferization must copy rather than
  // write into them.
  for (unsigned i = 0; i + 1 < types.size(); ++i)
    fn.setArgAttr(i, bufferization::BufferizationDialect::kWritableAttrName,
                  b.getBoolAttr(false));
  return fn;
}

OwningOpRef<ModuleOp> buildModule(MLIRContext &ctx, const KernelDesc &desc) {
  OpBuilder b(&ctx);
  Location loc = NameLoc::get(b.getStringAttr("fwp-jit " + desc.str()));
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());
  func::FuncOp fn = buildFunction(b, loc, desc);

  Block *body = fn.addEntryBlock();
  b.setInsertionPointToStart(body);
  auto a = body->getArguments();
  fwp::Rule rule = desc.rule == Rule::Delta ? fwp::Rule::Delta : fwp::Rule::Sum;
  Value y = fwp::AttentionOp::create(b, loc, a[0].getType(), a[0], a[1], a[2],
                                     a[3], a[4], a[5], a[6], desc.heads,
                                     desc.nu, llvm::APFloat(desc.eps), rule);
  bufferization::MaterializeInDestinationOp::create(
      b, loc, TypeRange{}, y, a[7], /*restrict=*/true, /*writable=*/true);
  func::ReturnOp::create(b, loc);
  return module;
}

//===----------------------------------------------------------------------===//
// Lowering and JIT compilation
//===----------------------------------------------------------------------===//

void lower(ModuleOp module, const KernelDesc &desc,
           const DiagnosticCollector &diagnostics) {
  if (failed(verify(module)))
    fail(desc, "building the module", diagnostics.text());
  // Implicit nesting: some passes of the pipeline are anchored on func.func.
  PassManager pm(module->getContext(), ModuleOp::getOperationName(),
                 OpPassManager::Nesting::Implicit);
  CpuPipelineOptions options;
  options.chunkSize = desc.chunkSize;
  buildFwpToCpuPipeline(pm, options);
  if (failed(pm.run(module)))
    fail(desc, "the fwp-to-cpu pipeline", diagnostics.text());
}

std::unique_ptr<llvm::TargetMachine> hostTargetMachine(const KernelDesc &desc) {
  auto builder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!builder)
    fail(desc, "detecting the host", llvm::toString(builder.takeError()));
  auto tm = builder->createTargetMachine();
  if (!tm)
    fail(desc, "detecting the host", llvm::toString(tm.takeError()));
  return std::move(*tm);
}

std::unique_ptr<ExecutionEngine> createEngine(ModuleOp module,
                                              const KernelDesc &desc) {
  // The optimiser gets the host's target machine so that its cost models
  // (vectorisation above all) know the host's vector units; the engine
  // detects the same host for code generation.
  std::unique_ptr<llvm::TargetMachine> tm = hostTargetMachine(desc);
  auto transformer = makeOptimizingTransformer(/*optLevel=*/3,
                                               /*sizeLevel=*/0, tm.get());
  ExecutionEngineOptions options;
  options.transformer = transformer;
  options.jitCodeGenOptLevel = llvm::CodeGenOptLevel::Aggressive;
  auto engine = ExecutionEngine::create(module, options);
  if (!engine)
    fail(desc, "creating the execution engine",
         llvm::toString(engine.takeError()));
  return std::move(*engine);
}

//===----------------------------------------------------------------------===//
// The kernel
//===----------------------------------------------------------------------===//

/// A memref descriptor over a caller's row-major buffer. The const_cast is
/// safe: inputs are marked non-writable, so the kernel only reads them.
template <typename T, int N>
StridedMemRefType<T, N> view(const void *data,
                             const std::array<int64_t, N> &sizes) {
  StridedMemRefType<T, N> m;
  m.basePtr = m.data = const_cast<T *>(static_cast<const T *>(data));
  m.offset = 0;
  int64_t stride = 1;
  for (int d = N - 1; d >= 0; --d) {
    m.sizes[d] = sizes[d];
    m.strides[d] = stride;
    stride *= sizes[d];
  }
  return m;
}

class CpuKernel final : public CompiledAttention::Impl {
public:
  CpuKernel(const KernelDesc &desc, std::unique_ptr<ExecutionEngine> engine,
            void *entry)
      : Impl(desc), engine(std::move(engine)), entry(entry) {}

  void forward(const ForwardArgs &args) const override {
    if (desc.dtype == DType::F32)
      call<float>(args);
    else
      call<double>(args);
  }

private:
  template <typename T> void call(const ForwardArgs &a) const {
    using M1 = StridedMemRefType<T, 1>;
    using M2 = StridedMemRefType<T, 2>;
    using M3 = StridedMemRefType<T, 3>;
    using Fn = void (*)(M3 *, M2 *, M2 *, M2 *, M2 *, M2 *, M1 *, M3 *);
    int64_t dm = desc.dModel();
    M3 x = view<T, 3>(a.x, {a.seqLen, a.batch, dm});
    M2 wq = view<T, 2>(a.wQ, {dm, dm}), wk = view<T, 2>(a.wK, {dm, dm}),
       wv = view<T, 2>(a.wV, {dm, dm}), wo = view<T, 2>(a.wO, {dm, dm});
    M2 wb = view<T, 2>(a.wBeta, {desc.heads, dm});
    M1 bo = view<T, 1>(a.bO, {dm});
    M3 y = view<T, 3>(a.y, {a.seqLen, a.batch, dm});
    reinterpret_cast<Fn>(entry)(&x, &wq, &wk, &wv, &wb, &wo, &bo, &y);
  }

  // Owns the compiled code; it no longer needs the MLIR context, which
  // compileCpu drops once the engine exists.
  std::unique_ptr<ExecutionEngine> engine;
  void *entry;
};

} // namespace

std::unique_ptr<CompiledAttention::Impl> compileCpu(const KernelDesc &desc) {
  initializeLlvmOnce();
  DialectRegistry registry;
  registry.insert<fwp::FwpDialect>();
  registerPipelineDependencies(registry);
  // A context per compilation: independent compilations never share one.
  // Its thread pool would only add threads: the module has one function.
  MLIRContext ctx(registry, MLIRContext::Threading::DISABLED);
  ctx.loadDialect<fwp::FwpDialect, func::FuncDialect,
                  bufferization::BufferizationDialect>();
  DiagnosticCollector diagnostics(ctx);

  OwningOpRef<ModuleOp> module = buildModule(ctx, desc);
  lower(*module, desc, diagnostics);
  std::unique_ptr<ExecutionEngine> engine = createEngine(*module, desc);
  // Looking the entry point up generates the machine code now, so that
  // compile() pays for it rather than the first forward().
  auto entry = engine->lookup(kEntryPoint);
  if (!entry)
    fail(desc, "generating code", llvm::toString(entry.takeError()));
  engine->initialize();
  return std::make_unique<CpuKernel>(desc, std::move(engine), *entry);
}

} // namespace fwp::jit
