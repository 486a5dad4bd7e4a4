// Asynchronous launches: a kernel spins on a flag in mapped (zero-copy) host
// memory, so it cannot finish before the host sets that flag.  The host
// must see cudaEventQuery and cudaStreamQuery report cudaErrorNotReady while
// the kernel runs, then sets the flag and synchronizes.  A runtime that runs
// a launch to completion before returning gets the kernel's bounded spin
// (it gives up after kMaxPolls polls) and fails the check instead of hanging.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CHECK(call)                                                          \
  do {                                                                       \
    cudaError_t err_ = (call);                                               \
    if (err_ != cudaSuccess) {                                               \
      printf("CUDA error at %s:%d: %s\n", __FILE__, __LINE__,                \
             cudaGetErrorString(err_));                                      \
      exit(1);                                                               \
    }                                                                        \
  } while (0)

constexpr unsigned kMaxPolls = 1u << 20;

__global__ void wait_for_host(volatile int* flag, int* out) {
  unsigned polls = 0;
  while (*flag == 0 && polls < kMaxPolls) ++polls;
  out[0] = *flag;
  out[1] = polls < kMaxPolls;
  out[2] = 41 + (int)threadIdx.x;
}

int main() {
  CHECK(cudaSetDeviceFlags(cudaDeviceMapHost));
  int* flag = nullptr;
  CHECK(cudaHostAlloc(&flag, sizeof(int), cudaHostAllocMapped));
  *(volatile int*)flag = 0;
  int* d_flag = nullptr;
  CHECK(cudaHostGetDevicePointer(&d_flag, flag, 0));
  int* d_out;
  CHECK(cudaMalloc(&d_out, 3 * sizeof(int)));
  CHECK(cudaMemset(d_out, 0, 3 * sizeof(int)));

  cudaStream_t stream;
  cudaEvent_t done;
  CHECK(cudaStreamCreate(&stream));
  CHECK(cudaEventCreate(&done));
  wait_for_host<<<1, 1, 0, stream>>>(d_flag, d_out);
  CHECK(cudaGetLastError());
  CHECK(cudaEventRecord(done, stream));

  const cudaError_t event_q = cudaEventQuery(done);
  const cudaError_t stream_q = cudaStreamQuery(stream);
  printf("while the kernel waits: cudaEventQuery = %s, cudaStreamQuery = %s\n", cudaGetErrorName(event_q),
         cudaGetErrorName(stream_q));
  *(volatile int*)flag = 1;  // let it finish
  CHECK(cudaEventSynchronize(done));
  const cudaError_t after = cudaEventQuery(done);
  printf("after cudaEventSynchronize: cudaEventQuery = %s\n", cudaGetErrorName(after));

  int out[3];
  CHECK(cudaMemcpy(out, d_out, sizeof(out), cudaMemcpyDeviceToHost));
  printf("kernel saw flag %d, %s, wrote %d\n", out[0], out[1] ? "before its poll limit" : "only at its poll limit",
         out[2]);
  CHECK(cudaEventDestroy(done));
  CHECK(cudaStreamDestroy(stream));
  CHECK(cudaFree(d_out));
  CHECK(cudaFreeHost(flag));

  const bool ok = event_q == cudaErrorNotReady && stream_q == cudaErrorNotReady && after == cudaSuccess &&
                  out[0] == 1 && out[1] == 1 && out[2] == 41;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
