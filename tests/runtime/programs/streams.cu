// Asynchronous launches, stream order, the legacy default stream's
// synchronisation, non-blocking streams, cudaStreamWaitEvent, callbacks and
// event timing.  One "<case> <value>" line each.
#include <thread>

#include "gate.h"

__global__ void set1(int* p, int v) { *p = v; }
__global__ void copy1(int* dst, const int* src) { *dst = *src; }
__global__ void affine(int* a, int mul, int add) { a[threadIdx.x] = a[threadIdx.x] * mul + add; }
__global__ void spin(unsigned* out, unsigned n) {
  unsigned x = 1;
  for (unsigned i = 0; i < n; ++i) x = x * 1103515245u + 12345u;
  *out = x;
}

static int read1(const int* d) {
  int v = -1;
  cudaMemcpy(&v, d, sizeof v, cudaMemcpyDeviceToHost);
  return v;
}

struct CallbackSeen {
  std::thread::id thread;
  cudaError_t status = cudaErrorUnknown;
  int value = -1;
  const int* pinned = nullptr;
};
static void CUDART_CB on_done(cudaStream_t, cudaError_t status, void* p) {
  auto* s = static_cast<CallbackSeen*>(p);
  s->thread = std::this_thread::get_id();
  s->status = status;
  s->value = *s->pinned;
}

