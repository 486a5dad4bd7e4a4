// The second translation unit of two_units: its own kernel and the host
// function that launches it.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void square(int* v, int n) {
  int i = threadIdx.x;
  if (i < n) v[i] *= v[i];
}

void square_on_device(int* v, int n) {
  square<<<1, n>>>(v, n);
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    printf("CUDA error at %s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(err));
    exit(1);
  }
}
