// Analyses of virtual code that the passes share: its control-flow graph and
// the bits of each register that are known.
#pragma once

#include <cstdint>
#include <vector>

#include "model_host/lower/vcode.h"

namespace qgpu::machine::lowering {

// The basic blocks of virtual code (a label or the instruction after a
// control transfer starts one), their successors and predecessors.
struct Cfg {
  uint32_t n = 0;
  std::vector<uint32_t> starts;
  std::vector<std::vector<uint32_t>> succ, pred;
  uint32_t blocks() const { return uint32_t(starts.size()); }
  uint32_t end(uint32_t b) const { return b + 1 < starts.size() ? starts[b + 1] : n; }
};

Cfg build_cfg(const std::vector<VI>& code, uint32_t nlabels);

// What is known of a 32-bit value: the bits set in `known` are those of `value`.
struct KnownBits {
  uint32_t known = 0, value = 0;
  bool operator==(const KnownBits&) const = default;
  static KnownBits constant(uint32_t v) { return {~0u, v}; }
  // Bits 0 .. n-1 known, n the number of low bits known in both.
  static uint32_t low_known(KnownBits a, KnownBits b) {
    const uint32_t both = a.known & b.known;
    return both == ~0u ? ~0u : (1u << __builtin_ctz(~both)) - 1;
  }
  friend KnownBits join(KnownBits a, KnownBits b) {
    const uint32_t k = a.known & b.known & ~(a.value ^ b.value);
    return {k, a.value & k};
  }
};

// The known bits of an ALU result from those of its operands.
KnownBits known_result(const Instr& in, KnownBits a, KnownBits b, KnownBits c);

}  // namespace qgpu::machine::lowering
