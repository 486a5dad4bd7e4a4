// Device-side kernel launches (CUDA dynamic parallelism, built with
// -rdc=true): a recursive binary tree of grids, the order of a device stream,
// a tail launch, a device cudaMemcpyAsync, the nesting depth and pending
// launch limits with their errors, launches beyond a full device heap (which
// holds the launch records), and a child's fault reported by the host
// launch.  Interpreter backend only.
#include <cstdio>
#include <cstdlib>

#define CHECK(call)                                                                      \
  do {                                                                                   \
    cudaError_t e_ = (call);                                                             \
    if (e_ != cudaSuccess) {                                                             \
      printf("CUDA error at %s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
      exit(1);                                                                           \
    }                                                                                    \
  } while (0)

// Node `node` of a complete binary tree of `levels` levels (root 1): each
// grid of (node % 3 + 1) blocks of 32 threads writes node * 1000 + its
// thread's global index into its slice, then thread 0 of block 0 launches
// the two subtrees.
__global__ void tree(int* out, int node, int levels) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  out[node * 128 + t] = node * 1000 + t;
  if (t == 0 && 2 * node < (1 << levels)) {
    for (int c = 2 * node; c <= 2 * node + 1; ++c) tree<<<c % 3 + 1, 32>>>(out, c, levels);
  }
}

__global__ void set_value(int* p, int v) { *p = v; }
__global__ void add_from(int* dst, const int* src, int v) { *dst = *src + v; }

// In one device stream: set, then add (must see the set), then a copy of
// the sum, all after the parent; a tail launch that reads what the others
// wrote.
__global__ void ordered(int* cells) {
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  set_value<<<1, 1, 0, s>>>(&cells[0], 41);
  add_from<<<1, 1, 0, s>>>(&cells[1], &cells[0], 1);
  cudaMemcpyAsync(&cells[2], &cells[1], sizeof(int), cudaMemcpyDeviceToDevice, s);
  cudaStreamDestroy(s);
  add_from<<<1, 1, 0, cudaStreamTailLaunch>>>(&cells[3], &cells[2], 100);
  // The children run after this grid: the parent still sees 0.
  cells[4] = cells[0];
}

// Each grid launches itself one level deeper until a launch fails; the
// deepest depth reached and the launch's error are recorded.
__global__ void nest(int* cells, int depth) {
  cells[0] = depth;
  nest<<<1, 1>>>(cells, depth + 1);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) cells[1] = int(e);
}

__global__ void count(int* n) { atomicAdd(n, 1); }

// `tries` launches from one thread: the errors and the successes counted.
__global__ void many(int* cells, int tries) {
  for (int i = 0; i < tries; ++i) {
    count<<<1, 1>>>(&cells[0]);
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess) cells[1] += 1;
    else cells[2] = int(e);
  }
}

__global__ void bad_child(int* p) { p[threadIdx.x] = 1; }
__global__ void launch_bad(int* ok) {
  *ok = 1;
  bad_child<<<1, 1>>>(nullptr);
}

int main() {
  bool ok = true;
  // A small device heap (it holds the queued launches): fixed before the
  // first kernel that launches kernels.  A device whose heap is fixed (the
  // model's, which runs no device-side launches and refuses the first one)
  // keeps its own.
  cudaError_t heap = cudaDeviceSetLimit(cudaLimitMallocHeapSize, 16384);
  if (heap == cudaErrorUnsupportedLimit) {
    printf("the device heap is fixed\n");
    (void)cudaGetLastError();
  } else {
    CHECK(heap);
  }
  const int levels = 5, nodes = 1 << levels;
  int* d_out;
  CHECK(cudaMalloc(&d_out, nodes * 128 * sizeof(int)));
  CHECK(cudaMemset(d_out, 0xff, nodes * 128 * sizeof(int)));
  tree<<<1, 32>>>(d_out, 1, levels);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  int* h = (int*)malloc(nodes * 128 * sizeof(int));
  CHECK(cudaMemcpy(h, d_out, nodes * 128 * sizeof(int), cudaMemcpyDeviceToHost));
  int written = 0, wrong = 0;
  for (int node = 1; node < nodes; ++node) {
    int threads = node == 1 ? 32 : (node % 3 + 1) * 32;
    for (int t = 0; t < 128; ++t) {
      int want = t < threads ? node * 1000 + t : -1;
      if (h[node * 128 + t] != want) ++wrong;
      else if (want >= 0) ++written;
    }
  }
  printf("tree: %d grids, %d values written, %d wrong\n", nodes - 1, written, wrong);
  ok &= wrong == 0;

  int* d_cells;
  CHECK(cudaMalloc(&d_cells, 8 * sizeof(int)));
  CHECK(cudaMemset(d_cells, 0, 8 * sizeof(int)));
  ordered<<<1, 1>>>(d_cells);
  CHECK(cudaDeviceSynchronize());
  int c[8];
  CHECK(cudaMemcpy(c, d_cells, sizeof c, cudaMemcpyDeviceToHost));
  printf("stream: %d %d %d, tail %d, parent saw %d\n", c[0], c[1], c[2], c[3], c[4]);
  ok &= c[0] == 41 && c[1] == 42 && c[2] == 42 && c[3] == 142 && c[4] == 0;

  CHECK(cudaMemset(d_cells, 0, 8 * sizeof(int)));
  nest<<<1, 1>>>(d_cells, 0);
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaMemcpy(c, d_cells, sizeof c, cudaMemcpyDeviceToHost));
  printf("nesting: deepest grid %d, then error %d\n", c[0], c[1]);
  ok &= c[0] == 24 && c[1] == int(cudaErrorLaunchMaxDepthExceeded);

  size_t limit = 0;
  CHECK(cudaDeviceSetLimit(cudaLimitDevRuntimePendingLaunchCount, 4));
  CHECK(cudaDeviceGetLimit(&limit, cudaLimitDevRuntimePendingLaunchCount));
  CHECK(cudaMemset(d_cells, 0, 8 * sizeof(int)));
  many<<<1, 1>>>(d_cells, 6);
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaMemcpy(c, d_cells, sizeof c, cudaMemcpyDeviceToHost));
  printf("pending limit %zu: %d launched, %d ran, then error %d\n", limit, c[1], c[0], c[2]);
  ok &= limit == 4 && c[0] == 4 && c[1] == 4 && c[2] == int(cudaErrorLaunchPendingCountExceeded);

  // 200 launches from one thread into a 16 KiB heap: those that find no
  // room for their record fail with cudaErrorMemoryAllocation; the others run.
  CHECK(cudaDeviceSetLimit(cudaLimitDevRuntimePendingLaunchCount, 4096));
  CHECK(cudaMemset(d_cells, 0, 8 * sizeof(int)));
  many<<<1, 1>>>(d_cells, 200);
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaMemcpy(c, d_cells, sizeof c, cudaMemcpyDeviceToHost));
  printf("heap full: %d of 200 launched, %d ran, then error %d\n", c[1], c[0], c[2]);
  ok &= c[1] > 0 && c[1] < 200 && c[0] == c[1] && c[2] == int(cudaErrorMemoryAllocation);

  // Last: a fault is sticky.
  launch_bad<<<1, 1>>>(d_cells);
  cudaError_t e = cudaDeviceSynchronize();
  printf("child fault: %s\n", cudaGetErrorName(e));
  ok &= e == cudaErrorIllegalAddress;

  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
