// Bit fields: a packed 32-bit record with signed and unsigned fields,
// decoded through a C++ bit-field struct (the compiler's bfe) and
// re-encoded with shifts and masks after an update (the compiler's bfi).
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

struct Packed {
  unsigned opcode : 6;
  int offset : 11;  // signed: sign-extended on read
  unsigned reg : 5;
  unsigned flags : 10;
};

__global__ void update(const unsigned* in, unsigned* out, int* offsets) {
  int i = threadIdx.x;
  Packed p;
  unsigned raw = in[i];
  memcpy(&p, &raw, sizeof(raw));
  offsets[i] = p.offset;
  p.offset = p.offset / 2 - 1;  // stays within 11 bits
  p.reg = (p.reg + i) & 31;
  p.flags ^= 0x2a5;
  p.opcode = p.opcode | 1;
  memcpy(&raw, &p, sizeof(raw));
  out[i] = raw;
}

int main() {
  const int n = 32;
  unsigned in[n];
  for (int i = 0; i < n; ++i) in[i] = 0x9e3779b9u * (i + 1) ^ (i << 13);

  unsigned *d_in, *d_out;
  int* d_offsets;
  CHECK(cudaMalloc(&d_in, sizeof(in)));
  CHECK(cudaMalloc(&d_out, sizeof(in)));
  CHECK(cudaMalloc(&d_offsets, n * sizeof(int)));
  CHECK(cudaMemcpy(d_in, in, sizeof(in), cudaMemcpyHostToDevice));
  update<<<1, n>>>(d_in, d_out, d_offsets);
  CHECK(cudaGetLastError());
  unsigned out[n];
  int offsets[n];
  CHECK(cudaMemcpy(out, d_out, sizeof(out), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(offsets, d_offsets, sizeof(offsets), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d_in));
  CHECK(cudaFree(d_out));
  CHECK(cudaFree(d_offsets));

  // Reference with explicit shifts and masks (fields from bit 0 upward).
  int bad = 0;
  for (int i = 0; i < n; ++i) {
    unsigned x = in[i];
    unsigned opcode = x & 63, reg = (x >> 17) & 31, flags = x >> 22;
    int offset = (int)((x >> 6) & 0x7ff);
    if (offset & 0x400) offset -= 0x800;
    int new_offset = offset / 2 - 1;
    unsigned ref = (opcode | 1) | ((unsigned)new_offset & 0x7ff) << 6 |
                   ((reg + i) & 31) << 17 | (flags ^ 0x2a5) << 22;
    if (offsets[i] != offset || out[i] != ref) ++bad;
  }
  printf("in[0] %08x -> offset %d, out %08x; in[1] %08x -> offset %d, out %08x\n", in[0],
         offsets[0], out[0], in[1], offsets[1], out[1]);
  printf("%d mismatches\n", bad);
  bool ok = bad == 0;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
