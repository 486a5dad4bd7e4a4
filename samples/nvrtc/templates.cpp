// Kernel templates instantiated through name expressions and launched by
// their lowered (mangled) names; a header passed in memory.
#include "check.h"

static const char* kHeader = R"(
#pragma once
template <typename T> __device__ T mix(T x, T k) { return x * k + (x >> 1); }
)";
static const char* kSource = R"(
#include "mix.h"
namespace kern {
template <typename T, int K>
__global__ void apply(T* data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = mix<T>(data[i], T(K));
}
}
)";

template <typename T, int K>
static T expected(T x) { return x * T(K) + (x >> 1); }

template <typename T, int K>
static int run(CUmodule module, nvrtcProgram prog, const char* expr) {
  const char* lowered = nullptr;
  CHECK_NVRTC(nvrtcGetLoweredName(prog, expr, &lowered));
  CUfunction fn;
  CHECK_CU(cuModuleGetFunction(&fn, module, lowered));
  const int n = 96;
  std::vector<T> host(n), out(n);
  for (int i = 0; i < n; ++i) host[i] = T(i * 37 - 1000);
  CUdeviceptr d;
  CHECK_CU(cuMemAlloc(&d, n * sizeof(T)));
  CHECK_CU(cuMemcpyHtoD(d, host.data(), n * sizeof(T)));
  int count = n;
  void* args[] = {&d, &count};
  CHECK_CU(cuLaunchKernel(fn, 2, 1, 1, 48, 1, 1, 0, nullptr, args, nullptr));
  CHECK_CU(cuMemcpyDtoH(out.data(), d, n * sizeof(T)));
  CHECK_CU(cuMemFree(d));
  int bad = 0;
  for (int i = 0; i < n; ++i)
    if (out[i] != expected<T, K>(host[i])) ++bad;
  std::printf("%s -> %s: %d of %d wrong\n", expr, lowered, bad, n);
  return bad;
}

int main() {
  const char* header_name = "mix.h";
  nvrtcProgram prog;
  CHECK_NVRTC(nvrtcCreateProgram(&prog, kSource, "templates.cu", 1, &kHeader, &header_name));
  const char* exprs[] = {"kern::apply<int, 3>", "&kern::apply<unsigned int, 5>"};
  for (const char* e : exprs) CHECK_NVRTC(nvrtcAddNameExpression(prog, e));
  compile(prog, {"-arch=compute_75", "-std=c++17"});
  std::string ptx = program_ptx(prog);

  CUcontext ctx = open_device();
  CUmodule module;
  CHECK_CU(cuModuleLoadData(&module, ptx.c_str()));
  int bad = run<int, 3>(module, prog, exprs[0]) + run<unsigned int, 5>(module, prog, exprs[1]);
  CHECK_NVRTC(nvrtcDestroyProgram(&prog));
  CHECK_CU(cuModuleUnload(module));
  CHECK_CU(cuCtxDestroy(ctx));
  std::printf(bad ? "FAILED\n" : "PASSED\n");
  return bad ? 1 : 0;
}
