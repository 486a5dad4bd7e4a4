// libcuda.so.1 against a running model_host: devices, contexts, the image
// formats modules load from, launches, and the errors a user sees.  The
// tests run in order in one process (one daemon session); the sticky-error
// test is last because it leaves the context unusable, as on a GPU.
#include "build_paths.h"   // qgpu_paths() in CMakeLists.txt

#include <cuda.h>
#include <gtest/gtest.h>
#include <nvrtc.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "cubin_container.h"

namespace {

constexpr const char* kSource = R"(
__device__ int bias = 1000;
extern "C" __global__ void scale(int* p, int k, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = p[i] * k + bias;
}
extern "C" __global__ void guarded(const int* p) { assert(p[threadIdx.x] != 7); }
)";

std::string nvrtc_ptx(const char* source) {
  nvrtcProgram prog;
  EXPECT_EQ(nvrtcCreateProgram(&prog, source, "driver_test.cu", 0, nullptr, nullptr), NVRTC_SUCCESS);
  EXPECT_EQ(nvrtcCompileProgram(prog, 0, nullptr), NVRTC_SUCCESS);
  size_t size = 0;
  nvrtcGetPTXSize(prog, &size);
  std::string ptx(size, '\0');
  nvrtcGetPTX(prog, ptx.data());
  nvrtcDestroyProgram(&prog);
  ptx.pop_back();  // the size counts the terminating NUL
  return ptx;
}

std::vector<int> run_scale(CUmodule module, std::vector<int> data, int k) {
  CUfunction fn;
  EXPECT_EQ(cuModuleGetFunction(&fn, module, "scale"), CUDA_SUCCESS);
  CUdeviceptr d;
  size_t bytes = data.size() * sizeof(int);
  EXPECT_EQ(cuMemAlloc(&d, bytes), CUDA_SUCCESS);
  EXPECT_EQ(cuMemcpyHtoD(d, data.data(), bytes), CUDA_SUCCESS);
  int n = int(data.size());
  void* args[] = {&d, &k, &n};
  EXPECT_EQ(cuLaunchKernel(fn, 1, 1, 1, 64, 1, 1, 0, nullptr, args, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(cuMemcpyDtoH(data.data(), d, bytes), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree(d), CUDA_SUCCESS);
  return data;
}

TEST(Driver, NothingWorksBeforeCuInit) {
  int count = -1;
  EXPECT_EQ(cuDeviceGetCount(&count), CUDA_ERROR_NOT_INITIALIZED);
  int version = 0;
  EXPECT_EQ(cuDriverGetVersion(&version), CUDA_SUCCESS);
  EXPECT_EQ(version, CUDA_VERSION);
}

TEST(Driver, OneDeviceDescribedHonestly) {
  ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
  int count = 0;
  ASSERT_EQ(cuDeviceGetCount(&count), CUDA_SUCCESS);
  EXPECT_EQ(count, 1);
  CUdevice dev;
  EXPECT_EQ(cuDeviceGet(&dev, 1), CUDA_ERROR_INVALID_DEVICE);
  ASSERT_EQ(cuDeviceGet(&dev, 0), CUDA_SUCCESS);
  char name[128] = {};
  ASSERT_EQ(cuDeviceGetName(name, sizeof name, dev), CUDA_SUCCESS);
  EXPECT_EQ(std::string(name).rfind("qgpu", 0), 0u) << name;
  size_t total = 0;
  ASSERT_EQ(cuDeviceTotalMem(&total, dev), CUDA_SUCCESS);
  EXPECT_GT(total, 0u);
  auto attr = [&](CUdevice_attribute a) {
    int v = -1;
    EXPECT_EQ(cuDeviceGetAttribute(&v, a, dev), CUDA_SUCCESS);
    return v;
  };
  EXPECT_EQ(attr(CU_DEVICE_ATTRIBUTE_WARP_SIZE), 32);
  EXPECT_EQ(attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR), 7);
  EXPECT_EQ(attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR), 5);
  EXPECT_GE(attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK), 256);
  EXPECT_GT(attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT), 0);
  EXPECT_GT(attr(CU_DEVICE_ATTRIBUTE_CLOCK_RATE), 0);
  // The default 2 GiB device: an L2 of 4 MiB (1/64 of the memory, at most
  // 4 MiB), 3 MiB of it persisting, windows up to 128 MiB.
  EXPECT_EQ(attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE), 4 << 20);
  EXPECT_EQ(attr(CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE), 3 << 20);
  EXPECT_EQ(attr(CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE), 128 << 20);
  int v;
  EXPECT_EQ(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX, dev), CUDA_ERROR_INVALID_VALUE);
}

