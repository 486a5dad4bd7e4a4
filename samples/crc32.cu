// CRC-32 (the reflected polynomial 0xEDB88320) of eight short messages, one
// thread each, computed bit by bit: nested loops over bytes and bits with a
// conditional xor.  The host uses a table-driven CRC.
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

const int kLen = 24;

__global__ void crc32(const unsigned char* messages, const int* lengths, unsigned* crcs) {
  int m = threadIdx.x;
  const unsigned char* p = messages + m * kLen;
  unsigned crc = 0xffffffffu;
  for (int i = 0; i < lengths[m]; ++i) {
    crc ^= p[i];
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1)));
  }
  crcs[m] = ~crc;
}

int main() {
  const int n = 8;
  const char* texts[n] = {"", "a", "abc", "123456789", "message digest",
                          "qgpu", "The quick brown fox", "\x01\x80\xff\x7f"};
  unsigned char messages[n * kLen] = {};
  int lengths[n];
  for (int m = 0; m < n; ++m) {
    int len = 0;
    while (texts[m][len]) {
      messages[m * kLen + len] = (unsigned char)texts[m][len];
      ++len;
    }
    lengths[m] = len;
  }

  unsigned char* d_messages;
  int* d_lengths;
  unsigned* d_crcs;
  CHECK(cudaMalloc(&d_messages, sizeof(messages)));
  CHECK(cudaMalloc(&d_lengths, sizeof(lengths)));
  CHECK(cudaMalloc(&d_crcs, n * sizeof(unsigned)));
  CHECK(cudaMemcpy(d_messages, messages, sizeof(messages), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_lengths, lengths, sizeof(lengths), cudaMemcpyHostToDevice));
  crc32<<<1, n>>>(d_messages, d_lengths, d_crcs);
  CHECK(cudaGetLastError());
  unsigned crcs[n];
  CHECK(cudaMemcpy(crcs, d_crcs, sizeof(crcs), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d_messages));
  CHECK(cudaFree(d_lengths));
  CHECK(cudaFree(d_crcs));

  unsigned table[256];
  for (unsigned b = 0; b < 256; ++b) {
    unsigned c = b;
    for (int k = 0; k < 8; ++k) c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
    table[b] = c;
  }
  int bad = 0;
  for (int m = 0; m < n; ++m) {
    unsigned c = 0xffffffffu;
    for (int i = 0; i < lengths[m]; ++i) c = table[(c ^ messages[m * kLen + i]) & 0xff] ^ (c >> 8);
    if (crcs[m] != ~c) ++bad;
  }
  // crc32("123456789") is the standard check value cbf43926.
  printf("crc32(\"\") = %08x, crc32(\"abc\") = %08x, crc32(\"123456789\") = %08x\n", crcs[0],
         crcs[2], crcs[3]);
  printf("%d mismatches\n", bad);
  bool ok = bad == 0 && crcs[3] == 0xcbf43926u;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
