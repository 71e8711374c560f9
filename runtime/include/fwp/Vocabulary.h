//===- Vocabulary.h - The words every layer of fwp shares -------*- C++ -*-===//
//
// The update rule, the element type, the backend and the entry point, with
// their names ("delta", "bf16", "cuda", "backward") and the parsing of those
// names: defined here once, for the JIT, the runtime, the C ABI, the tools,
// the float64 reference and the dialect's builders alike.
//
// Header only and without MLIR or LLVM, so that the runtime and code that
// links nothing (the .npy reader, argument checks) can use it. The dialect
// keeps its own ODS enum for the `delta` / `sum` attribute (it needs MLIR);
// its builders convert from UpdateRule (fwp/Dialect/FwpVocabulary.h).
//
//===----------------------------------------------------------------------===//

#ifndef FWP_VOCABULARY_H
#define FWP_VOCABULARY_H

#include <cstddef>
#include <optional>
#include <string_view>

namespace fwp {

/// The fast-weight update (docs/delta-rule-math.md): the delta rule
/// W += beta (v - W k) k^T, or the sum rule W += v k^T.
enum class UpdateRule { Delta, Sum };

/// Element type of a buffer: f32, f64, or bf16 / f16 for storage (state and
/// accumulations stay f32 or wider).
enum class DType { F32, F64, BF16, F16 };

/// Where a compiled kernel runs.
enum class Backend { Cpu, Cuda };

/// The forward or the backward: each compiled, cached and loaded on its own.
enum class EntryPoint { Forward, Backward };

inline constexpr UpdateRule kUpdateRules[] = {UpdateRule::Delta,
                                              UpdateRule::Sum};
inline constexpr DType kDTypes[] = {DType::F32, DType::F64, DType::BF16,
                                    DType::F16};
inline constexpr Backend kBackends[] = {Backend::Cpu, Backend::Cuda};
inline constexpr EntryPoint kEntryPoints[] = {EntryPoint::Forward,
                                              EntryPoint::Backward};

/// "delta", "sum"; "?" for a value outside the enumeration (a corrupt
/// description, a cast from a foreign integer: isKnown tells).
inline const char *ruleName(UpdateRule rule) {
  switch (rule) {
  case UpdateRule::Delta:
    return "delta";
  case UpdateRule::Sum:
    return "sum";
  }
  return "?";
}

/// "f32", "f64", "bf16", "f16"; "?" outside the enumeration.
inline const char *dtypeName(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "f32";
  case DType::F64:
    return "f64";
  case DType::BF16:
    return "bf16";
  case DType::F16:
    return "f16";
  }
  return "?";
}

/// "cpu", "cuda"; "?" outside the enumeration.
inline const char *backendName(Backend backend) {
  switch (backend) {
  case Backend::Cpu:
    return "cpu";
  case Backend::Cuda:
    return "cuda";
  }
  return "?";
}

/// "forward", "backward"; "?" outside the enumeration.
inline const char *entryPointName(EntryPoint entry) {
  switch (entry) {
  case EntryPoint::Forward:
    return "forward";
  case EntryPoint::Backward:
    return "backward";
  }
  return "?";
}

/// Bytes of one element: 4, 8, 2, 2 (0 outside the enumeration).
inline size_t dtypeBytes(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return 4;
  case DType::F64:
    return 8;
  case DType::BF16:
  case DType::F16:
    return 2;
  }
  return 0;
}

namespace detail {
template <typename Enum, size_t N>
std::optional<Enum> parseName(std::string_view name, const Enum (&all)[N],
                              const char *(*nameOf)(Enum)) {
  for (Enum value : all)
    if (name == nameOf(value))
      return value;
  return std::nullopt;
}

template <typename Enum, size_t N>
bool contains(const Enum (&all)[N], Enum value) {
  for (Enum known : all)
    if (known == value)
      return true;
  return false;
}
} // namespace detail

/// Whether `value` is one of its enumeration's values.
inline bool isKnown(UpdateRule rule) {
  return detail::contains(kUpdateRules, rule);
}
inline bool isKnown(DType dtype) { return detail::contains(kDTypes, dtype); }
inline bool isKnown(Backend backend) {
  return detail::contains(kBackends, backend);
}
inline bool isKnown(EntryPoint entry) {
  return detail::contains(kEntryPoints, entry);
}

/// The value called `name`, if any (names as above, lower case).
inline std::optional<UpdateRule> parseRule(std::string_view name) {
  return detail::parseName(name, kUpdateRules, ruleName);
}
inline std::optional<DType> parseDType(std::string_view name) {
  return detail::parseName(name, kDTypes, dtypeName);
}
inline std::optional<Backend> parseBackend(std::string_view name) {
  return detail::parseName(name, kBackends, backendName);
}
inline std::optional<EntryPoint> parseEntryPoint(std::string_view name) {
  return detail::parseName(name, kEntryPoints, entryPointName);
}

} // namespace fwp

#endif // FWP_VOCABULARY_H
