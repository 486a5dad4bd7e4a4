// Managed memory (cudaMallocManaged, __managed__), mapped pinned memory
// (cudaHostAllocMapped, cudaHostRegisterMapped) and what
// cudaPointerGetAttributes says of every kind of pointer.
#include <cstdio>
#include <cstdlib>

#include "gate.h"

__managed__ int counter = 5;

__global__ void inc_all(int* p, int by) { p[threadIdx.x] += by; }
__global__ void add_counter(int by) { counter += by; }
__global__ void sum_two(int* p, int a, int b) { p[0] = p[a] + p[b]; }

static int all_equal(const int* p, int n, int base) {
  int ok = 1;
  for (int i = 0; i < n; ++i) ok &= p[i] == base + i;
  return ok;
}

// 1 when the page holding p is a shared mapping (the device memory file),
// 0 when it is private, -1 when /proc/self/maps does not list it.
static int shared_mapping(const void* p) {
  FILE* f = std::fopen("/proc/self/maps", "r");
  if (!f) return -1;
  unsigned long lo = 0, hi = 0;
  char perms[8] = {};
  int shared = -1;
  char line[512];
  while (shared < 0 && std::fgets(line, sizeof line, f))
    if (std::sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3 && (unsigned long)p >= lo && (unsigned long)p < hi)
      shared = perms[3] == 's';
  std::fclose(f);
  return shared;
}

static void attributes(const char* what, const void* p) {
  cudaPointerAttributes a;
  cudaError_t e = cudaPointerGetAttributes(&a, p);
  auto side = [&](const void* q) { return q == nullptr ? "null" : q == p ? "same" : "other"; };
  printf("attr_%s %s type=%d device=%d dev=%s host=%s\n", what, cudaGetErrorName(e), int(a.type), a.device,
         side(a.devicePointer), side(a.hostPointer));
}

