// The CUDA-sized device (interpreter only: too large for the model's
// device).  Device queries report CUDA's limits, and programs that use them
// run: cudaDeviceSetLimit/GetLimit, a multi-MiB allocation, 1024-thread
// blocks, a 100,000-block grid, 32,000 bytes of kernel parameters, 48 KiB of
// static and 64 KiB of dynamic shared memory (after opting in), device
// addresses above 2 GiB, and launches beyond the device failing with CUDA's
// errors.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

typedef unsigned int uint32_t;
typedef unsigned long long u64;

#define CHECK(call)                                                                              \
  do {                                                                                           \
    cudaError_t e_ = (call);                                                                     \
    if (e_ != cudaSuccess) {                                                                     \
      printf("CUDA error at %s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_));     \
      exit(1);                                                                              \
    }                                                                                            \
  } while (0)

// Host checks, defined after main.
static bool ok = true;
static void expect(bool cond, const char* what);
static uint32_t hash32(uint32_t x);

__device__ uint32_t dhash32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

// 1024-thread blocks over a multi-MiB buffer.
__global__ void fill(uint32_t* out, uint32_t n) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = dhash32(i);
}

// A 100,000-block grid (x beyond 65,535) and a second dimension.
__global__ void mark_blocks(uint32_t* out, uint32_t* count) {
  if (threadIdx.x == 0) {
    out[blockIdx.y * gridDim.x + blockIdx.x] = blockIdx.x * 3u + blockIdx.y;
    atomicAdd(count, 1u);
  }
}

// 32,000 bytes of parameters.
struct Big {
  uint32_t v[8000];
};
__global__ void sum_params(Big b, uint32_t* out) {
  uint32_t s = 0;
  for (uint32_t i = threadIdx.x; i < 8000; i += blockDim.x) s += b.v[i];
  atomicAdd(out, s);
}

// 48 KiB of static shared memory.
__global__ void static_shared(uint32_t* out) {
  __shared__ uint32_t s[12288];
  for (uint32_t i = threadIdx.x; i < 12288; i += blockDim.x) s[i] = i * 7u;
  __syncthreads();
  uint32_t acc = 0;
  for (uint32_t i = threadIdx.x; i < 12288; i += blockDim.x) acc += s[12287 - i];
  atomicAdd(out, acc);
}

// 64 KiB of dynamic shared memory: each of 1024 threads writes 16 words,
// then reads the mirrored ones.
__global__ void dynamic_shared(uint32_t* out) {
  extern __shared__ uint32_t s[];
  const uint32_t n = 16384;
  for (uint32_t i = threadIdx.x; i < n; i += blockDim.x) s[i] = dhash32(i);
  __syncthreads();
  for (uint32_t i = threadIdx.x; i < n; i += blockDim.x) out[i] = s[n - 1 - i];
}

// Device addresses above 2 GiB: direct, through a pointer loaded from
// memory (generic addressing), and compared and subtracted across 2^31.
__global__ void high_addresses(uint32_t* low, uint32_t* high, uint32_t** table, long long* facts) {
  uint32_t i = threadIdx.x;
  high[i] = dhash32(i) ^ 0x80000000u;
  uint32_t* via = table[0];  // a generic pointer
  via[256 + i] = i + 1;
  if (i == 0) {
    facts[0] = (long long)(high - low);
    facts[1] = high > low;
    facts[2] = (long long)(u64)high >= 0x80000000ll;
    facts[3] = (long long)(u64)(high + 256);
  }
}

int main() {
  // Limits first: the heap is fixed once a kernel has run.
  size_t fifo = 0, heap = 0, stack = 0;
  CHECK(cudaDeviceGetLimit(&fifo, cudaLimitPrintfFifoSize));
  CHECK(cudaDeviceGetLimit(&heap, cudaLimitMallocHeapSize));
  CHECK(cudaDeviceGetLimit(&stack, cudaLimitStackSize));
  printf("printf FIFO %zu, heap %zu\n", fifo, heap);
  expect(fifo == (1u << 20) && heap == (8u << 20) && stack > 0, "default limits");
  CHECK(cudaDeviceSetLimit(cudaLimitMallocHeapSize, 16u << 20));
  CHECK(cudaDeviceSetLimit(cudaLimitPrintfFifoSize, 4u << 20));
  CHECK(cudaDeviceGetLimit(&fifo, cudaLimitPrintfFifoSize));
  CHECK(cudaDeviceGetLimit(&heap, cudaLimitMallocHeapSize));
  printf("printf FIFO %zu, heap %zu after cudaDeviceSetLimit\n", fifo, heap);
  expect(fifo == (4u << 20) && heap == (16u << 20), "limits set");

  cudaDeviceProp p;
  CHECK(cudaGetDeviceProperties(&p, 0));
  printf("global %zu, shared/block %zu (opt-in %zu), constant %zu, threads/block %d, block (%d,%d,%d), "
              "grid (%d,%d,%d)\n",
              p.totalGlobalMem, p.sharedMemPerBlock, p.sharedMemPerBlockOptin, p.totalConstMem, p.maxThreadsPerBlock,
              p.maxThreadsDim[0], p.maxThreadsDim[1], p.maxThreadsDim[2], p.maxGridSize[0], p.maxGridSize[1],
              p.maxGridSize[2]);
  expect(p.totalGlobalMem >= (1ull << 30), "at least 1 GiB of global memory");
  expect(p.maxThreadsPerBlock == 1024 && p.maxThreadsDim[2] == 64, "1024 threads per block");
  expect(p.maxGridSize[0] == 2147483647 && p.maxGridSize[1] == 65535 && p.maxGridSize[2] == 65535, "CUDA's grids");
  expect(p.sharedMemPerBlock == 48 * 1024 && p.sharedMemPerBlockOptin == 64 * 1024, "shared memory");
  expect(p.totalConstMem == 64 * 1024, "constant memory");
  int v = 0;
  CHECK(cudaDeviceGetAttribute(&v, cudaDevAttrMaxThreadsPerBlock, 0));
  expect(v == p.maxThreadsPerBlock, "attribute: threads per block");
  CHECK(cudaDeviceGetAttribute(&v, cudaDevAttrMaxGridDimX, 0));
  expect(v == p.maxGridSize[0], "attribute: grid x");
  CHECK(cudaDeviceGetAttribute(&v, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0));
  expect(v == int(p.sharedMemPerBlockOptin), "attribute: opt-in shared memory");
  size_t free_bytes = 0, total = 0;
  CHECK(cudaMemGetInfo(&free_bytes, &total));
  expect(total == p.totalGlobalMem && free_bytes <= total && free_bytes + (16u << 20) >= total,
         "cudaMemGetInfo: all free but the heap");

  // 8 MiB, 1024-thread blocks.
  const uint32_t n = 2u << 20;
  uint32_t* big;
  CHECK(cudaMalloc(&big, n * sizeof(uint32_t)));
  fill<<<n / 1024, 1024>>>(big, n);
  CHECK(cudaGetLastError());
  uint32_t* host = (uint32_t*)malloc(n * sizeof(uint32_t));
  CHECK(cudaMemcpy(host, big, n * sizeof(uint32_t), cudaMemcpyDeviceToHost));
  bool same = true;
  for (uint32_t i = 0; i < n; ++i) same &= host[i] == hash32(i);
  expect(same, "8 MiB filled by 2048 blocks of 1024 threads");
  printf("8 MiB buffer: word 0x%x = %08x\n", n - 1, host[n - 1]);
  CHECK(cudaFree(big));
  free(host);

  // 100,000 x 2 blocks.
  const uint32_t gx = 100000, gy = 2;
  uint32_t *marks, *count;
  CHECK(cudaMalloc(&marks, gx * gy * sizeof(uint32_t)));
  CHECK(cudaMalloc(&count, sizeof(uint32_t)));
  CHECK(cudaMemset(count, 0, sizeof(uint32_t)));
  mark_blocks<<<dim3(gx, gy), 32>>>(marks, count);
  CHECK(cudaGetLastError());
  uint32_t* m = (uint32_t*)malloc(gx * gy * sizeof(uint32_t));
  uint32_t blocks = 0;
  CHECK(cudaMemcpy(m, marks, gx * gy * sizeof(uint32_t), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(&blocks, count, sizeof blocks, cudaMemcpyDeviceToHost));
  same = blocks == gx * gy;
  for (uint32_t y = 0; y < gy; ++y)
    for (uint32_t x = 0; x < gx; ++x) same &= m[y * gx + x] == x * 3u + y;
  expect(same, "a (100000, 2) grid");
  free(m);
  printf("grid (%u, %u): %u blocks ran\n", gx, gy, blocks);

  // 32,000 bytes of parameters.
  Big* b = (Big*)malloc(sizeof(Big));
  uint32_t want = 0;
  for (uint32_t i = 0; i < 8000; ++i) want += b->v[i] = hash32(i + 77);
  CHECK(cudaMemset(count, 0, sizeof(uint32_t)));
  sum_params<<<1, 64>>>(*b, count);
  CHECK(cudaGetLastError());
  uint32_t got = 0;
  CHECK(cudaMemcpy(&got, count, sizeof got, cudaMemcpyDeviceToHost));
  expect(got == want, "32,000 bytes of parameters");
  printf("parameter sum %08x\n", got);
  free(b);

  // 48 KiB of static shared memory.
  CHECK(cudaMemset(count, 0, sizeof(uint32_t)));
  static_shared<<<1, 256>>>(count);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(&got, count, sizeof got, cudaMemcpyDeviceToHost));
  want = 0;
  for (uint32_t i = 0; i < 12288; ++i) want += i * 7u;
  expect(got == want, "48 KiB of static shared memory");

  // 64 KiB of dynamic shared memory: refused without the attribute.
  uint32_t* dyn;
  CHECK(cudaMalloc(&dyn, 65536));
  dynamic_shared<<<1, 1024, 65536>>>(dyn);
  cudaError_t e = cudaGetLastError();
  printf("64 KiB dynamic shared memory without opting in: %s\n", cudaGetErrorName(e));
  expect(e == cudaErrorInvalidValue, "64 KiB refused without the attribute");
  CHECK(cudaFuncSetAttribute(dynamic_shared, cudaFuncAttributeMaxDynamicSharedMemorySize, 65536));
  cudaFuncAttributes fa;
  CHECK(cudaFuncGetAttributes(&fa, dynamic_shared));
  expect(fa.maxDynamicSharedSizeBytes == 65536, "cudaFuncGetAttributes reports the attribute");
  dynamic_shared<<<1, 1024, 65536>>>(dyn);
  CHECK(cudaGetLastError());
  uint32_t* d = (uint32_t*)malloc(65536);
  CHECK(cudaMemcpy(d, dyn, 65536, cudaMemcpyDeviceToHost));
  same = true;
  for (uint32_t i = 0; i < 16384; ++i) same &= d[i] == hash32(16383 - i);
  expect(same, "64 KiB of dynamic shared memory");
  free(d);
  e = cudaFuncSetAttribute(dynamic_shared, cudaFuncAttributeMaxDynamicSharedMemorySize, 65536 + 4);
  expect(e == cudaErrorInvalidValue, "more than 64 KiB refused");
  cudaGetLastError();
  CHECK(cudaFree(dyn));

  // Addresses above 2 GiB: a large allocation nothing touches, then a
  // small one beyond it.
  uint32_t *pad, *high;
  uint32_t** table;
  long long* facts;
  const size_t pad_bytes = size_t(1900) << 20;
  CHECK(cudaMalloc(&pad, pad_bytes));
  CHECK(cudaMalloc(&high, 4096));
  CHECK(cudaMalloc(&table, sizeof(uint32_t*)));
  CHECK(cudaMalloc(&facts, 4 * sizeof(long long)));
  CHECK(cudaMemcpy(table, &high, sizeof high, cudaMemcpyHostToDevice));
  printf("high allocation at %p\n", (void*)high);
  expect(u64(high) >= 0x80000000u, "an allocation above 2 GiB");
  high_addresses<<<1, 256>>>(pad, high, table, facts);
  CHECK(cudaGetLastError());
  uint32_t h[512];
  long long f[4];
  CHECK(cudaMemcpy(h, high, 2048, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(f, facts, sizeof f, cudaMemcpyDeviceToHost));
  same = true;
  for (uint32_t i = 0; i < 256; ++i) same &= h[i] == (hash32(i) ^ 0x80000000u) && h[256 + i] == i + 1;
  expect(same, "loads and stores above 2 GiB");
  expect(f[0] == high - pad && f[1] == 1 && f[2] == 1 && f[3] == (long long)(u64)(high + 256),
         "pointer arithmetic across 2^31");
  printf("high - low = %lld words\n", f[0]);
  CHECK(cudaFree(pad));

  // Beyond the device: CUDA's errors.
  mark_blocks<<<1, 1025>>>(marks, count);
  e = cudaGetLastError();
  printf("1025 threads per block: %s\n", cudaGetErrorName(e));
  expect(e == cudaErrorInvalidConfiguration, "1025 threads refused");
  mark_blocks<<<dim3(1, 65536), 32>>>(marks, count);
  e = cudaGetLastError();
  printf("grid y of 65536: %s\n", cudaGetErrorName(e));
  expect(e == cudaErrorInvalidConfiguration, "grid y of 65536 refused");
  void* huge = nullptr;
  e = cudaMalloc(&huge, size_t(8) << 30);
  printf("cudaMalloc of 8 GiB: %s\n", cudaGetErrorName(e));
  expect(e == cudaErrorMemoryAllocation, "8 GiB refused");
  cudaGetLastError();
  // No kernel that calls malloc has run: the heap may still change.
  CHECK(cudaDeviceSetLimit(cudaLimitMallocHeapSize, 32u << 20));
  CHECK(cudaDeviceGetLimit(&heap, cudaLimitMallocHeapSize));
  expect(heap == (32u << 20), "the heap resized before any kernel used it");

  CHECK(cudaFree(high));
  CHECK(cudaFree(table));
  CHECK(cudaFree(facts));
  CHECK(cudaFree(marks));
  CHECK(cudaFree(count));
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}

static void expect(bool cond, const char* what) {
  if (!cond) {
    printf("check failed: %s\n", what);
    ok = false;
  }
}

static uint32_t hash32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}
