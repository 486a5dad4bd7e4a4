// Two translation units (with unit_kernels.cu): kernels and a variable of
// the other unit, launched from this one.
#include <cstdio>

__global__ void twice(int* p, int n);
__global__ void plus_base(int* p, int n);
void set_base(int b);

int main() {
  const int n = 4;
  int h[n] = {1, 2, 3, 4}, *d;
  cudaMalloc(&d, sizeof h);
  cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice);
  set_base(10);
  twice<<<1, n>>>(d, n);
  plus_base<<<1, n>>>(d, n);
  cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
  bool ok = cudaDeviceSynchronize() == cudaSuccess;
  for (int i = 0; i < n; ++i) ok = ok && h[i] == 2 * (i + 1) + 10;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
