// The prompt encoder (docs/tokens.md section 3).
#include "model_host/launch/errors.h"
#include "model_host/tokens/prompt.h"

#include <cstdio>
#include <stdexcept>
#include <string>

#include "model_host/tokens/vocab.h"
#include "model_host/lower/lower.h"
#include "model_host/ptx/parse.h"

namespace qgpu::gpu {
namespace {

using machine::Instr;
using machine::OpKind;
using machine::Operand;
using machine::Term;

// Word i of a little-endian byte image; bytes past the end read as zero.
uint32_t word_at(const std::vector<uint8_t>& bytes, size_t i) {
  uint32_t w = 0;
  for (size_t k = 0; k < 4 && 4 * i + k < bytes.size(); ++k) w |= uint32_t(bytes[4 * i + k]) << (8 * k);
  return w;
}

std::string block_name(size_t pc) { return "block B" + std::to_string(pc); }

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

class Encoder {
 public:
  std::vector<int64_t> tokens;

  void emit(Kind k, uint32_t payload = 0) { tokens.push_back(token_id(k, payload)); }

  // A 32-bit record: the value as `D(lo) D(hi)`, then the record token.
  void record(uint32_t value, Kind k, uint32_t payload) {
    emit(Kind::D, value & 0xffff);
    emit(Kind::D, value >> 16);
    emit(k, payload);
  }

  // Global word i's record: `D D MG(i mod 65536)`, after `MGP(i >> 16)` where
  // the model has more than one page and the page is not the one this
  // encoder set last (each encoding sets it again before its first record:
  // the sequence's page is whatever an earlier prompt left).
  void global_record(uint32_t value, uint32_t i) {
    if (machine::model_params().global_bytes / 4 > (1u << kMgPageBits) && page_ != int64_t(i >> kMgPageBits)) {
      page_ = int64_t(i >> kMgPageBits);
      emit(Kind::MGP, uint32_t(page_));
    }
    record(value, Kind::MG, i & ((1u << kMgPageBits) - 1));
  }

  // Every non-zero word of a memory image, as `D D KIND(word)` (MP), or as
  // global_record (MG).
  void image(const std::vector<uint8_t>& bytes, Kind k) {
    for (size_t i = 0; i < (bytes.size() + 3) / 4; ++i)
      if (uint32_t w = word_at(bytes, i)) {
        if (k == Kind::MG)
          global_record(w, uint32_t(i));
        else
          record(w, k, uint32_t(i));
      }
  }

  // An operand the instruction reads; immediate 0 is the field's default.
  void operand(Kind k, const Operand& o) {
    if (!o.imm)
      emit(k, operand_payload(false, o.v));
    else if (o.v != 0)
      record(o.v, k, operand_payload(true, 0));
  }

  void instruction(size_t pc, const Instr& in) {
    const machine::OpInfo& info = machine::op_info(in.op);
    const bool memory = info.kind == OpKind::Load || info.kind == OpKind::Store || info.kind == OpKind::Atomic;
    // The model's machine has its native float ops (Params::native_rn: FFMA)
    // .rn without .ftz or .sat (the OP token has no field for
    // other modifiers); no other float op.
    const bool native = machine::model_params().has_native_rn(in.op) && in.fmod.rnd == machine::FRnd::Rn &&
                        !in.fmod.ftz && !in.fmod.sat && !in.fmod.hi && in.fmod.cmp == machine::FCmp::None;
    if (info.kind == OpKind::Float && !native)
      throw std::invalid_argument(block_name(pc) + ": " + machine::to_string(in) +
                                  ": a native float operation, which the model's machine does not have (it has "
                                  "ffma .rn only; lower for the model)");
    if (info.kind == OpKind::Atomic)
      throw std::invalid_argument(block_name(pc) + ": " + machine::to_string(in) +
                                  ": the prompt has no field for an atomic's function (lower for the model)");
    if (memory && (in.bytes != 4 || in.sign))
      throw std::invalid_argument(block_name(pc) + ": " + machine::to_string(in) +
                                  ": the prompt has no field for an access width other than 32 bits (lower for "
                                  "the model)");
    emit(Kind::OP, op_payload(uint32_t(in.op), memory ? uint32_t(in.space) : 0, in.writes_reg() ? in.dst : 0));
    const Operand* ops[3] = {&in.a, &in.b, &in.c};
    const Kind kinds[3] = {Kind::A, Kind::B, Kind::C};
    for (int k = 0; k < info.arity; ++k) operand(kinds[k], *ops[k]);
  }

  // `D(t) D(f) T(kind, cond)`, with the fields this kind of terminator does
  // not use at zero.
  void terminator(size_t pc, const machine::Terminator& term) {
    uint32_t t = 0, f = 0, cond = 0;
    switch (term.kind) {
      case Term::BR:
        f = term.f;
        cond = term.cond;
        [[fallthrough]];
      case Term::JMP:
      case Term::BAR:
      case Term::WBAR: t = term.t; break;
      case Term::TRAP:
        if (term.code >= payload_size(Kind::TRAP))
          throw std::invalid_argument(block_name(pc) + ": trap code " + std::to_string(term.code) +
                                      " does not fit TRAP (at most " +
                                      std::to_string(payload_size(Kind::TRAP) - 1) + ")");
        t = term.code;
        break;
      case Term::EXIT: break;
    }
    emit(Kind::D, t);
    emit(Kind::D, f);
    emit(Kind::T, term_payload(uint32_t(term.kind), cond));
  }

