//===- PlanTest.cpp - Tests of launch plans -------------------------------===//
//
// Parsing, printing, integer evaluation and execution of launch plans
// (docs/launch-plan.md) run everywhere: execution goes through a fake
// PlanDevice that records what the plan asks of the device. Tests that need
// a GPU skip visibly ("no usable CUDA GPU: ...") when there is none.
//
//===----------------------------------------------------------------------===//

#include "RuntimeTestUtils.h"

#include "fwp/Runtime/ElementType.h"
#include "fwp/Runtime/PlanCuda.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <string>
#include <vector>

using namespace fwp::rt;
using fwp::test::contains;
using fwp::test::iota;
using fwp::test::messageOf;
using fwp::test::writeFile;

namespace {

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

std::string parseError(const std::string &text) {
  return messageOf<PlanError>([&] { Plan::parse(text, "test.fwp"); });
}

/// `body` after the header and `index-bits 64`, parsed.
Plan parseBody(const std::string &body, unsigned indexBits = 64) {
  return Plan::parse("fwp-plan 1\nindex-bits " + std::to_string(indexBits) +
                         "\n" + body,
                     "test.fwp");
}

/// The error of parsing `body` after the header and index-bits (line 3 on).
std::string bodyError(const std::string &body) {
  return parseError("fwp-plan 1\nindex-bits 64\n" + body);
}

/// `value` as `bytes` little-endian bytes.
std::vector<uint8_t> le(uint64_t value, size_t bytes) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i < bytes; ++i)
    out.push_back(static_cast<uint8_t>(value >> (8 * i)));
  return out;
}

std::string tempDir(const std::string &name) {
  return ::testing::TempDir() + "fwp_plan_test_" + std::to_string(getpid()) +
         "_" + name;
}

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// Records what a plan asks of the device; hands out fake addresses.
struct FakeDevice : PlanDevice {
  struct Launch {
    std::string module, kernel;
    Dim3 grid, block;
    unsigned shared = 0;
    std::vector<std::vector<uint8_t>> params;
  };
  struct Copy {
    uint64_t dst, src;
    size_t bytes;
  };

  uint64_t alloc(size_t bytes) override {
    uint64_t ptr = next;
    next += 0x100000;
    allocs.push_back({ptr, bytes});
    live.insert(ptr);
    return ptr;
  }
  void free(uint64_t ptr) override {
    EXPECT_EQ(live.erase(ptr), 1u) << "freeing " << ptr;
    frees.push_back(ptr);
  }
  void copy(uint64_t dst, uint64_t src, size_t bytes) override {
    copies.push_back({dst, src, bytes});
  }
  void launch(const std::string &module, const std::string &kernel, Dim3 grid,
              Dim3 block, unsigned shared,
              const std::vector<std::vector<uint8_t>> &params) override {
    if (kernel == failingKernel)
      throw CudaError("cuLaunchKernel failed: CUDA_ERROR_FAKE");
    launches.push_back({module, kernel, grid, block, shared, params});
  }
  void synchronize() override { ++syncs; }

  uint64_t next = 0x7f0000000000;
  std::vector<std::pair<uint64_t, size_t>> allocs;
  std::vector<uint64_t> frees;
  std::set<uint64_t> live;
  std::vector<Copy> copies;
  std::vector<Launch> launches;
  int syncs = 0;
  std::string failingKernel;
};

BufferRef buf(uint64_t ptr, std::vector<int64_t> sizes,
              DType dtype = DType::F32) {
  return BufferRef{ptr, std::move(sizes), dtype};
}

/// The error of running `plan` with `args` on a fresh fake device; also
/// checks that everything allocated was freed.
std::string runError(const Plan &plan, const std::vector<BufferRef> &args) {
  FakeDevice device;
  std::string msg = messageOf<PlanError>([&] { execute(plan, device, args); });
  EXPECT_TRUE(device.live.empty()) << "buffers leaked";
  EXPECT_EQ(device.frees.size(), device.allocs.size());
  return msg;
}

// The example of docs/launch-plan.md, without its indentation.
const char *const kDocExample = R"(fwp-plan 1
index-bits 32
module scan_kernel
arg arg0 f32 ? 2 4 8
arg arg1 f32 ? 2 4 8
value v0 dim(arg0, 0)
alloc b0 f32 v0 2 4 8
value v1 (ceildiv v0 64)
launch scan_kernel scan_kernel 2 4 v1 128 1 1 0 memref arg0 memref b0 index v0
copy b0 arg1
)";

// Every construct of the format, with comments and irregular spacing.
const char *const kEverything = R"(# a plan written by hand
fwp-plan 1   # version
index-bits 64

module m_a
module m.b
arg x f64 ? 3      # a trailing comment
arg y f64 4 ? 
arg s f32
value n dim(x, 0)
value a (add n 1)
value b (sub a (mul 2 dim( y , 1 )))
value c (divs b -3)
value d (divu a 2)
value e (rems -7 3)
value f (remu a 5)
value g (ceildiv (floordiv a 2) 3)
value h (mins (maxs a b) (minu c (maxu d 9223372036854775807)))
value i -9223372036854775808
alloc t f64 n 3
alloc u f32
view tv t (mul n 3)
view tv2 tv 1 (mul 3 n) 1
copy x t
launch m_a k1 (ceildiv n 2) 1 1 32 2 1 (mul 4 256) memref t memref tv index n i32 -5 i64 i f32 1.5 f64 -0x1.8p+1
launch m.b k-2 1 1 1 1 1 1 0
copy tv2 x
)";

//===----------------------------------------------------------------------===//
// Parsing and printing
//===----------------------------------------------------------------------===//

TEST(PlanParseTest, ParsesTheDocumentExample) {
  Plan plan = Plan::parse(kDocExample, "scan.fwp");
  EXPECT_EQ(plan.sourceName, "scan.fwp");
  EXPECT_EQ(plan.indexBits, 32u);
  EXPECT_EQ(plan.modules, std::vector<std::string>{"scan_kernel"});
  ASSERT_EQ(plan.args.size(), 2u);
  EXPECT_EQ(plan.args[0].name, "arg0");
  EXPECT_EQ(plan.args[0].dtype, DType::F32);
  EXPECT_EQ(plan.args[0].sizes,
            (std::vector<std::optional<int64_t>>{std::nullopt, 2, 4, 8}));
  EXPECT_EQ(plan.args[0].line, 4);
  ASSERT_EQ(plan.steps.size(), 5u);
  EXPECT_EQ(plan.steps[0].kind, PlanStep::Kind::Value);
  EXPECT_EQ(plan.steps[0].expr, PlanExpr::dim("arg0", 0));
  EXPECT_EQ(plan.steps[1].kind, PlanStep::Kind::Alloc);
  EXPECT_EQ(plan.steps[1].sizes.size(), 4u);
  EXPECT_EQ(plan.steps[2].expr,
            PlanExpr::apply(PlanOp::CeilDiv, PlanExpr::value("v0"),
                            PlanExpr::literal(64)));
  const PlanStep &launch = plan.steps[3];
  EXPECT_EQ(launch.kind, PlanStep::Kind::Launch);
  EXPECT_EQ(launch.line, 9);
  EXPECT_EQ(launch.module, "scan_kernel");
  EXPECT_EQ(launch.kernel, "scan_kernel");
  EXPECT_EQ(launch.grid[2], PlanExpr::value("v1"));
  EXPECT_EQ(launch.block[0], PlanExpr::literal(128));
  EXPECT_EQ(launch.shared, PlanExpr::literal(0));
  ASSERT_EQ(launch.args.size(), 3u);
  EXPECT_EQ(launch.args[0].kind, PlanLaunchArg::Kind::Memref);
  EXPECT_EQ(launch.args[1].buffer, "b0");
  EXPECT_EQ(launch.args[2].kind, PlanLaunchArg::Kind::Index);
  EXPECT_EQ(plan.steps[4].kind, PlanStep::Kind::Copy);
  EXPECT_EQ(plan.steps[4].source, "b0");
  EXPECT_EQ(plan.steps[4].dest, "arg1");
  EXPECT_EQ(launch.describe(), "launch scan_kernel scan_kernel");
}

TEST(PlanParseTest, PrintsTheDocumentExampleBackExactly) {
  EXPECT_EQ(Plan::parse(kDocExample, "scan.fwp").str(), kDocExample);
}

TEST(PlanParseTest, RoundTripsEveryConstruct) {
  Plan plan = Plan::parse(kEverything, "everything.fwp");
  std::string printed = plan.str();
  Plan again = Plan::parse(printed, "printed.fwp");
  EXPECT_EQ(again, plan);
  EXPECT_EQ(again.str(), printed);
  EXPECT_TRUE(contains(printed, "value b (sub a (mul 2 dim(y, 1)))\n"));
  EXPECT_TRUE(contains(printed, "view tv2 tv 1 (mul 3 n) 1\n"));
  EXPECT_TRUE(contains(printed, "arg s f32\n"));
  EXPECT_TRUE(contains(printed, "value i -9223372036854775808\n"));
  EXPECT_TRUE(contains(printed,
                       "launch m_a k1 (ceildiv n 2) 1 1 32 2 1 (mul 4 256) "
                       "memref t memref tv index n i32 -5 i64 i f32 1.5 f64 "
                       "-0x1.8p+1\n"));
  const PlanStep &launch = plan.steps[15];
  ASSERT_EQ(launch.args.size(), 7u);
  EXPECT_EQ(launch.args[5].real, 1.5);
  EXPECT_EQ(launch.args[6].real, -3.0);
  EXPECT_EQ(plan.steps[12].dtype, DType::F64); // a view has its source's
  // A changed plan is not equal.
  Plan changed = again;
  changed.steps[1].expr.operands[1] = PlanExpr::literal(2);
  EXPECT_NE(changed, plan);
}

