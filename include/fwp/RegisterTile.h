//===- RegisterTile.h - The CPU products' register tiles --------*- C++ -*-===//
//
// A tile product on the CPU keeps a rows x cols block of accumulators in
// vector registers across its sum (fwp-tiles-to-vectors,
// fwp-dense-to-vectors): two vectors a row, as many rows as leave half the
// register file for them. Chosen by the JIT from the host's features. No
// MLIR, no LLVM.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_REGISTERTILE_H
#define FWP_REGISTERTILE_H

#include <cstdint>

namespace fwp {

struct RegisterTile {
  int64_t rows, cols;
};

/// AVX-512: 8 rows of 2 x 16 floats, 16 of its 32 registers.
constexpr RegisterTile kAvx512RegisterTile{8, 32};
/// AVX2: 4 rows of 2 x 8 floats, 8 of its 16 registers. (AVX-512's tile
/// takes all 32 there and spills: twice the time,
/// bench/results/register-tiles-2026-11-26.md.)
constexpr RegisterTile kAvx2RegisterTile{4, 16};
/// The passes' and pipelines' tile where no host is named.
constexpr RegisterTile kDefaultRegisterTile = kAvx512RegisterTile;

} // namespace fwp

#endif // FWP_REGISTERTILE_H