 private:
  int64_t page_ = -1;  // the MGP this encoder wrote last; -1: none yet
};

}  // namespace

bool branch_condition_in_c(const machine::Block& b) {
  if (b.term.kind != Term::BR || b.instrs.empty()) return false;
  const Instr& in = b.instrs.front();
  return in.writes_reg() && machine::op_info(in.op).arity < 3 && b.term.cond != in.dst;
}

namespace {

std::vector<int64_t> encode(const machine::Program& prog, uint32_t threads, uint32_t ctas,
                            const std::vector<uint8_t>& params, const launch::GlobalMemory* global) {
  const machine::Params& p = machine::model_params();
  if (threads == 0 || threads > p.max_threads)
    throw std::invalid_argument("launch of " + std::to_string(threads) + " threads per CTA; the model takes 1.." +
                                std::to_string(p.max_threads));
  if (ctas == 0 || ctas > p.max_ctas)
    throw std::invalid_argument("launch of " + std::to_string(ctas) + " CTAs; the model takes 1.." +
                                std::to_string(p.max_ctas));
  if (params.size() > p.param_bytes)
    throw std::invalid_argument("parameter buffer of " + std::to_string(params.size()) + " bytes; the model takes " +
                                std::to_string(p.param_bytes));
  if (global && global->base != p.global_base)
    throw std::invalid_argument("global memory image at base " + hex(global->base) +
                                "; the model's global memory starts at " + hex(p.global_base));
  if (global && global->bytes.size() > p.global_bytes)
    throw std::invalid_argument("global memory image of " + std::to_string(global->bytes.size()) +
                                " bytes; the model holds " + std::to_string(p.global_bytes));
  machine::validate(prog, p, threads);  // the register file's share is the launch's

  Encoder e;
  e.emit(Kind::NT, threads);
  e.emit(Kind::NC, ctas);
  e.image(params, Kind::MP);
  if (global) e.image(global->bytes.vector(), Kind::MG);
  for (size_t pc = 0; pc < prog.blocks.size(); ++pc) {
    const machine::Block& b = prog.blocks[pc];
    e.emit(Kind::ROM, uint32_t(pc));
    if (b.instrs.empty())
      e.emit(Kind::OP, op_payload(kNoInstruction, 0, 0));
    else
      e.instruction(pc, b.instrs.front());  // validate() allowed at most one
    if (branch_condition_in_c(b)) e.emit(Kind::C, operand_payload(false, b.term.cond));
    e.terminator(pc, b.term);
  }
  e.emit(Kind::START);
  return e.tokens;
}

}  // namespace

std::vector<int64_t> encode_prompt(const machine::Program& prog, uint32_t threads, uint32_t ctas,
                                   const std::vector<uint8_t>& params, const launch::GlobalMemory& global) {
  return encode(prog, threads, ctas, params, &global);
}

std::vector<int64_t> encode_launch(const machine::Program& prog, uint32_t threads, uint32_t ctas,
                                   const std::vector<uint8_t>& params) {
  return encode(prog, threads, ctas, params, nullptr);
}

std::vector<int64_t> encode_writes(const std::vector<std::pair<uint32_t, uint32_t>>& words) {
  const uint32_t n = machine::model_params().global_bytes / 4;
  Encoder e;
  for (const auto& [w, value] : words) {
    if (w >= n)
      throw std::invalid_argument("write of global word " + std::to_string(w) + "; the model holds " +
                                  std::to_string(n) + " words");
    e.global_record(value, w);
  }
  return e.tokens;
}

std::vector<std::pair<uint32_t, uint32_t>> changed_words(const std::vector<uint32_t>& old, uint64_t offset,
                                                         const uint8_t* data, uint64_t size) {
  std::vector<std::pair<uint32_t, uint32_t>> records;
  if (size == 0) return records;
  const uint64_t first = offset / 4, last = (offset + size - 1) / 4;
  if (old.size() < last - first + 1) throw std::invalid_argument("changed_words: fewer old words than the bytes touch");
  for (uint64_t w = first; w <= last; ++w) {
    uint32_t v = old[w - first];
    for (uint64_t k = 0; k < 4; ++k) {
      const uint64_t byte = w * 4 + k;
      if (byte >= offset && byte < offset + size) v = (v & ~(0xffu << (8 * k))) | uint32_t{data[byte - offset]} << (8 * k);
    }
    if (v != old[w - first]) records.push_back({static_cast<uint32_t>(w), v});
  }
  return records;
}

machine::Program lower_for_model(const launch::LaunchRequest& req) {
  const machine::Params& p = machine::model_params();
  machine::Program prog;
  try {
    const ptx::Module mod = ptx::parse(req.ptx);
    machine::LaunchShape shape{req.grid, req.block, req.dynamic_smem, req.symbols};
    prog = machine::lower(mod, req.kernel, shape, p, machine::LowerOptions{.for_model = true, .params = &req.params});
  } catch (const machine::LowerError& e) {
    throw LaunchRefused(e.error(), e.what());
  } catch (const ptx::ParseError& e) {
    throw LaunchRefused(launch::kInvalidPtx, e.what());
  }
  if (auto missing = machine::model_unsupported(prog))
    throw LaunchRefused(launch::kNotSupported, "the model's GPU cannot run kernel " + req.kernel + ": " + *missing);
  if (req.params.size() > p.param_bytes)
    throw LaunchRefused(launch::kInvalidValue, "kernel " + req.kernel + " has " + std::to_string(req.params.size()) +
                                              " bytes of parameters; the model's GPU takes at most " +
                                              std::to_string(p.param_bytes));
  return prog;
}

}  // namespace qgpu::gpu
