// The recent inputs and outputs of one stateless sublayer, for single-token
// steps of the sparse executor.
//
// A linear-attention layer's projections (in_proj_qkv, z, b, a), an MLP and
// the LM head's argmax are functions of the entries of their normed input
// that their products read: given bit-identical entries they write
// bit-identical outputs.  The
// sublayers of a compiled circuit see the same few fields again and again
// (the warps of a kernel run the same blocks, an instruction decoder sees the
// same instruction), so the executor keeps a sublayer's last inputs with the
// outputs its weights gave them, and writes a stored output again when its
// input recurs, as a KV cache keeps keys instead of recomputing them.  Every
// output it holds was computed by the sublayer's weights from that very
// input; nothing else is stored or chosen.
//
// Outputs are recorded as bitmaps of the rows written (only the non-zero
// words are kept) with the values at their set bits, in sections (one per
// output vector), followed by any dense values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace qgpu::qwen {

class SublayerMemo {
 public:
  struct Output {
    std::vector<uint32_t> word_index;  // bitmap words that are not zero, ascending within a section
    std::vector<uint64_t> word;
    std::vector<uint32_t> section_end;  // per section, one past its last word in word_index
    std::vector<float> values;          // per set bit in order, then the dense values
    int64_t row = -1;                   // the LM head's memo: the argmax's row (no sections)
  };

  // Inputs whose listed columns exceed max_columns are not kept (they are not
  // a circuit's few fields), nor outputs of more than max_values values.
  static constexpr size_t kMaxColumns = 512;
  static constexpr size_t kMaxValues = 16384;

  explicit SublayerMemo(size_t capacity = 0);
  size_t capacity() const { return capacity_; }

  // Makes the key of the input: per listed column (ascending) the column and
  // the bits of x there.  False when there are too many columns to keep.
  bool set_key(const int32_t* cols, const int32_t* cols_end, const float* x);
  // Requests the table slot that find() reads first for the key (a cache
  // miss), so that the miss overlaps the caller's work until find().
  void prefetch() const;
  // The output stored for the key, or null.
  const Output* find() const;
  // An output to fill for the key (replacing the oldest entry when full),
  // empty; null when the memo holds nothing (capacity 0), and for all but
  // one in kColdStride misses while the memo is cold: fewer than
  // kColdHits of its last kWindow lookups found an entry (a sublayer whose
  // inputs do not recur, such as an ALU's on operand values, then costs its
  // lookups only; one in kColdStride still records, so that inputs that
  // begin to recur warm it again).
  Output* insert();
  static constexpr int kWindow = 64, kColdHits = 4, kColdStride = 16;
  // Drops the entry insert() gave (its output was too large to keep).
  void forget_last();

  // Appends a section: the rows of y that bits[words] names and that are
  // not +-0 (as a bitmap of them and their values).  A row written with +0
  // is left out: every reader of these outputs treats it as a row not
  // written (the conv and the residual addition add it, z's rows start at
  // +0).  False (nothing appended) when the output grows past kMaxValues.
  static bool record(Output& out, const uint64_t* bits, int64_t words, const float* y);
  // Writes section `section` back: bits[i] = its words (bits must be zero
  // where it holds none), y at their set bits; `value` is the position in
  // out.values, advanced past the section.
  static void replay(const Output& out, size_t section, uint64_t* bits, float* y, size_t& value);
  // Calls f(row, v) for each row of section `section` and its value, rows
  // ascending; `value` as for replay.
  template <class F>
  static void visit(const Output& out, size_t section, size_t& value, F f) {
    const size_t begin = section == 0 ? 0 : out.section_end[section - 1];
    for (size_t k = begin; k < out.section_end[section]; ++k) {
      const int64_t base = int64_t{out.word_index[k]} * 64;
      for (uint64_t b = out.word[k]; b != 0; b &= b - 1) f(base + __builtin_ctzll(b), out.values[value++]);
    }
  }

  // Entries found and missed so far.
  int64_t hits() const { return hits_; }
  int64_t misses() const { return misses_; }

 private:
  struct Entry {
    std::vector<uint64_t> key;
    uint64_t hash = 0;
    Output out;
  };
  size_t capacity_;
  std::vector<uint64_t> key_;
  uint64_t hash_ = 0;
  std::vector<Entry> entries_;
  // Key hash -> entry: an open-addressing table (linear probing, at most
  // half full), one slot per hash; a lookup reads one slot where a node-based
  // map read a bucket and a node.
  struct Slot {
    uint64_t hash;
    uint32_t entry;  // kEmpty: none
  };
  static constexpr uint32_t kEmpty = 0xffffffffu;
  std::vector<Slot> slots_;
  int slot_shift_ = 64;
  // The slot holding `hash`, or the empty slot where it would go.
  size_t home_of(uint64_t hash) const;  // the slot a hash probes first
  size_t slot_of(uint64_t hash) const;
  // Empties slot i, moving later slots of its run back (no tombstones).
  void erase_slot(size_t i);
  // Removes entry e's slot if it still points to it.
  void unindex(size_t e);
  size_t next_ = 0;                               // the entry insert() replaces next once full
  size_t last_ = 0;                               // the entry insert() gave last
  mutable int64_t hits_ = 0, misses_ = 0;
  mutable int window_lookups_ = 0, window_hits_ = 0;
  mutable bool cold_ = false;
  int cold_misses_ = 0;
};

}  // namespace qgpu::qwen
