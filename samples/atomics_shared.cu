// Integer atomics on shared memory: a block of 96 threads (three warps)
// updates shared counters with add, sub, min, max, and, or, xor, inc, dec
// and exch, then thread 0 publishes them.
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

enum Slot { ADD, SUB, MIN, MAX, AND, OR, XOR, INC, DEC, EXCH, kSlots };

__global__ void shared_atomics(const int* in, int* out) {
  __shared__ int s[kSlots];
  __shared__ unsigned exch_mask[4];
  int t = threadIdx.x;
  unsigned* u = (unsigned*)s;
  if (t < kSlots) s[t] = t == MIN ? 0x7fffffff : (t == MAX ? (int)0x80000000 : (t == AND ? -1 : 0));
  if (t < 4) exch_mask[t] = 0;
  __syncthreads();
  int v = in[t];
  atomicAdd(&s[ADD], v);
  atomicSub(&s[SUB], v);
  atomicMin(&s[MIN], v);
  atomicMax(&s[MAX], v);
  atomicAnd(&u[AND], (unsigned)v | 0xff00ff00u);
  atomicOr(&u[OR], (unsigned)v & 0x00ff00ffu);
  atomicXor(&u[XOR], (unsigned)v);
  atomicInc(&u[INC], 0xffffffffu);
  atomicDec(&u[DEC], 0xffffffffu);
  int previous = atomicExch(&s[EXCH], t + 1);  // 0 for the first thread
  atomicOr(&exch_mask[previous / 32], 1u << (previous % 32));
  __syncthreads();
  if (t < kSlots) out[t] = s[t];
  if (t < 4) out[kSlots + t] = exch_mask[t];
}

int main() {
  const int n = 96;
  int in[n];
  for (int i = 0; i < n; ++i) in[i] = (i * 7919) % 2001 - 1000;

  int *d_in, *d_out;
  CHECK(cudaMalloc(&d_in, sizeof(in)));
  CHECK(cudaMalloc(&d_out, (kSlots + 4) * sizeof(int)));
  CHECK(cudaMemcpy(d_in, in, sizeof(in), cudaMemcpyHostToDevice));
  shared_atomics<<<1, n>>>(d_in, d_out);
  CHECK(cudaGetLastError());
  int out[kSlots + 4];
  CHECK(cudaMemcpy(out, d_out, sizeof(out), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d_in));
  CHECK(cudaFree(d_out));

  int add = 0, mn = 0x7fffffff, mx = (int)0x80000000;
  unsigned a = ~0u, o = 0, x = 0;
  for (int i = 0; i < n; ++i) {
    add += in[i];
    mn = in[i] < mn ? in[i] : mn;
    mx = in[i] > mx ? in[i] : mx;
    a &= (unsigned)in[i] | 0xff00ff00u;
    o |= (unsigned)in[i] & 0x00ff00ffu;
    x ^= (unsigned)in[i];
  }
  int bad = 0;
  if (out[ADD] != add || out[SUB] != -add || out[MIN] != mn || out[MAX] != mx) ++bad;
  if ((unsigned)out[AND] != a || (unsigned)out[OR] != o || (unsigned)out[XOR] != x) ++bad;
  if (out[INC] != n || out[DEC] != -n) ++bad;  // dec with limit ~0 wraps 0 to ~0, then counts down
  // atomicExch saw 0 and every thread's t+1 except the last stored: 96 distinct
  // values out of 0..96, missing exactly the final one.
  int seen = 0;
  for (int w = 0; w < 4; ++w) seen += __builtin_popcount((unsigned)out[kSlots + w]);
  bool last_unseen = !((unsigned)out[kSlots + out[EXCH] / 32] >> (out[EXCH] % 32) & 1);
  if (seen != n || !last_unseen || out[EXCH] < 1 || out[EXCH] > n) ++bad;
  printf("add %d sub %d min %d max %d and %08x or %08x xor %08x\n", out[ADD], out[SUB], out[MIN],
         out[MAX], (unsigned)out[AND], (unsigned)out[OR], (unsigned)out[XOR]);
  printf("inc %d dec %d, exch values seen %d, %d mismatches\n", out[INC], out[DEC], seen, bad);
  bool ok = bad == 0;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
