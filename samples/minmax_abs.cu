// min, max and abs in their signed, unsigned and 64-bit forms, and a clamp,
// on every pair of eight edge values.
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

__global__ void minmax(const int* a, const int* b, int* out, int n) {
  int i = threadIdx.x + blockIdx.x * blockDim.x;
  if (i >= n) return;
  int x = a[i], y = b[i];
  int* o = out + 8 * i;
  o[0] = min(x, y);
  o[1] = max(x, y);
  o[2] = (int)umin((unsigned)x, (unsigned)y);
  o[3] = (int)umax((unsigned)x, (unsigned)y);
  o[4] = x == (int)0x80000000 ? 0 : abs(x);
  long long lx = (long long)x * 3, ly = (long long)y * -5;
  o[5] = (int)(llmin(lx, ly) >> 1);
  o[6] = (int)(llabs(lx - ly) & 0x7fffffff);
  o[7] = min(max(x, -1000), 1000);
}

int main() {
  const int vals[8] = {0, 1, -1, 2147483647, (int)0x80000000, 999, -1001, 123456};
  const int n = 64;
  int a[n], b[n];
  for (int i = 0; i < n; ++i) {
    a[i] = vals[i / 8];
    b[i] = vals[i % 8];
  }

  int *d_a, *d_b, *d_out;
  CHECK(cudaMalloc(&d_a, sizeof(a)));
  CHECK(cudaMalloc(&d_b, sizeof(b)));
  CHECK(cudaMalloc(&d_out, 8 * n * sizeof(int)));
  CHECK(cudaMemcpy(d_a, a, sizeof(a), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_b, b, sizeof(b), cudaMemcpyHostToDevice));
  minmax<<<2, 32>>>(d_a, d_b, d_out, n);
  CHECK(cudaGetLastError());
  int out[8 * n];
  CHECK(cudaMemcpy(out, d_out, sizeof(out), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d_a));
  CHECK(cudaFree(d_b));
  CHECK(cudaFree(d_out));

  int bad = 0;
  for (int i = 0; i < n; ++i) {
    int x = a[i], y = b[i];
    unsigned ux = x, uy = y;
    long long lx = (long long)x * 3, ly = (long long)y * -5;
    long long d = lx - ly;
    int ref[8] = {x < y ? x : y,
                  x > y ? x : y,
                  (int)(ux < uy ? ux : uy),
                  (int)(ux > uy ? ux : uy),
                  x == (int)0x80000000 ? 0 : (x < 0 ? -x : x),
                  (int)((lx < ly ? lx : ly) >> 1),
                  (int)((d < 0 ? -d : d) & 0x7fffffff),
                  x < -1000 ? -1000 : (x > 1000 ? 1000 : x)};
    for (int k = 0; k < 8; ++k)
      if (out[8 * i + k] != ref[k]) ++bad;
  }
  printf("min(-1,INT_MAX) = %d, umin(-1,INT_MAX) = %d, clamp(INT_MIN) = %d\n",
         out[8 * (2 * 8 + 3) + 0], out[8 * (2 * 8 + 3) + 2], out[8 * (4 * 8) + 7]);
  printf("%d mismatches\n", bad);
  bool ok = bad == 0;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
