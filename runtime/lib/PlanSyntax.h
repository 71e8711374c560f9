//===- PlanSyntax.h - What the parser and the printer agree on --*- C++ -*-===//
//
// The header line and the name rules of the plan format, shared by the
// parser (which checks them) and the printer (which writes the header and
// checks the module names that become file names). Not installed.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_RUNTIME_LIB_PLANSYNTAX_H
#define FWP_RUNTIME_LIB_PLANSYNTAX_H

#include <cctype>
#include <string>

namespace fwp::rt::syntax {

/// The first line of every plan (format version Plan::kVersion).
inline constexpr const char *kHeader = "fwp-plan 1";

inline bool isNameStart(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}

inline bool isNameChar(char c, bool allowDash) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' ||
         c == '$' || (allowDash && c == '-');
}

/// Names of values and buffers: [A-Za-z_][A-Za-z0-9_.$]*; module and kernel
/// names (`allowDash`) may also contain '-'.
inline bool isName(const std::string &s, bool allowDash = false) {
  if (s.empty() || !isNameStart(s[0]))
    return false;
  for (char c : s)
    if (!isNameChar(c, allowDash))
      return false;
  return true;
}

/// Module and kernel names.
inline bool isSymbolName(const std::string &s) { return isName(s, true); }

} // namespace fwp::rt::syntax

#endif // FWP_RUNTIME_LIB_PLANSYNTAX_H
