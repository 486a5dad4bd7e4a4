// Host and device on the same bytes while a kernel runs, where the device
// memory is shared with the program (an interpreter backend on this machine):
// a kernel that waits for the host, host and device atomics on one counter,
// and pinned memory the device reads at its host address.  Where it is not
// shared (concurrentManagedAccess 0), the program says so and runs only what
// CUDA allows there.
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "gate.h"

// Says it runs, then waits for the host's go; answers with what it read.
__global__ void wait_for_host(volatile int* flags, int* answer) {
  flags[0] = 1;
  while (flags[1] == 0) {
  }
  *answer = flags[1] + 1000;
}

__global__ void add_system(int* counter, int times) {
  for (int i = 0; i < times; ++i) atomicAdd_system(counter, 1);
}

__global__ void read_pinned(const int* in, int* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * 3;
}

int main() {
  int live = -1, atomics = -1;
  cudaDeviceGetAttribute(&live, cudaDevAttrConcurrentManagedAccess, 0);
  cudaDeviceGetAttribute(&atomics, cudaDevAttrHostNativeAtomicSupported, 0);
  value("concurrent_managed_access", live);
  value("host_native_atomics", atomics);

  // Pinned memory: with unified addressing the device reads it at the host
  // pointer when it is mapped (cudaHostGetDevicePointer says so).
  int* pinned = nullptr;
  report("malloc_host", cudaMallocHost(&pinned, 64 * sizeof(int)));
  void* dev_view = nullptr;
  cudaError_t e = cudaHostGetDevicePointer(&dev_view, pinned, 0);
  report("pinned_device_pointer", e);
  cudaGetLastError();
  if (e == cudaSuccess) {
    for (int i = 0; i < 64; ++i) pinned[i] = i + 1;
    int* out = nullptr;
    cudaMallocManaged(&out, 64 * sizeof(int));
    read_pinned<<<2, 32>>>(static_cast<const int*>(dev_view), out, 64);
    report("read_pinned_sync", cudaDeviceSynchronize());
    int ok = dev_view == pinned;
    for (int i = 0; i < 64; ++i) ok &= out[i] == 3 * (i + 1);
    value("pinned_read_by_device", ok);
    cudaFree(out);
  }
  cudaFreeHost(pinned);
  if (live != 1) return 0;

  // The kernel says it runs; the host sees that while it still runs, then
  // lets it go on.  Neither side synchronises in between.
  int* flags = nullptr;
  int* answer = nullptr;
  report("malloc_managed", cudaMallocManaged(&flags, 2 * sizeof(int)));
  cudaMallocManaged(&answer, sizeof(int));
  flags[0] = flags[1] = 0;
  *answer = 0;
  wait_for_host<<<1, 1>>>(flags, answer);
  auto* seen = reinterpret_cast<std::atomic<int>*>(flags);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (seen[0].load() == 0 && std::chrono::steady_clock::now() < until) std::this_thread::yield();
  value("host_saw_kernel_running", seen[0].load());
  value("answer_before_go", *answer);  // the kernel is still waiting
  seen[1].store(7);
  report("wait_sync", cudaDeviceSynchronize());
  value("answer", *answer);

  // Host and device atomics on one counter at the same time: the host adds
  // in batches while the kernel is still running, and once after.
  int* counter = nullptr;
  cudaMallocManaged(&counter, sizeof(int));
  *counter = 0;
  const int threads = 64, times = 10000;
  add_system<<<2, threads>>>(counter, times);
  long long host_adds = 0, batches_while_running = 0;
  for (;;) {
    const bool running = cudaStreamQuery(0) == cudaErrorNotReady;
    for (int k = 0; k < 100; ++k, ++host_adds) __sync_fetch_and_add(counter, 1);
    if (!running) break;
    ++batches_while_running;
  }
  report("atomics_sync", cudaDeviceSynchronize());
  value("host_added_while_kernel_ran", batches_while_running > 0);
  value("counter_exact", *counter == 2LL * threads * times + host_adds);
  cudaFree(flags);
  cudaFree(answer);
  cudaFree(counter);
  return 0;
}
