// Prints what the CUDA runtime reports of the device, one `name=value` a
// line: properties, attributes, memory, limits, and what happens when the
// program asks for more than the device has.
#include <cstdio>
#include <cuda_runtime.h>

int main() {
  cudaDeviceProp p;
  if (cudaGetDeviceProperties(&p, 0) != cudaSuccess) return 1;
  std::printf("totalGlobalMem=%zu\nsharedMemPerBlock=%zu\nsharedMemPerBlockOptin=%zu\ntotalConstMem=%zu\n",
              p.totalGlobalMem, p.sharedMemPerBlock, p.sharedMemPerBlockOptin, p.totalConstMem);
  std::printf("maxThreadsPerBlock=%d\nmaxThreadsDim=%d,%d,%d\nmaxGridSize=%d,%d,%d\nwarpSize=%d\n",
              p.maxThreadsPerBlock, p.maxThreadsDim[0], p.maxThreadsDim[1], p.maxThreadsDim[2], p.maxGridSize[0],
              p.maxGridSize[1], p.maxGridSize[2], p.warpSize);
  const cudaDeviceAttr attrs[] = {cudaDevAttrMaxThreadsPerBlock, cudaDevAttrMaxGridDimX, cudaDevAttrMaxGridDimY,
                                  cudaDevAttrMaxSharedMemoryPerBlock, cudaDevAttrMaxSharedMemoryPerBlockOptin,
                                  cudaDevAttrTotalConstantMemory};
  const char* names[] = {"MaxThreadsPerBlock", "MaxGridDimX", "MaxGridDimY", "MaxSharedMemoryPerBlock",
                         "MaxSharedMemoryPerBlockOptin", "TotalConstantMemory"};
  for (int i = 0; i < 6; ++i) {
    int v = -1;
    cudaError_t e = cudaDeviceGetAttribute(&v, attrs[i], 0);
    std::printf("attr.%s=%d (%s)\n", names[i], v, cudaGetErrorName(e));
  }
  size_t free_bytes = 0, total = 0;
  cudaMemGetInfo(&free_bytes, &total);
  std::printf("memTotal=%zu\nmemFree=%zu\n", total, free_bytes);
  size_t fifo = 0, heap = 0;
  cudaDeviceGetLimit(&fifo, cudaLimitPrintfFifoSize);
  cudaDeviceGetLimit(&heap, cudaLimitMallocHeapSize);
  std::printf("printfFifo=%zu\nmallocHeap=%zu\n", fifo, heap);
  std::printf("setPrintfFifo2M=%s\n", cudaGetErrorName(cudaDeviceSetLimit(cudaLimitPrintfFifoSize, 2 << 20)));
  cudaGetLastError();
  void* d = nullptr;
  std::printf("malloc1M=%s\n", cudaGetErrorName(cudaMalloc(&d, 1 << 20)));
  cudaGetLastError();
  std::printf("PASSED\n");
  return 0;
}
