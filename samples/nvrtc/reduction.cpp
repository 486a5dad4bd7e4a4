// A sum reduction: each block reduces its part in shared memory and with
// warp shuffles, then adds it to the total with one atomicAdd.  The launch
// uses the primary context and module globals.
#include "check.h"

static const char* kSource = R"(
#include <cstdint>
__device__ int32_t total;
extern "C" __global__ void block_sum(const int32_t* in, int n) {
  __shared__ int32_t partial[BLOCK / 32];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int32_t v = i < n ? in[i] : 0;
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    int32_t s = 0;
    for (int w = 0; w < BLOCK / 32; ++w) s += partial[w];
    atomicAdd(&total, s);
  }
}
)";

int main() {
  const int n = 1000, block = 128;
  nvrtcProgram prog;
  CHECK_NVRTC(nvrtcCreateProgram(&prog, kSource, "reduction.cu", 0, nullptr, nullptr));
  compile(prog, {"-DBLOCK=128"});
  std::string ptx = program_ptx(prog);
  CHECK_NVRTC(nvrtcDestroyProgram(&prog));

  CUdevice dev;
  CUcontext ctx;
  CHECK_CU(cuInit(0));
  CHECK_CU(cuDeviceGet(&dev, 0));
  CHECK_CU(cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK_CU(cuCtxSetCurrent(ctx));
  CUmodule module;
  CUfunction fn;
  CHECK_CU(cuModuleLoadData(&module, ptx.c_str()));
  CHECK_CU(cuModuleGetFunction(&fn, module, "block_sum"));
  CUdeviceptr d_total;
  size_t total_size;
  CHECK_CU(cuModuleGetGlobal(&d_total, &total_size, module, "total"));

  std::vector<int> in(n);
  long long want = 0;
  for (int i = 0; i < n; ++i) want += in[i] = (i * 7919) % 1001 - 500;
  CUdeviceptr d_in;
  CHECK_CU(cuMemAlloc(&d_in, n * sizeof(int)));
  CHECK_CU(cuMemcpyHtoD(d_in, in.data(), n * sizeof(int)));
  CHECK_CU(cuMemsetD8(d_total, 0, total_size));
  int count = n;
  void* args[] = {&d_in, &count};
  CHECK_CU(cuLaunchKernel(fn, (n + block - 1) / block, 1, 1, block, 1, 1, 0, nullptr, args, nullptr));
  int got = 0;
  CHECK_CU(cuMemcpyDtoH(&got, d_total, sizeof got));
  std::printf("sum of %d values: %d (expected %lld)\n", n, got, want);
  CHECK_CU(cuMemFree(d_in));
  CHECK_CU(cuModuleUnload(module));
  CHECK_CU(cuDevicePrimaryCtxRelease(dev));
  bool ok = got == want;
  std::printf(ok ? "PASSED\n" : "FAILED\n");
  return ok ? 0 : 1;
}
