// Stream callbacks from several host threads: four threads each own a
// stream, copy their data in, launch a kernel, copy it back into pinned
// memory and enqueue a host callback (cudaLaunchHostFunc for even threads,
// cudaStreamAddCallback for odd ones) that checks the data.  Every callback
// must run exactly once, after its stream's copy, with the right data.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>
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

constexpr int kThreads = 4, kN = 256;

__global__ void scale_add(int* data, int mul, int add) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < kN) data[i] = data[i] * mul + add;
}

struct Work {
  int id = 0;
  int* host = nullptr;  // pinned
  std::atomic<int> calls{0};
  std::atomic<int> good{0};
};

static void check_work(Work* w) {
  int good = 1;
  for (int i = 0; i < kN; ++i)
    if (w->host[i] != (i + w->id) * (w->id + 2) + 7 * w->id) good = 0;
  w->good = good;
  w->calls.fetch_add(1);
}
static void CUDART_CB host_func(void* p) { check_work(static_cast<Work*>(p)); }
static void CUDART_CB stream_callback(cudaStream_t, cudaError_t status, void* p) {
  if (status == cudaSuccess) check_work(static_cast<Work*>(p));
}

static void worker(Work* w) {
  CHECK(cudaSetDevice(0));
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  int* d;
  CHECK(cudaMalloc(&d, kN * sizeof(int)));
  for (int i = 0; i < kN; ++i) w->host[i] = i + w->id;
  CHECK(cudaMemcpyAsync(d, w->host, kN * sizeof(int), cudaMemcpyHostToDevice, s));
  scale_add<<<(kN + 63) / 64, 64, 0, s>>>(d, w->id + 2, 7 * w->id);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpyAsync(w->host, d, kN * sizeof(int), cudaMemcpyDeviceToHost, s));
  if (w->id % 2 == 0)
    CHECK(cudaLaunchHostFunc(s, host_func, w));
  else
    CHECK(cudaStreamAddCallback(s, stream_callback, w, 0));
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaFree(d));
  CHECK(cudaStreamDestroy(s));
}

int main() {
  std::vector<Work> work(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    work[t].id = t;
    CHECK(cudaMallocHost(&work[t].host, kN * sizeof(int)));
  }
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(worker, &work[t]);
  for (auto& th : threads) th.join();
  CHECK(cudaDeviceSynchronize());

  bool ok = true;
  for (int t = 0; t < kThreads; ++t) {
    printf("thread %d: callback ran %d time(s), data %s\n", t, work[t].calls.load(),
           work[t].good ? "right" : "wrong");
    ok = ok && work[t].calls == 1 && work[t].good;
    CHECK(cudaFreeHost(work[t].host));
  }
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
