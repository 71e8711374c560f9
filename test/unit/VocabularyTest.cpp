//===- VocabularyTest.cpp - fwp/Vocabulary.h's names and parsing ----------===//
//
// The names are part of every interface (C ABI strings, manifests, cache
// keys, command lines), so they are checked against the documented spelling,
// not against the functions' own output.
//
//===----------------------------------------------------------------------===//

#include "fwp/Vocabulary.h"

#include <gtest/gtest.h>

#include <string>

namespace {

using fwp::Backend;
using fwp::DType;
using fwp::EntryPoint;
using fwp::UpdateRule;

TEST(VocabularyTest, NamesAreTheDocumentedOnes) {
  EXPECT_STREQ(fwp::ruleName(UpdateRule::Delta), "delta");
  EXPECT_STREQ(fwp::ruleName(UpdateRule::Sum), "sum");
  EXPECT_STREQ(fwp::dtypeName(DType::F32), "f32");
  EXPECT_STREQ(fwp::dtypeName(DType::F64), "f64");
  EXPECT_STREQ(fwp::dtypeName(DType::BF16), "bf16");
  EXPECT_STREQ(fwp::dtypeName(DType::F16), "f16");
  EXPECT_STREQ(fwp::backendName(Backend::Cpu), "cpu");
  EXPECT_STREQ(fwp::backendName(Backend::Cuda), "cuda");
  EXPECT_STREQ(fwp::entryPointName(EntryPoint::Forward), "forward");
  EXPECT_STREQ(fwp::entryPointName(EntryPoint::Backward), "backward");
}

TEST(VocabularyTest, DocumentedNamesParse) {
  EXPECT_EQ(fwp::parseRule("delta"), UpdateRule::Delta);
  EXPECT_EQ(fwp::parseRule("sum"), UpdateRule::Sum);
  EXPECT_EQ(fwp::parseDType("f32"), DType::F32);
  EXPECT_EQ(fwp::parseDType("f64"), DType::F64);
  EXPECT_EQ(fwp::parseDType("bf16"), DType::BF16);
  EXPECT_EQ(fwp::parseDType("f16"), DType::F16);
  EXPECT_EQ(fwp::parseBackend("cpu"), Backend::Cpu);
  EXPECT_EQ(fwp::parseBackend("cuda"), Backend::Cuda);
  EXPECT_EQ(fwp::parseEntryPoint("forward"), EntryPoint::Forward);
  EXPECT_EQ(fwp::parseEntryPoint("backward"), EntryPoint::Backward);
  // From a std::string too (manifests and command lines hold those).
  EXPECT_EQ(fwp::parseDType(std::string("bf16")), DType::BF16);
}

TEST(VocabularyTest, OtherSpellingsAreRefused) {
  for (const char *name : {"", "Delta", "delta ", "deltas", "f32\n"})
    EXPECT_FALSE(fwp::parseRule(name)) << '"' << name << '"';
  for (const char *name : {"float32", "F32", "bfloat16", "f8", "fp16"})
    EXPECT_FALSE(fwp::parseDType(name)) << name;
  for (const char *name : {"gpu", "CUDA", "reference", "host"})
    EXPECT_FALSE(fwp::parseBackend(name)) << name;
  for (const char *name : {"fwd", "Forward", "grad"})
    EXPECT_FALSE(fwp::parseEntryPoint(name)) << name;
}

TEST(VocabularyTest, ValuesOutsideTheEnumerationsAreToldApart) {
  // As a corrupt description or a C caller's cast would give them.
  auto rule = static_cast<UpdateRule>(7);
  auto dtype = static_cast<DType>(-1);
  auto backend = static_cast<Backend>(2);
  auto entry = static_cast<EntryPoint>(5);
  EXPECT_FALSE(fwp::isKnown(rule));
  EXPECT_FALSE(fwp::isKnown(dtype));
  EXPECT_FALSE(fwp::isKnown(backend));
  EXPECT_FALSE(fwp::isKnown(entry));
  EXPECT_STREQ(fwp::ruleName(rule), "?");
  EXPECT_STREQ(fwp::dtypeName(dtype), "?");
  EXPECT_STREQ(fwp::backendName(backend), "?");
  EXPECT_STREQ(fwp::entryPointName(entry), "?");
  EXPECT_EQ(fwp::dtypeBytes(dtype), 0u);
  EXPECT_TRUE(fwp::isKnown(UpdateRule::Sum));
  EXPECT_TRUE(fwp::isKnown(DType::F16));
  EXPECT_TRUE(fwp::isKnown(Backend::Cuda));
  EXPECT_TRUE(fwp::isKnown(EntryPoint::Backward));
}

TEST(VocabularyTest, ElementSizes) {
  EXPECT_EQ(fwp::dtypeBytes(DType::F32), 4u);
  EXPECT_EQ(fwp::dtypeBytes(DType::F64), 8u);
  EXPECT_EQ(fwp::dtypeBytes(DType::BF16), 2u);
  EXPECT_EQ(fwp::dtypeBytes(DType::F16), 2u);
}

} // namespace