int main() {
  int* d;
  cudaMalloc(&d, 16 * sizeof(int));
  cudaMemset(d, 0, 16 * sizeof(int));
  unsigned* scratch;
  cudaMalloc(&scratch, sizeof(unsigned));

  // A launch behind a closed gate returns at once; its stream and event are
  // pending until the gate opens.
  {
    cudaStream_t s;
    cudaStreamCreate(&s);
    cudaEvent_t before, e;
    cudaEventCreate(&before);
    cudaEventCreate(&e);
    cudaEventRecord(before, s);
    cudaStreamSynchronize(s);
    Gate g;
    cudaLaunchHostFunc(s, wait_gate, &g);
    set1<<<1, 1, 0, s>>>(d, 7);
    report("gated_launch", cudaGetLastError());
    cudaEventRecord(e, s);
    report("gated_stream_query", cudaStreamQuery(s));
    report("gated_event_query", cudaEventQuery(e));
    float ms = -1;
    report("gated_elapsed", cudaEventElapsedTime(&ms, before, e));
    report("not_ready_is_not_an_error", cudaGetLastError());
    g.open = 1;
    report("event_sync", cudaEventSynchronize(e));
    report("event_query_after", cudaEventQuery(e));
    report("stream_query_after", cudaStreamQuery(s));
    value("gated_value", read1(d));
    cudaStreamDestroy(s);
  }

  // One stream runs its work in order: eight non-commuting updates.
  {
    cudaStream_t s;
    cudaStreamCreate(&s);
    int host[16], expect[16];
    for (int i = 0; i < 16; ++i) host[i] = expect[i] = i;
    int* a;
    cudaMalloc(&a, sizeof host);
    cudaMemcpyAsync(a, host, sizeof host, cudaMemcpyHostToDevice, s);
    for (int k = 0; k < 8; ++k) {
      affine<<<1, 16, 0, s>>>(a, k + 2, k);
      for (int i = 0; i < 16; ++i) expect[i] = expect[i] * (k + 2) + k;
    }
    int out[16];
    cudaMemcpyAsync(out, a, sizeof out, cudaMemcpyDeviceToHost, s);  // pageable: returns when done
    int same = 1;
    for (int i = 0; i < 16; ++i) same &= out[i] == expect[i];
    value("stream_order", same);
    cudaFree(a);
    cudaStreamDestroy(s);
  }

  // The legacy default stream waits for blocking streams...
  cudaStream_t blocking, nonblocking;
  cudaStreamCreate(&blocking);
  cudaStreamCreateWithFlags(&nonblocking, cudaStreamNonBlocking);
  {
    Gate g;
    cudaLaunchHostFunc(blocking, wait_gate, &g);
    set1<<<1, 1>>>(d + 1, 5);
    report("legacy_waits_for_blocking", cudaStreamQuery(0));
    g.open = 1;
    report("legacy_sync", cudaStreamSynchronize(0));
    value("legacy_value", read1(d + 1));
  }
  // ... and blocking streams wait for work queued before on the legacy one.
  {
    Gate g;
    cudaLaunchHostFunc(0, wait_gate, &g);
    set1<<<1, 1, 0, blocking>>>(d + 2, 6);
    report("blocking_waits_for_legacy", cudaStreamQuery(blocking));
    g.open = 1;
    report("blocking_sync", cudaStreamSynchronize(blocking));
    value("blocking_value", read1(d + 2));
  }
  // A non-blocking stream does neither.
  {
    Gate g;
    cudaLaunchHostFunc(nonblocking, wait_gate, &g);
    set1<<<1, 1>>>(d + 3, 8);
    report("legacy_ignores_nonblocking", cudaStreamSynchronize(0));
    value("legacy_value_beside_nonblocking", read1(d + 3));
    report("nonblocking_still_gated", cudaStreamQuery(nonblocking));
    g.open = 1;
    report("nonblocking_sync", cudaStreamSynchronize(nonblocking));
    unsigned flags = 99;
    cudaStreamGetFlags(nonblocking, &flags);
    value("nonblocking_flags", flags);
  }

  // cudaStreamWaitEvent: one stream's work after a point of another.
  {
    cudaStream_t a, b;
    cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking);
    cudaEvent_t e;
    cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
    Gate g;
    cudaLaunchHostFunc(a, wait_gate, &g);
    set1<<<1, 1, 0, a>>>(d + 4, 11);
    cudaEventRecord(e, a);
    cudaStreamWaitEvent(b, e, 0);
    copy1<<<1, 1, 0, b>>>(d + 5, d + 4);
    report("wait_event_pending", cudaStreamQuery(b));
    g.open = 1;
    report("wait_event_sync", cudaStreamSynchronize(b));
    value("wait_event_value", read1(d + 5));
    float ms;
    report("elapsed_without_timing", cudaEventElapsedTime(&ms, e, e));
    cudaStreamDestroy(a);
    cudaStreamDestroy(b);
  }

  // A callback runs on a runtime thread, after the work before it.
  {
    cudaStream_t s;
    cudaStreamCreate(&s);
    int* pinned;
    cudaMallocHost(&pinned, sizeof(int));
    *pinned = 0;
    CallbackSeen seen;
    seen.pinned = pinned;
    set1<<<1, 1, 0, s>>>(d + 6, 42);
    cudaMemcpyAsync(pinned, d + 6, sizeof(int), cudaMemcpyDeviceToHost, s);
    cudaStreamAddCallback(s, on_done, &seen, 0);
    cudaStreamSynchronize(s);
    value("callback_on_caller_thread", seen.thread == std::this_thread::get_id());
    report("callback_status", seen.status);
    value("callback_saw", seen.value);
    cudaFreeHost(pinned);
    cudaStreamDestroy(s);
  }

  // Events time the device's work: two kernels between three events.
  {
    cudaStream_t s;
    cudaStreamCreate(&s);
    cudaEvent_t t0, t1, t2, u0, u1;
    for (cudaEvent_t* e : {&t0, &t1, &t2, &u0, &u1}) cudaEventCreate(e);
    cudaEventRecord(t0, s);
    spin<<<1, 1, 0, s>>>(scratch, 200000);
    cudaEventRecord(t1, s);
    spin<<<1, 1, 0, s>>>(scratch, 400000);
    cudaEventRecord(t2, s);
    cudaEventSynchronize(t2);
    float a = 0, b = 0, c = 0;
    cudaEventElapsedTime(&a, t0, t1);
    cudaEventElapsedTime(&b, t1, t2);
    cudaEventElapsedTime(&c, t0, t2);
    value("elapsed_positive", a > 0 && b > 0);
    double sum = double(a) + double(b);
    value("elapsed_adds_up", c > 0 && (sum - c) <= 1e-3 * c && (c - sum) <= 1e-3 * c);
    // A host wait between two events is not device time.
    cudaEventRecord(u0, s);
    Gate g;
    cudaLaunchHostFunc(s, wait_gate, &g);
    cudaEventRecord(u1, s);
    usleep(200 * 1000);
    g.open = 1;
    cudaEventSynchronize(u1);
    float w = -1;
    report("elapsed_host_wait_status", cudaEventElapsedTime(&w, u0, u1));
    printf("elapsed_host_wait_ms %g\n", w);
    cudaStreamDestroy(s);
  }

  // Polling a long launch: "not ready" some number of times, then ready for good.
  {
    cudaStream_t s;
    cudaStreamCreate(&s);
    spin<<<1, 1, 0, s>>>(scratch, 20000000);
    int not_ready = 0, legal = 1;
    bool done = false;
    for (int i = 0; i < 100000; ++i) {
      cudaError_t e = cudaStreamQuery(s);
      if (e == cudaSuccess) done = true;
      else if (e == cudaErrorNotReady) {
        legal &= !done;
        ++not_ready;
      } else legal = 0;
      if (done && i > 0 && not_ready + 5 < i) break;
      usleep(100);
    }
    value("poll_sequence_legal", legal && done);
    fprintf(stderr, "poll: %d not-ready answers before the launch completed\n", not_ready);
    cudaStreamDestroy(s);
  }
  report("final_sync", cudaDeviceSynchronize());
  printf("done\n");
  return 0;
}
