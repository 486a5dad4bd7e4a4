// Byte permutes and funnel shifts: __byte_perm with selectors that pick and
// replicate bytes, with the operands in both orders, and
// __funnelshift_l/r in their wrapping and clamping forms, for shift amounts
// 0 to 40.
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

__global__ void permute(unsigned a, unsigned b, const unsigned* selectors, unsigned* out) {
  int i = threadIdx.x;  // 0..40
  unsigned s = selectors[i];
  out[6 * i + 0] = __byte_perm(a, b, s);
  out[6 * i + 1] = __byte_perm(b, a, s);
  out[6 * i + 2] = __funnelshift_l(a, b, i);        // amount taken mod 32
  out[6 * i + 3] = __funnelshift_lc(a, b, i);       // amount clamped to 32
  out[6 * i + 4] = __funnelshift_r(a, b, i);
  out[6 * i + 5] = __funnelshift_rc(a, b, i);
}

// Reference for __byte_perm: eight source bytes (a then b), each result byte
// chosen by the low three bits of its selector nibble.
unsigned byte_perm_ref(unsigned a, unsigned b, unsigned s) {
  unsigned long long bytes = ((unsigned long long)b << 32) | a, r = 0;
  for (int k = 0; k < 4; ++k) {
    unsigned sel = (s >> (4 * k)) & 7;
    unsigned byte = (bytes >> (8 * sel)) & 0xff;
    r |= (unsigned long long)byte << (8 * k);
  }
  return (unsigned)r;
}

int main() {
  const int n = 41;
  const unsigned a = 0x89abcdefu, b = 0x01234567u;
  unsigned selectors[n];
  for (int i = 0; i < n; ++i) selectors[i] = (0x3210u + 0x1357u * i) & 0x7777u;

  unsigned *d_sel, *d_out;
  CHECK(cudaMalloc(&d_sel, sizeof(selectors)));
  CHECK(cudaMalloc(&d_out, 6 * n * sizeof(unsigned)));
  CHECK(cudaMemcpy(d_sel, selectors, sizeof(selectors), cudaMemcpyHostToDevice));
  permute<<<1, n>>>(a, b, d_sel, d_out);
  CHECK(cudaGetLastError());
  unsigned out[6 * n];
  CHECK(cudaMemcpy(out, d_out, sizeof(out), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d_sel));
  CHECK(cudaFree(d_out));

  int bad = 0;
  const unsigned long long ba = ((unsigned long long)b << 32) | a;  // hi:lo = b:a
  for (int i = 0; i < n; ++i) {
    int wrap = i % 32, clamp = i < 32 ? i : 32;
    unsigned ref[6] = {byte_perm_ref(a, b, selectors[i]),
                       byte_perm_ref(b, a, selectors[i]),
                       (unsigned)((ba << wrap) >> 32),
                       (unsigned)(clamp == 32 ? a : (ba << clamp) >> 32),
                       (unsigned)(ba >> wrap),
                       (unsigned)(clamp == 32 ? b : ba >> clamp)};
    for (int k = 0; k < 6; ++k)
      if (out[6 * i + k] != ref[k]) ++bad;
  }
  printf("byte_perm(a,b,%04x) = %08x, byte_perm(b,a,..) = %08x\n", selectors[1], out[6], out[7]);
  printf("funnel l/lc/r/rc by 36: %08x %08x %08x %08x, %d mismatches\n", out[6 * 36 + 2],
         out[6 * 36 + 3], out[6 * 36 + 4], out[6 * 36 + 5], bad);
  bool ok = bad == 0;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
