// A small self-checking program for the shim's tests: allocations, copies
// both ways, a __device__ and a __constant__ variable, a kernel with mixed
// parameter sizes, and cudaFuncGetAttributes' ptxVersion (the virtual
// architecture of the PTX that runs: compute_75, which CUB's dispatch
// relies on).  Prints PASSED or FAILED.
#include <cstdio>

__device__ int offsets[4] = {100, 200, 300, 400};
__constant__ int scale;

__global__ void axpb(int* out, const int* in, int n, char bias, long long extra) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * scale + offsets[i & 3] + bias + int(extra);
}

int main() {
  const int n = 8;
  int in[n], out[n];
  for (int i = 0; i < n; ++i) in[i] = i + 1;
  int *d_in, *d_out;
  if (cudaMalloc(&d_in, sizeof in) != cudaSuccess || cudaMalloc(&d_out, sizeof out) != cudaSuccess) {
    printf("cudaMalloc failed\nFAILED\n");
    return 1;
  }
  int s = 3;
  cudaMemcpy(d_in, in, sizeof in, cudaMemcpyHostToDevice);
  cudaMemcpyToSymbol(scale, &s, sizeof s);
  axpb<<<2, 4>>>(d_out, d_in, n, 5, 1000);
  cudaError_t e = cudaDeviceSynchronize();
  cudaMemcpy(out, d_out, sizeof out, cudaMemcpyDeviceToHost);
  int bad = 0;
  for (int i = 0; i < n; ++i) {
    int want = in[i] * 3 + 100 * (1 + (i & 3)) + 5 + 1000;
    if (out[i] != want) {
      printf("out[%d] = %d, expected %d\n", i, out[i], want);
      ++bad;
    }
  }
  cudaFuncAttributes attr = {};
  if (cudaFuncGetAttributes(&attr, axpb) != cudaSuccess || attr.ptxVersion != 75) {
    printf("cudaFuncGetAttributes: ptxVersion %d, expected 75 (compute_75)\n", attr.ptxVersion);
    ++bad;
  }
  cudaFree(d_in);
  cudaFree(d_out);
  printf("%s\n", e == cudaSuccess && !bad ? "PASSED" : "FAILED");
  return bad ? 1 : 0;
}
