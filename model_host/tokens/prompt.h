// The prompt of one launch (docs/tokens.md section 3): launch configuration,
// parameter buffer, global memory image and program ROM, as circuit tokens.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "model_host/launch/launch.h"
#include "model_host/machine/isa.h"

namespace qgpu::gpu {

// Encodes a launch of `prog` (lowered for machine::model_params()) over
// `threads` threads per CTA and `ctas` CTAs, with the kernel's parameter
// buffer and the client's global memory (`global.base` must be the model
// machine's global base).  Zero parameter and global words are not sent, nor
// operands that are register r0; terminators always send both targets, so
// every 32-bit record is exactly `D(lo) D(hi) KIND` (global words beyond the
// first 65,536 also need an `MGP(page)` before their page's first record).
//
// Throws std::invalid_argument naming what does not fit the model's device
// or the vocabulary: a launch shape beyond its threads per CTA or CTAs,
// parameters or a global image beyond its sizes (model_params()), a program machine::validate() refuses for the
// model's machine (more than 1024 blocks, more than one instruction per
// block), an atomic or 8/16-bit access (the record has no field for its
// function or width), or a trap code beyond TRAP's payload.
std::vector<int64_t> encode_prompt(const machine::Program& prog, uint32_t threads, uint32_t ctas,
                                   const std::vector<uint8_t>& params, const launch::GlobalMemory& global);

// A block whose instruction writes a register and reads at most two operands,
// and whose terminator is `br` on another register: its C record names the
// branch's condition register, so that the pass that runs the block reads
// the condition with the operands and its value token can name the next
// block (VX, or a fall-through value; docs/tokens.md sections 3 and 4).
bool branch_condition_in_c(const machine::Block& b);

// The prompt of a launch on a client whose global memory the model already
// holds (docs/tokens.md section 3): encode_prompt without memory records.
std::vector<int64_t> encode_launch(const machine::Program& prog, uint32_t threads, uint32_t ctas,
                                   const std::vector<uint8_t>& params);

// Write records `D(lo) D(hi) MG(word)` for the given (word index, value)
// pairs, in order (with `MGP(page)` before the first record of each page
// where the model has more than 65,536 words): what a cudaMemcpy to the device or a cudaMemset appends
// to the client's sequence (docs/tokens.md section 3).  Throws
// std::invalid_argument for a word beyond the model's global memory.
std::vector<int64_t> encode_writes(const std::vector<std::pair<uint32_t, uint32_t>>& words);

// The (word index, value) pairs that writing `size` bytes of `data` at byte
// `offset` changes, given `old`, the words the memory holds from word
// offset / 4 on (every word the bytes touch): only those become write
// records.
std::vector<std::pair<uint32_t, uint32_t>> changed_words(const std::vector<uint32_t>& old, uint64_t offset,
                                                         const uint8_t* data, uint64_t size);

// A launch the model's machine cannot hold: a cudaError_t and a message
// naming the limit or the missing operation.
struct LaunchRefused : std::runtime_error {
  LaunchRefused(int error, const std::string& message) : std::runtime_error(message), error(error) {}
  int error;
};

// The kernel of `req` lowered for machine::model_params(); throws
// LaunchRefused when the model's machine cannot run it (a lowering or PTX
// error, an operation the circuit does not have, too many parameter bytes).
machine::Program lower_for_model(const launch::LaunchRequest& req);

}  // namespace qgpu::gpu
