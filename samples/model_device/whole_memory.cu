// A buffer of three quarters of the device's free global memory (768 KiB on
// a model built with `qgpu build-model --global-kib 1024`, 192 KiB on the
// default one), reached from end to end: 32 words spread over it are copied
// in one word at a time, a memset crosses a 256 KiB boundary of the device's
// addresses (where the model's write records change page), and a kernel of
// 32 threads reads word i and word 31 - i and writes next to word i.  The
// host reads the whole buffer back and checks every word.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#include <vector>

#define CHECK(call)                                                          \
  do {                                                                       \
    cudaError_t err_ = (call);                                               \
    if (err_ != cudaSuccess) {                                               \
      printf("CUDA error at %s:%d: %s\n", __FILE__, __LINE__,                \
             cudaGetErrorString(err_));                                      \
      exit(1);                                                               \
    }                                                                        \
  } while (0)

constexpr unsigned kProbes = 32;

// Probe i's word: spread from the first word to the last one but one (an
// even word count: its neighbour, word ^ 1, is inside too).
__host__ __device__ unsigned probe(unsigned i, unsigned words) { return (i * (words - 2) / (kProbes - 1)) & ~1u; }
__host__ __device__ unsigned probe_value(unsigned i) { return 0x1000u * i + 0x11u; }

__global__ void mix(unsigned* buf, unsigned words) {
  const unsigned i = threadIdx.x;
  const unsigned a = buf[probe(i, words)], b = buf[probe(kProbes - 1 - i, words)];
  buf[probe(i, words) ^ 1u] = a * 3u + b + i;
}

int main() {
  size_t free_bytes = 0, total = 0;
  CHECK(cudaMemGetInfo(&free_bytes, &total));
  const size_t bytes = (free_bytes / 4 * 3) & ~size_t(4095);
  const unsigned words = unsigned(bytes / 4);
  unsigned* d_buf;
  CHECK(cudaMalloc(&d_buf, bytes));
  // A fresh buffer is not known to be zero: clear it first (words already
  // zero cost the model no records).
  CHECK(cudaMemset(d_buf, 0, bytes));
  for (unsigned i = 0; i < kProbes; ++i) {
    const unsigned v = probe_value(i);
    CHECK(cudaMemcpy(d_buf + probe(i, words), &v, sizeof v, cudaMemcpyHostToDevice));
  }
  // 256 bytes of 0x5a around the first 256 KiB boundary of the device's
  // addresses inside the buffer (or around its middle where none is),
  // clear of the probes.
  const uintptr_t base = reinterpret_cast<uintptr_t>(d_buf);
  size_t mid = ((base / (256 * 1024) + 1) * (256 * 1024) - base) / 4;
  if (mid + 64 >= words) mid = words / 2;
  for (bool moved = true; moved;) {
    moved = false;
    for (unsigned i = 0; i < kProbes; ++i)
      if (probe(i, words) + 1 + 32 >= mid && probe(i, words) < mid + 32) {
        mid += 256;
        moved = true;
      }
  }
  CHECK(cudaMemset(d_buf + mid - 32, 0x5a, 64 * sizeof(unsigned)));
  mix<<<1, kProbes>>>(d_buf, words);
  CHECK(cudaGetLastError());
  std::vector<unsigned> out(words);
  CHECK(cudaMemcpy(out.data(), d_buf, bytes, cudaMemcpyDeviceToHost));

  std::vector<unsigned> want(words, 0);
  for (size_t w = mid - 32; w < mid + 32; ++w) want[w] = 0x5a5a5a5au;
  for (unsigned i = 0; i < kProbes; ++i) want[probe(i, words)] = probe_value(i);
  for (unsigned i = 0; i < kProbes; ++i)
    want[probe(i, words) ^ 1u] = probe_value(i) * 3u + probe_value(kProbes - 1 - i) + i;
  unsigned bad = 0, first_bad = 0;
  for (unsigned w = 0; w < words; ++w)
    if (out[w] != want[w] && bad++ == 0) first_bad = w;
  printf("buffer %zu KiB of %zu KiB, memset at word %zu, wrong words %u", bytes >> 10, total >> 10, mid - 32, bad);
  if (bad) printf(" (first: word %u = 0x%x, want 0x%x)", first_bad, out[first_bad], want[first_bad]);
  printf("\n%s\n", bad == 0 ? "PASSED" : "FAILED");
  CHECK(cudaFree(d_buf));
  return bad == 0 ? 0 : 1;
}
