// A struct larger than 64 bytes (104 bytes: a table, scalars of several
// sizes and a pointer) passed to a kernel by value; threads index its array
// with their own id, so the parameter is read at computed offsets.
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

struct Config {
  int table[16];
  long long bias;
  short scale;
  char shift;
  unsigned char mask;
  unsigned flags;
  const int* data;
  int count;
  int pad[3];
};

__global__ void apply(Config cfg, int* out) {
  int t = threadIdx.x;
  if (t >= cfg.count) return;
  int v = cfg.data[t] * cfg.scale + cfg.table[t % 16];
  v = (v >> cfg.shift) & (cfg.mask | ((cfg.flags & 1) << 8));
  out[t] = v + (int)(cfg.bias >> 40) + cfg.pad[t % 3];
}

int main() {
  const int n = 24;
  int data[n];
  for (int i = 0; i < n; ++i) data[i] = i * i - 50;

  int *d_data, *d_out;
  CHECK(cudaMalloc(&d_data, sizeof(data)));
  CHECK(cudaMalloc(&d_out, sizeof(data)));
  CHECK(cudaMemcpy(d_data, data, sizeof(data), cudaMemcpyHostToDevice));

  Config cfg;
  for (int k = 0; k < 16; ++k) cfg.table[k] = k * 100 - 700;
  cfg.bias = 0x7f0000000000LL;
  cfg.scale = -9;
  cfg.shift = 2;
  cfg.mask = 0xf7;
  cfg.flags = 0x80000001u;
  cfg.data = d_data;
  cfg.count = n;
  cfg.pad[0] = 1;
  cfg.pad[1] = 20;
  cfg.pad[2] = 300;
  static_assert(sizeof(Config) > 64, "the struct must exceed 64 bytes");
  apply<<<1, 32>>>(cfg, d_out);
  CHECK(cudaGetLastError());
  int out[n];
  CHECK(cudaMemcpy(out, d_out, sizeof(out), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d_data));
  CHECK(cudaFree(d_out));

  int bad = 0;
  for (int t = 0; t < n; ++t) {
    int v = data[t] * -9 + (t % 16) * 100 - 700;
    v = (v >> 2) & 0x1f7;
    if (out[t] != v + 0x7f + cfg.pad[t % 3]) ++bad;
  }
  printf("sizeof(Config) = %zu; out[0..3] = %d %d %d %d, out[23] = %d\n", sizeof(Config), out[0],
         out[1], out[2], out[3], out[23]);
  printf("%d mismatches\n", bad);
  bool ok = bad == 0;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
