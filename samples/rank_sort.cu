// Sorting by rank: 64 threads each count, in shared memory, how many
// elements must precede theirs (ties broken by index) and scatter their
// element to that position; a short-data sort of signed shorts.
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

const int kN = 64;

__global__ void rank_sort(const short* in, short* out) {
  __shared__ short s[kN];
  int t = threadIdx.x;
  short v = in[t];
  s[t] = v;
  __syncthreads();
  int rank = 0;
  for (int j = 0; j < kN; ++j) rank += s[j] < v || (s[j] == v && j < t);
  out[rank] = v;
}

int main() {
  short in[kN];
  for (int i = 0; i < kN; ++i) in[i] = (short)((i * 7919) % 601 - 300) * (i % 4 == 0 ? 50 : 1);

  short *d_in, *d_out;
  CHECK(cudaMalloc(&d_in, sizeof(in)));
  CHECK(cudaMalloc(&d_out, sizeof(in)));
  CHECK(cudaMemcpy(d_in, in, sizeof(in), cudaMemcpyHostToDevice));
  rank_sort<<<1, kN>>>(d_in, d_out);
  CHECK(cudaGetLastError());
  short out[kN];
  CHECK(cudaMemcpy(out, d_out, sizeof(out), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d_in));
  CHECK(cudaFree(d_out));

  // Reference: selection sort of a copy.
  short ref[kN];
  for (int i = 0; i < kN; ++i) ref[i] = in[i];
  for (int i = 0; i < kN; ++i)
    for (int j = i + 1; j < kN; ++j)
      if (ref[j] < ref[i]) { short tmp = ref[i]; ref[i] = ref[j]; ref[j] = tmp; }
  int bad = 0;
  for (int i = 0; i < kN; ++i)
    if (out[i] != ref[i]) ++bad;
  printf("sorted: %d %d %d %d ... %d %d %d %d\n", out[0], out[1], out[2], out[3], out[kN - 4],
         out[kN - 3], out[kN - 2], out[kN - 1]);
  printf("%d mismatches\n", bad);
  bool ok = bad == 0;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
