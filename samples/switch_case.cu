// A switch on data inside a loop: each thread runs a small stack-machine
// program of opcodes, taking a different case at every step.
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

enum Op { PUSH = 0, ADD = 1, MUL = 2, NEG = 3 };

__global__ void interpret(const unsigned char* code, int len, const int* seeds, int* out,
                          int n) {
  int i = threadIdx.x;
  if (i >= n) return;
  int stack[8];
  int sp = 0;
  stack[sp++] = seeds[i];
  for (int pc = 0; pc < len; ++pc) {
    unsigned char c = code[(pc + i) % len];
    switch (c & 3) {
      case PUSH:
        if (sp < 8) stack[sp++] = (c >> 2) + i;
        break;
      case ADD:
        if (sp >= 2) { stack[sp - 2] += stack[sp - 1]; --sp; }
        break;
      case MUL:
        if (sp >= 2) { stack[sp - 2] *= stack[sp - 1]; --sp; }
        break;
      default:
        stack[sp - 1] = -stack[sp - 1];
        break;
    }
  }
  out[i] = stack[sp - 1] * 16 + sp;
}

int main() {
  const int len = 12, n = 32;
  const unsigned char code[len] = {0x14, 0x08, 0x01, 0x0c, 0x02, 0x03,
                                   0x20, 0x01, 0x04, 0x03, 0x02, 0x01};
  int seeds[n];
  for (int i = 0; i < n; ++i) seeds[i] = i - 7;

  unsigned char* d_code;
  int *d_seeds, *d_out;
  CHECK(cudaMalloc(&d_code, sizeof(code)));
  CHECK(cudaMalloc(&d_seeds, sizeof(seeds)));
  CHECK(cudaMalloc(&d_out, sizeof(seeds)));
  CHECK(cudaMemcpy(d_code, code, sizeof(code), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_seeds, seeds, sizeof(seeds), cudaMemcpyHostToDevice));
  interpret<<<1, n>>>(d_code, len, d_seeds, d_out, n);
  CHECK(cudaGetLastError());
  int out[n];
  CHECK(cudaMemcpy(out, d_out, sizeof(out), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d_code));
  CHECK(cudaFree(d_seeds));
  CHECK(cudaFree(d_out));

  int bad = 0;
  for (int i = 0; i < n; ++i) {
    int stack[8], sp = 0;
    stack[sp++] = seeds[i];
    for (int pc = 0; pc < len; ++pc) {
      unsigned char c = code[(pc + i) % len];
      int op = c & 3;
      if (op == PUSH && sp < 8) stack[sp++] = (c >> 2) + i;
      else if (op == ADD && sp >= 2) { stack[sp - 2] += stack[sp - 1]; --sp; }
      else if (op == MUL && sp >= 2) { stack[sp - 2] *= stack[sp - 1]; --sp; }
      else if (op == NEG) stack[sp - 1] = -stack[sp - 1];
    }
    if (out[i] != stack[sp - 1] * 16 + sp) ++bad;
  }
  printf("out[0..5] = %d %d %d %d %d %d\n", out[0], out[1], out[2], out[3], out[4], out[5]);
  printf("%d mismatches\n", bad);
  bool ok = bad == 0;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