TEST(PlanParseTest, ExpressionsPrint) {
  PlanExpr e =
      PlanExpr::apply(PlanOp::FloorDiv, PlanExpr::dim("x", 2),
                      PlanExpr::apply(PlanOp::MaxU, PlanExpr::value("v"),
                                      PlanExpr::literal(-1)));
  EXPECT_EQ(e.str(), "(floordiv dim(x, 2) (maxu v -1))");
  for (const char *name :
       {"add", "sub", "mul", "divs", "divu", "rems", "remu", "ceildiv",
        "ceildivu", "floordiv", "mins", "maxs", "minu", "maxu"})
    EXPECT_EQ(planOpName(*parsePlanOp(name)), std::string(name));
  EXPECT_FALSE(parsePlanOp("div"));
  EXPECT_EQ(dtypeBytes(DType::F64), 8u);
  EXPECT_EQ(dtypeBytes(DType::BF16), 2u);
  EXPECT_EQ(*parseDType("f16"), DType::F16);
  EXPECT_EQ(*parseDType("bf16"), DType::BF16);
  EXPECT_FALSE(parseDType("f8"));
}

// Results: an alloc, views of allocs (through a chain), the same allocation
// twice.
const char *const kResults = R"(fwp-plan 1
index-bits 64
arg x f32 ? 4
value n dim(x, 0)
alloc a f32 n 4
alloc s f64 8
view av a (mul n 4)
view av2 av 2 (mul n 2)
result a
result av2
copy x a
result av
)";

TEST(PlanParseTest, ParsesAndPrintsResults) {
  Plan plan = Plan::parse(kResults, "results.fwp");
  ASSERT_EQ(plan.steps.size(), 9u);
  const PlanStep &result = plan.steps[5];
  EXPECT_EQ(result.kind, PlanStep::Kind::Result);
  EXPECT_EQ(result.source, "a");
  EXPECT_EQ(result.line, 9);
  EXPECT_EQ(result.describe(), "result a");
  EXPECT_EQ(result.str(), "result a");
  EXPECT_EQ(plan.steps[6].source, "av2");
  EXPECT_EQ(plan.steps[7].kind, PlanStep::Kind::Copy); // steps may follow
  EXPECT_EQ(plan.str(), kResults);
  Plan again = Plan::parse(plan.str(), "printed.fwp");
  EXPECT_EQ(again, plan);
  Plan changed = again;
  changed.steps[5].source = "av";
  EXPECT_NE(changed, plan);
  // Comments and spacing do not matter.
  Plan spaced = parseBody("alloc b f32 2\n  result   b   # returned\n");
  EXPECT_EQ(spaced.steps.at(1).str(), "result b");
}

//===----------------------------------------------------------------------===//
// Building plans in memory, as the compiler does
//===----------------------------------------------------------------------===//

/// The document example, built the way exportLaunchPlan builds plans.
Plan buildDocExample() {
  Plan plan;
  plan.sourceName = "built";
  plan.indexBits = 32;
  plan.modules = {"scan_kernel"};
  for (const char *name : {"arg0", "arg1"}) {
    PlanArg arg;
    arg.name = name;
    arg.sizes = {std::nullopt, 2, 4, 8};
    plan.args.push_back(arg);
  }
  PlanExpr v0 = PlanExpr::value("v0");
  auto literal = PlanExpr::literal;
  plan.steps.push_back(PlanStep::value("v0", PlanExpr::dim("arg0", 0)));
  plan.steps.push_back(PlanStep::alloc(
      "b0", DType::F32, {v0, literal(2), literal(4), literal(8)}));
  plan.steps.push_back(
      PlanStep::value("v1", PlanExpr::apply(PlanOp::CeilDiv, v0, literal(64))));
  PlanStep launch;
  launch.kind = PlanStep::Kind::Launch;
  launch.module = launch.kernel = "scan_kernel";
  launch.grid = {literal(2), literal(4), PlanExpr::value("v1")};
  launch.block = {literal(128), literal(1), literal(1)};
  launch.shared = literal(0);
  launch.args = {PlanLaunchArg::memref("arg0"), PlanLaunchArg::memref("b0"),
                 PlanLaunchArg::integer(PlanLaunchArg::Kind::Index, v0)};
  plan.steps.push_back(launch);
  plan.steps.push_back(PlanStep::copy("b0", "arg1"));
  plan.numberLines();
  return plan;
}

TEST(PlanBuildTest, ABuiltPlanEqualsAndPrintsAsTheParsedOne) {
  Plan built = buildDocExample();
  Plan parsed = Plan::parse(kDocExample, "scan.fwp");
  EXPECT_EQ(built, parsed);
  EXPECT_EQ(built.str(), kDocExample);
  // numberLines gives every arg and step the line the printer puts it on.
  for (size_t i = 0; i < parsed.args.size(); ++i)
    EXPECT_EQ(built.args[i].line, parsed.args[i].line) << i;
  for (size_t i = 0; i < parsed.steps.size(); ++i)
    EXPECT_EQ(built.steps[i].line, parsed.steps[i].line) << i;
  // So run-time errors point into the printed text.
  built.steps[2].expr.operands[1] = PlanExpr::literal(0);
  EXPECT_TRUE(contains(
      runError(built, {buf(0x1000, {3, 2, 4, 8}), buf(0x2000, {3, 2, 4, 8})}),
      "built:8: value v1: division by zero"));
}

TEST(PlanBuildTest, ViewsAndResultsBuildAsParsed) {
  Plan parsed = parseBody("alloc a f64 6\nview b a 2 3\nresult b\n");
  Plan built;
  built.steps = {PlanStep::alloc("a", DType::F64, {PlanExpr::literal(6)}),
                 PlanStep::view("b", "a", DType::F64,
                                {PlanExpr::literal(2), PlanExpr::literal(3)}),
                 PlanStep::result("b")};
  EXPECT_EQ(built, parsed);
  EXPECT_EQ(built.str(), parsed.str());
  EXPECT_EQ(built.steps[1].dtype, parsed.steps[1].dtype);
}

TEST(PlanBuildTest, FloatLiteralsReadBackExactly) {
  using Kind = PlanLaunchArg::Kind;
  const double values[] = {
      0.1,       1e-6,   -3.0,
      1.0 / 3.0, 1e-40,  -0.0,
      1e300,     5e-324, std::numeric_limits<double>::infinity()};
  for (Kind kind : {Kind::F32, Kind::F64}) {
    for (double value : values) {
      if (kind == Kind::F32 && std::abs(value) > 1e38 && !std::isinf(value))
        continue; // not a float
      PlanLaunchArg arg = PlanLaunchArg::floating(kind, value);
      Plan plan =
          parseBody("module m\nlaunch m k 1 1 1 1 1 1 0 " + arg.str() + "\n");
      const PlanLaunchArg &read = plan.steps.at(0).args.at(0);
      EXPECT_EQ(read, arg) << arg.str();
      EXPECT_EQ(read.text, arg.text);
    }
  }
  // The shortest text of the float (not of the double nearest to 0.1).
  PlanLaunchArg tenth = PlanLaunchArg::floating(Kind::F32, 0.1);
  EXPECT_EQ(tenth.str(), "f32 0.1");
  EXPECT_EQ(tenth.real, static_cast<double>(0.1f));
  EXPECT_EQ(PlanLaunchArg::floating(Kind::F64, 0.1).real, 0.1);
}

TEST(PlanBuildTest, WritesABuiltPlanDirectory) {
  std::string dir = tempDir("built");
  writePlanDirectory(dir, buildDocExample(), {{"scan_kernel", "// ptx\n"}});
  EXPECT_EQ(readFile(dir + "/plan.fwp"), kDocExample);
  EXPECT_EQ(readFile(dir + "/scan_kernel.ptx"), "// ptx\n");
  std::filesystem::remove_all(dir);
  EXPECT_EQ(messageOf<PlanError>(
                [&] { writePlanDirectory(dir, buildDocExample(), {}); }),
            dir + "/plan.fwp: no PTX given for module 'scan_kernel'");
  EXPECT_EQ(messageOf<PlanError>([&] {
              writePlanDirectory(dir, buildDocExample(),
                                 {{"scan_kernel", ""}, {"../x", ""}});
            }),
            "bad module name '../x'");
  EXPECT_FALSE(std::filesystem::exists(dir));
}

TEST(ElementTypeTest, ElementCounts) {
  const int64_t big = int64_t(1) << 62;
  EXPECT_EQ(elementCount({}), 1);
  EXPECT_EQ(elementCount({3, 2, 4}), 24);
  EXPECT_EQ(elementCount({big, 1}), big);
  EXPECT_EQ(elementCount({3, -1}), std::nullopt);
  EXPECT_EQ(elementCount({0, -1}), std::nullopt);
  EXPECT_EQ(elementCount({big, 2}), std::nullopt);
  EXPECT_EQ(elementCount({big, 4, 0}), 0); // no overflow: the product is 0
  EXPECT_EQ(buf(0, {big, 4, 0}).elementCount(), 0);
  EXPECT_EQ(dtypeName(DType::F32), std::string("f32"));
  EXPECT_EQ(parseDType("f64"), DType::F64);
}

//===----------------------------------------------------------------------===//
// Parse errors
//===----------------------------------------------------------------------===//

TEST(PlanParseErrorTest, MissingHeader) {
  EXPECT_TRUE(contains(parseError("index-bits 64\n"),
                       "test.fwp:1: missing header: expected 'fwp-plan 1' "
                       "before 'index-bits'"));
  EXPECT_EQ(parseError("# nothing\n\n"),
            "test.fwp: missing header 'fwp-plan 1'");
}

