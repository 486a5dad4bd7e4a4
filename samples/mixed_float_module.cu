// A module holding floating-point kernels beside the integer kernel that is
// launched: the float kernels are compiled into the same fatbinary but never
// run, so a runtime must accept the module and run the integer kernel.
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

__global__ void saxpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

__global__ void normalize(double* v, int n) {
  int i = threadIdx.x;
  if (i < n) v[i] = v[i] / sqrt(v[i] * v[i] + 1.0);
}

__global__ void int_axpy(int a, const int* x, int* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

int main() {
  const int n = 48;
  int x[n], y[n];
  for (int i = 0; i < n; ++i) {
    x[i] = i - 24;
    y[i] = 3 * i + 1;
  }
  int *d_x, *d_y;
  CHECK(cudaMalloc(&d_x, sizeof(x)));
  CHECK(cudaMalloc(&d_y, sizeof(y)));
  CHECK(cudaMemcpy(d_x, x, sizeof(x), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_y, y, sizeof(y), cudaMemcpyHostToDevice));
  int_axpy<<<2, 32>>>(-7, d_x, d_y, n);
  CHECK(cudaGetLastError());
  int out[n];
  CHECK(cudaMemcpy(out, d_y, sizeof(out), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d_x));
  CHECK(cudaFree(d_y));

  int bad = 0;
  for (int i = 0; i < n; ++i)
    if (out[i] != -7 * x[i] + y[i]) ++bad;
  printf("int_axpy: out[0] %d out[24] %d out[47] %d (float kernels present, not launched)\n",
         out[0], out[24], out[47]);
  printf("%d mismatches\n", bad);
  bool ok = bad == 0;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
