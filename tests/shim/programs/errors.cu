// Bad input, one case a line: "<case> <cudaError name>".
#include <cstdio>

__global__ void touch(int* p) { p[threadIdx.x] = 1; }

static void report(const char* what, cudaError_t e) {
  printf("%s %s\n", what, cudaGetErrorName(e));
  cudaGetLastError();
}

int main() {
  int host[64] = {0};
  int *a, *b;
  report("malloc", cudaMalloc(&a, 64));
  report("malloc_too_big", cudaMalloc(&b, size_t(1) << 33));  // beyond every backend's device
  report("copy_past_end", cudaMemcpy(a, host, 128, cudaMemcpyHostToDevice));
  report("read_past_end", cudaMemcpy(host, a + 8, 64, cudaMemcpyDeviceToHost));
  report("memset_past_end", cudaMemset(a, 0, 65));
  report("copy_never_allocated", cudaMemcpy((void*)0x10003f00, host, 4, cudaMemcpyHostToDevice));
  report("free", cudaFree(a));
  report("copy_to_freed", cudaMemcpy(a, host, 4, cudaMemcpyHostToDevice));
  report("free_twice", cudaFree(a));
  report("launch_not_a_kernel", cudaLaunchKernel((const void*)&report, dim3(1), dim3(1), nullptr, 0, 0));
  report("symbol_not_registered", cudaMemcpyToSymbol(host, host, 4));
  cudaMipmappedArray_t arr;
  cudaChannelFormatDesc desc = cudaCreateChannelDesc(32, 0, 0, 0, cudaChannelFormatKindSigned);
  report("unsupported_call", cudaMallocMipmappedArray(&arr, &desc, make_cudaExtent(4, 4, 0), 2, 0));
  report("unsupported_again", cudaMallocMipmappedArray(&arr, &desc, make_cudaExtent(4, 4, 0), 2, 0));
  report("sync", cudaDeviceSynchronize());
  printf("done\n");
  return 0;
}