TEST(Driver, MemoryNeedsACurrentContext) {
  CUdeviceptr d;
  EXPECT_EQ(cuMemAlloc(&d, 64), CUDA_ERROR_INVALID_CONTEXT);
  CUcontext ctx = nullptr, cur = nullptr;
  ASSERT_EQ(cuDevicePrimaryCtxRetain(&ctx, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSetCurrent(ctx), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxGetCurrent(&cur), CUDA_SUCCESS);
  EXPECT_EQ(cur, ctx);
  ASSERT_EQ(cuMemAlloc(&d, 256), CUDA_SUCCESS);
  std::vector<uint32_t> back(64);
  ASSERT_EQ(cuMemsetD32(d, 0x01020304u, 64), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyDtoH(back.data(), d, 256), CUDA_SUCCESS);
  EXPECT_EQ(back, std::vector<uint32_t>(64, 0x01020304u));
  ASSERT_EQ(cuMemsetD8(d + 4, 0xab, 3), CUDA_SUCCESS);
  CUdeviceptr d2;
  ASSERT_EQ(cuMemAlloc(&d2, 256), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyDtoD(d2, d, 256), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyDtoH(back.data(), d2, 256), CUDA_SUCCESS);
  EXPECT_EQ(back[1], 0x01ababab);
  EXPECT_EQ(back[2], 0x01020304u);
  EXPECT_EQ(cuMemFree(d), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree(d2), CUDA_SUCCESS);
}

TEST(Driver, ModulesFromPtxCubinAndFatbinaryRunTheSameKernel) {
  std::string ptx = nvrtc_ptx(kSource);
  std::vector<int> data = {1, -2, 3, 40, 500};
  std::vector<int> want;
  for (int x : data) want.push_back(x * 3 + 1000);

  CUmodule from_ptx;
  ASSERT_EQ(cuModuleLoadData(&from_ptx, ptx.c_str()), CUDA_SUCCESS);
  EXPECT_EQ(run_scale(from_ptx, data, 3), want);
  CUdeviceptr bias;
  size_t bias_size = 0;
  ASSERT_EQ(cuModuleGetGlobal(&bias, &bias_size, from_ptx, "bias"), CUDA_SUCCESS);
  EXPECT_EQ(bias_size, sizeof(int));
  int new_bias = 7;
  ASSERT_EQ(cuMemcpyHtoD(bias, &new_bias, sizeof new_bias), CUDA_SUCCESS);
  EXPECT_EQ(run_scale(from_ptx, {10}, 2), std::vector<int>{27});
  EXPECT_EQ(cuModuleUnload(from_ptx), CUDA_SUCCESS);

  std::string cubin = qgpu::rtc_cubin::wrap(ptx, 75);
  CUmodule from_cubin;
  ASSERT_EQ(cuModuleLoadData(&from_cubin, cubin.data()), CUDA_SUCCESS);
  EXPECT_EQ(run_scale(from_cubin, data, 3), want);
  EXPECT_EQ(cuModuleUnload(from_cubin), CUDA_SUCCESS);

  std::ifstream f(QGPU_TEST_FATBIN, std::ios::binary);
  std::vector<char> fatbin((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(fatbin.empty());
  CUmodule from_fatbin;
  ASSERT_EQ(cuModuleLoadFatBinary(&from_fatbin, fatbin.data()), CUDA_SUCCESS);
  CUfunction add_one;
  ASSERT_EQ(cuModuleGetFunction(&add_one, from_fatbin, "add_one"), CUDA_SUCCESS);
  CUdeviceptr d;
  ASSERT_EQ(cuMemAlloc(&d, data.size() * sizeof(int)), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyHtoD(d, data.data(), data.size() * sizeof(int)), CUDA_SUCCESS);
  int n = int(data.size());
  // Parameters through `extra`, as one packed buffer.
  struct {
    CUdeviceptr p;
    int n;
  } packed = {d, n};
  size_t packed_size = 12;  // the .entry layout: u64 at 0, u32 at 8
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &packed, CU_LAUNCH_PARAM_BUFFER_SIZE, &packed_size,
                   CU_LAUNCH_PARAM_END};
  ASSERT_EQ(cuLaunchKernel(add_one, 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr, extra), CUDA_SUCCESS);
  std::vector<int> out(data.size());
  ASSERT_EQ(cuMemcpyDtoH(out.data(), d, out.size() * sizeof(int)), CUDA_SUCCESS);
  for (size_t i = 0; i < data.size(); ++i) EXPECT_EQ(out[i], data[i] + 1);
  EXPECT_EQ(cuMemFree(d), CUDA_SUCCESS);
  EXPECT_EQ(cuModuleUnload(from_fatbin), CUDA_SUCCESS);
}

// cuDeviceComputeCapability agrees with the attributes; the occupancy calls
// agree with the device's limits: one resident block per multiprocessor, the
// largest whose threads and shared memory fit.
TEST(Driver, ComputeCapabilityAndOccupancy) {
  auto attr = [](CUdevice_attribute a) {
    int v = -1;
    EXPECT_EQ(cuDeviceGetAttribute(&v, a, 0), CUDA_SUCCESS);
    return v;
  };
  int major = -1, minor = -1;
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"  // deprecated, and still called by programs
  ASSERT_EQ(cuDeviceComputeCapability(&major, &minor, 0), CUDA_SUCCESS);
  EXPECT_EQ(major, attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR));
  EXPECT_EQ(minor, attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR));
  EXPECT_EQ(cuDeviceComputeCapability(&major, &minor, 1), CUDA_ERROR_INVALID_DEVICE);
#pragma GCC diagnostic pop

  std::string ptx = nvrtc_ptx(kSource);
  CUmodule m;
  ASSERT_EQ(cuModuleLoadData(&m, ptx.c_str()), CUDA_SUCCESS);
  CUfunction fn;
  ASSERT_EQ(cuModuleGetFunction(&fn, m, "scale"), CUDA_SUCCESS);
  const int max_threads = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  const int smem = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  const int sms = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  const int per_sm = attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR);
  int grid = -1, block = -1;
  ASSERT_EQ(cuOccupancyMaxPotentialBlockSize(&grid, &block, fn, nullptr, 0, 0), CUDA_SUCCESS);
  EXPECT_EQ(block, max_threads);
  EXPECT_EQ(grid, sms * per_sm);
  ASSERT_EQ(cuOccupancyMaxPotentialBlockSize(&grid, &block, fn, nullptr, 0, 100), CUDA_SUCCESS);
  EXPECT_EQ(block, 100);  // the limit itself, when it fits
  ASSERT_EQ(cuOccupancyMaxPotentialBlockSizeWithFlags(&grid, &block, fn, nullptr, size_t(smem), 0, 0), CUDA_SUCCESS);
  EXPECT_EQ(block, max_threads);
  ASSERT_EQ(cuOccupancyMaxPotentialBlockSize(&grid, &block, fn, nullptr, size_t(smem) + 1, 0), CUDA_SUCCESS);
  EXPECT_EQ(block, 0);  // nothing fits
  EXPECT_EQ(grid, 0);
  // Shared memory growing with the block: the largest whole-warp block that fits.
  CUoccupancyB2DSize per_thread = [](int b) -> size_t { return size_t(b) * 4 * 1024 / 3; };
  int want = 0;
  for (int b = max_threads; b > 0 && !want; b -= (b % 32 ? b % 32 : 32))
    if (size_t(b) * 4 * 1024 / 3 <= size_t(smem)) want = b;
  ASSERT_EQ(cuOccupancyMaxPotentialBlockSize(&grid, &block, fn, per_thread, 0, 0), CUDA_SUCCESS);
  EXPECT_EQ(block, want);
  EXPECT_GT(want, 0);
  EXPECT_LT(want, max_threads);
  int blocks = -1;
  ASSERT_EQ(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, fn, 64, 0), CUDA_SUCCESS);
  EXPECT_EQ(blocks, per_sm);
  ASSERT_EQ(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, fn, max_threads + 1, 0), CUDA_SUCCESS);
  EXPECT_EQ(blocks, 0);
  EXPECT_EQ(cuModuleUnload(m), CUDA_SUCCESS);
}