TEST(PlanParseErrorTest, UnsupportedVersionOrDuplicateHeader) {
  EXPECT_TRUE(contains(parseError("fwp-plan 2\n"),
                       "test.fwp:1: unsupported plan version '2'"));
  EXPECT_TRUE(contains(parseError("fwp-plan 1\nfwp-plan 1\n"),
                       "test.fwp:2: duplicate header"));
}

TEST(PlanParseErrorTest, IndexBitsMustBe32Or64) {
  EXPECT_TRUE(contains(parseError("fwp-plan 1\nindex-bits 16\n"),
                       "test.fwp:2: index-bits must be 32 or 64, not '16'"));
  EXPECT_TRUE(contains(parseError("fwp-plan 1\nindex-bits\n"),
                       "test.fwp:2: missing the number of bits"));
}

TEST(PlanParseErrorTest, IndexBitsIsRequired) {
  EXPECT_TRUE(contains(parseError("fwp-plan 1\nmodule m\n"),
                       "test.fwp:2: expected 'index-bits 32' or 'index-bits "
                       "64' after the header, found 'module'"));
  EXPECT_EQ(parseError("fwp-plan 1\n"),
            "test.fwp: missing 'index-bits 32' or 'index-bits 64'");
  EXPECT_TRUE(contains(bodyError("index-bits 32\n"),
                       "test.fwp:3: duplicate or misplaced 'index-bits'"));
}

TEST(PlanParseErrorTest, UnknownDirective) {
  EXPECT_TRUE(contains(bodyError("module m\nfree b0\n"),
                       "test.fwp:4: unknown directive 'free'"));
}

TEST(PlanParseErrorTest, UnbalancedParenthesesMissingClose) {
  EXPECT_TRUE(contains(bodyError("value a (add 1 (mul 2 3)\n"),
                       "test.fwp:3: unbalanced parentheses: missing ')' "
                       "after '(add'"));
  EXPECT_TRUE(contains(bodyError("arg x f32 4\nvalue a dim(x, 0\n"),
                       "test.fwp:4: unbalanced parentheses: missing ')'"));
}

TEST(PlanParseErrorTest, UnbalancedParenthesesExtraClose) {
  EXPECT_TRUE(contains(bodyError("value a (add 1 2))\n"),
                       "test.fwp:3: unbalanced parentheses: unexpected ')'"));
  EXPECT_TRUE(contains(bodyError("alloc t f32 (add 1 2))\n"),
                       "test.fwp:3: unbalanced parentheses: unexpected ')'"));
  EXPECT_TRUE(contains(bodyError("value a )\n"),
                       "test.fwp:3: unbalanced parentheses: unexpected ')'"));
}

TEST(PlanParseErrorTest, UnknownOperator) {
  EXPECT_TRUE(contains(bodyError("value a (div 4 2)\n"),
                       "test.fwp:3: unknown operator 'div' (expected add, "
                       "sub, mul, divs"));
  EXPECT_TRUE(contains(bodyError("value a (4 2)\n"),
                       "test.fwp:3: unknown operator '4'"));
}

TEST(PlanParseErrorTest, UnknownName) {
  EXPECT_TRUE(contains(bodyError("value a (add n 1)\n"),
                       "test.fwp:3: unknown name 'n'"));
  EXPECT_TRUE(contains(bodyError("value a dim(x, 0)\n"),
                       "test.fwp:3: unknown name 'x'"));
  EXPECT_TRUE(
      contains(bodyError("copy p q\n"), "test.fwp:3: unknown name 'p'"));
}

TEST(PlanParseErrorTest, WrongArity) {
  EXPECT_TRUE(contains(bodyError("value a (add 1)\n"),
                       "test.fwp:3: operator 'add' takes 2 operands, not 1"));
  EXPECT_TRUE(contains(bodyError("value a (mins 1 2 3)\n"),
                       "test.fwp:3: operator 'mins' takes 2 operands, not 3"));
  EXPECT_TRUE(contains(bodyError("value a ()\n"),
                       "test.fwp:3: expected an operator after '('"));
}

TEST(PlanParseErrorTest, DuplicateName) {
  EXPECT_TRUE(contains(bodyError("arg x f32 4\nvalue n 1\nalloc x f32 n\n"),
                       "test.fwp:5: duplicate name 'x' (first defined on "
                       "line 3)"));
  EXPECT_TRUE(contains(bodyError("module m\nmodule m\n"),
                       "test.fwp:4: duplicate module 'm'"));
}

TEST(PlanParseErrorTest, UseBeforeDefinition) {
  EXPECT_TRUE(contains(bodyError("value a (add b 1)\nvalue b 2\n"),
                       "test.fwp:3: 'b' is used before its definition on "
                       "line 4"));
  EXPECT_TRUE(contains(bodyError("copy t u\nalloc t f32 1\nalloc u f32 1\n"),
                       "test.fwp:3: 't' is used before its definition on "
                       "line 4"));
}

TEST(PlanParseErrorTest, BadDType) {
  EXPECT_TRUE(contains(bodyError("arg x f8 4\n"),
                       "test.fwp:3: bad dtype 'f8' (expected f32, f64, bf16 "
                       "or f16)"));
  EXPECT_TRUE(contains(bodyError("alloc b i32 4\n"),
                       "test.fwp:3: bad dtype 'i32' (expected f32, f64, bf16 "
                       "or f16)"));
}

TEST(PlanParseErrorTest, BadArgumentSize) {
  EXPECT_TRUE(contains(bodyError("arg x f32 ? -1\n"),
                       "test.fwp:3: bad size '-1' of argument 'x'"));
  EXPECT_TRUE(contains(bodyError("arg x f32 n\n"),
                       "test.fwp:3: bad size 'n' of argument 'x'"));
  EXPECT_TRUE(contains(bodyError("arg x\n"),
                       "test.fwp:3: missing the dtype (expected 'arg NAME "
                       "DTYPE D0 D1 ...')"));
}

TEST(PlanParseErrorTest, ViewNeedsNameAndSource) {
  EXPECT_TRUE(contains(bodyError("view v\n"),
                       "test.fwp:3: missing the source buffer (expected "
                       "'view NAME SRC S0 S1 ...')"));
  EXPECT_TRUE(contains(bodyError("value n 4\nview v n 4\n"),
                       "test.fwp:4: 'n' is a value, not a buffer"));
  // Any number of sizes parses: ranks are only known when running.
  Plan plan = parseBody("arg x f32 ? 4\nview v x 2 2 1 1 dim(x, 0)\nview "
                        "w x\n");
  EXPECT_EQ(plan.steps[0].sizes.size(), 5u);
  EXPECT_EQ(plan.steps[1].sizes.size(), 0u);
}

TEST(PlanParseErrorTest, DimOutsideTheRank) {
  EXPECT_TRUE(contains(bodyError("arg x f32 ? 4\nvalue n dim(x, 2)\n"),
                       "test.fwp:4: dim(x, 2): 'x' has rank 2"));
  EXPECT_TRUE(contains(bodyError("arg x f32 ? 4\nvalue n dim(x, n)\n"),
                       "test.fwp:4: bad dim: expected 'dim(NAME, I)' with an "
                       "integer I"));
}

TEST(PlanParseErrorTest, BufferUsedAsValue) {
  EXPECT_TRUE(contains(bodyError("arg x f32 4\nvalue n (add x 1)\n"),
                       "test.fwp:4: 'x' is a buffer, not an integer value"));
}

TEST(PlanParseErrorTest, CopyBetweenDTypes) {
  EXPECT_TRUE(contains(bodyError("arg x f32 4\nalloc t f64 4\ncopy x t\n"),
                       "test.fwp:5: copy from f32 buffer 'x' to f64 buffer "
                       "'t'"));
  EXPECT_TRUE(contains(bodyError("arg x f32 4\ncopy x\n"),
                       "test.fwp:4: missing the destination buffer"));
}

TEST(PlanParseErrorTest, LaunchMissingField) {
  EXPECT_TRUE(contains(bodyError("module m\nlaunch m k 1 1 1 32 1\n"),
                       "test.fwp:4: missing BZ (expected 'launch MODULE "
                       "KERNEL GX GY GZ BX BY BZ SHARED ARGS...')"));
  EXPECT_TRUE(contains(bodyError("module m\nlaunch m k 1 1 1 32 1 1\n"),
                       "test.fwp:4: missing SHARED"));
  EXPECT_TRUE(contains(bodyError("module m\nlaunch m\n"),
                       "test.fwp:4: missing KERNEL"));
  EXPECT_TRUE(contains(bodyError("module m\nlaunch m k 1 1 1 1 1 1 0 memref\n"),
                       "test.fwp:4: missing the buffer after 'memref'"));
  EXPECT_TRUE(contains(bodyError("module m\nlaunch m k 1 1 1 1 1 1 0 index\n"),
                       "test.fwp:4: missing the expression after 'index'"));
}

TEST(PlanParseErrorTest, LaunchUnknownModule) {
  EXPECT_TRUE(contains(bodyError("module m\nlaunch n k 1 1 1 1 1 1 0\n"),
                       "test.fwp:4: unknown module 'n' (modules: m)"));
}

TEST(PlanParseErrorTest, LaunchBadArgument) {
  EXPECT_TRUE(contains(bodyError("module m\nlaunch m k 1 1 1 1 1 1 0 ptr 3\n"),
                       "test.fwp:4: unknown launch argument kind 'ptr'"));
  EXPECT_TRUE(
      contains(bodyError("module m\nlaunch m k 1 1 1 1 1 1 0 f32 1.5x\n"),
               "test.fwp:4: bad f32 literal '1.5x'"));
  EXPECT_TRUE(
      contains(bodyError("module m\nlaunch m k 1 1 1 1 1 1 0 f32 1e39\n"),
               "test.fwp:4: f32 literal '1e39' is out of range"));
  EXPECT_TRUE(contains(
      bodyError(
          "module m\nlaunch m k 1 1 1 1 1 1 0 i64 99999999999999999999\n"),
      "test.fwp:4: integer '99999999999999999999' is out of range"));
}

