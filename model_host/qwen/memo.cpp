#include "model_host/qwen/memo.h"

#include <cstring>

namespace qgpu::qwen {

SublayerMemo::SublayerMemo(size_t capacity) : capacity_(capacity) {
  if (capacity_ == 0) return;
  size_t n = 2;
  slot_shift_ = 63;
  while (n < 2 * capacity_) {
    n *= 2;
    --slot_shift_;
  }
  slots_.assign(n, Slot{0, kEmpty});
  entries_.reserve(capacity_);
}

size_t SublayerMemo::home_of(uint64_t hash) const {
  return static_cast<size_t>((hash * 0x9e3779b97f4a7c15ull) >> slot_shift_);
}

size_t SublayerMemo::slot_of(uint64_t hash) const {
  const size_t mask = slots_.size() - 1;
  size_t i = home_of(hash);
  while (slots_[i].entry != kEmpty && slots_[i].hash != hash) i = (i + 1) & mask;
  return i;
}

void SublayerMemo::erase_slot(size_t i) {
  const size_t mask = slots_.size() - 1;
  for (size_t j = (i + 1) & mask; slots_[j].entry != kEmpty; j = (j + 1) & mask) {
    // Slot j may move back to i unless its home lies cyclically in (i, j].
    const size_t home = static_cast<size_t>((slots_[j].hash * 0x9e3779b97f4a7c15ull) >> slot_shift_);
    const bool stays = i < j ? (home > i && home <= j) : (home > i || home <= j);
    if (stays) continue;
    slots_[i] = slots_[j];
    i = j;
  }
  slots_[i].entry = kEmpty;
}

void SublayerMemo::unindex(size_t e) {
  const size_t i = slot_of(entries_[e].hash);
  if (slots_[i].entry == e) erase_slot(i);
}

bool SublayerMemo::set_key(const int32_t* cols, const int32_t* cols_end, const float* x) {
  if (static_cast<size_t>(cols_end - cols) > kMaxColumns) return false;
  key_.clear();
  uint64_t h = 0x243f6a8885a308d3ull;
  for (const int32_t* c = cols; c != cols_end; ++c) {
    uint32_t bits;
    std::memcpy(&bits, x + *c, 4);
    const uint64_t k = (static_cast<uint64_t>(static_cast<uint32_t>(*c)) << 32) | bits;
    key_.push_back(k);
    h = (h ^ k) * 0x9e3779b97f4a7c15ull;
    h ^= h >> 29;
  }
  hash_ = h;
  return true;
}

void SublayerMemo::prefetch() const {
  if (!slots_.empty()) __builtin_prefetch(&slots_[home_of(hash_)]);
}

const SublayerMemo::Output* SublayerMemo::find() const {
  const Output* out = nullptr;
  if (!slots_.empty()) {
    const Slot& slot = slots_[slot_of(hash_)];
    if (slot.entry != kEmpty) {
      // The output's arrays are requested before the keys are compared, so
      // that their misses overlap the key's.
      const Entry& e = entries_[slot.entry];
      __builtin_prefetch(e.out.word_index.data());
      __builtin_prefetch(e.out.word.data());
      __builtin_prefetch(e.out.values.data());
      __builtin_prefetch(e.out.section_end.data());
      if (e.key == key_) out = &e.out;
    }
  }
  ++(out ? hits_ : misses_);
  window_hits_ += out != nullptr;
  if (++window_lookups_ == kWindow) {
    cold_ = window_hits_ < kColdHits;
    window_lookups_ = window_hits_ = 0;
  }
  return out;
}

SublayerMemo::Output* SublayerMemo::insert() {
  if (capacity_ == 0) return nullptr;
  if (cold_ && ++cold_misses_ % kColdStride != 0) return nullptr;
  if (entries_.size() < capacity_) {
    last_ = entries_.size();
    entries_.emplace_back();
  } else {
    last_ = next_;
    next_ = (next_ + 1) % capacity_;
    unindex(last_);
  }
  Entry& e = entries_[last_];
  e.key = key_;
  e.hash = hash_;
  e.out.word_index.clear();
  e.out.word.clear();
  e.out.section_end.clear();
  e.out.values.clear();
  e.out.row = -1;
  slots_[slot_of(hash_)] = Slot{hash_, static_cast<uint32_t>(last_)};
  return &e.out;
}

void SublayerMemo::forget_last() {
  unindex(last_);
  entries_[last_].key.clear();
}

bool SublayerMemo::record(Output& out, const uint64_t* bits, int64_t words, const float* y) {
  const size_t words_before = out.word_index.size(), values_before = out.values.size();
  for (int64_t i = 0; i < words; ++i) {
    uint64_t kept = 0;
    for (uint64_t b = bits[i]; b != 0; b &= b - 1) {
      const float v = y[i * 64 + __builtin_ctzll(b)];
      if (v == 0.0f) continue;  // +0: as if not written
      kept |= b & -b;
      out.values.push_back(v);
    }
    if (kept == 0) continue;
    out.word_index.push_back(static_cast<uint32_t>(i));
    out.word.push_back(kept);
  }
  if (out.values.size() > kMaxValues) {
    out.word_index.resize(words_before);
    out.word.resize(words_before);
    out.values.resize(values_before);
    return false;
  }
  out.section_end.push_back(static_cast<uint32_t>(out.word_index.size()));
  return true;
}

void SublayerMemo::replay(const Output& out, size_t section, uint64_t* bits, float* y, size_t& value) {
  const size_t begin = section == 0 ? 0 : out.section_end[section - 1];
  for (size_t k = begin; k < out.section_end[section]; ++k) {
    const uint32_t i = out.word_index[k];
    bits[i] = out.word[k];
    for (uint64_t b = out.word[k]; b != 0; b &= b - 1) y[int64_t{i} * 64 + __builtin_ctzll(b)] = out.values[value++];
  }
}

}  // namespace qgpu::qwen
