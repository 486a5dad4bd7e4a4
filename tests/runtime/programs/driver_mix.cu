// The runtime and the driver API in one process share one session, as
// CUDA's runtime works in the driver's primary context: memory from
// cudaMalloc is used by a module loaded with cuModuleLoadData into the
// primary context, without cuCtxCreate, and a driver call comes after the
// runtime's queued work.  argv[1]: "runtime-first" or "driver-first" (which
// library opens the session), or "no-cuinit": the program never calls cuInit
// (the runtime has initialised the driver, as CUDA's does).
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <vector>

static const char* kPtx = R"(
.version 7.0
.target sm_75
.address_size 64
.visible .entry add_k(.param .u64 p, .param .u32 k)
{
  .reg .b32 r<4>;
  .reg .b64 rd<4>;
  ld.param.u64 rd1, [p];
  ld.param.u32 r1, [k];
  mov.u32 r2, %tid.x;
  cvta.to.global.u64 rd2, rd1;
  mul.wide.u32 rd3, r2, 4;
  add.s64 rd2, rd2, rd3;
  ld.global.u32 r3, [rd2];
  add.u32 r3, r3, r1;
  st.global.u32 [rd2], r3;
  ret;
}
)";

__global__ void fill(int* p) { p[threadIdx.x] = int(threadIdx.x) * 3; }

int main(int argc, char** argv) {
  bool driver_first = argc > 1 && std::strcmp(argv[1], "driver-first") == 0;
  const int n = 256;
  if (driver_first) printf("cuInit %d\n", int(cuInit(0)));
  int* d = nullptr;
  printf("cudaMalloc %s\n", cudaGetErrorName(cudaMalloc(&d, n * sizeof(int))));
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  fill<<<1, n, 0, s>>>(d);  // queued: the driver's launch below must come after it
  bool no_init = argc > 1 && std::strcmp(argv[1], "no-cuinit") == 0;
  if (!driver_first && !no_init) printf("cuInit %d\n", int(cuInit(0)));
  CUdevice dev = -1;
  printf("cuCtxGetDevice %d\n", int(cuCtxGetDevice(&dev)));
  printf("device %d\n", int(dev));
  CUcontext ctx = nullptr;
  printf("cuCtxGetCurrent %d\n", int(cuCtxGetCurrent(&ctx)));
  printf("has_context %d\n", ctx != nullptr);
  CUmodule m;
  printf("cuModuleLoadData %d\n", int(cuModuleLoadData(&m, kPtx)));
  CUfunction f;
  printf("cuModuleGetFunction %d\n", int(cuModuleGetFunction(&f, m, "add_k")));
  CUdeviceptr p = reinterpret_cast<CUdeviceptr>(d);
  int k = 1000;
  void* args[] = {&p, &k};
  printf("cuLaunchKernel %d\n", int(cuLaunchKernel(f, 1, 1, 1, n, 1, 1, 0, nullptr, args, nullptr)));
  std::vector<int> h(n);
  printf("cudaMemcpy %s\n", cudaGetErrorName(cudaMemcpy(h.data(), d, n * sizeof(int), cudaMemcpyDeviceToHost)));
  int wrong = 0;
  for (int i = 0; i < n; ++i) wrong += h[i] != i * 3 + 1000;
  printf("wrong %d\n", wrong);
  // Driver memory is the runtime's too.
  CUdeviceptr q;
  printf("cuMemAlloc %d\n", int(cuMemAlloc(&q, 64)));
  int v[16], back[16];
  for (int i = 0; i < 16; ++i) v[i] = i * i;
  printf("cudaMemcpy_to_driver_memory %s\n",
         cudaGetErrorName(cudaMemcpy(reinterpret_cast<void*>(q), v, sizeof v, cudaMemcpyHostToDevice)));
  printf("cuMemcpyDtoH %d\n", int(cuMemcpyDtoH(back, q, sizeof back)));
  printf("same %d\n", std::memcmp(v, back, sizeof v) == 0);
  printf("cuModuleUnload %d\n", int(cuModuleUnload(m)));
  printf("done\n");
  return 0;
}
