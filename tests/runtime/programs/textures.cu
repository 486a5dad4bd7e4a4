// Pitched memory, CUDA arrays, 2D/3D copies, texture and surface objects:
// each case prints "<case> <value>", values checked against the program's
// own host computation.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

static void report(const char* what, cudaError_t e) { printf("%s %s\n", what, cudaGetErrorName(e)); }
static void value(const char* what, long long v) { printf("%s %lld\n", what, v); }

__global__ void fetch2d(cudaTextureObject_t t, float* out, int w, int h, float off, float scale) {
  int x = threadIdx.x, y = blockIdx.x;
  float4 v = tex2D<float4>(t, (x + off) * scale, (y + off) * scale);
  out[4 * (y * w + x) + 0] = v.x;
  out[4 * (y * w + x) + 1] = v.y;
  out[4 * (y * w + x) + 2] = v.z;
  out[4 * (y * w + x) + 3] = v.w;
}

__global__ void fetch1d(cudaTextureObject_t t, int* out, int n) {
  int i = threadIdx.x;
  out[i] = tex1Dfetch<int>(t, i - 3);
}

__global__ void surf(cudaSurfaceObject_t s, float* out, int w, int h) {
  int x = threadIdx.x, y = blockIdx.x;
  surf2Dwrite(float(x * 100 + y), s, x * 4, y);
  __syncthreads();
  out[y * w + x] = surf2Dread<float>(s, (x + 2) * 4, y, cudaBoundaryModeZero);
}

__global__ void layered(cudaTextureObject_t t, float* out, int layers) {
  int l = threadIdx.x;
  out[l] = tex2DLayered<float>(t, 1.5f, 0.5f, l);
}

__global__ void cube(cudaTextureObject_t t, float* out) {
  const float d[6][3] = {{1, 0.1f, 0.2f}, {-1, 0.1f, -0.2f}, {0.2f, 1, 0.1f}, {0.1f, -1, 0.2f}, {0.2f, 0.1f, 1}, {-0.1f, 0.2f, -1}};
  int i = threadIdx.x;
  out[i] = texCubemap<float>(t, d[i][0], d[i][1], d[i][2]);
}