// cuLaunchCooperativeKernel: grid-wide sync over the resident grid (a block
// on each multiprocessor of the interpreter's device, one per host thread,
// as the occupancy calls say); a larger grid is refused with
// CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE.
TEST(Driver, CooperativeLaunchSyncsTheGrid) {
  int coop = -1;
  ASSERT_EQ(cuDeviceGetAttribute(&coop, CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, 0), CUDA_SUCCESS);
  EXPECT_EQ(coop, 1);
  std::ifstream f(QGPU_TEST_FATBIN, std::ios::binary);
  std::vector<char> fatbin((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  CUmodule m;
  ASSERT_EQ(cuModuleLoadFatBinary(&m, fatbin.data()), CUDA_SUCCESS);
  CUfunction fn;
  ASSERT_EQ(cuModuleGetFunction(&fn, m, "grid_reverse"), CUDA_SUCCESS);
  int grid = 0, block = 0;
  ASSERT_EQ(cuOccupancyMaxPotentialBlockSize(&grid, &block, fn, nullptr, 0, 128), CUDA_SUCCESS);
  int sms = 0;
  ASSERT_EQ(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0), CUDA_SUCCESS);
  ASSERT_GE(sms, 1);
  ASSERT_EQ(grid, sms);
  const int n = 300;
  std::vector<int> in(n), out(n, -1);
  for (int i = 0; i < n; ++i) in[i] = i * 7 - 100;
  CUdeviceptr d_in, d_tmp, d_out;
  ASSERT_EQ(cuMemAlloc(&d_in, n * sizeof(int)), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAlloc(&d_tmp, n * sizeof(int)), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAlloc(&d_out, n * sizeof(int)), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyHtoD(d_in, in.data(), n * sizeof(int)), CUDA_SUCCESS);
  int nn = n;
  void* args[] = {&d_in, &d_tmp, &d_out, &nn};
  ASSERT_EQ(cuLaunchCooperativeKernel(fn, grid, 1, 1, block, 1, 1, 0, nullptr, args), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyDtoH(out.data(), d_out, n * sizeof(int)), CUDA_SUCCESS);
  for (int i = 0; i < n; ++i) ASSERT_EQ(out[i], in[n - 1 - i] * 2) << i;
  EXPECT_EQ(cuLaunchCooperativeKernel(fn, grid + 1, 1, 1, block, 1, 1, 0, nullptr, args),
            CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE);
  for (CUdeviceptr p : {d_in, d_tmp, d_out}) EXPECT_EQ(cuMemFree(p), CUDA_SUCCESS);
  EXPECT_EQ(cuModuleUnload(m), CUDA_SUCCESS);
}

TEST(Driver, LinkerTakesOnePtxInputAndRefusesASecond) {
  std::string ptx = nvrtc_ptx(kSource);
  char info[64], error[256];
  std::memset(info, 'x', sizeof info);
  std::memset(error, 'x', sizeof error);
  CUjit_option opts[] = {CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, CU_JIT_ERROR_LOG_BUFFER,
                         CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* vals[] = {info, reinterpret_cast<void*>(uintptr_t(sizeof info)), error,
                  reinterpret_cast<void*>(uintptr_t(sizeof error))};
  CUlinkState link;
  ASSERT_EQ(cuLinkCreate(4, opts, vals, &link), CUDA_SUCCESS);
  EXPECT_STREQ(info, "");  // the logs are strings from the start
  ASSERT_EQ(cuLinkAddData(link, CU_JIT_INPUT_PTX, ptx.data(), ptx.size() + 1, "kernels", 0, nullptr, nullptr),
            CUDA_SUCCESS);
  void* image = nullptr;
  size_t size = 0;
  ASSERT_EQ(cuLinkComplete(link, &image, &size), CUDA_SUCCESS);
  EXPECT_GT(size, 0u);
  CUmodule m;
  ASSERT_EQ(cuModuleLoadData(&m, image), CUDA_SUCCESS);
  EXPECT_EQ(run_scale(m, {1, 2}, 5), (std::vector<int>{1005, 1010}));
  EXPECT_EQ(cuModuleUnload(m), CUDA_SUCCESS);
  // A second input would need a device linker: refused, and said so in the log.
  EXPECT_EQ(cuLinkAddData(link, CU_JIT_INPUT_PTX, ptx.data(), ptx.size() + 1, "again", 0, nullptr, nullptr),
            CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_NE(std::string(error).find("cuLinkAddData"), std::string::npos) << error;
  EXPECT_EQ(cuLinkDestroy(link), CUDA_SUCCESS);
  EXPECT_EQ(cuLinkDestroy(link), CUDA_ERROR_INVALID_HANDLE);
}

TEST(Driver, ContextStackPushesAndPops) {
  CUcontext before = nullptr, a = nullptr, b = nullptr, got = nullptr;
  ASSERT_EQ(cuCtxGetCurrent(&before), CUDA_SUCCESS);
  ASSERT_NE(before, nullptr);
  ASSERT_EQ(cuCtxCreate(&a, nullptr, 0, 0), CUDA_SUCCESS);  // pushed over `before`
  ASSERT_EQ(cuCtxGetCurrent(&got), CUDA_SUCCESS);
  EXPECT_EQ(got, a);
  ASSERT_EQ(cuCtxPopCurrent(&got), CUDA_SUCCESS);
  EXPECT_EQ(got, a);
  ASSERT_EQ(cuCtxGetCurrent(&got), CUDA_SUCCESS);
  EXPECT_EQ(got, before);
  ASSERT_EQ(cuCtxCreate(&b, nullptr, 0, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxPushCurrent(a), CUDA_SUCCESS);  // stack: before, b, a
  ASSERT_EQ(cuCtxGetCurrent(&got), CUDA_SUCCESS);
  EXPECT_EQ(got, a);
  ASSERT_EQ(cuCtxDestroy(a), CUDA_SUCCESS);  // the current one: popped
  ASSERT_EQ(cuCtxGetCurrent(&got), CUDA_SUCCESS);
  EXPECT_EQ(got, b);
  ASSERT_EQ(cuCtxPopCurrent(nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxGetCurrent(&got), CUDA_SUCCESS);
  EXPECT_EQ(got, before);
  EXPECT_EQ(cuCtxPushCurrent(a), CUDA_ERROR_INVALID_CONTEXT);  // destroyed
  EXPECT_EQ(cuCtxDestroy(b), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxGetCurrent(&got), CUDA_SUCCESS);
  EXPECT_EQ(got, before);
}

TEST(Driver, BadImagesAreRejected) {
  CUmodule m;
  const char elf[64] = "\x7f" "ELF\x02\x01\x01";
  EXPECT_EQ(cuModuleLoadData(&m, elf), CUDA_ERROR_INVALID_IMAGE);
  EXPECT_EQ(cuModuleLoadData(&m, "this is not a module"), CUDA_ERROR_INVALID_IMAGE);
  const char* bad_ptx = ".version 8.5\n.target sm_75\n.address_size 64\n.visible .entry k() { frobnicate; }\n";
  char log[512] = {};
  CUjit_option opts[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* values[] = {log, reinterpret_cast<void*>(uintptr_t(sizeof log))};
  EXPECT_EQ(cuModuleLoadDataEx(&m, bad_ptx, 2, opts, values), CUDA_ERROR_INVALID_PTX);
  EXPECT_NE(std::string(log).find("line"), std::string::npos) << log;
}

TEST(Driver, UnknownNamesAndWrongArguments) {
  std::string ptx = nvrtc_ptx(kSource);
  CUmodule m;
  ASSERT_EQ(cuModuleLoadData(&m, ptx.c_str()), CUDA_SUCCESS);
  CUfunction fn;
  EXPECT_EQ(cuModuleGetFunction(&fn, m, "no_such_kernel"), CUDA_ERROR_NOT_FOUND);
  CUdeviceptr p;
  EXPECT_EQ(cuModuleGetGlobal(&p, nullptr, m, "no_such_variable"), CUDA_ERROR_NOT_FOUND);
  ASSERT_EQ(cuModuleGetFunction(&fn, m, "scale"), CUDA_SUCCESS);
  // No parameters for a kernel that takes three.
  EXPECT_EQ(cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr), CUDA_ERROR_INVALID_VALUE);
  // A parameter buffer of the wrong size (the pointer and one int: 12 of 16 bytes).
  uint32_t two[3] = {0, 0, 0};
  size_t two_size = sizeof two;
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, two, CU_LAUNCH_PARAM_BUFFER_SIZE, &two_size,
                   CU_LAUNCH_PARAM_END};
  EXPECT_EQ(cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, extra), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuLaunchKernel(fn, 0, 1, 1, 1, 1, 1, 0, nullptr, nullptr, extra), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuModuleUnload(m), CUDA_SUCCESS);
  EXPECT_EQ(cuModuleGetFunction(&fn, m, "scale"), CUDA_ERROR_INVALID_HANDLE);
}

TEST(Driver, ErrorNamesProcAddressesAndUnprovidedEntryPoints) {
  const char* s = nullptr;
  ASSERT_EQ(cuGetErrorName(CUDA_ERROR_INVALID_PTX, &s), CUDA_SUCCESS);
  EXPECT_STREQ(s, "CUDA_ERROR_INVALID_PTX");
  ASSERT_EQ(cuGetErrorName(CUDA_ERROR_ASSERT, &s), CUDA_SUCCESS);
  EXPECT_STREQ(s, "CUDA_ERROR_ASSERT");
  ASSERT_EQ(cuGetErrorString(CUDA_ERROR_ILLEGAL_ADDRESS, &s), CUDA_SUCCESS);
  EXPECT_STREQ(s, "an illegal memory access was encountered");
  EXPECT_EQ(cuGetErrorName(static_cast<CUresult>(123456), &s), CUDA_ERROR_INVALID_VALUE);

  void* fn = nullptr;
  CUdriverProcAddressQueryResult status;
  ASSERT_EQ(cuGetProcAddress("cuMemAlloc", &fn, CUDA_VERSION, 0, &status), CUDA_SUCCESS);
  EXPECT_EQ(fn, reinterpret_cast<void*>(&cuMemAlloc_v2));
  EXPECT_EQ(status, CU_GET_PROC_ADDRESS_SUCCESS);
  ASSERT_EQ(cuGetProcAddress("cuLaunchKernel", &fn, CUDA_VERSION, 0, &status), CUDA_SUCCESS);
  EXPECT_EQ(fn, reinterpret_cast<void*>(&cuLaunchKernel));
  EXPECT_EQ(cuGetProcAddress("cuNoSuchThing", &fn, CUDA_VERSION, 0, &status), CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(status, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);

  CUstream stream;
  EXPECT_EQ(cuStreamCreate(&stream, 0), CUDA_ERROR_NOT_SUPPORTED);
}

// Virtual memory management: reserved ranges backed by the physical
// allocations mapped there, a kernel across two mappings, bytes kept while a
// held allocation is unmapped, and what the flat memory cannot express
// refused.
TEST(Driver, VirtualMemoryMapsPhysicalAllocationsIntoReservedRanges) {
  auto attr = [](CUdevice_attribute a) {
    int v = -1;
    EXPECT_EQ(cuDeviceGetAttribute(&v, a, 0), CUDA_SUCCESS);
    return v;
  };
  EXPECT_EQ(attr(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED), 1);
  EXPECT_EQ(attr(CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED), 0);
  EXPECT_EQ(attr(CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED), 0);

  size_t free0 = 0, total = 0;
  ASSERT_EQ(cuMemGetInfo(&free0, &total), CUDA_SUCCESS);
  CUmemAllocationProp prop = {};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  size_t g = 0;
  ASSERT_EQ(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM), CUDA_SUCCESS);
  EXPECT_EQ(g, size_t(2) << 20);  // a GPU's 2 MiB on the 2 GiB device

  CUdeviceptr r = 0;
  ASSERT_EQ(cuMemAddressReserve(&r, 2 * g, 0, 0, 0), CUDA_SUCCESS);
  EXPECT_EQ(r % g, 0u);
  CUmemGenericAllocationHandle h[2];
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(cuMemCreate(&h[i], g, &prop, 0), CUDA_SUCCESS);
    ASSERT_EQ(cuMemMap(r + i * g, g, 0, h[i], 0), CUDA_SUCCESS);
    ASSERT_EQ(cuMemRelease(h[i]), CUDA_SUCCESS);  // still mapped: lives until unmapped
  }
  CUmemAccessDesc access = {};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  ASSERT_EQ(cuMemSetAccess(r, 2 * g, &access, 1), CUDA_SUCCESS);
  unsigned long long flags = 0;
  ASSERT_EQ(cuMemGetAccess(&flags, &prop.location, r + g + 4096), CUDA_SUCCESS);
  EXPECT_EQ(flags, unsigned(CU_MEM_ACCESS_FLAGS_PROT_READWRITE));

  // 64 ints across the boundary of the two mappings, scaled by a kernel.
  CUmodule m;
  ASSERT_EQ(cuModuleLoadData(&m, nvrtc_ptx(kSource).c_str()), CUDA_SUCCESS);
  CUfunction fn;
  ASSERT_EQ(cuModuleGetFunction(&fn, m, "scale"), CUDA_SUCCESS);
  std::vector<int> data(64), out(64);
  for (int i = 0; i < 64; ++i) data[i] = i * 7 - 100;
  CUdeviceptr p = r + g - 32 * sizeof(int);
  ASSERT_EQ(cuMemcpyHtoD(p, data.data(), 64 * sizeof(int)), CUDA_SUCCESS);
  int k = 3, n = 64;
  void* args[] = {&p, &k, &n};
  ASSERT_EQ(cuLaunchKernel(fn, 1, 1, 1, 64, 1, 1, 0, nullptr, args, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyDtoH(out.data(), p, 64 * sizeof(int)), CUDA_SUCCESS);
  for (int i = 0; i < 64; ++i) EXPECT_EQ(out[i], data[i] * 3 + 1000) << i;
  EXPECT_EQ(cuModuleUnload(m), CUDA_SUCCESS);

  // A held allocation keeps its bytes while unmapped, and maps again elsewhere.
  CUdeviceptr r2 = 0, r3 = 0;
  ASSERT_EQ(cuMemAddressReserve(&r2, g, 0, 0, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAddressReserve(&r3, 2 * g, 0, 0, 0), CUDA_SUCCESS);
  CUmemGenericAllocationHandle held;
  ASSERT_EQ(cuMemCreate(&held, g, &prop, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuMemMap(r2, g, 0, held, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyHtoD(r2 + 100, data.data(), 64 * sizeof(int)), CUDA_SUCCESS);
  // One physical allocation at two addresses: the flat memory cannot.
  EXPECT_EQ(cuMemMap(r3, g, 0, held, 0), CUDA_ERROR_NOT_SUPPORTED);
  ASSERT_EQ(cuMemUnmap(r2, g), CUDA_SUCCESS);
  ASSERT_EQ(cuMemsetD8(r2, 0, g), CUDA_SUCCESS);  // the reservation's bytes, not the allocation's
  ASSERT_EQ(cuMemMap(r3 + g, g, 0, held, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyDtoH(out.data(), r3 + g + 100, 64 * sizeof(int)), CUDA_SUCCESS);
  EXPECT_EQ(out, data);
  CUmemGenericAllocationHandle again = 0;
  ASSERT_EQ(cuMemRetainAllocationHandle(&again, reinterpret_cast<void*>(r3 + g)), CUDA_SUCCESS);
  EXPECT_EQ(again, held);
  EXPECT_EQ(cuMemRelease(again), CUDA_SUCCESS);

  // Part of an allocation, a range outside a reservation, an overlapping
  // map, freeing a range with mappings, a compressible request.
  CUmemGenericAllocationHandle big;
  ASSERT_EQ(cuMemCreate(&big, 2 * g, &prop, 0), CUDA_SUCCESS);
  EXPECT_EQ(cuMemMap(r3, g, 0, big, 0), CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(cuMemMap(r3, 2 * g, 0, big, 0), CUDA_ERROR_INVALID_VALUE);  // overlaps the mapping at r3 + g
  EXPECT_EQ(cuMemMap(r3 + 2 * g, 2 * g, 0, big, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemAddressFree(r3, 2 * g), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemUnmap(r + g, g / 2), CUDA_ERROR_INVALID_VALUE);  // part of a mapping
  EXPECT_EQ(cuMemRelease(big), CUDA_SUCCESS);
  EXPECT_EQ(cuMemRelease(big), CUDA_ERROR_INVALID_VALUE);
  CUmemAllocationProp compressible = prop, got = {};
  compressible.allocFlags.compressionType = CU_MEM_ALLOCATION_COMP_GENERIC;
  CUmemGenericAllocationHandle c;
  ASSERT_EQ(cuMemCreate(&c, g, &compressible, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuMemGetAllocationPropertiesFromHandle(&got, c), CUDA_SUCCESS);
  EXPECT_EQ(got.allocFlags.compressionType, 0);  // no compression on this device
  EXPECT_EQ(got.location.id, 0);
  EXPECT_EQ(cuMemRelease(c), CUDA_SUCCESS);

  EXPECT_EQ(cuMemUnmap(r3 + g, g), CUDA_SUCCESS);
  EXPECT_EQ(cuMemRelease(held), CUDA_SUCCESS);
  EXPECT_EQ(cuMemUnmap(r, 2 * g), CUDA_SUCCESS);  // both mappings at once
  for (auto [at, size] : {std::pair{r, 2 * g}, {r2, g}, {r3, 2 * g}}) EXPECT_EQ(cuMemAddressFree(at, size), CUDA_SUCCESS);
  size_t free1 = 0;
  ASSERT_EQ(cuMemGetInfo(&free1, &total), CUDA_SUCCESS);
  EXPECT_EQ(free1, free0);
}

TEST(Driver, DeviceAssertIsStickyLikeOnAGpu) {
  std::string ptx = nvrtc_ptx(kSource);
  CUmodule m;
  ASSERT_EQ(cuModuleLoadData(&m, ptx.c_str()), CUDA_SUCCESS);
  CUfunction fn;
  ASSERT_EQ(cuModuleGetFunction(&fn, m, "guarded"), CUDA_SUCCESS);
  std::vector<int> data = {1, 2, 7, 4};
  CUdeviceptr d;
  ASSERT_EQ(cuMemAlloc(&d, 16), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyHtoD(d, data.data(), 16), CUDA_SUCCESS);
  void* args[] = {&d};
  // The launch succeeds (it is asynchronous on a GPU); the next call that
  // uses the context reports the assert, and every later one too.
  EXPECT_EQ(cuLaunchKernel(fn, 1, 1, 1, 4, 1, 1, 0, nullptr, args, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(cuCtxSynchronize(), CUDA_ERROR_ASSERT);
  EXPECT_EQ(cuLaunchKernel(fn, 1, 1, 1, 4, 1, 1, 0, nullptr, args, nullptr), CUDA_ERROR_ASSERT);
  CUdeviceptr more;
  EXPECT_EQ(cuMemAlloc(&more, 16), CUDA_ERROR_ASSERT);
}

}  // namespace