TEST(PlanParseErrorTest, SectionsInOrder) {
  EXPECT_TRUE(contains(bodyError("arg x f32 4\nmodule m\n"),
                       "test.fwp:4: 'module' lines must come before 'arg' "
                       "lines and steps"));
  EXPECT_TRUE(contains(bodyError("value n 1\narg x f32 4\n"),
                       "test.fwp:4: 'arg' lines must come before the steps"));
}

TEST(PlanParseErrorTest, TrailingTokens) {
  EXPECT_TRUE(contains(bodyError("value n 1 2\n"),
                       "test.fwp:3: unexpected '2' at the end of the line "
                       "(expected 'value NAME EXPR')"));
  EXPECT_TRUE(contains(bodyError("module m k\n"),
                       "test.fwp:3: unexpected 'k' at the end of the line"));
}

TEST(PlanParseErrorTest, BadNames) {
  EXPECT_TRUE(contains(bodyError("value 9a 1\n"), "test.fwp:3: bad name '9a'"));
  EXPECT_TRUE(
      contains(bodyError("module a/b\n"), "test.fwp:3: bad module name 'a/b'"));
  EXPECT_TRUE(
      contains(bodyError("value n @\n"), "test.fwp:3: bad expression '@'"));
}

TEST(PlanParseErrorTest, ResultOfAnArgument) {
  EXPECT_EQ(bodyError("arg x f32 4\nresult x\n"),
            "test.fwp:4: cannot return argument 'x': it belongs to the "
            "caller (a result must be an alloc or a view of one)");
  // Through views too, naming the argument.
  EXPECT_EQ(bodyError("arg x f32 4\nview v x 2 2\nview w v 4\nresult w\n"),
            "test.fwp:6: cannot return 'w', a view of argument 'x': it "
            "belongs to the caller (a result must be an alloc or a view of "
            "one)");
}

TEST(PlanParseErrorTest, ResultOfAnUnknownNameOrAValue) {
  EXPECT_TRUE(
      contains(bodyError("result q\n"), "test.fwp:3: unknown name 'q'"));
  EXPECT_TRUE(contains(bodyError("result b\nalloc b f32 1\n"),
                       "test.fwp:3: 'b' is used before its definition on "
                       "line 4"));
  EXPECT_TRUE(contains(bodyError("value n 4\nresult n\n"),
                       "test.fwp:4: 'n' is a value, not a buffer"));
}

TEST(PlanParseErrorTest, ResultSyntax) {
  EXPECT_TRUE(contains(bodyError("result\n"),
                       "test.fwp:3: missing the buffer name (expected "
                       "'result NAME')"));
  EXPECT_TRUE(contains(bodyError("alloc a f32 1\nresult a a\n"),
                       "test.fwp:4: unexpected 'a' at the end of the line"));
  EXPECT_TRUE(contains(bodyError("alloc a f32 1\nresult a\narg x f32 1\n"),
                       "test.fwp:5: 'arg' lines must come before the steps"));
  EXPECT_TRUE(contains(bodyError("results a\n"), "launch or result)"));
}

//===----------------------------------------------------------------------===//
// Integer arithmetic
//===----------------------------------------------------------------------===//

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

TEST(PlanExprTest, SignedDivisionMatchesMlirArith) {
  struct Case {
    int64_t a, b, divs, rems, ceildiv, floordiv;
  };
  // Hand-computed from the definitions of arith.divsi / remsi (truncating;
  // the remainder has the dividend's sign), arith.ceildivsi (rounds toward
  // +infinity) and arith.floordivsi (rounds toward -infinity).
  const Case cases[] = {
      {7, 2, 3, 1, 4, 3},
      {-7, 2, -3, -1, -3, -4},
      {7, -2, -3, 1, -3, -4},
      {-7, -2, 3, -1, 4, 3},
      {6, 2, 3, 0, 3, 3},
      {-6, 2, -3, 0, -3, -3},
      {6, -3, -2, 0, -2, -2},
      {0, 5, 0, 0, 0, 0},
      {0, -5, 0, 0, 0, 0},
      {1, 64, 0, 1, 1, 0},
      {-1, 64, 0, -1, 0, -1},
      {1, -64, 0, 1, 0, -1},
      {kMax, 2, kMax / 2, 1, kMax / 2 + 1, kMax / 2},
      {kMin, 2, kMin / 2, 0, kMin / 2, kMin / 2},
      {kMin, 3, -3074457345618258602, -2, -3074457345618258602,
       -3074457345618258603},
      {kMin, kMax, -1, -1, -1, -2},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(std::to_string(c.a) + " by " + std::to_string(c.b));
    EXPECT_EQ(applyPlanOp(PlanOp::DivS, c.a, c.b), c.divs);
    EXPECT_EQ(applyPlanOp(PlanOp::RemS, c.a, c.b), c.rems);
    EXPECT_EQ(applyPlanOp(PlanOp::CeilDiv, c.a, c.b), c.ceildiv);
    EXPECT_EQ(applyPlanOp(PlanOp::FloorDiv, c.a, c.b), c.floordiv);
  }
  EXPECT_EQ(applyPlanOp(PlanOp::RemS, kMin, -1), 0);
}

TEST(PlanExprTest, UnsignedOperationsAndWrapAround) {
  EXPECT_EQ(applyPlanOp(PlanOp::DivU, -1, 2), kMax);
  EXPECT_EQ(applyPlanOp(PlanOp::DivU, -8, -4), 0); // 2^64-8 < 2^64-4
  EXPECT_EQ(applyPlanOp(PlanOp::RemU, -1, 10), 5); // 18446744073709551615
  EXPECT_EQ(applyPlanOp(PlanOp::RemU, 7, -1), 7);
  // arith.ceildivui: the quotient rounded up, both read as unsigned.
  EXPECT_EQ(applyPlanOp(PlanOp::CeilDivU, 1024, 64), 16);
  EXPECT_EQ(applyPlanOp(PlanOp::CeilDivU, 1025, 64), 17);
  EXPECT_EQ(applyPlanOp(PlanOp::CeilDivU, 0, 64), 0);
  EXPECT_EQ(applyPlanOp(PlanOp::CeilDivU, -1, 2), kMin); // 2^63
  EXPECT_EQ(applyPlanOp(PlanOp::CeilDivU, 5, -1), 1);    // 5 / (2^64-1)
  EXPECT_EQ(applyPlanOp(PlanOp::MinU, -1, 3), 3);
  EXPECT_EQ(applyPlanOp(PlanOp::MaxU, -1, 3), -1);
  EXPECT_EQ(applyPlanOp(PlanOp::MinS, -1, 3), -1);
  EXPECT_EQ(applyPlanOp(PlanOp::MaxS, -1, 3), 3);
  EXPECT_EQ(applyPlanOp(PlanOp::Add, kMax, 1), kMin);
  EXPECT_EQ(applyPlanOp(PlanOp::Sub, kMin, 1), kMax);
  EXPECT_EQ(applyPlanOp(PlanOp::Mul, int64_t(1) << 62, 4), 0);
  EXPECT_EQ(applyPlanOp(PlanOp::Mul, -3, 7), -21);
}

TEST(PlanExprTest, DivisionByZeroAndOverflowAreErrors) {
  for (PlanOp op : {PlanOp::DivS, PlanOp::DivU, PlanOp::RemS, PlanOp::RemU,
                    PlanOp::CeilDiv, PlanOp::CeilDivU, PlanOp::FloorDiv})
    EXPECT_EQ(messageOf<PlanError>([&] { applyPlanOp(op, 5, 0); }),
              "division by zero")
        << planOpName(op);
  for (PlanOp op : {PlanOp::DivS, PlanOp::CeilDiv, PlanOp::FloorDiv})
    EXPECT_TRUE(contains(
        messageOf<PlanError>([&] { applyPlanOp(op, kMin, -1); }), "overflows"));
}

TEST(PlanExprTest, EvaluatesWithBoundArguments) {
  Plan plan = parseBody("arg x f32 ? 4\n"
                        "value n dim(x, 0)\n"
                        "value a (ceildiv (sub 0 n) 4)\n"
                        "value b (floordiv (sub 0 n) 4)\n"
                        "value c (rems (sub 0 n) 4)\n"
                        "value d (mul dim(x, 1) (maxs a b))\n");
  FakeDevice device;
  PlanRun run(plan, device);
  run.bindArguments({buf(0x1000, {10, 4})});
  for (const PlanStep &step : plan.steps)
    run.runStep(step);
  EXPECT_EQ(run.value("n"), 10);
  EXPECT_EQ(run.value("a"), -2); // ceil(-2.5)
  EXPECT_EQ(run.value("b"), -3); // floor(-2.5)
  EXPECT_EQ(run.value("c"), -2);
  EXPECT_EQ(run.value("d"), -8);
  EXPECT_EQ(run.evaluate(PlanExpr::apply(PlanOp::Add, PlanExpr::dim("x", 1),
                                         PlanExpr::value("n"))),
            14);
  EXPECT_EQ(run.buffer("x").sizes, (std::vector<int64_t>{10, 4}));
}

TEST(PlanExprTest, UnknownNamesWhenEvaluating) {
  Plan plan = parseBody("arg x f32 ? 4\n");
  FakeDevice device;
  PlanRun run(plan, device);
  run.bindArguments({buf(0x1000, {1, 4})});
  EXPECT_EQ(
      messageOf<PlanError>([&] { run.evaluate(PlanExpr::value("nope")); }),
      "unknown value 'nope'");
  EXPECT_EQ(
      messageOf<PlanError>([&] { run.evaluate(PlanExpr::dim("nope", 0)); }),
      "unknown buffer 'nope'");
  EXPECT_EQ(messageOf<PlanError>([&] { run.evaluate(PlanExpr::dim("x", 2)); }),
            "dim(x, 2): 'x' has rank 2");
  EXPECT_TRUE(contains(messageOf<PlanError>([&] { run.value("x"); }),
                       "unknown value 'x'"));
}

