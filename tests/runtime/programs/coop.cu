// Cooperative launches: grid-wide sync with cooperative groups.  The grid is
// what the occupancy calls say is resident at once; one block more is
// refused; grid.sync() in an ordinary launch traps (no grid workspace), as
// on a GPU.  Prints "<case> <result>" lines.
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

namespace cg = cooperative_groups;

// Phase 1 writes data[i]; after grid.sync() phase 2 reads what other threads
// wrote; a second sync, then thread 0 sums (every write must be visible).
__global__ void two_phase(int* data, int* out, int n) {
  cg::grid_group g = cg::this_grid();
  for (int i = int(g.thread_rank()); i < n; i += int(g.size())) data[i] = i * 3;
  g.sync();
  for (int i = int(g.thread_rank()); i < n; i += int(g.size())) out[i] = data[n - 1 - i] + 1;
  g.sync();
  if (g.thread_rank() == 0) {
    long long s = 0;
    for (int i = 0; i < n; ++i) s += out[i];
    out[n] = int(s);
    out[n + 1] = int(g.size());
  }
}

// printf keeps a kernel's blocks one at a time on the interpreter: a
// cooperative launch of it takes one block.
__global__ void speaks(int* out) {
  cg::grid_group g = cg::this_grid();
  if (g.thread_rank() == 0) printf("speaks\n");
  g.sync();
  out[0] = 1;
}

int main() {
  int coop = -1, sms = 0, per_sm = 0;
  cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, 0);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, 0);
  printf("attribute %d prop %d\n", coop, prop.cooperativeLaunch);
  const int threads = 256, n = 1000;
  cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, two_phase, threads, 0);
  const int blocks = sms * per_sm;
  printf("blocks %d\n", blocks);
  int *data, *out;
  cudaMalloc(&data, n * sizeof(int));
  cudaMalloc(&out, (n + 2) * sizeof(int));
  int nn = n;
  void* args[] = {&data, &out, &nn};
  cudaError_t e = cudaLaunchCooperativeKernel((void*)two_phase, dim3(blocks), dim3(threads), args, 0, 0);
  printf("launch %s\n", cudaGetErrorName(e));
  printf("sync %s\n", cudaGetErrorName(cudaDeviceSynchronize()));
  std::vector<int> h(n + 2);
  cudaMemcpy(h.data(), out, (n + 2) * sizeof(int), cudaMemcpyDeviceToHost);
  int wrong = 0;
  long long sum = 0;
  for (int i = 0; i < n; ++i) {
    wrong += h[i] != (n - 1 - i) * 3 + 1;
    sum += h[i];
  }
  printf("wrong %d\n", wrong);
  printf("sum %d %s\n", h[n], h[n] == int(sum) ? "matches" : "differs");
  printf("size %d\n", h[n + 1]);
  // cudaLaunchKernelEx with cudaLaunchAttributeCooperative: the same launch.
  cudaMemset(out, 0, (n + 2) * sizeof(int));
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(blocks);
  cfg.blockDim = dim3(threads);
  cudaLaunchAttribute attr;
  attr.id = cudaLaunchAttributeCooperative;
  attr.val.cooperative = 1;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  e = cudaLaunchKernelEx(&cfg, two_phase, data, out, nn);
  cudaDeviceSynchronize();
  cudaMemcpy(h.data(), out, (n + 2) * sizeof(int), cudaMemcpyDeviceToHost);
  printf("launch_ex %s sum %s\n", cudaGetErrorName(e), h[n] == int(sum) ? "matches" : "differs");
  e = cudaLaunchCooperativeKernel((void*)two_phase, dim3(blocks + 1), dim3(threads), args, 0, 0);
  printf("too_large %s\n", cudaGetErrorName(e));
  cudaGetLastError();
  void* sargs[] = {&out};
  e = cudaLaunchCooperativeKernel((void*)speaks, dim3(blocks), dim3(32), sargs, 0, 0);
  printf("in_order %s %s\n", cudaGetErrorName(e), cudaGetErrorName(cudaDeviceSynchronize()));
  e = cudaLaunchCooperativeKernel((void*)speaks, dim3(1), dim3(32), sargs, 0, 0);
  printf("in_order_one %s %s\n", cudaGetErrorName(e), cudaGetErrorName(cudaDeviceSynchronize()));
  // An ordinary launch has no grid workspace: grid.sync() traps (last: the
  // context is unusable afterwards).
  two_phase<<<1, threads>>>(data, out, n);
  printf("ordinary %s\n", cudaGetErrorName(cudaDeviceSynchronize()));
  return 0;
}
