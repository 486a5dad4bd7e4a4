// Stage 2 of the machine circuit: the ROM.  Five 1024-row stores that the
// launch's ROM records fill (instruction, operands a/b/c, terminator), read
// at the block this pass runs; the instruction decoded.
#pragma once

#include "model_host/machine/isa.h"
#include "model_host/machine_circuit/builder.h"
#include "model_host/machine_circuit/context.h"

#include <initializer_list>

namespace qgpu::gpu::mc {

// A terminator's kind (ROM T's field) and a memory instruction's space.
enum TermKind { kJmp = 0, kBr = 1, kExit = 2, kBar = 3, kWbar = 4, kTrap = 5 };
enum SpaceCode { kGlobal = 0, kShared = 1, kLocal = 2, kParam = 3, kPrint = 4 };
// The bit operations (Rom::bop).
enum BitOp { kNoBitOp, kAnd, kOr, kXor, kShl, kShr, kSar, kBrev };

struct Rom {
  ValueId is_nt = -1;                          // the launch's stores start empty at its NT
  Digits opP;                                  // the instruction's payload nibbles
  std::vector<ValueId> r_a, r_b, r_c, r_t;     // operand and terminator records
  ValueId op = -1;                             // machine::Op (payload bits 8..13)
  ValueId bop = -1;                            // BitOp
  ValueId space = -1;                          // SpaceCode
  ValueId tkind = -1;                          // TermKind
  Digits t_target, f_target;                   // the terminator's targets
  ValueId is_ld = -1, is_st = -1, has_dst = -1;
};

Rom rom_stage(Builder& b, const Context& c);

// A flag: the decoded instruction (Rom::op) is one of `ops`.
ValueId op_is(Builder& b, const Rom& r, const std::string& name, std::initializer_list<machine::Op> ops);

}  // namespace qgpu::gpu::mc