TEST(PlanExprTest, DivisionByZeroNamesTheStep) {
  Plan plan = parseBody("arg x f32 ?\n"
                        "value n dim(x, 0)\n"
                        "value m (add 1 (ceildiv 7 n))\n");
  EXPECT_EQ(runError(plan, {buf(0x1000, {0})}),
            "test.fwp:5: value m: division by zero in (ceildiv 7 n) "
            "(ceildiv 7 0)");
}

//===----------------------------------------------------------------------===//
// Execution (fake device)
//===----------------------------------------------------------------------===//

TEST(PlanExecuteTest, RunsTheDocumentExample) {
  Plan plan = Plan::parse(kDocExample, "scan.fwp");
  FakeDevice device;
  const uint64_t in = 0xA000, out = 0xB000;
  execute(plan, device, {buf(in, {100, 2, 4, 8}), buf(out, {100, 2, 4, 8})});

  ASSERT_EQ(device.allocs.size(), 1u);
  const uint64_t b0 = device.allocs[0].first;
  EXPECT_EQ(device.allocs[0].second, 100u * 64 * 4);

  ASSERT_EQ(device.launches.size(), 1u);
  const FakeDevice::Launch &l = device.launches[0];
  EXPECT_EQ(l.module, "scan_kernel");
  EXPECT_EQ(l.kernel, "scan_kernel");
  EXPECT_EQ(l.grid.x, 2u);
  EXPECT_EQ(l.grid.y, 4u);
  EXPECT_EQ(l.grid.z, 2u); // ceildiv(100, 64)
  EXPECT_EQ(l.block.x, 128u);
  EXPECT_EQ(l.block.y, 1u);
  EXPECT_EQ(l.shared, 0u);
  // Two rank-4 memrefs (2 + 1 + 4 + 4 fields each) and an index.
  ASSERT_EQ(l.params.size(), 23u);
  EXPECT_EQ(l.params[0], le(in, 8));
  EXPECT_EQ(l.params[11], le(b0, 8));
  EXPECT_EQ(l.params[22], le(100, 4));

  ASSERT_EQ(device.copies.size(), 1u);
  EXPECT_EQ(device.copies[0].src, b0);
  EXPECT_EQ(device.copies[0].dst, out);
  EXPECT_EQ(device.copies[0].bytes, 100u * 64 * 4);
  EXPECT_EQ(device.frees, std::vector<uint64_t>{b0});
  EXPECT_EQ(device.syncs, 1);
}

TEST(PlanExecuteTest, BindsUnknownSizesOfEachArgument) {
  Plan plan = parseBody("arg x f64 ? 3 ?\narg y f64 ?\n"
                        "value a dim(x, 0)\nvalue b dim(x, 2)\n"
                        "value c dim(y, 0)\n");
  FakeDevice device;
  PlanRun run(plan, device);
  run.run({buf(1, {5, 3, 7}, DType::F64), buf(2, {11}, DType::F64)});
  EXPECT_EQ(run.value("a"), 5);
  EXPECT_EQ(run.value("b"), 7);
  EXPECT_EQ(run.value("c"), 11);
}

TEST(PlanExecuteTest, MemrefDescriptorBytesWith64BitIndices) {
  Plan plan = parseBody("module m\narg x f32 ? 3 5\n"
                        "launch m k 1 1 1 1 1 1 0 memref x\n");
  FakeDevice device;
  execute(plan, device, {buf(0x1122334455667788, {2, 3, 5})});
  ASSERT_EQ(device.launches.size(), 1u);
  const std::vector<std::vector<uint8_t>> expected = {
      {0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11}, // allocated
      {0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11}, // aligned
      {0, 0, 0, 0, 0, 0, 0, 0},                         // offset
      {2, 0, 0, 0, 0, 0, 0, 0},                         // sizes
      {3, 0, 0, 0, 0, 0, 0, 0},
      {5, 0, 0, 0, 0, 0, 0, 0},
      {15, 0, 0, 0, 0, 0, 0, 0}, // strides
      {5, 0, 0, 0, 0, 0, 0, 0},
      {1, 0, 0, 0, 0, 0, 0, 0}};
  EXPECT_EQ(device.launches[0].params, expected);
}

TEST(PlanExecuteTest, MemrefDescriptorBytesWith32BitIndices) {
  Plan plan = parseBody("module m\narg x f32 ? 300\n"
                        "launch m k 1 1 1 1 1 1 0 memref x\n",
                        32);
  FakeDevice device;
  execute(plan, device, {buf(0x00000001deadbeef, {70000, 300})});
  const std::vector<std::vector<uint8_t>> expected = {
      {0xef, 0xbe, 0xad, 0xde, 0x01, 0, 0, 0}, // allocated: always 64-bit
      {0xef, 0xbe, 0xad, 0xde, 0x01, 0, 0, 0}, // aligned
      {0, 0, 0, 0},                            // offset
      {0x70, 0x11, 0x01, 0x00},                // 70000
      {0x2c, 0x01, 0, 0},                      // 300
      {0x2c, 0x01, 0, 0},                      // stride 300
      {1, 0, 0, 0}};
  ASSERT_EQ(device.launches.size(), 1u);
  EXPECT_EQ(device.launches[0].params, expected);
}

TEST(PlanExecuteTest, RankZeroMemref) {
  Plan plan = parseBody("module m\nalloc s f64\n"
                        "launch m k 1 1 1 1 1 1 0 memref s\n");
  FakeDevice device;
  execute(plan, device, {});
  ASSERT_EQ(device.allocs.size(), 1u);
  EXPECT_EQ(device.allocs[0].second, 8u);
  ASSERT_EQ(device.launches.size(), 1u);
  EXPECT_EQ(device.launches[0].params.size(), 3u);
}

TEST(PlanExecuteTest, ScalarParamBytes) {
  for (unsigned bits : {32u, 64u}) {
    Plan plan = parseBody("module m\nvalue n -2\n"
                          "launch m k 1 1 1 1 1 1 0 index n i32 (sub n 1) "
                          "i64 (mul n 3) f32 1.5 f64 -2.5 index 7\n",
                          bits);
    FakeDevice device;
    execute(plan, device, {});
    ASSERT_EQ(device.launches.size(), 1u);
    const auto &p = device.launches[0].params;
    ASSERT_EQ(p.size(), 6u);
    EXPECT_EQ(p[0], le(uint64_t(-2), bits / 8));
    EXPECT_EQ(p[1], (std::vector<uint8_t>{0xfd, 0xff, 0xff, 0xff}));
    EXPECT_EQ(p[2], le(uint64_t(-6), 8));
    EXPECT_EQ(p[3], (std::vector<uint8_t>{0, 0, 0xc0, 0x3f})); // 0x3fc00000
    EXPECT_EQ(p[4], le(0xc004000000000000, 8));
    EXPECT_EQ(p[5], le(7, bits / 8));
  }
}

TEST(PlanExecuteTest, EvaluatesLaunchShape) {
  Plan plan = parseBody("module m\narg x f32 ?\n"
                        "value n dim(x, 0)\n"
                        "launch m k (ceildiv n 256) (mins n 3) 2 (divs 256 "
                        "2) 2 1 (mul n 4)\n");
  FakeDevice device;
  execute(plan, device, {buf(1, {1000})});
  ASSERT_EQ(device.launches.size(), 1u);
  const FakeDevice::Launch &l = device.launches[0];
  EXPECT_EQ(l.grid.x, 4u);
  EXPECT_EQ(l.grid.y, 3u);
  EXPECT_EQ(l.grid.z, 2u);
  EXPECT_EQ(l.block.x, 128u);
  EXPECT_EQ(l.block.y, 2u);
  EXPECT_EQ(l.block.z, 1u);
  EXPECT_EQ(l.shared, 4000u);
  EXPECT_TRUE(l.params.empty());
}

TEST(PlanExecuteTest, ViewsShareThePointerWithNewShape) {
  Plan plan = parseBody("module m\narg x f32 ? 6\n"
                        "value n dim(x, 0)\n"
                        "alloc t f32 n 6\n"
                        "view v t (mul n 2) 3\n"
                        "view w x (mul n 6)\n"
                        "launch m k 1 1 1 1 1 1 0 memref v memref w\n");
  FakeDevice device;
  PlanRun run(plan, device);
  run.run({buf(0x5000, {4, 6})});
  const uint64_t t = device.allocs.at(0).first;
  EXPECT_EQ(run.buffer("v").ptr, t);
  EXPECT_EQ(run.buffer("v").sizes, (std::vector<int64_t>{8, 3}));
  EXPECT_EQ(run.buffer("w").ptr, 0x5000u);
  ASSERT_EQ(device.launches.size(), 1u);
  const auto &p = device.launches[0].params;
  ASSERT_EQ(p.size(), 7u + 5u);
  EXPECT_EQ(p[0], le(t, 8));
  EXPECT_EQ(p[1], le(t, 8));
  EXPECT_EQ(p[3], le(8, 8)); // sizes 8 3
  EXPECT_EQ(p[4], le(3, 8));
  EXPECT_EQ(p[5], le(3, 8)); // strides 3 1
  EXPECT_EQ(p[6], le(1, 8));
  EXPECT_EQ(p[7], le(0x5000, 8));
  EXPECT_EQ(p[10], le(24, 8));         // size 24
  EXPECT_EQ(p[11], le(1, 8));          // stride 1
  EXPECT_EQ(device.allocs.size(), 1u); // views allocate nothing
}

