// Prints what the CUDA runtime reports of the device, one `name=value` a
// line: properties, attributes, memory, limits, and what happens when the
// program asks for more than the device has.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void nothing(int* out) { out[threadIdx.x] = 0; }

int main() {
  cudaDeviceProp p;
  if (cudaGetDeviceProperties(&p, 0) != cudaSuccess) return 1;
  std::printf("totalGlobalMem=%zu\nsharedMemPerBlock=%zu\nsharedMemPerBlockOptin=%zu\ntotalConstMem=%zu\n",
              p.totalGlobalMem, p.sharedMemPerBlock, p.sharedMemPerBlockOptin, p.totalConstMem);
  std::printf("maxThreadsPerBlock=%d\nmaxThreadsDim=%d,%d,%d\nmaxGridSize=%d,%d,%d\nwarpSize=%d\n",
              p.maxThreadsPerBlock, p.maxThreadsDim[0], p.maxThreadsDim[1], p.maxThreadsDim[2], p.maxGridSize[0],
              p.maxGridSize[1], p.maxGridSize[2], p.warpSize);
  std::printf("regsPerBlock=%d\n", p.regsPerBlock);
  cudaFuncAttributes fa;
  if (cudaFuncGetAttributes(&fa, nothing) != cudaSuccess) return 1;
  std::printf("func.numRegs=%d\nfunc.maxThreadsPerBlock=%d\n", fa.numRegs, fa.maxThreadsPerBlock);
  const cudaDeviceAttr attrs[] = {cudaDevAttrMaxThreadsPerBlock, cudaDevAttrMaxGridDimX, cudaDevAttrMaxGridDimY,
                                  cudaDevAttrMaxSharedMemoryPerBlock, cudaDevAttrMaxSharedMemoryPerBlockOptin,
                                  cudaDevAttrTotalConstantMemory, cudaDevAttrClockRate};
  const char* names[] = {"MaxThreadsPerBlock", "MaxGridDimX", "MaxGridDimY", "MaxSharedMemoryPerBlock",
                         "MaxSharedMemoryPerBlockOptin", "TotalConstantMemory", "ClockRate"};
  for (int i = 0; i < 7; ++i) {
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
  // The L2 the device declares, and the hints about it (accepted, checked
  // against the figures, read back).
  std::printf("l2CacheSize=%d\npersistingL2CacheMaxSize=%d\naccessPolicyMaxWindowSize=%d\n", p.l2CacheSize,
              p.persistingL2CacheMaxSize, p.accessPolicyMaxWindowSize);
  const cudaDeviceAttr l2_attrs[] = {cudaDevAttrL2CacheSize, cudaDevAttrMaxPersistingL2CacheSize,
                                     cudaDevAttrMaxAccessPolicyWindowSize};
  const char* l2_names[] = {"L2CacheSize", "MaxPersistingL2CacheSize", "MaxAccessPolicyWindowSize"};
  for (int i = 0; i < 3; ++i) {
    int v = -1;
    cudaError_t e = cudaDeviceGetAttribute(&v, l2_attrs[i], 0);
    std::printf("attr.%s=%d (%s)\n", l2_names[i], v, cudaGetErrorName(e));
  }
  std::printf("setPersistingL2Max=%s\n",
              cudaGetErrorName(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, p.persistingL2CacheMaxSize)));
  size_t persisting = 0;
  cudaDeviceGetLimit(&persisting, cudaLimitPersistingL2CacheSize);
  std::printf("persistingL2=%zu\n", persisting);
  std::printf("setPersistingL2Over=%s\n",
              cudaGetErrorName(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, p.persistingL2CacheMaxSize + 1)));
  cudaGetLastError();
  cudaStream_t s;
  cudaStreamCreate(&s);
  cudaStreamAttrValue v = {};
  v.accessPolicyWindow.base_ptr = d;
  v.accessPolicyWindow.num_bytes = 4096;
  v.accessPolicyWindow.hitRatio = 0.5f;
  v.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
  v.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
  std::printf("setWindow=%s\n", cudaGetErrorName(cudaStreamSetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &v)));
  cudaStreamAttrValue back = {};
  cudaError_t ge = cudaStreamGetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &back);
  std::printf("getWindow=%zu,%.2f,%d (%s)\n", back.accessPolicyWindow.num_bytes, back.accessPolicyWindow.hitRatio,
              int(back.accessPolicyWindow.hitProp), cudaGetErrorName(ge));
  v.accessPolicyWindow.num_bytes = size_t(p.accessPolicyMaxWindowSize) + 1;
  std::printf("setWindowOver=%s\n", cudaGetErrorName(cudaStreamSetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &v)));
  cudaGetLastError();
  std::printf("resetPersisting=%s\n", cudaGetErrorName(cudaCtxResetPersistingL2Cache()));
  cudaStreamDestroy(s);
  std::printf("PASSED\n");
  return 0;
}
