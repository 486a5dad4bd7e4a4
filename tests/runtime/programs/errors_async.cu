// CUDA's error rules with asynchronous work: a configuration error fails
// the launch call; a failed asynchronous copy is reported once, at the next
// synchronization; a device-side assert is sticky from the next
// synchronization on.
#include <cassert>

#include "gate.h"

__global__ void set1(int* p, int v) { *p = v; }
__global__ void check(int v) { assert(v == 0); }

int main() {
  int* d;
  cudaMalloc(&d, 64);
  cudaStream_t s;
  cudaStreamCreate(&s);

  set1<<<1, 100000, 0, s>>>(d, 1);
  report("config_launch", cudaGetLastError());
  report("config_cleared", cudaGetLastError());
  report("config_sync", cudaStreamSynchronize(s));

  report("async_copy_call", cudaMemcpyAsync(d + 8, d, 64, cudaMemcpyDeviceToDevice, s));
  report("async_copy_sync", cudaStreamSynchronize(s));
  report("async_copy_sync_again", cudaStreamSynchronize(s));
  report("async_copy_last_error", cudaGetLastError());  // the failed synchronization's, as any call's
  set1<<<1, 1, 0, s>>>(d, 3);
  report("after_async_copy", cudaStreamSynchronize(s));

  Gate g;
  cudaLaunchHostFunc(s, wait_gate, &g);
  check<<<1, 1, 0, s>>>(1);
  report("assert_launch", cudaGetLastError());
  report("assert_query_gated", cudaStreamQuery(s));
  g.open = 1;
  report("assert_sync", cudaStreamSynchronize(s));
  report("assert_query", cudaStreamQuery(s));
  int* p;
  report("assert_malloc", cudaMalloc(&p, 4));
  report("assert_last", cudaGetLastError());
  report("assert_last_again", cudaGetLastError());
  report("assert_device_sync", cudaDeviceSynchronize());
  printf("done\n");
  return 0;
}
