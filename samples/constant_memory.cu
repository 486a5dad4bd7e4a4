// __constant__ memory filled with cudaMemcpyToSymbol: a substitution table
// (an S-box) and a round-key schedule that every thread reads with
// data-dependent indices, for a toy block cipher of four rounds.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CHECK(call)                                                          \
  do {                                                                       \
    cudaError_t err_ = (call);                                               \
    if (err_ != cudaSuccess) {                                               \
      printf("CUDA error at %s:%d: %s\n", __FILE__, __LINE__,                \
             cudaGetErrorString(err_));                                      \
      exit(1);                                                               \
    }                                                                        \
  } while (0)

__constant__ unsigned char c_sbox[256];
__constant__ unsigned c_round_keys[4];

__global__ void encrypt(const unsigned* in, unsigned* out) {
  int i = threadIdx.x;
  unsigned x = in[i];
  for (int r = 0; r < 4; ++r) {
    x ^= c_round_keys[r];
    x = c_sbox[x & 0xff] | c_sbox[(x >> 8) & 0xff] << 8 | c_sbox[(x >> 16) & 0xff] << 16 |
        (unsigned)c_sbox[x >> 24] << 24;
    x = (x << 7) | (x >> 25);
  }
  out[i] = x;
}

int main() {
  const int n = 32;
  unsigned char sbox[256];
  for (int k = 0; k < 256; ++k) sbox[k] = (unsigned char)(k * 167 + 13);  // a permutation: 167 is odd
  const unsigned keys[4] = {0x01234567u, 0x89abcdefu, 0xdeadbeefu, 0x0badf00du};
  unsigned in[n];
  for (int i = 0; i < n; ++i) in[i] = i * 0x01010101u + 0x10000u * i * i;

  CHECK(cudaMemcpyToSymbol(c_sbox, sbox, sizeof(sbox)));
  CHECK(cudaMemcpyToSymbol(c_round_keys, keys, sizeof(keys)));
  unsigned *d_in, *d_out;
  CHECK(cudaMalloc(&d_in, sizeof(in)));
  CHECK(cudaMalloc(&d_out, sizeof(in)));
  CHECK(cudaMemcpy(d_in, in, sizeof(in), cudaMemcpyHostToDevice));
  encrypt<<<1, n>>>(d_in, d_out);
  CHECK(cudaGetLastError());
  unsigned out[n];
  CHECK(cudaMemcpy(out, d_out, sizeof(out), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d_in));
  CHECK(cudaFree(d_out));

  int bad = 0;
  for (int i = 0; i < n; ++i) {
    unsigned x = in[i];
    for (int r = 0; r < 4; ++r) {
      x ^= keys[r];
      unsigned y = 0;
      for (int b = 0; b < 4; ++b) y |= (unsigned)sbox[(x >> (8 * b)) & 0xff] << (8 * b);
      x = (y << 7) | (y >> 25);
    }
    if (out[i] != x) ++bad;
  }
  printf("cipher[0..3] = %08x %08x %08x %08x\n", out[0], out[1], out[2], out[3]);
  printf("%d mismatches\n", bad);
  bool ok = bad == 0;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