TEST(PlanExecuteTest, CopiesAllBytes) {
  Plan plan = parseBody("arg x f64 ? 3\narg y f64 ?\n"
                        "alloc t f64 (mul dim(x, 0) 3)\n"
                        "copy x t\n"
                        "view tv t dim(x, 0) 3\n"
                        "copy t y\n"
                        "copy tv tv\n");
  FakeDevice device;
  execute(plan, device,
          {buf(0x1000, {7, 3}, DType::F64), buf(0x2000, {21}, DType::F64)});
  const uint64_t t = device.allocs.at(0).first;
  EXPECT_EQ(device.allocs[0].second, 21u * 8);
  ASSERT_EQ(device.copies.size(), 2u); // copying tv onto itself is a no-op
  EXPECT_EQ(device.copies[0].src, 0x1000u);
  EXPECT_EQ(device.copies[0].dst, t);
  EXPECT_EQ(device.copies[0].bytes, 168u);
  EXPECT_EQ(device.copies[1].src, t);
  EXPECT_EQ(device.copies[1].dst, 0x2000u);
  EXPECT_EQ(device.copies[1].bytes, 168u);
}

TEST(PlanExecuteTest, ZeroGridLaunchesAreSkipped) {
  Plan plan = parseBody("module m\narg x f32 ?\n"
                        "value n dim(x, 0)\n"
                        "alloc t f32 n\n"
                        "copy x t\n"
                        "launch m empty (ceildiv n 128) 1 1 128 1 1 0 "
                        "memref t\n"
                        "launch m full 1 1 1 128 1 1 0 memref t\n"
                        "launch m empty_y 1 (mins n 4) 1 128 1 1 0\n");
  FakeDevice device;
  PlanRun run(plan, device);
  run.run({buf(0x1000, {0})});
  ASSERT_EQ(device.launches.size(), 1u);
  EXPECT_EQ(device.launches[0].kernel, "full");
  EXPECT_EQ(run.skippedLaunches(), 2);
  EXPECT_EQ(device.allocs.at(0).second, 0u);
  EXPECT_TRUE(device.copies.empty()); // nothing to copy
}

TEST(PlanExecuteTest, FreesEverythingInReverseOrder) {
  Plan plan = parseBody("alloc a f32 4\nalloc b f64 2 2\nview c b 4\n"
                        "alloc d f32 0\n");
  FakeDevice device;
  execute(plan, device, {});
  ASSERT_EQ(device.allocs.size(), 3u);
  EXPECT_EQ(device.frees, (std::vector<uint64_t>{device.allocs[2].first,
                                                 device.allocs[1].first,
                                                 device.allocs[0].first}));
  EXPECT_TRUE(device.live.empty());
}

TEST(PlanExecuteTest, FreesWhenALaterStepThrows) {
  Plan plan = parseBody("module m\nalloc a f32 4\nalloc b f32 4\n"
                        "launch m ok 1 1 1 1 1 1 0\n"
                        "launch m bad 1 1 1 1 1 1 0 memref a\n"
                        "alloc c f32 4\n");
  FakeDevice device;
  device.failingKernel = "bad";
  std::string msg = messageOf<CudaError>([&] { execute(plan, device, {}); });
  EXPECT_EQ(msg, "test.fwp:7: launch m bad: cuLaunchKernel failed: "
                 "CUDA_ERROR_FAKE");
  EXPECT_EQ(device.allocs.size(), 2u);
  EXPECT_EQ(device.frees.size(), 2u);
  EXPECT_TRUE(device.live.empty());
  EXPECT_EQ(device.syncs, 0);

  // A plan error after allocations frees them too.
  Plan divide = parseBody("alloc a f32 4\nvalue z 0\nvalue q (divs 1 z)\n");
  EXPECT_TRUE(contains(runError(divide, {}), "division by zero"));
}