int main() {
  int v = -1;
  cudaDeviceGetAttribute(&v, cudaDevAttrManagedMemory, 0);
  value("managed_memory", v);
  cudaDeviceGetAttribute(&v, cudaDevAttrConcurrentManagedAccess, 0);
  value("concurrent_managed_access", v);
  cudaDeviceGetAttribute(&v, cudaDevAttrPageableMemoryAccess, 0);
  value("pageable_memory_access", v);
  cudaDeviceGetAttribute(&v, cudaDevAttrCanMapHostMemory, 0);
  value("can_map_host_memory", v);

  // cudaMallocManaged: one pointer, written on the host, updated by kernels.
  int* m = nullptr;
  report("malloc_managed", cudaMallocManaged(&m, 16 * sizeof(int)));
  for (int i = 0; i < 16; ++i) m[i] = i;
  inc_all<<<1, 16>>>(m, 1);
  cudaDeviceSynchronize();
  value("managed_after_kernel", all_equal(m, 16, 1));
  for (int i = 0; i < 16; ++i) m[i] = 100 + i;
  inc_all<<<1, 16>>>(m, 1);
  inc_all<<<1, 16>>>(m, 10);  // sees the first kernel's results, not the host's stale copy
  cudaDeviceSynchronize();
  value("managed_two_kernels", all_equal(m, 16, 111));
  cudaMemLocation loc{};
  loc.type = cudaMemLocationTypeDevice;
  report("prefetch_managed", cudaMemPrefetchAsync(m, 16 * sizeof(int), loc, 0, 0));
  // Copies from and to managed memory see the current copy.
  int* d;
  cudaMalloc(&d, 16 * sizeof(int));
  for (int i = 0; i < 16; ++i) m[i] = 200 + i;
  cudaMemcpy(d, m, 16 * sizeof(int), cudaMemcpyDefault);
  inc_all<<<1, 16>>>(d, 1);
  cudaMemcpy(m, d, 16 * sizeof(int), cudaMemcpyDefault);
  value("managed_copies", all_equal(m, 16, 201));

  // Host writes to the first and last of three pages after a synchronization
  // reach the device, and the page between keeps the device's bytes.
  int* big = nullptr;
  cudaMallocManaged(&big, 3072 * sizeof(int));
  for (int i = 0; i < 3072; ++i) big[i] = i;
  inc_all<<<1, 16>>>(big + 1024, 1000);  // the device changes page 1
  cudaDeviceSynchronize();
  big[10] = -3;
  big[2500] = -7;
  sum_two<<<1, 1>>>(big, 10, 2500);
  cudaDeviceSynchronize();
  int intact = big[0] == -10 && big[10] == -3 && big[2500] == -7;
  for (int i = 1; i < 3072; ++i)
    if (i != 10 && i != 2500) intact &= big[i] == i + (i >= 1024 && i < 1040 ? 1000 : 0);
  value("managed_pages", intact);
  cudaFree(big);

  // __managed__: the module's initial value, kernels' updates, host writes.
  value("managed_var_initial", counter);
  add_counter<<<1, 1>>>(10);
  cudaDeviceSynchronize();
  value("managed_var_after_kernel", counter);
  counter = 20;
  add_counter<<<1, 1>>>(10);
  cudaStreamSynchronize(0);
  value("managed_var_after_host_write", counter);

  // cudaHostAllocMapped: the device pointer is the host pointer.
  int* h = nullptr;
  report("host_alloc_mapped", cudaHostAlloc(&h, 16 * sizeof(int), cudaHostAllocMapped));
  int* dh = nullptr;
  report("mapped_device_pointer", cudaHostGetDevicePointer((void**)&dh, h, 0));
  value("mapped_same_pointer", dh == h);
  for (int i = 0; i < 16; ++i) h[i] = 300 + i;
  inc_all<<<1, 16>>>(dh, 1);
  cudaDeviceSynchronize();
  value("mapped_after_kernel", all_equal(h, 16, 301));

  // cudaHostRegisterMapped: the program's memory, a device pointer of its own.
  int* reg = static_cast<int*>(std::aligned_alloc(64, 16 * sizeof(int)));
  for (int i = 0; i < 16; ++i) reg[i] = 400 + i;
  report("host_register", cudaHostRegister(reg, 16 * sizeof(int), cudaHostRegisterMapped));
  int* dr = nullptr;
  report("registered_device_pointer", cudaHostGetDevicePointer((void**)&dr, reg, 0));
  inc_all<<<1, 16>>>(dr, 1);
  cudaDeviceSynchronize();
  value("registered_after_kernel", all_equal(reg, 16, 401));

  // cudaHostRegisterMapped on whole pages: live when the daemon shares its
  // device memory (the program's pages become the device copy's, still at
  // the program's address; /proc/self/maps shows them shared), mirrored
  // otherwise; either way kernels, copies and host writes see each other,
  // and cudaHostUnregister leaves the program private pages with the bytes.
  const long page = sysconf(_SC_PAGESIZE);
  const int nb = int(2 * page / sizeof(int));
  int* pages = static_cast<int*>(std::aligned_alloc(size_t(page), size_t(2 * page)));
  for (int i = 0; i < nb; ++i) pages[i] = i;
  report("register_pages", cudaHostRegister(pages, size_t(2 * page), cudaHostRegisterMapped));
  value("register_pages_shared", shared_mapping(pages));
  int* dpages = nullptr;
  cudaHostGetDevicePointer((void**)&dpages, pages, 0);
  inc_all<<<1, 16>>>(dpages + nb - 16, 1000);  // the last 16 ints, on the second page
  cudaDeviceSynchronize();
  value("pages_after_kernel", all_equal(pages + nb - 16, 16, nb - 16 + 1000) && all_equal(pages, 16, 0));
  cudaMemcpy(pages, d, 16 * sizeof(int), cudaMemcpyDeviceToHost);  // d holds 201.. (above)
  pages[1] = -5;  // a host write after the copy, which the next kernel reads
  sum_two<<<1, 1>>>(dpages, 1, 2);
  cudaDeviceSynchronize();
  value("pages_copy_write_kernel", pages[0] == -5 + 203 && pages[1] == -5 && all_equal(pages + 2, 14, 203));
  // A copy from the range's own device copy into its host copy, then a
  // kernel reading what it wrote.
  cudaMemcpy(pages + 100, dpages + nb - 16, 16 * sizeof(int), cudaMemcpyDeviceToHost);
  sum_two<<<1, 1>>>(dpages + 99, 1, 2);
  cudaDeviceSynchronize();
  value("pages_self_copy", pages[99] == 2 * (nb - 16 + 1000) + 1 && all_equal(pages + 100, 16, nb - 16 + 1000));
  report("unregister_pages", cudaHostUnregister(pages));
  value("unregistered_pages_shared", shared_mapping(pages));
  pages[3] += 1;  // still the program's memory, with the bytes it held
  value("unregistered_pages_kept", pages[3] == 205 && pages[nb - 1] == nb - 1 + 1000 && pages[20] == 20);
  std::free(pages);

  // Pinned but not mapped: the device cannot reach it.
  int* pinned = nullptr;
  cudaMallocHost(&pinned, 64);
  void* none = nullptr;
  report("unmapped_device_pointer", cudaHostGetDevicePointer(&none, pinned, 0));
  report("prefetch_unmanaged", cudaMemPrefetchAsync(pinned, 64, loc, 0, 0));
  cudaGetLastError();

  int local = 0;
  attributes("device", d);
  attributes("device_interior", d + 3);
  attributes("managed", m);
  attributes("managed_var", &counter);
  attributes("pinned", pinned);
  attributes("mapped", h);
  attributes("registered", reg);
  attributes("registered_device", dr);
  attributes("unregistered", &local);

  report("host_unregister", cudaHostUnregister(reg));
  report("free_host_mapped", cudaFreeHost(h));
  report("free_host", cudaFreeHost(pinned));
  report("free_managed", cudaFree(m));
  std::free(reg);
  report("final_sync", cudaDeviceSynchronize());
  return 0;
}
