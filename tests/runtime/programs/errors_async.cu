// CUDA's error rules with asynchronous work: a configuration error fails
// the launch call, an asynchronous copy or memset outside an allocation
// fails the call (neither is sticky); a device-side assert is sticky from the
// next synchronization on.
#include <cassert>

#include "gate.h"

__global__ void set1(int* p, int v) { *p = v; }
__global__ void check(int v) { assert(v == 0); }

static void CUDART_CB record_status(cudaStream_t, cudaError_t status, void* p) { *static_cast<cudaError_t*>(p) = status; }
static void CUDART_CB set_flag(void* p) { *static_cast<int*>(p) = 1; }

int main() {
  int* d;
  cudaMalloc(&d, 64);
  cudaStream_t s;
  cudaStreamCreate(&s);

  set1<<<1, 100000, 0, s>>>(d, 1);
  report("config_launch", cudaGetLastError());
  report("config_cleared", cudaGetLastError());
  report("config_sync", cudaStreamSynchronize(s));

  // An asynchronous copy or memset outside an allocation fails when it is
  // made, and is not sticky.
  report("async_copy_call", cudaMemcpyAsync(d + 8, d, 64, cudaMemcpyDeviceToDevice, s));
  report("async_copy_last_error", cudaGetLastError());
  report("async_copy_sync", cudaStreamSynchronize(s));
  report("memset_async_past_end", cudaMemsetAsync(d, 0, 65, s));
  report("memset_unallocated", cudaMemset((void*)0x10003f00, 0, 4));
  cudaGetLastError();
  // cudaMemset returns before the device has done it; a copy after it sees it.
  report("memset", cudaMemset(d, 0xab, 64));
  unsigned word = 0;
  cudaMemcpy(&word, d + 15, 4, cudaMemcpyDeviceToHost);
  printf("memset_value %x\n", word);
  set1<<<1, 1, 0, s>>>(d, 3);
  report("after_async_copy", cudaStreamSynchronize(s));

  Gate g;
  cudaLaunchHostFunc(s, wait_gate, &g);
  check<<<1, 1, 0, s>>>(1);
  report("assert_launch", cudaGetLastError());
  // Queued behind the failing kernel: a callback is told the error; a host
  // function is not called (CUDA's rules for the two).
  cudaError_t callback_status = cudaErrorUnknown;
  int host_func_called = 0;
  cudaStreamAddCallback(s, record_status, &callback_status, 0);
  cudaLaunchHostFunc(s, set_flag, &host_func_called);
  report("assert_query_gated", cudaStreamQuery(s));
  g.open = 1;
  report("assert_sync", cudaStreamSynchronize(s));
  report("assert_query", cudaStreamQuery(s));
  report("callback_status_after_assert", callback_status);
  value("host_func_after_assert_called", host_func_called);
  int* p;
  report("assert_malloc", cudaMalloc(&p, 4));
  report("assert_last", cudaGetLastError());
  report("assert_last_again", cudaGetLastError());
  report("assert_device_sync", cudaDeviceSynchronize());
  printf("done\n");
  return 0;
}
