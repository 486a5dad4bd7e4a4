// Every integer atomic on global memory, 64 threads of two blocks hitting the
// same words: add, sub, min, max, and, or, xor, inc, dec, exch and cas (the
// order-dependent ones checked by what must hold for any order).
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

enum Slot { ADD, SUB, MIN, MAX, AND, OR, XOR, INC, DEC, EXCH, CAS, kSlots };

__global__ void atomics(int* slots, unsigned* inc_results, int* exch_seen) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned* u = (unsigned*)slots;
  atomicAdd(&slots[ADD], t);
  atomicSub(&slots[SUB], 2 * t);
  atomicMin(&slots[MIN], 1000 - 13 * t);
  atomicMax(&slots[MAX], (t * 37) % 61);
  atomicAnd(&u[AND], ~(1u << (t % 29)));
  atomicOr(&u[OR], 1u << (t % 24));
  atomicXor(&u[XOR], (unsigned)(t * t) * 0x01000193u);
  inc_results[t] = atomicInc(&u[INC], 9);  // wraps to 0 after 9
  atomicDec(&u[DEC], 100);
  exch_seen[t] = atomicExch(&slots[EXCH], t);
  // A compare-and-swap loop adding t*t: retries until no other thread
  // changed the word between the read and the swap.
  int seen = slots[CAS], assumed;
  do {
    assumed = seen;
    seen = atomicCAS(&slots[CAS], assumed, assumed + t * t);
  } while (seen != assumed);
}

int main() {
  const int n = 64;
  int init[kSlots] = {};
  init[MIN] = 1 << 30;
  init[MAX] = -5;
  init[AND] = -1;
  init[DEC] = 50;
  init[EXCH] = -1;

  int *d_slots, *d_exch;
  unsigned* d_inc;
  CHECK(cudaMalloc(&d_slots, sizeof(init)));
  CHECK(cudaMalloc(&d_inc, n * sizeof(unsigned)));
  CHECK(cudaMalloc(&d_exch, n * sizeof(int)));
  CHECK(cudaMemcpy(d_slots, init, sizeof(init), cudaMemcpyHostToDevice));
  atomics<<<2, 32>>>(d_slots, d_inc, d_exch);
  CHECK(cudaGetLastError());
  int slots[kSlots], exch[n];
  unsigned inc[n];
  CHECK(cudaMemcpy(slots, d_slots, sizeof(slots), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(inc, d_inc, sizeof(inc), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(exch, d_exch, sizeof(exch), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d_slots));
  CHECK(cudaFree(d_inc));
  CHECK(cudaFree(d_exch));

  int ref[kSlots] = {};
  ref[MIN] = 1 << 30;
  ref[MAX] = -5;
  unsigned and_ref = ~0u, or_ref = 0, xor_ref = 0, dec_ref = 50;
  for (int t = 0; t < n; ++t) {
    ref[ADD] += t;
    ref[SUB] -= 2 * t;
    ref[CAS] += t * t;
    if (1000 - 13 * t < ref[MIN]) ref[MIN] = 1000 - 13 * t;
    if ((t * 37) % 61 > ref[MAX]) ref[MAX] = (t * 37) % 61;
    and_ref &= ~(1u << (t % 29));
    or_ref |= 1u << (t % 24);
    xor_ref ^= (unsigned)(t * t) * 0x01000193u;
    dec_ref = (dec_ref == 0 || dec_ref > 100) ? 100 : dec_ref - 1;
  }
  int bad = 0;
  if (slots[ADD] != ref[ADD] || slots[SUB] != ref[SUB]) ++bad;
  if (slots[MIN] != ref[MIN] || slots[MAX] != ref[MAX]) ++bad;
  if ((unsigned)slots[AND] != and_ref || (unsigned)slots[OR] != or_ref) ++bad;
  if ((unsigned)slots[XOR] != xor_ref || (unsigned)slots[DEC] != dec_ref) ++bad;
  // atomicInc(9) from 0, 64 times: the old values are 0..9 repeated, in some order.
  int inc_hist[10] = {};
  for (int t = 0; t < n; ++t)
    if (inc[t] <= 9) ++inc_hist[inc[t]]; else ++bad;
  for (int v = 0; v < 10; ++v)
    if (inc_hist[v] != (v < n % 10 ? n / 10 + 1 : n / 10)) ++bad;
  if ((unsigned)slots[INC] != n % 10) ++bad;
  // atomicExch: the old values are -1 and every thread id but the last one stored.
  bool seen[n + 1] = {};
  for (int t = 0; t < n; ++t) {
    int v = exch[t] + 1;
    if (v < 0 || v > n || seen[v]) ++bad; else seen[v] = true;
  }
  if (slots[EXCH] < 0 || slots[EXCH] >= n || seen[slots[EXCH] + 1]) ++bad;
  if (slots[CAS] != ref[CAS]) ++bad;
  printf("add %d sub %d min %d max %d and %08x or %08x xor %08x\n", slots[ADD], slots[SUB],
         slots[MIN], slots[MAX], (unsigned)slots[AND], (unsigned)slots[OR], (unsigned)slots[XOR]);
  printf("inc %d dec %d cas %d, %d mismatches\n", slots[INC], slots[DEC], slots[CAS], bad);
  bool ok = bad == 0;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
