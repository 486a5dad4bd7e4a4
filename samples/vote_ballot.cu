// Warp votes: __ballot_sync, __any_sync and __all_sync on lane- and
// data-dependent predicates, with __popc of a ballot counting the voters, for
// the two warps of a block.
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

__global__ void votes(const int* in, unsigned* ballots, int* flags) {
  int t = threadIdx.x, lane = t % 32, warp = t / 32;
  int v = in[t];
  unsigned odd = __ballot_sync(0xffffffffu, v & 1);
  unsigned big = __ballot_sync(0xffffffffu, v > 50);
  int any_neg = __any_sync(0xffffffffu, v < 0);
  int all_pos = __all_sync(0xffffffffu, v > 0);
  int all_small = __all_sync(0xffffffffu, v < 100);
  if (lane == 0) {
    ballots[2 * warp] = odd;
    ballots[2 * warp + 1] = big;
    flags[4 * warp] = any_neg;
    flags[4 * warp + 1] = all_pos;
    flags[4 * warp + 2] = all_small;
    flags[4 * warp + 3] = __popc(odd & ~big);
  }
}

int main() {
  const int n = 64;
  int in[n];
  for (int i = 0; i < n; ++i) in[i] = i < 32 ? (i * 17) % 97 + 1 : (i * 31) % 90 - 3;

  int *d_in, *d_flags;
  unsigned* d_ballots;
  CHECK(cudaMalloc(&d_in, sizeof(in)));
  CHECK(cudaMalloc(&d_ballots, 4 * sizeof(unsigned)));
  CHECK(cudaMalloc(&d_flags, 8 * sizeof(int)));
  CHECK(cudaMemcpy(d_in, in, sizeof(in), cudaMemcpyHostToDevice));
  votes<<<1, n>>>(d_in, d_ballots, d_flags);
  CHECK(cudaGetLastError());
  unsigned ballots[4];
  int flags[8];
  CHECK(cudaMemcpy(ballots, d_ballots, sizeof(ballots), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(flags, d_flags, sizeof(flags), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d_in));
  CHECK(cudaFree(d_ballots));
  CHECK(cudaFree(d_flags));

  int bad = 0;
  for (int w = 0; w < 2; ++w) {
    unsigned odd = 0, big = 0;
    bool any_neg = false, all_pos = true, all_small = true;
    for (int l = 0; l < 32; ++l) {
      int v = in[32 * w + l];
      if (v % 2 != 0) odd |= 1u << l;
      if (v > 50) big |= 1u << l;
      any_neg = any_neg || v < 0;
      all_pos = all_pos && v > 0;
      all_small = all_small && v < 100;
    }
    int count = 0;
    for (unsigned m = odd & ~big; m; m &= m - 1) ++count;
    if (ballots[2 * w] != odd || ballots[2 * w + 1] != big) ++bad;
    if (flags[4 * w] != any_neg || flags[4 * w + 1] != all_pos || flags[4 * w + 2] != all_small)
      ++bad;
    if (flags[4 * w + 3] != count) ++bad;
    printf("warp %d: odd %08x big %08x any<0 %d all>0 %d all<100 %d odd&small %d\n", w,
           ballots[2 * w], ballots[2 * w + 1], flags[4 * w], flags[4 * w + 1], flags[4 * w + 2],
           flags[4 * w + 3]);
  }
  printf("%d mismatches\n", bad);
  bool ok = bad == 0;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
