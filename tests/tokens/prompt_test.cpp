// The prompt encoder (docs/tokens.md section 3), checked by decoding its
// output back with a decoder written here from the spec's grammar: sections in
// order, every 32-bit record exactly `D(lo) D(hi) KIND`, ROM rows of `OP`,
// operands in A, B, C order and `T`.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <stdexcept>
#include <string>

#include "model_host/tokens/prompt.h"
#include "model_host/tokens/vocab.h"
#include "programs.h"

namespace qgpu::gpu {
namespace {

using namespace test;

struct DecodedOperand {
  bool sent = false, imm = false;
  uint32_t reg = 0, value = 0;
};
struct DecodedRow {
  uint32_t op = 0, space = 0, dst = 0;
  DecodedOperand ops[3];
  uint32_t term = 0, cond = 0, t = 0, f = 0;
};
struct Decoded {
  uint32_t threads = 0, ctas = 0;
  std::map<uint32_t, uint32_t> params, global;
  std::vector<DecodedRow> rom;
};

// Throws std::runtime_error naming the position of the first token that
// breaks the grammar.  Global words are page << 16 | MG's payload, the page
// the last MGP set (0 before any).
Decoded decode(const std::vector<int64_t>& ids) {
  enum Section { kThreads, kCtas, kParams, kGlobal, kRom, kDone };
  Decoded d;
  int section = kThreads;
  std::vector<uint32_t> halves;  // D payloads not yet taken by a record
  int operand = -1;              // the last operand sent in the current row
  bool row_open = false;         // OP seen, T not yet
  int64_t page = -1;             // the last MGP's page (-1: none yet)
  for (size_t i = 0; i < ids.size(); ++i) {
    auto fail = [&](const std::string& why) {
      throw std::runtime_error("token " + std::to_string(i) + " (" + token_name(ids[i]) + "): " + why);
    };
    auto t = decode_token(ids[i]);
    if (!t) fail("not a circuit token");
    if (section == kDone) fail("after START");
    auto value = [&] {
      if (halves.size() != 2) fail("a record needs exactly two D tokens before it");
      uint32_t v = halves[0] | halves[1] << 16;
      halves.clear();
      return v;
    };
    auto no_halves = [&] {
      if (!halves.empty()) fail("D tokens that no record takes");
    };
    auto enter = [&](int s) {
      if (s < section) fail("section out of order");
      section = s;
    };
    switch (t->kind) {
      case Kind::D:
        if (halves.size() == 2) fail("a third D in a row");
        halves.push_back(t->payload);
        break;
      case Kind::NT:
        if (section != kThreads) fail("NT must come first");
        d.threads = t->payload;
        section = kCtas;
        break;
      case Kind::NC:
        if (section != kCtas) fail("NC must follow NT");
        d.ctas = t->payload;
        section = kParams;
        break;
      case Kind::MP:
        enter(kParams);
        if (d.params.count(t->payload)) fail("parameter word sent twice");
        d.params[t->payload] = value();
        break;
      case Kind::MGP:
        enter(kGlobal);
        no_halves();
        if (int64_t(t->payload) == page) fail("MGP repeats the page already set");
        page = t->payload;
        break;
      case Kind::MG: {
        enter(kGlobal);
        if (page < 0) page = 0;  // a sequence starts at page 0
        const uint32_t word = uint32_t(page) << 16 | t->payload;
        if (d.global.count(word)) fail("global word sent twice");
        d.global[word] = value();
        break;
      }
      case Kind::ROM:
        enter(kRom);
        no_halves();
        if (row_open) fail("ROM row without T");
        if (t->payload != d.rom.size()) fail("ROM rows out of order");
        d.rom.emplace_back();
        operand = -2;  // OP next
        row_open = true;
        break;
      case Kind::OP:
        no_halves();
        if (operand != -2) fail("OP must follow ROM");
        d.rom.back().op = t->payload >> 8;
        d.rom.back().space = t->payload >> 5 & 7;
        d.rom.back().dst = t->payload & 31;
        operand = -1;
        break;
      case Kind::A:
      case Kind::B:
      case Kind::C: {
        int idx = int(t->kind) - int(Kind::A);
        if (!row_open || operand == -2 || idx <= operand) fail("operand out of order");
        DecodedOperand& o = d.rom.back().ops[idx];
        o.sent = true;
        o.imm = !(t->payload >> 5 & 1);  // flag 32: a register
        o.reg = t->payload & 31;
        if (o.imm)
          o.value = value();
        else
          no_halves();
        operand = idx;
        break;
      }
      case Kind::T: {
        if (!row_open || operand == -2) fail("T outside a ROM row");
        DecodedRow& row = d.rom.back();
        uint32_t v = value();
        row.t = v & 0xffff;
        row.f = v >> 16;
        row.term = t->payload >> 5;
        row.cond = t->payload & 31;
        row_open = false;
        break;
      }
      case Kind::START:
        no_halves();
        if (row_open) fail("START inside a ROM row");
        section = kDone;
        break;
      default: fail("not a prompt token");
    }
  }
  if (section != kDone) throw std::runtime_error("the prompt does not end in START");
  return d;
}

void expect_operand(const DecodedOperand& o, bool sent, bool imm = false, uint32_t reg_or_value = 0) {
  EXPECT_EQ(o.sent, sent);
  if (!sent) return;
  EXPECT_EQ(o.imm, imm);
  if (imm) {
    EXPECT_EQ(o.reg, 0u);
    EXPECT_EQ(o.value, reg_or_value);
  } else {
    EXPECT_EQ(o.reg, reg_or_value);
  }
}

constexpr uint32_t kJmp = 0, kBr = 1, kExit = 2, kBar = 3, kWbar = 4, kTrap = 5;  // T kinds
constexpr uint32_t kGlobalSpace = 0, kSharedSpace = 1;

TEST(GpuPrompt, HandBuiltLaunchDecodesBackFieldByField) {
  Instr mov = alu(Op::MOV, 1, k(0x12345678), r(9));  // b is not read by mov: not sent
  Instr store = st(Space::Global, r(0), k(kBase), r(3));
  store.dst = 13;  // a store writes no register: dst sent as 0
  Terminator exit_with_junk{Term::EXIT, 9, 5, 77, 0};  // fields exit does not use: sent as 0
  machine::Program prog = program({
      blk(mov, jmp(1)),                                        // B0
      blk(alu(Op::ADD, 2, r(1), r(0)), br(2, 2, 3)),           // B1
      blk(ld(Space::Shared, 3, r(2), k(8)), exit_()),          // B2
      blk(store, bar(4)),                                      // B3
      blk(std::nullopt, trap(719)),                            // B4
      blk(alu(Op::SEL, 4, r(1), k(0), r(5)), {Term::WBAR, 0, 0, 0, 0}),  // B5
      blk(special(Op::CTA, 7), exit_with_junk),                // B6
  });
  std::vector<uint8_t> params(18, 0);  // 4 words and a half: the last half word is padded
  set_word(params, 1, 0x00010002);
  set_word(params, 3, 7);
  params[16] = 1;
  launch::GlobalMemory global = global_memory();
  set_word(global.bytes, 0, 0xffffffff);
  set_word(global.bytes, 5, 0x80000000);
  set_word(global.bytes, 4095, 42);

  std::vector<int64_t> ids = encode_prompt(prog, 3, 2, params, global);
  // NT NC (2), three parameter and three global records (18), rows B0..B6
  // (8 + 7 + 9 + 10 + 5 + 7 + 5 = 51), START (1).
  EXPECT_EQ(ids.size(), 72u);
  Decoded d;
  ASSERT_NO_THROW(d = decode(ids));
  EXPECT_EQ(d.threads, 3u);
  EXPECT_EQ(d.ctas, 2u);
  EXPECT_EQ(d.params, (std::map<uint32_t, uint32_t>{{1, 0x00010002}, {3, 7}, {4, 1}}));
  EXPECT_EQ(d.global, (std::map<uint32_t, uint32_t>{{0, 0xffffffff}, {5, 0x80000000}, {4095, 42}}));
  ASSERT_EQ(d.rom.size(), 7u);

  const auto& b0 = d.rom[0];
  EXPECT_EQ(b0.op, uint32_t(Op::MOV));
  EXPECT_EQ(b0.dst, 1u);
  expect_operand(b0.ops[0], true, true, 0x12345678);
  expect_operand(b0.ops[1], false);
  expect_operand(b0.ops[2], false);
  EXPECT_EQ(b0.term, kJmp);
  EXPECT_EQ(b0.t, 1u);
  EXPECT_EQ(b0.f, 0u);

  const auto& b1 = d.rom[1];
  EXPECT_EQ(b1.op, uint32_t(Op::ADD));
  EXPECT_EQ(b1.dst, 2u);
  expect_operand(b1.ops[0], true, false, 1);
  expect_operand(b1.ops[1], true, false, 0);  // register r0 differs from the default: sent
  EXPECT_EQ(b1.term, kBr);
  EXPECT_EQ(b1.cond, 2u);
  EXPECT_EQ(b1.t, 2u);
  EXPECT_EQ(b1.f, 3u);

  const auto& b2 = d.rom[2];
  EXPECT_EQ(b2.op, uint32_t(Op::LD));
  EXPECT_EQ(b2.space, kSharedSpace);
  EXPECT_EQ(b2.dst, 3u);
  expect_operand(b2.ops[0], true, false, 2);
  expect_operand(b2.ops[1], true, true, 8);
  expect_operand(b2.ops[2], false);
  EXPECT_EQ(b2.term, kExit);

  const auto& b3 = d.rom[3];
  EXPECT_EQ(b3.op, uint32_t(Op::ST));
  EXPECT_EQ(b3.space, kGlobalSpace);
  EXPECT_EQ(b3.dst, 0u);
  expect_operand(b3.ops[0], true, false, 0);
  expect_operand(b3.ops[1], true, true, kBase);
  expect_operand(b3.ops[2], true, false, 3);
  EXPECT_EQ(b3.term, kBar);
  EXPECT_EQ(b3.t, 4u);

  const auto& b4 = d.rom[4];
  EXPECT_EQ(b4.op, 63u);
  EXPECT_EQ(b4.space, 0u);
  EXPECT_EQ(b4.dst, 0u);
  EXPECT_EQ(b4.term, kTrap);
  EXPECT_EQ(b4.t, 719u);
  EXPECT_EQ(b4.f, 0u);

  const auto& b5 = d.rom[5];
  EXPECT_EQ(b5.op, uint32_t(Op::SEL));
  EXPECT_EQ(b5.dst, 4u);
  expect_operand(b5.ops[0], true, false, 1);
  expect_operand(b5.ops[1], false);  // immediate 0: the field's default
  expect_operand(b5.ops[2], true, false, 5);
  EXPECT_EQ(b5.term, kWbar);
  EXPECT_EQ(b5.t, 0u);

  const auto& b6 = d.rom[6];
  EXPECT_EQ(b6.op, uint32_t(Op::CTA));
  EXPECT_EQ(b6.dst, 7u);
  for (const auto& o : b6.ops) expect_operand(o, false);
  EXPECT_EQ(b6.term, kExit);
  EXPECT_EQ(b6.cond, 0u);
  EXPECT_EQ(b6.t, 0u);
  EXPECT_EQ(b6.f, 0u);
}

TEST(GpuPrompt, EmptyMemoriesSendNothing) {
  machine::Program prog = program({blk(std::nullopt, exit_())});
  std::vector<int64_t> ids = encode_prompt(prog, 1, 1, std::vector<uint8_t>(64, 0), global_memory());
  std::vector<int64_t> expected = {token_id(Kind::NT, 1), token_id(Kind::NC, 1),   token_id(Kind::ROM, 0),
                                   token_id(Kind::OP, 63 << 8), token_id(Kind::D, 0), token_id(Kind::D, 0),
                                   token_id(Kind::T, kExit << 5), token_id(Kind::START)};
  EXPECT_EQ(ids, expected);
}

// A model of 1 MiB of global memory (qgpu build-model --global-kib 1024)
// names words beyond the first 65,536 by page: MGP(page) before the first
// record of each page, and nowhere else; a model of 256 KiB never.
TEST(GpuPrompt, GlobalWordsBeyondTheFirstPageAreNamedByMgp) {
  struct Size {
    uint32_t saved = machine::model_params().global_bytes;
    ~Size() { machine::set_model_global_bytes(saved); }
  } restore;
  machine::Program prog = program({blk(std::nullopt, exit_())});
  auto mgps = [](const std::vector<int64_t>& ids) {
    std::vector<uint32_t> pages;
    for (int64_t id : ids)
      if (decode_token(id)->kind == Kind::MGP) pages.push_back(decode_token(id)->payload);
    return pages;
  };
  machine::set_model_global_bytes(1u << 20);
  const std::vector<std::pair<uint32_t, uint32_t>> words = {
      {5, 0x11}, {65535, 0x22}, {65536, 0x33}, {70000, 0x44}, {200000, 0x55}, {262143, 0x66}, {3, 0x77}};
  launch::GlobalMemory global{kBase, std::vector<uint8_t>(1u << 20)};
  for (auto [w, v] : words) set_word(global.bytes, w, v);
  const Decoded d = decode(encode_prompt(prog, 1, 1, {}, global));
  std::map<uint32_t, uint32_t> want(words.begin(), words.end());
  EXPECT_EQ(d.global, want);
  // The image in word order: pages 0, 1, 3 (0 set too: the sequence's page
  // is whatever an earlier prompt left).
  EXPECT_EQ(mgps(encode_prompt(prog, 1, 1, {}, global)), (std::vector<uint32_t>{0, 1, 3}));
  // Write records in the order given: a page each time it changes.
  const std::vector<int64_t> records = encode_writes(words);
  EXPECT_EQ(mgps(records), (std::vector<uint32_t>{0, 1, 3, 0}));
  std::vector<int64_t> as_prompt = {token_id(Kind::NT, 1), token_id(Kind::NC, 1)};
  as_prompt.insert(as_prompt.end(), records.begin(), records.end());
  as_prompt.push_back(token_id(Kind::START));
  EXPECT_EQ(decode(as_prompt).global, want);
  try {
    encode_writes({{1u << 18, 1}});
    ADD_FAILURE() << "a word past 1 MiB was encoded";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("262144"), std::string::npos) << e.what();
  }
  machine::set_model_global_bytes(256 * 1024);
  EXPECT_TRUE(mgps(encode_writes({{5, 1}, {65535, 2}})).empty());
}

void expect_refused(const std::function<void()>& f, const std::string& mention) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one mentioning '" << mention << "'";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(mention), std::string::npos) << e.what();
  }
}

