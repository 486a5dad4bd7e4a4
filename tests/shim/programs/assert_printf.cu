// Device printf reaches stdout at synchronization; a device-side assert is
// sticky: the next synchronizing call and every later call report it.
#include <cassert>
#include <cstdio>

__global__ void hello(int v) { printf("hello from the device: %d\n", v); }
__global__ void check(int v) { assert(v == 0); }

int main() {
  hello<<<1, 1>>>(42);
  printf("before sync\n");
  fflush(stdout);
  printf("sync1 %s\n", cudaGetErrorName(cudaDeviceSynchronize()));
  check<<<1, 1>>>(7);
  printf("sync2 %s\n", cudaGetErrorName(cudaDeviceSynchronize()));
  int* p;
  printf("malloc_after %s\n", cudaGetErrorName(cudaMalloc(&p, 4)));
  printf("last_after %s\n", cudaGetErrorName(cudaGetLastError()));
  printf("last_again %s\n", cudaGetErrorName(cudaGetLastError()));
  return 0;
}
