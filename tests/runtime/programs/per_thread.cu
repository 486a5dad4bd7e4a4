// Built with --default-stream per-thread: stream 0 is each thread's own
// stream.  One thread's default stream is held by a gate while another
// thread's completes; the legacy stream waits for both.
#include <thread>

#include "gate.h"

__global__ void set1(int* p, int v) { *p = v; }

int main() {
  int* d;
  cudaMalloc(&d, 16);
  cudaMemset(d, 0, 16);
  // The memset is on this thread's own stream, which is not ordered with the
  // other threads' streams (CUDA's per-thread default streams): it must be
  // done before they write.  (Without this, a loaded machine ran it after
  // them: tools/load_fault, 12 of 463 runs.)
  cudaStreamSynchronize(0);
  Gate g;
  std::atomic<int> queued{0};
  cudaError_t held_sync = cudaErrorUnknown, other_sync = cudaErrorUnknown;
  std::thread held([&] {
    cudaLaunchHostFunc(0, wait_gate, &g);
    set1<<<1, 1>>>(d, 1);
    queued = 1;
    held_sync = cudaStreamSynchronize(0);
  });
  while (!queued) usleep(100);
  std::thread other([&] {
    set1<<<1, 1>>>(d + 1, 2);
    other_sync = cudaStreamSynchronize(0);  // its own stream only: returns while the gate is closed
  });
  other.join();
  report("other_thread_sync", other_sync);
  report("held_thread_pending", cudaStreamQuery(cudaStreamLegacy));
  report("main_stream_idle", cudaStreamQuery(0));
  g.open = 1;
  held.join();
  report("held_thread_sync", held_sync);
  int v[2] = {-1, -1};
  cudaMemcpy(v, d, sizeof v, cudaMemcpyDeviceToHost);
  value("values", v[0] * 10 + v[1]);
  return 0;
}