TEST(GpuPrompt, WhatDoesNotFitTheVocabularyIsRefusedByName) {
  const machine::Program ok = program({blk(alu(Op::MOV, 1, k(1)), exit_())});
  const std::vector<uint8_t> no_params;
  const launch::GlobalMemory global = global_memory();
  // The limits themselves fit.
  EXPECT_NO_THROW(encode_prompt(ok, 1024, 65535, std::vector<uint8_t>(4096, 1), global));
  EXPECT_NO_THROW(encode_prompt(program({blk(std::nullopt, trap(1023))}), 1, 1, no_params, global));

  expect_refused([&] { encode_prompt(ok, 0, 1, no_params, global); }, "threads");
  expect_refused([&] { encode_prompt(ok, 1025, 1, no_params, global); }, "1025 threads");
  // A thread's registers are its share of the CTA's 8192: r8 is there up to
  // 512 threads a CTA, not at 513 (8 each).
  const machine::Program r8 = program({blk(alu(Op::MOV, 8, k(1)), exit_())});
  EXPECT_NO_THROW(encode_prompt(r8, 512, 1, no_params, global));
  expect_refused([&] { encode_prompt(r8, 513, 1, no_params, global); }, "a CTA of 513 threads has 8 registers");
  expect_refused([&] { encode_prompt(ok, 1, 0, no_params, global); }, "CTAs");
  expect_refused([&] { encode_prompt(ok, 1, 65536, no_params, global); }, "65536 CTAs");
  expect_refused([&] { encode_prompt(ok, 1, 1, std::vector<uint8_t>(4097), global); }, "4097 bytes");
  const uint32_t global_bytes = machine::model_params().global_bytes;
  launch::GlobalMemory big{kBase, std::vector<uint8_t>(global_bytes + 4)};
  expect_refused([&] { encode_prompt(ok, 1, 1, no_params, big); }, std::to_string(global_bytes + 4) + " bytes");
  launch::GlobalMemory elsewhere{0x20000000, std::vector<uint8_t>(16)};
  expect_refused([&] { encode_prompt(ok, 1, 1, no_params, elsewhere); }, "0x20000000");

  machine::Program rom_full = program(std::vector<Block>(1025, blk(std::nullopt, exit_())));
  expect_refused([&] { encode_prompt(rom_full, 1, 1, no_params, global); }, "1025 blocks");
  machine::Program two = ok;
  two.blocks[0].instrs.push_back(alu(Op::MOV, 2, k(2)));
  expect_refused([&] { encode_prompt(two, 1, 1, no_params, global); }, "2 instructions");
  machine::Program atom = program({blk(alu(Op::ATOM, 1, k(kBase), k(1)), exit_())});
  expect_refused([&] { encode_prompt(atom, 1, 1, no_params, global); }, "atom.global.add");
  machine::Program byte = program({blk(ld(Space::Global, 1, k(kBase), k(0), 1), exit_())});
  expect_refused([&] { encode_prompt(byte, 1, 1, no_params, global); }, "ld.global.u8");
  machine::Program code = program({blk(std::nullopt, trap(1024))});
  expect_refused([&] { encode_prompt(code, 1, 1, no_params, global); }, "trap code 1024");
  machine::Program target = program({blk(std::nullopt, jmp(1))});
  expect_refused([&] { encode_prompt(target, 1, 1, no_params, global); }, "target 1");
}

}  // namespace
}  // namespace qgpu::gpu
