// A kernel compiled at run time with its constants given as -D options,
// loaded as the CUBIN NVRTC produces.
#include "check.h"

static const char* kSource = R"(
extern "C" __global__ void affine(int* out, const int* in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = SCALE * in[i] + OFFSET;
}
)";

int main() {
  const int scale = 3, offset = -7, n = 200;
  nvrtcProgram prog;
  CHECK_NVRTC(nvrtcCreateProgram(&prog, kSource, "affine.cu", 0, nullptr, nullptr));
  compile(prog, {"--gpu-architecture=sm_75", "-DSCALE=3", "-D", "OFFSET=(-7)"});
  size_t size;
  CHECK_NVRTC(nvrtcGetCUBINSize(prog, &size));
  std::vector<char> cubin(size);
  CHECK_NVRTC(nvrtcGetCUBIN(prog, cubin.data()));
  CHECK_NVRTC(nvrtcDestroyProgram(&prog));

  CUcontext ctx = open_device();
  CUmodule module;
  CUfunction fn;
  CHECK_CU(cuModuleLoadData(&module, cubin.data()));
  CHECK_CU(cuModuleGetFunction(&fn, module, "affine"));
  std::vector<int> in(n), out(n, 0);
  for (int i = 0; i < n; ++i) in[i] = i * 5 - 300;
  CUdeviceptr d_in, d_out;
  CHECK_CU(cuMemAlloc(&d_in, n * sizeof(int)));
  CHECK_CU(cuMemAlloc(&d_out, n * sizeof(int)));
  CHECK_CU(cuMemcpyHtoD(d_in, in.data(), n * sizeof(int)));
  CHECK_CU(cuMemsetD32(d_out, 0xdeadbeef, n));
  int count = n;
  void* args[] = {&d_out, &d_in, &count};
  CHECK_CU(cuLaunchKernel(fn, (n + 63) / 64, 1, 1, 64, 1, 1, 0, nullptr, args, nullptr));
  CHECK_CU(cuCtxSynchronize());
  CHECK_CU(cuMemcpyDtoH(out.data(), d_out, n * sizeof(int)));
  int bad = 0;
  for (int i = 0; i < n; ++i)
    if (out[i] != scale * in[i] + offset) ++bad;
  std::printf("affine: %d of %d wrong\n", bad, n);
  CHECK_CU(cuMemFree(d_in));
  CHECK_CU(cuMemFree(d_out));
  CHECK_CU(cuModuleUnload(module));
  CHECK_CU(cuCtxDestroy(ctx));
  std::printf(bad ? "FAILED\n" : "PASSED\n");
  return bad ? 1 : 0;
}