TEST(PlanExecuteTest, ResultsAreHandedOverNotFreed) {
  Plan plan = Plan::parse(kResults, "results.fwp");
  FakeDevice device;
  std::vector<BufferRef> results = execute(plan, device, {buf(0x1000, {3, 4})});
  ASSERT_EQ(device.allocs.size(), 2u);
  const uint64_t a = device.allocs[0].first, s = device.allocs[1].first;
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(results[0].ptr, a);
  EXPECT_EQ(results[0].sizes, (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(results[0].dtype, DType::F32);
  // A view returns its own sizes and its allocation's address.
  EXPECT_EQ(results[1].ptr, a);
  EXPECT_EQ(results[1].sizes, (std::vector<int64_t>{2, 6}));
  EXPECT_EQ(results[2].ptr, a);
  EXPECT_EQ(results[2].sizes, (std::vector<int64_t>{12}));
  // Only the scratch buffer is freed; `a` is the caller's now, once.
  EXPECT_EQ(device.frees, std::vector<uint64_t>{s});
  EXPECT_EQ(device.live, std::set<uint64_t>{a});
  device.free(a);
}

TEST(PlanExecuteTest, ResultsOfSeveralAllocations) {
  Plan plan = parseBody("alloc a f32 4\nalloc s f32 4\nalloc b f64 2 3\n"
                        "view bv b 6\nview bv2 bv 3 2\nalloc t f32 1\n"
                        "result bv2\nresult a\n");
  FakeDevice device;
  PlanRun run(plan, device);
  run.run({});
  ASSERT_EQ(device.allocs.size(), 4u);
  const uint64_t a = device.allocs[0].first, s = device.allocs[1].first,
                 b = device.allocs[2].first, t = device.allocs[3].first;
  ASSERT_EQ(run.results().size(), 2u);
  std::vector<BufferRef> results = run.takeResults();
  EXPECT_TRUE(run.results().empty());
  EXPECT_TRUE(run.takeResults().empty()); // taken once
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].ptr, b);
  EXPECT_EQ(results[0].sizes, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(results[0].dtype, DType::F64);
  EXPECT_EQ(results[1].ptr, a);
  EXPECT_EQ(results[1].sizes, (std::vector<int64_t>{4}));
  run.freeAll();
  // The others, in reverse order; the results stay.
  EXPECT_EQ(device.frees, (std::vector<uint64_t>{t, s}));
  EXPECT_EQ(device.live, (std::set<uint64_t>{a, b}));
}

TEST(PlanExecuteTest, ResultsNotTakenAreFreed) {
  Plan plan = Plan::parse(kResults, "results.fwp");
  FakeDevice device;
  {
    PlanRun run(plan, device);
    run.run({buf(0x1000, {3, 4})});
    EXPECT_EQ(run.results().size(), 3u);
    EXPECT_EQ(device.live.size(), 2u);
  }
  EXPECT_EQ(device.frees.size(), 2u);
  EXPECT_TRUE(device.live.empty());

  // freeAll frees them and forgets them.
  FakeDevice again;
  PlanRun run(plan, again);
  run.run({buf(0x1000, {3, 4})});
  run.freeAll();
  EXPECT_TRUE(again.live.empty());
  EXPECT_TRUE(run.results().empty());
  EXPECT_TRUE(run.takeResults().empty());
}

TEST(PlanExecuteTest, ResultsAreFreedWhenALaterStepThrows) {
  Plan plan = parseBody("alloc a f32 4\nresult a\nvalue z 0\n"
                        "value q (divs 1 z)\n");
  EXPECT_TRUE(contains(runError(plan, {}), "division by zero"));
}

TEST(PlanExecuteTest, ResultOfAnArgumentIsRefusedWhenRunning) {
  // Plans built in code skip the parser's check; the run refuses too.
  Plan plan = parseBody("arg x f32 4\nview v x 2 2\n");
  PlanStep result;
  result.kind = PlanStep::Kind::Result;
  result.line = 5;
  result.source = "v";
  plan.steps.push_back(result);
  EXPECT_EQ(runError(plan, {buf(0x1000, {4})}),
            "test.fwp:5: result v: 'v' is not allocated by the plan (an "
            "argument or a view of one); a result must be an alloc or a view "
            "of one");
}

//===----------------------------------------------------------------------===//
// Refusals
//===----------------------------------------------------------------------===//

TEST(PlanRefusalTest, ArgumentDType) {
  Plan plan = parseBody("arg x f32 ? 4\n");
  EXPECT_EQ(runError(plan, {buf(1, {2, 4}, DType::F64)}),
            "test.fwp:3: argument 0 'x' is f64 [2, 4] but the plan expects "
            "f32 [?, 4] (dtype differs)");
}

TEST(PlanRefusalTest, ArgumentRank) {
  Plan plan = parseBody("arg x f32 ? 4\n");
  EXPECT_EQ(runError(plan, {buf(1, {2, 4, 1})}),
            "test.fwp:3: argument 0 'x' is f32 [2, 4, 1] but the plan expects "
            "f32 [?, 4] (rank 3 instead of 2)");
}

TEST(PlanRefusalTest, ArgumentStaticSize) {
  Plan plan = parseBody("arg x f32 ? 4\narg y f32 3\n");
  EXPECT_EQ(runError(plan, {buf(1, {2, 4}), buf(2, {4})}),
            "test.fwp:4: argument 1 'y' is f32 [4] but the plan expects "
            "f32 [3] (size 0 differs)");
  EXPECT_TRUE(contains(runError(plan, {buf(1, {-2, 4}), buf(2, {3})}),
                       "(size 0 is negative)"));
}

TEST(PlanRefusalTest, ArgumentCount) {
  Plan plan = parseBody("arg x f32 ? 4\narg y f32 3\n");
  EXPECT_EQ(runError(plan, {buf(1, {2, 4})}),
            "test.fwp: the plan takes 2 argument(s) (x, y) but 1 were given");
}

TEST(PlanRefusalTest, ElementCountTooLargeFor32BitIndex) {
  Plan plan = parseBody("arg x f32 ?\nvalue n dim(x, 0)\n"
                        "alloc big f32 n n\n",
                        32);
  EXPECT_EQ(runError(plan, {buf(1, {65536})}),
            "test.fwp:5: alloc big: buffer 'big' f32 [65536, 65536] has "
            "4294967296 elements, more than a signed 32-bit index can hold "
            "(at most 2147483647)");
  // 46340^2 fits; so does an argument of 2^31 - 1 elements.
  FakeDevice device;
  execute(plan, device, {buf(1, {46340})});
  EXPECT_EQ(device.allocs.at(0).second, size_t(46340) * 46340 * 4);
  EXPECT_EQ(runError(plan, {buf(1, {int64_t(1) << 31})}),
            "test.fwp:3: argument 0 'x' f32 [2147483648] has 2147483648 "
            "elements, more than a signed 32-bit index can hold (at most "
            "2147483647)");
  // With 64-bit indices, an overflowing count is refused too.
  Plan wide = parseBody("alloc huge f64 4294967296 4294967296\n");
  EXPECT_TRUE(contains(runError(wide, {}),
                       "buffer 'huge' f64 [4294967296, 4294967296] has more "
                       "elements than a signed 64-bit index can hold"));
}

TEST(PlanRefusalTest, StrideTooLargeFor32BitIndex) {
  Plan plan = parseBody("module m\nalloc t f32 0 65536 65536\n"
                        "launch m k 1 1 1 1 1 1 0 memref t\n",
                        32);
  EXPECT_EQ(runError(plan, {}),
            "test.fwp:5: launch m k: argument 0 (memref t) f32 [0, 65536, "
            "65536]: stride 0 = 4294967296 does not fit a signed 32-bit "
            "index");
}

TEST(PlanRefusalTest, ViewElementCountMismatch) {
  Plan plan = parseBody("arg x f32 ? 4\nview v x 3 5\n");
  EXPECT_EQ(runError(plan, {buf(1, {4, 4})}),
            "test.fwp:4: view v: view 'v' f32 [3, 5] has 15 elements but its "
            "source 'x' f32 [4, 4] has 16");
}

TEST(PlanRefusalTest, CopyElementCountMismatch) {
  Plan plan = parseBody("arg x f32 ?\nalloc t f32 8\ncopy x t\n");
  EXPECT_EQ(runError(plan, {buf(1, {9})}),
            "test.fwp:5: copy x t: source 'x' f32 [9] has 9 elements but "
            "destination 't' f32 [8] has 8");
}

TEST(PlanRefusalTest, NegativeSize) {
  Plan plan = parseBody("value n -3\nalloc t f32 2 n\n");
  EXPECT_EQ(runError(plan, {}), "test.fwp:4: alloc t: size 1 'n' is -3");
}

TEST(PlanRefusalTest, GridAndBlockRanges) {
  auto launchError = [](const std::string &shape) {
    return runError(parseBody("module m\nlaunch m k " + shape + " 0\n"), {});
  };
  EXPECT_TRUE(contains(launchError("1 65536 1 1 1 1"),
                       "test.fwp:4: launch m k: grid y '65536' = 65536 is "
                       "outside [0, 65535]"));
  EXPECT_TRUE(contains(launchError("1 1 65536 1 1 1"), "grid z"));
  EXPECT_TRUE(contains(launchError("2147483648 1 1 1 1 1"),
                       "grid x '2147483648' = 2147483648 is outside [0, "
                       "2147483647]"));
  EXPECT_TRUE(contains(launchError("-1 1 1 1 1 1"), "grid x '-1' = -1"));
  EXPECT_TRUE(contains(launchError("1 1 1 0 1 1"),
                       "block x '0' = 0 is outside [1, 1024]"));
  EXPECT_TRUE(contains(launchError("1 1 1 1 1 65"),
                       "block z '65' = 65 is outside [1, 64]"));
  EXPECT_TRUE(contains(launchError("1 1 1 64 32 1"),
                       "a block of 64 x 32 x 1 = 2048 threads is more than "
                       "1024"));
  // A zero grid is still checked for its other dimensions.
  EXPECT_TRUE(contains(launchError("0 1 1 2048 1 1"), "block x"));
  FakeDevice device;
  execute(parseBody("module m\nlaunch m k 2147483647 65535 65535 1024 1 1 "
                    "0\n"),
          device, {});
  EXPECT_EQ(device.launches.size(), 1u);
  EXPECT_TRUE(
      contains(runError(parseBody("module m\nlaunch m k 1 1 1 1 1 1 -1\n"), {}),
               "shared memory size '-1' = -1 is out of range"));
}

TEST(PlanRefusalTest, ScalarsThatDoNotFit) {
  EXPECT_EQ(
      runError(parseBody(
                   "module m\nlaunch m k 1 1 1 1 1 1 0 index 2147483648\n", 32),
               {}),
      "test.fwp:4: launch m k: argument 0 (index 2147483648) = 2147483648 "
      "does not fit a signed 32-bit index");
  EXPECT_TRUE(contains(
      runError(
          parseBody("module m\nlaunch m k 1 1 1 1 1 1 0 i32 -2147483649\n"),
          {}),
      "argument 0 (i32 -2147483649) = -2147483649 does not fit a signed "
      "32-bit integer"));
  FakeDevice device;
  execute(parseBody("module m\nlaunch m k 1 1 1 1 1 1 0 index 2147483648\n"),
          device, {});
  EXPECT_EQ(device.launches.at(0).params.at(0), le(2147483648u, 8));
}

TEST(PlanRefusalTest, DivisionByZeroInALaunch) {
  Plan plan = parseBody("module m\narg x f32 ?\n"
                        "launch m k (floordiv 10 dim(x, 0)) 1 1 1 1 1 0\n");
  EXPECT_EQ(runError(plan, {buf(1, {0})}),
            "test.fwp:5: launch m k: division by zero in (floordiv 10 dim(x, "
            "0)) (floordiv 10 0)");
}

//===----------------------------------------------------------------------===//
// Files
//===----------------------------------------------------------------------===//

TEST(PlanFileTest, ReadTextFileReadsEveryByteAndNamesMissingFiles) {
  std::string dir = tempDir("read");
  std::filesystem::create_directories(dir);
  std::string bytes("line\r\n\0tail", 11);
  writeFile(dir + "/bytes", bytes);
  EXPECT_EQ(readTextFile(dir + "/bytes"), bytes);
  writeFile(dir + "/empty", "");
  EXPECT_EQ(readTextFile(dir + "/empty"), "");
  std::string missing = dir + "/does_not_exist";
  EXPECT_TRUE(contains(messageOf<Error>([&] { readTextFile(missing); }),
                       "cannot read file '" + missing + "'"));
  std::filesystem::remove_all(dir);
}

TEST(PlanFileTest, WritesAndReadsAPlanDirectory) {
  std::string dir = tempDir("written");
  writePlanDirectory(dir, kDocExample, {{"scan_kernel", "// ptx\n"}});
  EXPECT_EQ(readFile(dir + "/plan.fwp"), kDocExample);
  EXPECT_EQ(readFile(dir + "/scan_kernel.ptx"), "// ptx\n");
  Plan plan = loadPlanFile(dir + "/plan.fwp");
  EXPECT_EQ(plan, Plan::parse(kDocExample, "x"));
  EXPECT_EQ(plan.sourceName, dir + "/plan.fwp");
  std::filesystem::remove_all(dir);
}

TEST(PlanFileTest, WritingChecksThePlanAndItsModules) {
  std::string dir = tempDir("unwritten");
  EXPECT_EQ(messageOf<PlanError>([&] {
              writePlanDirectory(dir, kDocExample, {{"other", ""}});
            }),
            dir + "/plan.fwp: no PTX given for module 'scan_kernel'");
  EXPECT_TRUE(contains(messageOf<PlanError>([&] {
                         writePlanDirectory(dir, "fwp-plan 7\n", {});
                       }),
                       dir + "/plan.fwp:1: unsupported plan version '7'"));
  EXPECT_FALSE(std::filesystem::exists(dir));
}

TEST(PlanFileTest, LoadingNamesMissingFiles) {
  std::string dir = tempDir("missing");
  EXPECT_TRUE(contains(messageOf<Error>([&] { CompiledPlan::load(dir); }),
                       "cannot read file '" + dir + "/plan.fwp'"));
  // The plan is there but not its PTX: reported before any driver call.
  std::filesystem::create_directories(dir);
  writeFile(dir + "/plan.fwp", kDocExample);
  EXPECT_TRUE(contains(messageOf<Error>([&] { CompiledPlan::load(dir); }),
                       "cannot read file '" + dir + "/scan_kernel.ptx'"));
  writeFile(dir + "/plan.fwp", "fwp-plan 1\nindex-bits 8\n");
  EXPECT_TRUE(contains(messageOf<PlanError>([&] { CompiledPlan::load(dir); }),
                       dir + "/plan.fwp:2: index-bits must be 32 or 64"));
  std::filesystem::remove_all(dir);
}

TEST(PlanFileTest, CompiledPlanNeedsEveryModule) {
  EXPECT_EQ(messageOf<PlanError>(
                [] { CompiledPlan(Plan::parse(kDocExample, "scan.fwp"), {}); }),
            "scan.fwp: no PTX given for module 'scan_kernel'");
}

//===----------------------------------------------------------------------===//
// GPU tests
//===----------------------------------------------------------------------===//

// Hand-written PTX (checked with `ptxas -arch=sm_90`): kernels taking a
// memref<?xf32> descriptor (allocated, aligned, offset, size, stride) with
// 64-bit and with 32-bit indices, and a factor; they scale the memref in
// place.
const char *const kScalePtx = R"(
.version 7.0
.target sm_60
.address_size 64

.visible .entry fwp_plan_scale64(
    .param .u64 allocated,
    .param .u64 aligned,
    .param .u64 offset,
    .param .u64 size,
    .param .u64 stride,
    .param .f32 factor)
{
    .reg .pred %p<2>;
    .reg .b32 %r<4>;
    .reg .f32 %f<3>;
    .reg .b64 %rd<9>;

    ld.param.u64 %rd1, [aligned];
    ld.param.u64 %rd2, [offset];
    ld.param.u64 %rd3, [size];
    ld.param.u64 %rd4, [stride];
    ld.param.f32 %f1, [factor];
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %tid.x;
    mul.wide.u32 %rd5, %r1, %r2;
    cvt.u64.u32 %rd6, %r3;
    add.s64 %rd5, %rd5, %rd6;
    setp.ge.s64 %p1, %rd5, %rd3;
    @%p1 bra DONE;
    mad.lo.s64 %rd6, %rd5, %rd4, %rd2;
    shl.b64 %rd6, %rd6, 2;
    cvta.to.global.u64 %rd7, %rd1;
    add.s64 %rd8, %rd7, %rd6;
    ld.global.f32 %f2, [%rd8];
    mul.rn.f32 %f2, %f2, %f1;
    st.global.f32 [%rd8], %f2;
DONE:
    ret;
}

.visible .entry fwp_plan_scale32(
    .param .u64 allocated,
    .param .u64 aligned,
    .param .u32 offset,
    .param .u32 size,
    .param .u32 stride,
    .param .f32 factor)
{
    .reg .pred %p<2>;
    .reg .b32 %r<8>;
    .reg .f32 %f<3>;
    .reg .b64 %rd<5>;

    ld.param.u64 %rd1, [aligned];
    ld.param.u32 %r1, [offset];
    ld.param.u32 %r2, [size];
    ld.param.u32 %r3, [stride];
    ld.param.f32 %f1, [factor];
    mov.u32 %r4, %ctaid.x;
    mov.u32 %r5, %ntid.x;
    mov.u32 %r6, %tid.x;
    mad.lo.s32 %r7, %r4, %r5, %r6;
    setp.ge.s32 %p1, %r7, %r2;
    @%p1 bra DONE;
    mad.lo.s32 %r7, %r7, %r3, %r1;
    mul.wide.s32 %rd2, %r7, 4;
    cvta.to.global.u64 %rd3, %rd1;
    add.s64 %rd4, %rd3, %rd2;
    ld.global.f32 %f2, [%rd4];
    mul.rn.f32 %f2, %f2, %f1;
    st.global.f32 [%rd4], %f2;
DONE:
    ret;
}
)";

