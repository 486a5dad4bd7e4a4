// CUDA graphs, stream capture and stream-ordered memory under qgpu: graphs
// built node by node and by capture give the results of the same work
// issued directly, in the order their dependencies say; memory pools and
// graph allocations account their memory.  Prints "<case> <value>" lines.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <vector>

#include "gate.h"

__global__ void iota(int* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = i;
}
__global__ void scale(const int* x, int* y, int k, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] * k;
}
__global__ void add(const int* a, const int* b, int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] + b[i];
}
__global__ void bump(int* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += 1;
}

static int g_host_calls = 0;
static void CUDART_CB count_call(void*) { ++g_host_calls; }

static const int N = 300;

static int wrong(const std::vector<int>& v, int (*f)(int)) {
  int w = 0;
  for (int i = 0; i < N; ++i) w += v[i] != f(i);
  return w;
}

int main() {
  int *x, *y, *z, *out;
  cudaMalloc(&x, N * sizeof(int));
  cudaMalloc(&y, N * sizeof(int));
  cudaMalloc(&z, N * sizeof(int));
  cudaMalloc(&out, N * sizeof(int));
  std::vector<int> h(N);
  dim3 grid((N + 127) / 128), block(128);
  int n = N;

  // ---- A graph built node by node: a diamond of kernels between a memset
  // and a copy back, and a host node at the end.
  {
    cudaGraph_t g;
    report("graph_create", cudaGraphCreate(&g, 0));
    cudaGraphNode_t set, a, b, c, d, copy, host;
    cudaMemsetParams mp = {};
    mp.dst = out;
    mp.value = 0x7f;
    mp.elementSize = 4;
    mp.width = N;
    mp.height = 1;
    report("add_memset", cudaGraphAddMemsetNode(&set, g, nullptr, 0, &mp));
    void* a_args[] = {&x, &n};
    cudaKernelNodeParams kp = {};
    kp.func = (void*)iota;
    kp.gridDim = grid;
    kp.blockDim = block;
    kp.kernelParams = a_args;
    report("add_kernel", cudaGraphAddKernelNode(&a, g, nullptr, 0, &kp));
    int k2 = 2;
    void* b_args[] = {&x, &y, &k2, &n};
    kp.func = (void*)scale;
    kp.kernelParams = b_args;
    cudaGraphAddKernelNode(&b, g, &a, 1, &kp);
    int k5 = 5;
    void* c_args[] = {&x, &z, &k5, &n};
    kp.kernelParams = c_args;
    cudaGraphAddKernelNode(&c, g, &a, 1, &kp);
    k2 = 1000;  // the node keeps the value it was given
    void* d_args[] = {&y, &z, &out, &n};
    kp.func = (void*)add;
    kp.kernelParams = d_args;
    cudaGraphNode_t dd[] = {b, c, set};
    cudaGraphAddKernelNode(&d, g, dd, 3, &kp);
    report("add_copy", cudaGraphAddMemcpyNode1D(&copy, g, &d, 1, h.data(), out, N * sizeof(int), cudaMemcpyDeviceToHost));
    cudaHostNodeParams hp = {count_call, nullptr};
    report("add_host", cudaGraphAddHostNode(&host, g, &copy, 1, &hp));

    size_t nodes = 0, roots = 0, edges = 0, ddeps = 0, dependents = 0;
    cudaGraphGetNodes(g, nullptr, &nodes);
    cudaGraphGetRootNodes(g, nullptr, &roots);
    cudaGraphGetEdges(g, nullptr, nullptr, nullptr, &edges);
    cudaGraphNodeGetDependencies(d, nullptr, nullptr, &ddeps);
    cudaGraphNodeGetDependentNodes(a, nullptr, nullptr, &dependents);
    value("nodes", nodes);
    value("roots", roots);
    value("edges", edges);
    value("d_deps", ddeps);
    value("a_dependents", dependents);
    cudaGraphNodeType t;
    cudaGraphNodeGetType(set, &t);
    value("type_memset", t == cudaGraphNodeTypeMemset);
    cudaGraphNodeGetType(copy, &t);
    value("type_memcpy", t == cudaGraphNodeTypeMemcpy);
    cudaKernelNodeParams back = {};
    cudaGraphKernelNodeGetParams(b, &back);
    value("kernel_params_func", back.func == (void*)scale);
    value("kernel_params_k", *(int*)back.kernelParams[2]);
    // An access-policy window on a kernel node: a hint, kept and read back;
    // one larger than the device's accessPolicyMaxWindowSize is refused.
    cudaKernelNodeAttrValue win = {}, win_back = {};
    win.accessPolicyWindow.num_bytes = 4096;
    win.accessPolicyWindow.hitRatio = 0.25f;
    win.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
    report("node_window", cudaGraphKernelNodeSetAttribute(b, cudaKernelNodeAttributeAccessPolicyWindow, &win));
    cudaGraphKernelNodeGetAttribute(b, cudaKernelNodeAttributeAccessPolicyWindow, &win_back);
    value("node_window_bytes", (long long)win_back.accessPolicyWindow.num_bytes);
    int max_window = 0;
    cudaDeviceGetAttribute(&max_window, cudaDevAttrMaxAccessPolicyWindowSize, 0);
    win.accessPolicyWindow.num_bytes = size_t(max_window) + 1;
    printf("node_window_over %s\n",
           cudaGetErrorName(cudaGraphKernelNodeSetAttribute(b, cudaKernelNodeAttributeAccessPolicyWindow, &win)));
    cudaGetLastError();

    cudaGraphExec_t e;
    report("instantiate", cudaGraphInstantiate(&e, g, 0));
    cudaStream_t s;
    cudaStreamCreate(&s);
    report("launch", cudaGraphLaunch(e, s));
    report("launch_sync", cudaStreamSynchronize(s));
    value("diamond_wrong", wrong(h, [](int i) { return 2 * i + 5 * i; }));
    value("host_calls", g_host_calls);
    // The executable takes new parameters; the graph keeps its own.
    int k3 = 3;
    void* b3[] = {&x, &y, &k3, &n};
    kp.func = (void*)scale;
    kp.kernelParams = b3;
    report("exec_set_params", cudaGraphExecKernelNodeSetParams(e, b, &kp));
    cudaGraphLaunch(e, s);
    cudaStreamSynchronize(s);
    value("updated_wrong", wrong(h, [](int i) { return 3 * i + 5 * i; }));
    // A clone, changed and given to the executable with cudaGraphExecUpdate.
    cudaGraph_t g2;
    cudaGraphClone(&g2, g);
    cudaGraphNode_t c2;
    cudaGraphNodeFindInClone(&c2, c, g2);
    int k7 = 7;
    void* c7[] = {&x, &z, &k7, &n};
    kp.kernelParams = c7;
    cudaGraphKernelNodeSetParams(c2, &kp);
    cudaGraphExecUpdateResultInfo info;
    report("exec_update", cudaGraphExecUpdate(e, g2, &info));
    cudaGraphLaunch(e, s);
    cudaStreamSynchronize(s);
    value("exec_update_wrong", wrong(h, [](int i) { return 2 * i + 7 * i; }));
    cudaGraphDestroy(g2);
    cudaGraphDestroy(g);  // the executable has its own copy
    cudaGraphLaunch(e, s);
    cudaStreamSynchronize(s);
    value("after_graph_destroy_wrong", wrong(h, [](int i) { return 2 * i + 7 * i; }));
    value("host_calls_after", g_host_calls);
    report("exec_destroy", cudaGraphExecDestroy(e));
    cudaStreamDestroy(s);
  }

  // ---- Child graphs: a graph of one bump, twice in a row in a parent.
  {
    cudaGraph_t child, parent;
    cudaGraphCreate(&child, 0);
    cudaGraphNode_t k, c1, c2;
    void* args[] = {&out, &n};
    cudaKernelNodeParams kp = {};
    kp.func = (void*)bump;
    kp.gridDim = grid;
    kp.blockDim = block;
    kp.kernelParams = args;
    cudaGraphAddKernelNode(&k, child, nullptr, 0, &kp);
    cudaGraphCreate(&parent, 0);
    report("add_child", cudaGraphAddChildGraphNode(&c1, parent, nullptr, 0, child));
    cudaGraphAddChildGraphNode(&c2, parent, &c1, 1, child);
    cudaMemset(out, 0, N * sizeof(int));
    cudaGraphExec_t e;
    cudaGraphInstantiate(&e, parent, 0);
    cudaGraphLaunch(e, 0);
    cudaGraphLaunch(e, 0);
    cudaMemcpy(h.data(), out, N * sizeof(int), cudaMemcpyDeviceToHost);
    value("child_wrong", wrong(h, [](int) { return 4; }));
    cudaGraphExecDestroy(e);
    cudaGraphDestroy(parent);
    cudaGraphDestroy(child);
  }

  // ---- Stream capture: work on two streams joined by events becomes one
  // graph; nothing runs while capturing.
  {
    cudaStream_t s1, s2;
    cudaStreamCreate(&s1);
    cudaStreamCreate(&s2);
    cudaEvent_t fork, join;
    cudaEventCreate(&fork);
    cudaEventCreate(&join);
    int* pinned;
    cudaMallocHost(&pinned, N * sizeof(int));
    for (int i = 0; i < N; ++i) pinned[i] = -1;
    cudaMemset(x, 0, N * sizeof(int));
    cudaMemset(y, 0, N * sizeof(int));
    cudaMemset(z, 0, N * sizeof(int));
    cudaDeviceSynchronize();
    report("begin_capture", cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
    cudaStreamCaptureStatus st;
    cudaStreamIsCapturing(s1, &st);
    value("capturing", st == cudaStreamCaptureStatusActive);
    bump<<<grid, block, 0, s1>>>(x, N);
    cudaEventRecord(fork, s1);
    cudaStreamWaitEvent(s2, fork, 0);
    cudaStreamIsCapturing(s2, &st);
    value("joined", st == cudaStreamCaptureStatusActive);
    scale<<<grid, block, 0, s2>>>(x, y, 10, N);  // after the bump
    bump<<<grid, block, 0, s1>>>(z, N);           // beside the scale
    cudaEventRecord(join, s2);
    cudaStreamWaitEvent(s1, join, 0);
    add<<<grid, block, 0, s1>>>(z, y, out, N);
    cudaMemcpyAsync(pinned, out, N * sizeof(int), cudaMemcpyDeviceToHost, s1);
    const cudaGraphNode_t* deps;
    size_t ndeps = 0;
    unsigned long long id = 0;
    cudaGraph_t during;
    report("capture_info", cudaStreamGetCaptureInfo(s1, &st, &id, &during, &deps, nullptr, &ndeps));
    value("capture_deps", ndeps);
    cudaGraph_t g;
    report("end_capture", cudaStreamEndCapture(s1, &g));
    value("end_is_graph", g == during);
    cudaStreamIsCapturing(s2, &st);
    value("s2_released", st == cudaStreamCaptureStatusNone);
    cudaDeviceSynchronize();
    cudaMemcpy(h.data(), x, N * sizeof(int), cudaMemcpyDeviceToHost);
    value("nothing_ran", wrong(h, [](int) { return 0; }) == 0 && pinned[0] == -1);
    size_t nodes = 0;
    cudaGraphGetNodes(g, nullptr, &nodes);
    value("captured_nodes", nodes);
    cudaGraphNode_t list[16];
    size_t count = 16;
    cudaGraphGetNodes(g, list, &count);
    int kernels = 0, copies = 0;
    for (size_t i = 0; i < count; ++i) {
      cudaGraphNodeType t;
      cudaGraphNodeGetType(list[i], &t);
      kernels += t == cudaGraphNodeTypeKernel;
      copies += t == cudaGraphNodeTypeMemcpy;
    }
    value("captured_kernels", kernels);
    value("captured_copies", copies);
    cudaGraphExec_t e;
    cudaGraphInstantiateWithFlags(&e, g, 0);
    for (int r = 0; r < 3; ++r) cudaGraphLaunch(e, s1);
    report("captured_sync", cudaStreamSynchronize(s1));
    // Launch r: x = r, y = 10 r, z = r; out = z + y.
    std::vector<int> p(pinned, pinned + N);
    value("captured_wrong", wrong(p, [](int) { return 3 + 10 * 3; }));
    // A launch captured into another capture becomes a child graph node.
    cudaGraph_t outer;
    cudaStreamBeginCapture(s2, cudaStreamCaptureModeGlobal);
    cudaGraphLaunch(e, s2);
    cudaStreamEndCapture(s2, &outer);
    cudaGraphGetNodes(outer, list, &(count = 16));
    cudaGraphNodeType t;
    cudaGraphNodeGetType(list[0], &t);
    value("launch_in_capture_is_child", count == 1 && t == cudaGraphNodeTypeGraph);
    cudaGraphDestroy(outer);
    // Synchronizing a capturing stream is refused and invalidates the capture.
    cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal);
    bump<<<grid, block, 0, s1>>>(x, N);
    report("sync_while_capturing", cudaStreamSynchronize(s1));
    cudaGraph_t bad = nullptr;
    report("end_invalidated", cudaStreamEndCapture(s1, &bad));
    value("invalidated_graph_null", bad == nullptr);
    cudaGetLastError();
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    report("exchange_mode", cudaThreadExchangeStreamCaptureMode(&mode));
    value("previous_mode_global", mode == cudaStreamCaptureModeGlobal);
    cudaThreadExchangeStreamCaptureMode(&mode);
    cudaGraphExecDestroy(e);
    cudaGraphDestroy(g);
    cudaFreeHost(pinned);
    cudaStreamDestroy(s1);
    cudaStreamDestroy(s2);
  }

  // ---- Stream-ordered allocation and pools.
  {
    int supported = 0;
    cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, 0);
    value("pools_supported", supported);
    cudaStream_t s;
    cudaStreamCreate(&s);
    cudaMemPool_t pool;
    cudaDeviceGetDefaultMemPool(&pool, 0);
    const size_t bytes = 1 << 20;
    int* p = nullptr;
    report("malloc_async", cudaMallocAsync((void**)&p, bytes, s));
    iota<<<grid, block, 0, s>>>(p, N);
    cudaMemcpyAsync(h.data(), p, N * sizeof(int), cudaMemcpyDeviceToHost, s);
    report("free_async", cudaFreeAsync(p, s));
    cudaStreamSynchronize(s);
    value("async_memory_wrong", wrong(h, [](int i) { return i; }));
    uint64_t reserved = 1, used = 1, high = 0;
    cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved);
    cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used);
    cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &high);
    value("threshold0_reserved", reserved);  // released at once: the default threshold is 0
    value("threshold0_used", used);
    value("used_high", high);
    uint64_t keep = UINT64_MAX;
    report("set_threshold", cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
    int* q;
    cudaMallocAsync((void**)&q, bytes, s);
    cudaFreeAsync(q, s);
    cudaStreamSynchronize(s);
    cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved);
    cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used);
    value("kept_reserved", reserved);
    value("kept_used", used);
    int* q2;
    cudaMallocAsync((void**)&q2, bytes, s);
    value("reused_block", q2 == q);
    cudaFreeAsync(q2, s);
    cudaStreamSynchronize(s);
    report("trim", cudaMemPoolTrimTo(pool, 0));
    cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved);
    value("trimmed_reserved", reserved);
    // A pool of its own.
    cudaMemPoolProps props = {};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = 0;
    cudaMemPool_t mine;
    report("pool_create", cudaMemPoolCreate(&mine, &props));
    int* r;
    report("malloc_from_pool", cudaMallocFromPoolAsync((void**)&r, 4096, mine, s));
    cudaMemPoolGetAttribute(mine, cudaMemPoolAttrUsedMemCurrent, &used);
    value("own_pool_used", used);
    cudaMemsetAsync(r, 1, 4096, s);
    unsigned char byte = 0;
    cudaMemcpyAsync(&byte, r + 10, 1, cudaMemcpyDeviceToHost, s);
    cudaFreeAsync(r, s);
    cudaStreamSynchronize(s);
    value("own_pool_byte", byte);
    report("pool_destroy", cudaMemPoolDestroy(mine));
    cudaStreamDestroy(s);
  }

  // ---- Graph memory nodes: allocation, use, free; the footprint.
  {
    cudaGraph_t g;
    cudaGraphCreate(&g, 0);
    cudaMemAllocNodeParams ap = {};
    ap.poolProps.allocType = cudaMemAllocationTypePinned;
    ap.poolProps.location.type = cudaMemLocationTypeDevice;
    ap.poolProps.location.id = 0;
    ap.bytesize = N * sizeof(int);
    cudaGraphNode_t alloc, k, copy, fr;
    report("add_alloc", cudaGraphAddMemAllocNode(&alloc, g, nullptr, 0, &ap));
    int* m = (int*)ap.dptr;
    value("alloc_has_address", m != nullptr);
    void* args[] = {&m, &n};
    cudaKernelNodeParams kp = {};
    kp.func = (void*)iota;
    kp.gridDim = grid;
    kp.blockDim = block;
    kp.kernelParams = args;
    cudaGraphAddKernelNode(&k, g, &alloc, 1, &kp);
    cudaGraphAddMemcpyNode1D(&copy, g, &k, 1, h.data(), m, N * sizeof(int), cudaMemcpyDeviceToHost);
    report("add_free", cudaGraphAddMemFreeNode(&fr, g, &copy, 1, m));
    cudaGraphExec_t e;
    report("instantiate_mem", cudaGraphInstantiate(&e, g, 0));
    uint64_t fp = 1;
    cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrUsedMemCurrent, &fp);
    value("footprint_before_launch", fp);
    for (int i = 0; i < N; ++i) h[i] = -1;
    cudaGraphLaunch(e, 0);
    cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrUsedMemCurrent, &fp);
    value("footprint_launched", fp);
    report("mem_graph_sync", cudaDeviceSynchronize());
    value("mem_graph_wrong", wrong(h, [](int i) { return i; }));
    cudaGraphLaunch(e, 0);  // again: the allocation was freed
    report("mem_graph_again", cudaDeviceSynchronize());
    cudaDeviceGraphMemTrim(0);
    cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrUsedMemCurrent, &fp);
    value("footprint_trimmed", fp);
    cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrUsedMemHigh, &fp);
    value("footprint_high", fp);
    cudaGraphExecDestroy(e);
    cudaGraphDestroy(g);
    // Captured cudaMallocAsync / cudaFreeAsync become allocation and free nodes.
    cudaStream_t s;
    cudaStreamCreate(&s);
    cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    int* c;
    cudaMallocAsync((void**)&c, 256, s);
    cudaFreeAsync(c, s);
    cudaStreamEndCapture(s, &g);
    cudaGraphNode_t list[4];
    size_t count = 4;
    cudaGraphGetNodes(g, list, &count);
    cudaGraphNodeType t0, t1;
    cudaGraphNodeGetType(list[0], &t0);
    cudaGraphNodeGetType(list[1], &t1);
    value("captured_alloc_free", count == 2 && t0 == cudaGraphNodeTypeMemAlloc && t1 == cudaGraphNodeTypeMemFree);
    cudaGraphDestroy(g);
    cudaStreamDestroy(s);
  }

  report("final_sync", cudaDeviceSynchronize());
  printf("done\n");
  return 0;
}
