// Device-side new/delete and virtual calls: one kernel creates objects of two
// classes derived from an abstract base with `new` (so their vtables are the
// device's), a second calls their virtual functions through base pointers,
// a third deletes them through the base's virtual destructor, which counts
// the destructions.  Device malloc/free carry a scratch array in the first.
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

__device__ int destroyed;

struct Shape {
  __device__ virtual ~Shape() { atomicAdd(&destroyed, 1); }
  __device__ virtual int area() const = 0;
  __device__ virtual int kind() const { return 0; }
};
struct Rect : Shape {
  int w, h;
  __device__ Rect(int w_, int h_) : w(w_), h(h_) {}
  __device__ int area() const override { return w * h; }
  __device__ int kind() const override { return 1; }
};
struct Tri : Shape {
  int b, h;
  __device__ Tri(int b_, int h_) : b(b_), h(h_) {}
  __device__ int area() const override { return b * h / 2; }
};

__global__ void create(Shape** shapes, int n, int* scratch_ok) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int* scratch = static_cast<int*>(malloc(4 * sizeof(int)));
  if (scratch) {
    for (int k = 0; k < 4; ++k) scratch[k] = i + k;
    scratch_ok[i] = scratch[0] + scratch[3] == 2 * i + 3;
    free(scratch);
  } else {
    scratch_ok[i] = 0;
  }
  shapes[i] = (i % 3 == 0) ? static_cast<Shape*>(new Tri(i + 1, 2 * i + 2)) : new Rect(i + 1, i % 7 + 1);
}
__global__ void measure(Shape* const* shapes, int n, int* areas, int* kinds) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  areas[i] = shapes[i] ? shapes[i]->area() : -1;
  kinds[i] = shapes[i] ? shapes[i]->kind() : -1;
}
__global__ void destroy(Shape** shapes, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) delete shapes[i];
}

int main() {
  const int n = 96;
  Shape** d_shapes;
  int *d_areas, *d_kinds, *d_scratch;
  CHECK(cudaMalloc(&d_shapes, n * sizeof(Shape*)));
  CHECK(cudaMalloc(&d_areas, n * sizeof(int)));
  CHECK(cudaMalloc(&d_kinds, n * sizeof(int)));
  CHECK(cudaMalloc(&d_scratch, n * sizeof(int)));
  create<<<3, 32>>>(d_shapes, n, d_scratch);
  CHECK(cudaGetLastError());
  measure<<<3, 32>>>(d_shapes, n, d_areas, d_kinds);
  CHECK(cudaGetLastError());
  destroy<<<3, 32>>>(d_shapes, n);
  CHECK(cudaGetLastError());
  int areas[n], kinds[n], scratch[n], count = 0;
  CHECK(cudaMemcpy(areas, d_areas, sizeof(areas), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(kinds, d_kinds, sizeof(kinds), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(scratch, d_scratch, sizeof(scratch), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpyFromSymbol(&count, destroyed, sizeof(int)));
  CHECK(cudaFree(d_shapes));
  CHECK(cudaFree(d_areas));
  CHECK(cudaFree(d_kinds));
  CHECK(cudaFree(d_scratch));

  int bad = 0;
  for (int i = 0; i < n; ++i) {
    const bool tri = i % 3 == 0;
    const int area = tri ? (i + 1) * (2 * i + 2) / 2 : (i + 1) * (i % 7 + 1);
    if (areas[i] != area || kinds[i] != (tri ? 0 : 1) || scratch[i] != 1) ++bad;
  }
  printf("%d objects: %d wrong, %d destroyed\n", n, bad, count);
  const bool ok = bad == 0 && count == n;
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
