// The circuit vocabulary against docs/tokens.md section 2: every kind's
// payload range, ids laid out kind by kind from Qwen3.5's vocabulary size,
// round trips of each kind's first and last payload, and out-of-range errors.
#include <gtest/gtest.h>

#include <stdexcept>

#include "model_host/tokens/vocab.h"

namespace qgpu::gpu {
namespace {

struct Range {
  Kind kind;
  const char* name;
  uint32_t last;  // the largest payload docs/tokens.md gives the kind
};

// In vocab.h's kind order.  Ranges from the spec's table: NT 1..1024, NC 1..65535,
// word indices of 256 KiB (a page of global memory: MGP's 16 pages) and 4 KiB, 1024 ROM blocks, OP = 6-bit op, 3-bit
// space, 5-bit register; operands = immediate flag and 5-bit register;
// T = 3-bit kind and 5-bit condition; WARP 0..1024 (1024: past the last thread);
// VX = a ROM block and a 4-bit value; WMIN a ROM block.
const Range kRanges[] = {
    {Kind::NT, "NT", 1024},       {Kind::NC, "NC", 65535},        {Kind::MG, "MG", 65535},
    {Kind::MGP, "MGP", 15},
    {Kind::MP, "MP", 1023},        {Kind::ROM, "ROM", 1023},    {Kind::OP, "OP", (1u << 14) - 1},
    {Kind::A, "A", 63},           {Kind::B, "B", 63},          {Kind::C, "C", 63},
    {Kind::T, "T", 255},          {Kind::START, "START", 0},   {Kind::D, "D", 0xffff},
    {Kind::CTA, "CTA", 65535},       {Kind::WARP, "WARP", 1024},  {Kind::EXEC, "EXEC", 1023},
    {Kind::VZ, "VZ", 0xffff},     {Kind::VLO, "VLO", 0xffff},  {Kind::VX, "VX", (1u << 16) - 1},
    {Kind::VG, "VG", 0xffff},     {Kind::VN, "VN", 0xffff},
    {Kind::VZF, "VZF", 0xffff},   {Kind::VGF, "VGF", 0xffff},  {Kind::VNF, "VNF", 0xffff},
    {Kind::DF, "DF", 0xffff},     {Kind::VH, "VH", 0xffff},    {Kind::VHF, "VHF", 0xffff},
    {Kind::VLO1, "VLO1", 0xffff}, {Kind::VLO2, "VLO2", 0xffff}, {Kind::VLO3, "VLO3", 0xffff},
    {Kind::VLO4, "VLO4", 0xffff}, {Kind::VLO5, "VLO5", 0xffff}, {Kind::VLO6, "VLO6", 0xffff},
    {Kind::WARPS, "WARPS", 1023},
    {Kind::BARRIER, "BARRIER", 1},
    {Kind::WMIN, "WMIN", 1023},   {Kind::TRAP, "TRAP", 1023},   {Kind::FAULT, "FAULT", 1},   {Kind::END, "END", 0},
};

TEST(GpuVocab, EveryKindHasTheSpecsPayloadRange) {
  ASSERT_EQ(std::size(kRanges), size_t(kKindCount));
  for (const Range& r : kRanges) {
    EXPECT_STREQ(kind_name(r.kind), r.name);
    EXPECT_EQ(payload_size(r.kind), r.last + 1) << r.name;
  }
}

TEST(GpuVocab, IdsAreLaidOutKindByKindAfterQwensVocabulary) {
  EXPECT_EQ(kTokenBase, 248320);
  int64_t expected = 248320;
  for (const Range& r : kRanges) {
    EXPECT_EQ(token_id(r.kind, 0), expected) << r.name;
    expected += r.last + 1;
  }
  EXPECT_EQ(circuit_token_count(), expected - 248320);
}

TEST(GpuVocab, FirstAndLastPayloadOfEveryKindRoundTrip) {
  for (const Range& r : kRanges)
    for (uint32_t payload : {0u, r.last}) {
      auto t = decode_token(token_id(r.kind, payload));
      ASSERT_TRUE(t.has_value()) << r.name << " " << payload;
      EXPECT_EQ(t->kind, r.kind) << r.name;
      EXPECT_EQ(t->payload, payload) << r.name;
      EXPECT_EQ(token_id(*t), token_id(r.kind, payload));
    }
}

TEST(GpuVocab, PayloadsBeyondTheRangeAndForeignIdsAreRejected) {
  for (const Range& r : kRanges) EXPECT_THROW(token_id(r.kind, r.last + 1), std::out_of_range) << r.name;
  EXPECT_FALSE(decode_token(248319).has_value());
  EXPECT_FALSE(decode_token(0).has_value());
  EXPECT_FALSE(decode_token(248320 + circuit_token_count()).has_value());
  EXPECT_TRUE(decode_token(248320 + circuit_token_count() - 1).has_value());
}

TEST(GpuVocab, RecordPayloadsPackTheirFields) {
  EXPECT_EQ(op_payload(34, 4, 31), 34u * 256 + 4 * 32 + 31);
  EXPECT_EQ(op_payload(kNoInstruction, 0, 0), 63u * 256);
  EXPECT_LT(op_payload(kNoInstruction, 7, 31), payload_size(Kind::OP));
  EXPECT_EQ(operand_payload(true, 0), 0u);          // an immediate: the field's default
  EXPECT_EQ(operand_payload(false, 31), 32u + 31);  // register flag 32
  EXPECT_EQ(term_payload(5, 31), 5u * 32 + 31);  // trap, the largest kind
  EXPECT_LT(term_payload(5, 31), payload_size(Kind::T));
}

TEST(GpuVocab, VxPacksEveryBlockWithEverySmallValue) {
  for (uint32_t pc = 0; pc < 1024; ++pc)
    for (uint32_t v = 0; v < kVxValues; ++v) {
      auto t = decode_token(token_id(Kind::VX, vx_payload(pc, v)));
      ASSERT_TRUE(t.has_value());
      ASSERT_EQ(t->kind, Kind::VX);
      EXPECT_EQ(block_of(*t), pc);
      EXPECT_EQ(t->payload >> kVxPcBits, v);
    }
  EXPECT_TRUE(runs_block(Kind::EXEC));
  EXPECT_TRUE(runs_block(Kind::VX));
  EXPECT_FALSE(runs_block(Kind::VZ));
  EXPECT_FALSE(runs_block(Kind::VH));
  for (Kind k : {Kind::VZF, Kind::VGF, Kind::VNF, Kind::DF, Kind::VHF}) {
    EXPECT_TRUE(runs_block(k));
    EXPECT_TRUE(falls_through(k));
    EXPECT_FALSE(names_block(k));
  }
  EXPECT_TRUE(names_block(Kind::EXEC));
  EXPECT_TRUE(names_block(Kind::VX));
  EXPECT_EQ(block_of(Token{Kind::EXEC, 1023}), 1023u);
}

TEST(GpuVocab, NamesShowKindAndPayload) {
  EXPECT_EQ(token_name(token_id(Kind::EXEC, 12)), "EXEC(12)");
  EXPECT_EQ(token_name(token_id(Kind::VZ, 0x20)), "VZ(0x0020)");
  EXPECT_EQ(token_name(token_id(Kind::D, 0xffff)), "D(0xffff)");
  EXPECT_EQ(token_name(token_id(Kind::VX, vx_payload(1023, 63))), "VX(1023,63)");
  EXPECT_EQ(token_name(token_id(Kind::END)), "END");
  EXPECT_EQ(token_name(token_id(Kind::WARP, 256)), "WARP(256)");
  EXPECT_EQ(token_name(5), "id:5");
}

}  // namespace
}  // namespace qgpu::gpu