int main() {
  const int W = 37, H = 5;
  // Pitched memory, 2D copies and memsets.
  float* p = nullptr;
  size_t pitch = 0;
  report("malloc_pitch", cudaMallocPitch((void**)&p, &pitch, W * sizeof(float), H));
  value("pitch_ok", pitch >= W * sizeof(float) && pitch % 32 == 0);
  std::vector<float> h(W * H), back(W * H, -1);
  for (int i = 0; i < W * H; ++i) h[i] = float(i) * 0.5f;
  report("copy2d_in", cudaMemcpy2D(p, pitch, h.data(), W * sizeof(float), W * sizeof(float), H, cudaMemcpyHostToDevice));
  report("memset2d", cudaMemset2D((char*)p + pitch + 4 * 3, pitch, 0, 4 * 5, 2));  // rows 1-2, columns 3-7
  report("copy2d_out", cudaMemcpy2D(back.data(), W * sizeof(float), p, pitch, W * sizeof(float), H, cudaMemcpyDeviceToHost));
  long long wrong = 0;
  for (int y = 0; y < H; ++y)
    for (int x = 0; x < W; ++x) wrong += back[y * W + x] != ((y == 1 || y == 2) && x >= 3 && x < 8 ? 0.0f : h[y * W + x]);
  value("copy2d_wrong", wrong);

  // Arrays: 2D copies in and out at offsets.
  cudaChannelFormatDesc fd = cudaCreateChannelDesc<float>();
  cudaArray_t a = nullptr;
  report("malloc_array", cudaMallocArray(&a, &fd, W, H));
  report("copy_to_array", cudaMemcpy2DToArray(a, 0, 0, p, pitch, W * sizeof(float), H, cudaMemcpyDeviceToDevice));
  std::vector<float> sub(4 * 2, -1);
  report("copy_from_array", cudaMemcpy2DFromArray(sub.data(), 4 * sizeof(float), a, 10 * sizeof(float), 3, 4 * sizeof(float), 2, cudaMemcpyDeviceToHost));
  wrong = 0;
  for (int y = 0; y < 2; ++y)
    for (int x = 0; x < 4; ++x) wrong += sub[y * 4 + x] != back[(3 + y) * W + 10 + x];
  value("array_wrong", wrong);
  cudaChannelFormatDesc gd;
  cudaExtent ge;
  unsigned gf = 9;
  report("array_info", cudaArrayGetInfo(&gd, &ge, &gf, a));
  value("array_info_ok", gd.x == 32 && gd.f == cudaChannelFormatKindFloat && ge.width == W && ge.height == H && ge.depth == 0 && gf == 0);

  // A texture of the array: point sampling, clamp, unnormalised coordinates.
  cudaResourceDesc rd{};
  rd.resType = cudaResourceTypeArray;
  rd.res.array.array = a;
  cudaTextureDesc td{};
  td.addressMode[0] = td.addressMode[1] = cudaAddressModeClamp;
  td.filterMode = cudaFilterModePoint;
  td.readMode = cudaReadModeElementType;
  cudaTextureObject_t t = 0;
  report("create_texture", cudaCreateTextureObject(&t, &rd, &td, nullptr));
  float* out = nullptr;
  cudaMalloc(&out, 4 * sizeof(float) * 32 * 8 * 2);
  fetch2d<<<H, W>>>(t, out, W, H, -1.5f, 1.0f);  // texel (x - 2, y - 2), clamped
  std::vector<float> o(4 * W * H);
  report("fetch_point", cudaMemcpy(o.data(), out, o.size() * 4, cudaMemcpyDeviceToHost));
  wrong = 0;
  for (int y = 0; y < H; ++y)
    for (int x = 0; x < W; ++x) {
      int cx = std::min(std::max(x - 2, 0), W - 1), cy = std::min(std::max(y - 2, 0), H - 1);
      const float* v = &o[4 * (y * W + x)];
      wrong += v[0] != back[cy * W + cx] || v[1] != 0 || v[2] != 0 || v[3] != 1;
    }
  value("tex_point_wrong", wrong);
  cudaResourceDesc rd2{};
  report("get_resource", cudaGetTextureObjectResourceDesc(&rd2, t));
  value("get_resource_ok", rd2.resType == cudaResourceTypeArray && rd2.res.array.array == a);
  report("destroy_texture", cudaDestroyTextureObject(t));

  // uchar4 read as normalised floats, linear filtering, wrap, normalised
  // coordinates: against the texture-fetching formulas on the host.
  const int UW = 5, UH = 3;
  std::vector<uchar4> u(UW * UH);
  for (int i = 0; i < UW * UH; ++i) u[i] = make_uchar4(i * 17 % 256, 255 - i * 9, i * i % 256, 128 + i);
  cudaChannelFormatDesc ud = cudaCreateChannelDesc<uchar4>();
  cudaArray_t ua = nullptr;
  report("malloc_array_u8", cudaMallocArray(&ua, &ud, UW, UH));
  report("copy_u8", cudaMemcpy2DToArray(ua, 0, 0, u.data(), UW * 4, UW * 4, UH, cudaMemcpyHostToDevice));
  rd.res.array.array = ua;
  td.addressMode[0] = td.addressMode[1] = cudaAddressModeWrap;
  td.filterMode = cudaFilterModeLinear;
  td.readMode = cudaReadModeNormalizedFloat;
  td.normalizedCoords = 1;
  report("create_texture_u8", cudaCreateTextureObject(&t, &rd, &td, nullptr));
  const int FW = 32, FH = 8;
  fetch2d<<<FH, FW>>>(t, out, FW, FH, 0.3f, 0.0711f);
  std::vector<float> ou(4 * FW * FH);
  report("fetch_linear", cudaMemcpy(ou.data(), out, ou.size() * 4, cudaMemcpyDeviceToHost));
  double maxerr = 0;
  for (int y = 0; y < FH; ++y)
    for (int x = 0; x < FW; ++x) {
      double cx = (x + 0.3) * 0.0711, cy = (y + 0.3) * 0.0711;
      double xb = (cx - std::floor(cx)) * UW - 0.5, yb = (cy - std::floor(cy)) * UH - 0.5;
      int i = int(std::floor(xb)), j = int(std::floor(yb));
      double al = std::floor((xb - i) * 256) / 256, be = std::floor((yb - j) * 256) / 256;
      for (int c = 0; c < 4; ++c) {
        auto T = [&](int xx, int yy) {
          xx = (xx % UW + UW) % UW, yy = (yy % UH + UH) % UH;
          const unsigned char* q = &u[yy * UW + xx].x;
          return q[c] / 255.0;
        };
        double e = (1 - al) * (1 - be) * T(i, j) + al * (1 - be) * T(i + 1, j) + (1 - al) * be * T(i, j + 1) + al * be * T(i + 1, j + 1);
        maxerr = std::max(maxerr, std::fabs(e - ou[4 * (y * FW + x) + c]));
      }
    }
  value("tex_linear_ok", maxerr < 1e-6);
  if (maxerr >= 1e-6) printf("tex_linear_maxerr %g\n", maxerr);
  cudaDestroyTextureObject(t);

  // tex1Dfetch on linear memory: past either end reads 0.
  int* lin = nullptr;
  std::vector<int> li(10);
  for (int i = 0; i < 10; ++i) li[i] = 1000 + i;
  cudaMalloc(&lin, 40);
  cudaMemcpy(lin, li.data(), 40, cudaMemcpyHostToDevice);
  cudaResourceDesc lr{};
  lr.resType = cudaResourceTypeLinear;
  lr.res.linear.devPtr = lin;
  lr.res.linear.desc = cudaCreateChannelDesc<int>();
  lr.res.linear.sizeInBytes = 40;
  cudaTextureDesc ltd{};
  report("create_texture_linear", cudaCreateTextureObject(&t, &lr, &ltd, nullptr));
  int* iout = nullptr;
  cudaMalloc(&iout, 16 * 4);
  fetch1d<<<1, 16>>>(t, iout, 16);
  std::vector<int> io(16);
  report("fetch_linear_memory", cudaMemcpy(io.data(), iout, 64, cudaMemcpyDeviceToHost));
  wrong = 0;
  for (int i = 0; i < 16; ++i) wrong += io[i] != (i - 3 >= 0 && i - 3 < 10 ? 1000 + i - 3 : 0);
  value("fetch_wrong", wrong);
  cudaDestroyTextureObject(t);

  // Surfaces: writes then reads (two texels on, zero past the edge).
  cudaArray_t sa = nullptr;
  report("malloc_array_surface", cudaMallocArray(&sa, &fd, 8, 4, cudaArraySurfaceLoadStore));
  cudaResourceDesc sr{};
  sr.resType = cudaResourceTypeArray;
  sr.res.array.array = sa;
  cudaSurfaceObject_t s = 0;
  report("create_surface", cudaCreateSurfaceObject(&s, &sr));
  surf<<<4, 8>>>(s, out, 8, 4);
  std::vector<float> so(32), sb(32);
  report("surface_kernel", cudaMemcpy(so.data(), out, 32 * 4, cudaMemcpyDeviceToHost));
  report("surface_back", cudaMemcpy2DFromArray(sb.data(), 32, sa, 0, 0, 32, 4, cudaMemcpyDeviceToHost));
  wrong = 0;
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 8; ++x) {
      wrong += sb[y * 8 + x] != float(x * 100 + y);
      wrong += so[y * 8 + x] != (x + 2 < 8 ? float((x + 2) * 100 + y) : 0.0f);
    }
  value("surf_wrong", wrong);
  cudaDestroySurfaceObject(s);

  // Layered and cube-map arrays through cudaMemcpy3D.
  const int L = 3;
  cudaArray_t la = nullptr;
  report("malloc_layered", cudaMalloc3DArray(&la, &fd, make_cudaExtent(2, 1, L), cudaArrayLayered));
  std::vector<float> lh(2 * L);
  for (int i = 0; i < 2 * L; ++i) lh[i] = float(i * i);
  cudaMemcpy3DParms mp{};
  mp.srcPtr = make_cudaPitchedPtr(lh.data(), 2 * sizeof(float), 2, 1);
  mp.dstArray = la;
  mp.extent = make_cudaExtent(2, 1, L);
  mp.kind = cudaMemcpyHostToDevice;
  report("copy3d_layered", cudaMemcpy3D(&mp));
  rd.res.array.array = la;
  td = cudaTextureDesc{};
  td.filterMode = cudaFilterModePoint;
  report("create_texture_layered", cudaCreateTextureObject(&t, &rd, &td, nullptr));
  layered<<<1, L>>>(t, out, L);
  std::vector<float> lo(L);
  report("fetch_layered", cudaMemcpy(lo.data(), out, L * 4, cudaMemcpyDeviceToHost));
  wrong = 0;
  for (int l = 0; l < L; ++l) wrong += lo[l] != lh[2 * l + 1];
  value("layered_wrong", wrong);
  cudaDestroyTextureObject(t);

  cudaArray_t ca = nullptr;
  const int CW = 4;
  report("malloc_cube", cudaMalloc3DArray(&ca, &fd, make_cudaExtent(CW, CW, 6), cudaArrayCubemap));
  std::vector<float> ch(CW * CW * 6);
  for (int f = 0; f < 6; ++f)
    for (int i = 0; i < CW * CW; ++i) ch[f * CW * CW + i] = float(f * 10);
  mp = cudaMemcpy3DParms{};
  mp.srcPtr = make_cudaPitchedPtr(ch.data(), CW * sizeof(float), CW, CW);
  mp.dstArray = ca;
  mp.extent = make_cudaExtent(CW, CW, 6);
  mp.kind = cudaMemcpyHostToDevice;
  report("copy3d_cube", cudaMemcpy3D(&mp));
  rd.res.array.array = ca;
  td.normalizedCoords = 1;
  td.filterMode = cudaFilterModeLinear;
  report("create_texture_cube", cudaCreateTextureObject(&t, &rd, &td, nullptr));
  cube<<<1, 6>>>(t, out);
  std::vector<float> co(6);
  report("fetch_cube", cudaMemcpy(co.data(), out, 24, cudaMemcpyDeviceToHost));
  wrong = 0;
  for (int f = 0; f < 6; ++f) wrong += co[f] != float(f * 10);
  value("cube_wrong", wrong);
  cudaDestroyTextureObject(t);

  // A graph's memcpy node into an array.
  std::vector<float> gh(W * H), gb(W * H);
  for (int i = 0; i < W * H; ++i) gh[i] = 7.0f * float(i);
  cudaMemcpy3DParms gp{};
  gp.srcPtr = make_cudaPitchedPtr(gh.data(), W * sizeof(float), W, H);
  gp.dstArray = a;
  gp.extent = make_cudaExtent(W, H, 1);
  gp.kind = cudaMemcpyHostToDevice;
  cudaGraph_t g = nullptr;
  cudaGraphExec_t gx = nullptr;
  cudaGraphNode_t node = nullptr;
  report("graph_create", cudaGraphCreate(&g, 0));
  report("graph_array_node", cudaGraphAddMemcpyNode(&node, g, nullptr, 0, &gp));
  report("graph_instantiate", cudaGraphInstantiate(&gx, g, 0));
  report("graph_launch", cudaGraphLaunch(gx, 0));
  report("graph_sync", cudaStreamSynchronize(0));
  report("graph_copy_back", cudaMemcpy2DFromArray(gb.data(), W * sizeof(float), a, 0, 0, W * sizeof(float), H, cudaMemcpyDeviceToHost));
  wrong = 0;
  for (int i = 0; i < W * H; ++i) wrong += gb[i] != gh[i];
  value("graph_array_wrong", wrong);
  cudaGraphExecDestroy(gx);
  cudaGraphDestroy(g);

  report("free_arrays", cudaFreeArray(a) == cudaSuccess && cudaFreeArray(ua) == cudaSuccess && cudaFreeArray(sa) == cudaSuccess &&
                                cudaFreeArray(la) == cudaSuccess
                            ? cudaFreeArray(ca)
                            : cudaErrorInvalidValue);
  report("final_sync", cudaDeviceSynchronize());
  return 0;
}
