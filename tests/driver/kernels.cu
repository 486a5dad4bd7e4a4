// Device code loaded by the driver tests as an nvcc fatbinary.
extern "C" __global__ void add_one(int* p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] += 1;
}