// y = 2 * x through a scratch buffer, 64-bit indices.
const char *const kDoublePlan = R"(fwp-plan 1
index-bits 64
module scale
arg x f32 ?
arg y f32 ?
value n dim(x, 0)
alloc t f32 n
copy x t
launch scale fwp_plan_scale64 (ceildiv n 128) 1 1 128 1 1 0 memref t f32 2.0
copy t y
)";

// x *= 0.5 in place, through a flat view of a 2-D argument, 32-bit indices.
const char *const kHalvePlan = R"(fwp-plan 1
index-bits 32
module scale
arg x f32 ? 8
value n (mul dim(x, 0) 8)
view flat x n
launch scale fwp_plan_scale32 (ceildiv n 64) 1 1 64 1 1 0 memref flat f32 0.5
)";

class PlanGpuTest : public fwp::test::GpuTest {};

BufferRef ref(const DeviceBuffer &buffer, std::vector<int64_t> sizes) {
  return BufferRef{buffer.ptr(), std::move(sizes), DType::F32};
}

TEST_F(PlanGpuTest, DoublesThroughAPlanWith64BitIndices) {
  CompiledPlan plan(Plan::parse(kDoublePlan, "double.fwp"),
                    {{"scale", kScalePtx}});
  const int64_t n = 1000; // not a multiple of the block size
  std::vector<float> x = iota(n, -10);
  DeviceBuffer dx = DeviceBuffer::fromHost(x), dy(n * sizeof(float));
  dy.zero();
  plan.run({ref(dx, {n}), ref(dy, {n})});
  std::vector<float> y = dy.toHost<float>();
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(y[i], 2.0f * x[i]) << "at " << i;
  EXPECT_EQ(dx.toHost<float>(), x); // the input is untouched
}

TEST_F(PlanGpuTest, HalvesInPlaceThroughAViewWith32BitIndices) {
  CompiledPlan plan(Plan::parse(kHalvePlan, "halve.fwp"),
                    {{"scale", kScalePtx}});
  const int64_t rows = 37;
  std::vector<float> x = iota(rows * 8, 1);
  DeviceBuffer dx = DeviceBuffer::fromHost(x);
  plan.run({ref(dx, {rows, 8})});
  std::vector<float> result = dx.toHost<float>();
  for (size_t i = 0; i < x.size(); ++i)
    ASSERT_EQ(result[i], 0.5f * x[i]) << "at " << i;
}

TEST_F(PlanGpuTest, RunsACompiledPlanDirectory) {
  std::string dir = tempDir("gpu_dir");
  writePlanDirectory(dir, kDoublePlan, {{"scale", kScalePtx}});
  CompiledPlan plan = CompiledPlan::load(dir);
  std::vector<float> x = {1, 2, 3};
  DeviceBuffer dx = DeviceBuffer::fromHost(x), dy(3 * sizeof(float));
  plan.run({ref(dx, {3}), ref(dy, {3})});
  EXPECT_EQ(dy.toHost<float>(), (std::vector<float>{2, 4, 6}));
  // Empty arguments: nothing to allocate, copy or launch.
  plan.run({BufferRef{0, {0}, DType::F32}, BufferRef{0, {0}, DType::F32}});
  std::filesystem::remove_all(dir);
}

TEST_F(PlanGpuTest, MissingKernelNamesTheStepAndTheCall) {
  std::string text = kDoublePlan;
  text.replace(text.find("fwp_plan_scale64"), 16, "fwp_plan_nothing");
  CompiledPlan plan(Plan::parse(text, "bad.fwp"), {{"scale", kScalePtx}});
  DeviceBuffer dx(4 * sizeof(float)), dy(4 * sizeof(float));
  std::string msg = messageOf<CudaError>([&] {
    plan.run({ref(dx, {4}), ref(dy, {4})});
  });
  EXPECT_TRUE(contains(msg, "bad.fwp:9: launch scale fwp_plan_nothing: "
                            "kernel 'fwp_plan_nothing' not found in "
                            "scale.ptx: cuModuleGetFunction failed"));
}

// y = 2 * x into a new buffer, returned twice: as a 1 x n view and itself.
const char *const kReturnPlan = R"(fwp-plan 1
index-bits 64
module scale
arg x f32 ?
value n dim(x, 0)
alloc t f32 n
alloc scratch f32 n
copy x t
launch scale fwp_plan_scale64 (ceildiv n 128) 1 1 128 1 1 0 memref t f32 2.0
view row t 1 n
result row
result t
)";

TEST_F(PlanGpuTest, ReturnsResultsThatOutliveTheCompiledPlan) {
  const int64_t n = 300;
  std::vector<float> x = iota(n, -7);
  DeviceBuffer dx = DeviceBuffer::fromHost(x);
  std::vector<DeviceResult> results;
  {
    CompiledPlan plan(Plan::parse(kReturnPlan, "return.fwp"),
                      {{"scale", kScalePtx}});
    results = plan.run({ref(dx, {n})});
    // The device no longer owns the result; it still owns nothing else.
    ASSERT_EQ(results.size(), 2u);
    EXPECT_FALSE(plan.device().release(results[1].ptr()).ptr());
  }
  EXPECT_EQ(results[0].sizes(), (std::vector<int64_t>{1, n}));
  EXPECT_EQ(results[1].sizes(), (std::vector<int64_t>{n}));
  EXPECT_EQ(results[0].dtype(), DType::F32);
  EXPECT_NE(results[0].ptr(), 0u);
  EXPECT_EQ(results[0].ptr(), results[1].ptr()); // one allocation, shared
  std::vector<float> y = results[0].toHost<float>();
  ASSERT_EQ(y.size(), size_t(n));
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(y[i], 2.0f * x[i]) << "at " << i;
  EXPECT_TRUE(contains(messageOf<Error>([&] { results[1].toHost<double>(); }),
                       "8 bytes"));
  // One result gone, the other still reads the shared memory.
  results.erase(results.begin());
  EXPECT_EQ(results[0].toHost<float>(), y);
  // A result is an argument of the next run.
  CompiledPlan plan(Plan::parse(kReturnPlan, "return.fwp"),
                    {{"scale", kScalePtx}});
  std::vector<DeviceResult> again = plan.run({results[0].ref()});
  std::vector<float> z = again.at(1).toHost<float>();
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(z[i], 4.0f * x[i]) << "at " << i;
  // Empty: nothing allocated, empty results.
  std::vector<DeviceResult> empty = plan.run({BufferRef{0, {0}, DType::F32}});
  ASSERT_EQ(empty.size(), 2u);
  EXPECT_EQ(empty[0].sizes(), (std::vector<int64_t>{1, 0}));
  EXPECT_TRUE(empty[1].toHost<float>().empty());
}

TEST_F(PlanGpuTest, ExecuteHandsResultsOverOnACudaPlanDevice) {
  CudaPlanDevice device(
      std::map<std::string, std::string>{{"scale", kScalePtx}});
  Plan plan = Plan::parse(kReturnPlan, "return.fwp");
  std::vector<float> x = {1, 2, 3};
  DeviceBuffer dx = DeviceBuffer::fromHost(x);
  std::vector<BufferRef> results = execute(plan, device, {ref(dx, {3})});
  ASSERT_EQ(results.size(), 2u);
  DeviceBuffer owned = device.release(results[1].ptr);
  ASSERT_EQ(owned.ptr(), results[1].ptr);
  EXPECT_EQ(owned.toHost<float>(), (std::vector<float>{2, 4, 6}));
}

} // namespace
