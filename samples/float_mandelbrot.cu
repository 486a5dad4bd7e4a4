// The Mandelbrot set on a 32 x 32 grid: each thread iterates z = z^2 + c in
// f32 (at most 64 times) and writes its iteration count.  The arithmetic is
// written with explicit roundings (__fmul_rn, __fadd_rn, __fsub_rn, fmaf) so
// that the compiler contracts nothing, and the host repeats exactly the same
// IEEE operations: the counts must agree for every pixel, including those on
// the set's boundary, where one rounding of difference changes the count.
#include <cmath>
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

#define W 32
#define H 32
#define MAX_ITER 64

// c = (-2.25 + 3 px / 32, -1.5 + 3 py / 32): every step exact.
#define STEP 0.09375f

__global__ void mandelbrot(int* counts) {
  int px = threadIdx.x % W, py = blockIdx.x * (blockDim.x / W) + threadIdx.x / W;
  if (py >= H) return;
  float cr = __fadd_rn(__fmul_rn(float(px), STEP), -2.25f), ci = __fadd_rn(__fmul_rn(float(py), STEP), -1.5f);
  float zr = 0.0f, zi = 0.0f;
  int n = 0;
#pragma unroll 1
  while (n < MAX_ITER) {
    float rr = __fmul_rn(zr, zr), ii = __fmul_rn(zi, zi);
    if (__fadd_rn(rr, ii) > 4.0f) break;
    float nzi = fmaf(__fadd_rn(zr, zr), zi, ci);
    zr = __fadd_rn(__fsub_rn(rr, ii), cr);
    zi = nzi;
    ++n;
  }
  counts[py * W + px] = n;
}

// The same operations on the host (below main).
static int host_count(int px, int py);

int main() {
  static int counts[W * H];
  int* d;
  CHECK(cudaMalloc(&d, sizeof(counts)));
  mandelbrot<<<H / 2, 2 * W>>>(d);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(counts, d, sizeof(counts), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d));
  const char* shades = " .:-=+*#%@";
  int bad = 0;
  long total = 0;
  int inside = 0;
  for (int py = 0; py < H; ++py) {
    char line[W + 1];
    for (int px = 0; px < W; ++px) {
      int n = counts[py * W + px], want = host_count(px, py);
      if (n != want) {
        if (bad < 5) printf("pixel (%d, %d): %d iterations, the host counts %d\n", px, py, n, want);
        ++bad;
      }
      total += n;
      inside += n == MAX_ITER;
      line[px] = n == MAX_ITER ? '@' : shades[n % 9];
    }
    line[W] = 0;
    printf("%s\n", line);
  }
  printf("iterations %ld, %d of %d pixels inside\n", total, inside, W * H);
  printf("%s\n", bad == 0 ? "PASSED" : "FAILED");
  return bad == 0 ? 0 : 1;
}

// The same operations on the host, one IEEE rounding each.
static int host_count(int px, int py) {
  volatile float sx = float(px) * STEP, sy = float(py) * STEP;
  volatile float cr = sx + -2.25f, ci = sy + -1.5f;
  volatile float zr = 0.0f, zi = 0.0f;
  int n = 0;
  while (n < MAX_ITER) {
    volatile float rr = zr * zr, ii = zi * zi;
    volatile float s = rr + ii;
    if (s > 4.0f) break;
    volatile float zz = zr + zr;
    volatile float nzi = std::fmaf(zz, zi, ci);
    volatile float d = rr - ii;
    zr = d + cr;
    zi = nzi;
    ++n;
  }
  return n;
}
