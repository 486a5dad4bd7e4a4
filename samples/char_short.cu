// char, unsigned char, short and unsigned short data: loads that sign- or
// zero-extend, arithmetic in int, and stores that truncate, over arrays of
// each type.
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

__global__ void narrow(const signed char* c, const unsigned char* uc, const short* s,
                       const unsigned short* us, signed char* c_out, short* s_out,
                       unsigned short* us_out, int* wide_out) {
  int i = threadIdx.x;
  int sum = c[i] + uc[i] + s[i] + us[i];  // each widened to int
  wide_out[i] = sum;
  c_out[i] = (signed char)(c[i] * 3 + uc[i]);  // truncates to 8 bits
  s_out[i] = (short)(s[i] * 5 - us[i]);        // truncates to 16 bits
  us_out[i] = (unsigned short)(us[i] + uc[i] * 257);
}

int main() {
  const int n = 40;
  signed char c[n];
  unsigned char uc[n];
  short s[n];
  unsigned short us[n];
  for (int i = 0; i < n; ++i) {
    c[i] = (signed char)(i * 13 - 128);
    uc[i] = (unsigned char)(i * 29 + 3);
    s[i] = (short)(i * 1601 - 32768);
    us[i] = (unsigned short)(i * 3001 + 17);
  }

  signed char *d_c, *d_c_out;
  unsigned char* d_uc;
  short *d_s, *d_s_out;
  unsigned short *d_us, *d_us_out;
  int* d_wide;
  CHECK(cudaMalloc(&d_c, sizeof(c)));
  CHECK(cudaMalloc(&d_uc, sizeof(uc)));
  CHECK(cudaMalloc(&d_s, sizeof(s)));
  CHECK(cudaMalloc(&d_us, sizeof(us)));
  CHECK(cudaMalloc(&d_c_out, sizeof(c)));
  CHECK(cudaMalloc(&d_s_out, sizeof(s)));
  CHECK(cudaMalloc(&d_us_out, sizeof(us)));
  CHECK(cudaMalloc(&d_wide, n * sizeof(int)));
  CHECK(cudaMemcpy(d_c, c, sizeof(c), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_uc, uc, sizeof(uc), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_s, s, sizeof(s), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_us, us, sizeof(us), cudaMemcpyHostToDevice));
  narrow<<<1, n>>>(d_c, d_uc, d_s, d_us, d_c_out, d_s_out, d_us_out, d_wide);
  CHECK(cudaGetLastError());
  signed char c_out[n];
  short s_out[n];
  unsigned short us_out[n];
  int wide[n];
  CHECK(cudaMemcpy(c_out, d_c_out, sizeof(c_out), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(s_out, d_s_out, sizeof(s_out), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(us_out, d_us_out, sizeof(us_out), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(wide, d_wide, sizeof(wide), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d_c));
  CHECK(cudaFree(d_uc));
  CHECK(cudaFree(d_s));
  CHECK(cudaFree(d_us));
  CHECK(cudaFree(d_c_out));
  CHECK(cudaFree(d_s_out));
  CHECK(cudaFree(d_us_out));
  CHECK(cudaFree(d_wide));

  // Reference: the truncations written out as masks and sign adjustments.
  int bad = 0;
  for (int i = 0; i < n; ++i) {
    int sum = c[i] + uc[i] + s[i] + us[i];
    int c8 = (c[i] * 3 + uc[i]) & 0xff;
    if (c8 >= 128) c8 -= 256;
    int s16 = (s[i] * 5 - us[i]) & 0xffff;
    if (s16 >= 32768) s16 -= 65536;
    int us16 = (us[i] + uc[i] * 257) & 0xffff;
    if (wide[i] != sum || c_out[i] != c8 || s_out[i] != s16 || us_out[i] != us16) ++bad;
  }
  printf("wide[0..2] = %d %d %d; c_out[0..2] = %d %d %d\n", wide[0], wide[1], wide[2], c_out[0],
         c_out[1], c_out[2]);
  printf("s_out[0..2] = %d %d %d; us_out[0..2] = %u %u %u, %d mismatches\n", s_out[0], s_out[1],
         s_out[2], us_out[0], us_out[1], us_out[2], bad);
  bool ok = bad == 0;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
