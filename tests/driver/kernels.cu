// Device code loaded by the driver tests as an nvcc fatbinary.
extern "C" __global__ void add_one(int* p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] += 1;
}

// Grid-wide sync (cuLaunchCooperativeKernel): every block writes, syncs, then
// reads what the others wrote.
#include <cooperative_groups.h>
extern "C" __global__ void grid_reverse(const int* in, int* tmp, int* out, int n) {
  cooperative_groups::grid_group g = cooperative_groups::this_grid();
  for (int i = int(g.thread_rank()); i < n; i += int(g.size())) tmp[i] = in[i] * 2;
  g.sync();
  for (int i = int(g.thread_rank()); i < n; i += int(g.size())) out[i] = tmp[n - 1 - i];
}
