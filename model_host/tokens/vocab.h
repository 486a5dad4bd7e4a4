// The circuit vocabulary of the GPU inside the model (docs/tokens.md).
//
// Every circuit token is a kind and a payload of up to 16 bits.  Token ids
// start at kTokenBase (Qwen3.5's vocabulary size, so a merged model keeps
// Qwen's own ids) and are laid out kind by kind, in the order of `Kind`.
// The embedding of a token sets one slot of the kind field and one slot of
// each of the four payload nibble fields (docs/tokens.md section 1), which is
// also how the circuit's output head tells tokens apart.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace qgpu::gpu {

inline constexpr int64_t kTokenBase = 248320;

enum class Kind : uint8_t {
  // clang-format off
  // Prompt: launch configuration, memory image, program ROM, start.
  NT, NC, MG, MGP, MP, ROM, OP, A, B, C, T, START,
  // Data: 16 bits (prompt records and the high half of a generated value).
  D,
  // Generated: the execution trace.
  CTA, WARP, EXEC, VZ, VLO, VX, VG, VN, VZF, VGF, VNF, DF, VH, VHF, VLO1, VLO2, VLO3, VLO4, VLO5, VLO6, WARPS, BARRIER, WMIN, TRAP, FAULT, END,
  // clang-format on
};
inline constexpr int kKindCount = int(Kind::END) + 1;

// Number of payload values of each kind (payloads are 0 .. size-1).
uint32_t payload_size(Kind k);
const char* kind_name(Kind k);

struct Token {
  Kind kind;
  uint32_t payload = 0;
};

// Vocabulary id of a token; throws std::out_of_range for a payload the kind
// does not have.
int64_t token_id(Kind k, uint32_t payload = 0);
inline int64_t token_id(Token t) { return token_id(t.kind, t.payload); }
// The token with this id, or nullopt for ids outside the circuit vocabulary.
std::optional<Token> decode_token(int64_t id);
// Number of circuit tokens (ids kTokenBase .. kTokenBase + count - 1).
int64_t circuit_token_count();
// "EXEC(12)", "VZ(0x0020)", "VX(7,3)", "END"; ids outside the vocabulary as "id:N".
std::string token_name(int64_t id);

// VX(pc, v): a register value v below kVxValues and the next block pc, in one
// token (payload pc | v << kVxPcBits).  It is written for a block whose
// terminator is `jmp`, `br` on the register the block writes, or `br` on the
// register its C record names (prompt.h, branch_condition_in_c); the pass
// that reads it writes v and runs block pc, as EXEC(pc) would.
inline constexpr uint32_t kVxPcBits = 10;
inline constexpr uint32_t kVxValues = 64;
inline uint32_t vx_payload(uint32_t pc, uint32_t v) { return pc | v << kVxPcBits; }
// VG(lo) and VN(lo): a value whose high half is kGlobalHigh (an address in
// global memory) or kNegativeHigh (-65536 .. -1), in one token.
inline constexpr uint32_t kGlobalHigh = 0x1000, kNegativeHigh = 0xffff;
// VH(hi): a value whose low half is 0 (hi << 16: a float of few significant
// bits, a half-precision pair whose low half is 0), in one token; VHF(hi) the
// same value falling through as VZF does.
// VZF(lo), VGF(lo), VNF(lo) and VHF(hi): the value VZ, VG, VN or VH would carry, and the
// next block is the one after the block that computed it (its terminator is
// `jmp pc + 1`, `br` to pc + 1 on the register it writes, taken, or `br` on
// the register its C record names, whose value picks pc + 1).  The
// pass that reads one writes the value and runs block pc + 1.  DF(hi) is D
// after VLO that falls through in the same way.  At most kFallChain of them
// follow one another since the last EXEC, VX or WARPS: the circuit counts
// them through the conv, which sees the 3 tokens before, from the nearest
// token there whose kind says the count (a marker: EXEC, VX, WARPS, VLO, 0;
// VLOk, k), so a fall-through value is written only where a marker is among
// the 3 tokens before it.
inline constexpr uint32_t kFallChain = 6;
inline bool falls_through(Kind k) {
  return k == Kind::VZF || k == Kind::VGF || k == Kind::VNF || k == Kind::DF || k == Kind::VHF;
}
// VLO(lo), VLO1(lo) .. VLO6(lo): the low half of a value whose high half (D
// or DF) follows.  The kind says how many fall-through values ran since the
// last EXEC, VX or WARPS before it (VLOk k of them, VLO none), which the
// circuit cannot count through the conv once a VLO and a DF are among them.
inline bool is_vlo(Kind k) { return k == Kind::VLO || (k >= Kind::VLO1 && k <= Kind::VLO6); }
inline Kind vlo_kind(uint32_t falls) { return falls == 0 ? Kind::VLO : Kind(int(Kind::VLO1) + int(falls) - 1); }
// The count a marker says (see kFallChain), or -1 for a kind that is none.
inline int marker_count(Kind k) {
  if (k == Kind::EXEC || k == Kind::VX || k == Kind::WARPS || k == Kind::VLO) return 0;
  if (k >= Kind::VLO1 && k <= Kind::VLO6) return int(k) - int(Kind::VLO1) + 1;
  return -1;
}
// Tokens whose payload names a block (EXEC and VX), and that block.
inline bool names_block(Kind k) { return k == Kind::EXEC || k == Kind::VX; }
inline uint32_t block_of(const Token& t) { return t.kind == Kind::VX ? t.payload & ((1u << kVxPcBits) - 1) : t.payload; }
// WARPS(w): the scan moves on to thread w (as WARP(w)), which runs from the
// block the last thread the scan started began at (the EXEC after the last
// WARP), in one token: written where thread w is runnable there, w is not the
// first of its warp group, and WARP(w) would have been written after the
// thread before it stopped.
// Tokens that run a block (the trace's steps): those that name it, WARPS,
// and the fall-through values, which run the block after the last one run.
inline bool runs_block(Kind k) { return names_block(k) || falls_through(k) || k == Kind::WARPS; }

// MG(w) names word w of the current page, 65,536 words a page: global word
// page << 16 | w.  MGP(page) sets the page for the MG records after it, in
// this launch's prompt and in later ones (the sequence keeps it); a model
// whose global memory is at most 256 KiB has one page, 0, and the prompts
// written for it hold no MGP.
inline constexpr uint32_t kMgPageBits = 16;
inline constexpr uint32_t kMgPages = 16;

// Payload layouts of the prompt record tokens.
// OP's op field is machine::Op's index (below kBaseOpCount, or FFMA: the
// model's machine has no other float op, and this one only .rn), or
// kNoInstruction for a block that only terminates.
inline constexpr uint32_t kNoInstruction = 63;
inline uint32_t op_payload(uint32_t op, uint32_t space, uint32_t dst) { return op << 8 | space << 5 | dst; }
// An operand record: a register (flag 32 | reg), or an immediate (flag 0, the
// value in the two D tokens before it); a field never sent reads as immediate 0.
inline uint32_t operand_payload(bool imm, uint32_t reg) { return (imm ? 0u : 32u) | reg; }
inline uint32_t term_payload(uint32_t kind, uint32_t cond) { return kind << 5 | cond; }

// Fault kinds (FAULT payload).
enum class Fault : uint8_t { IllegalAddress = 0, Misaligned = 1 };

}  // namespace qgpu::gpu
