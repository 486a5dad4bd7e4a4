// __match_any_sync groups the lanes of a warp by key: each lane learns which
// lanes share its key, the lowest of them becomes the group's leader and
// adds the group's size into a per-key counter (one atomic per group).
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

__global__ void group_by_key(const int* keys, unsigned* peers, int* counts) {
  int lane = threadIdx.x % 32;
  int key = keys[blockIdx.x * blockDim.x + threadIdx.x];
  unsigned same = __match_any_sync(0xffffffffu, key);
  peers[blockIdx.x * blockDim.x + threadIdx.x] = same;
  int leader = __ffs(same) - 1;
  if (lane == leader) atomicAdd(&counts[key], __popc(same));
}

int main() {
  const int n = 64, keys_range = 5;
  int keys[n];
  for (int i = 0; i < n; ++i) keys[i] = (i * i + i / 7) % keys_range;

  int *d_keys, *d_counts;
  unsigned* d_peers;
  CHECK(cudaMalloc(&d_keys, sizeof(keys)));
  CHECK(cudaMalloc(&d_peers, n * sizeof(unsigned)));
  CHECK(cudaMalloc(&d_counts, keys_range * sizeof(int)));
  CHECK(cudaMemcpy(d_keys, keys, sizeof(keys), cudaMemcpyHostToDevice));
  CHECK(cudaMemset(d_counts, 0, keys_range * sizeof(int)));
  group_by_key<<<2, 32>>>(d_keys, d_peers, d_counts);
  CHECK(cudaGetLastError());
  unsigned peers[n];
  int counts[keys_range];
  CHECK(cudaMemcpy(peers, d_peers, sizeof(peers), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(counts, d_counts, sizeof(counts), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d_keys));
  CHECK(cudaFree(d_peers));
  CHECK(cudaFree(d_counts));

  int bad = 0, ref_counts[keys_range] = {};
  for (int i = 0; i < n; ++i) {
    unsigned ref = 0;
    int warp = i / 32;
    for (int l = 0; l < 32; ++l)
      if (keys[32 * warp + l] == keys[i]) ref |= 1u << l;
    if (peers[i] != ref) ++bad;
    ++ref_counts[keys[i]];
  }
  for (int k = 0; k < keys_range; ++k)
    if (counts[k] != ref_counts[k]) ++bad;
  printf("peers of lane 0: %08x, lane 1: %08x, lane 2: %08x\n", peers[0], peers[1], peers[2]);
  printf("counts: %d %d %d %d %d, %d mismatches\n", counts[0], counts[1], counts[2], counts[3],
         counts[4], bad);
  bool ok = bad == 0;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
