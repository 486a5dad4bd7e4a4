// Eight host threads, each with its own stream: pinned copies in, a launch,
// pinned copies out and a callback, ten times.  Each callback checks that
// the work before it is done (the bytes copied out are the kernel's
// results), that it runs in order, and that it runs on a runtime thread.
#include <thread>
#include <vector>

#include "gate.h"

constexpr int kThreads = 8, kIters = 10, kN = 16;

__global__ void affine(int* a, int mul, int add) { a[threadIdx.x] = a[threadIdx.x] * mul + add; }

struct Worker {
  int index = 0;
  std::thread::id host_thread;
  int* in = nullptr;   // pinned, [kIters][kN]
  int* out = nullptr;  // pinned, [kIters][kN]
  std::atomic<int> next{0};
  std::atomic<int> good{0}, wrong_order{0}, wrong_values{0}, on_caller{0}, bad_status{0};
};

struct Call {
  Worker* w;
  int iter;
};

static void CUDART_CB checked(cudaStream_t, cudaError_t status, void* p) {
  auto* c = static_cast<Call*>(p);
  Worker* w = c->w;
  if (status != cudaSuccess) w->bad_status++;
  if (std::this_thread::get_id() == w->host_thread) w->on_caller++;
  if (w->next.exchange(c->iter + 1) != c->iter) w->wrong_order++;
  bool ok = true;
  for (int j = 0; j < kN; ++j)
    ok &= w->out[c->iter * kN + j] == w->in[c->iter * kN + j] * (c->iter + 2) + w->index;
  (ok ? w->good : w->wrong_values)++;
}

static void run(Worker* w, cudaError_t* result) {
  w->host_thread = std::this_thread::get_id();
  cudaStream_t s;
  cudaError_t e = cudaStreamCreate(&s);
  int* d = nullptr;
  if (e == cudaSuccess) e = cudaMalloc(&d, kN * sizeof(int));
  if (e == cudaSuccess) e = cudaMallocHost(&w->in, kIters * kN * sizeof(int));
  if (e == cudaSuccess) e = cudaMallocHost(&w->out, kIters * kN * sizeof(int));
  std::vector<Call> calls(kIters);
  for (int i = 0; i < kIters && e == cudaSuccess; ++i) {
    for (int j = 0; j < kN; ++j) w->in[i * kN + j] = 1000 * w->index + 37 * i + j;
    calls[i] = {w, i};
    cudaMemcpyAsync(d, w->in + i * kN, kN * sizeof(int), cudaMemcpyHostToDevice, s);
    affine<<<1, kN, 0, s>>>(d, i + 2, w->index);
    cudaMemcpyAsync(w->out + i * kN, d, kN * sizeof(int), cudaMemcpyDeviceToHost, s);
    e = cudaStreamAddCallback(s, checked, &calls[i], 0);
  }
  if (e == cudaSuccess) e = cudaStreamSynchronize(s);
  *result = e;
  cudaStreamDestroy(s);
  cudaFree(d);
}

int main() {
  std::vector<Worker> workers(kThreads);
  std::vector<cudaError_t> results(kThreads, cudaErrorUnknown);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    workers[t].index = t;
    threads.emplace_back(run, &workers[t], &results[t]);
  }
  for (auto& t : threads) t.join();
  int good = 0, wrong_order = 0, wrong_values = 0, on_caller = 0, bad_status = 0, failed = 0;
  for (int t = 0; t < kThreads; ++t) {
    good += workers[t].good, wrong_order += workers[t].wrong_order, wrong_values += workers[t].wrong_values;
    on_caller += workers[t].on_caller, bad_status += workers[t].bad_status;
    if (results[t] != cudaSuccess) {
      ++failed;
      report("thread_error", results[t]);
    }
  }
  value("callbacks_good", good);
  value("callbacks_wrong_order", wrong_order);
  value("callbacks_wrong_values", wrong_values);
  value("callbacks_on_caller_thread", on_caller);
  value("callbacks_bad_status", bad_status);
  value("threads_failed", failed);
  report("final_sync", cudaDeviceSynchronize());
  return 0;
}
