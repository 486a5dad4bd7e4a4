// Conditional graph nodes under qgpu: if, if/else, while and switch nodes
// whose condition a kernel sets with cudaGraphSetConditional (or a handle's
// default value gives), run the bodies the condition chooses, each launch
// anew.  Prints "<case> <value>" lines; every expected value is derived in
// the test from the launches made here.
#include <cuda_runtime.h>

#include <cstdio>

#include "gate.h"

__global__ void set_cond(cudaGraphConditionalHandle h, const int* v) { cudaGraphSetConditional(h, *v); }
__global__ void add_to(int* x, int k) { *x += k; }
__global__ void count_down(int* counter, int* runs, cudaGraphConditionalHandle h) {
  *runs += 1;
  *counter -= 1;
  cudaGraphSetConditional(h, *counter > 0 ? 1 : 0);
}

static cudaGraphNode_t kernel_node(cudaGraph_t g, const cudaGraphNode_t* deps, size_t n, void* fn, void** args) {
  cudaKernelNodeParams p = {};
  p.func = fn;
  p.gridDim = dim3(1);
  p.blockDim = dim3(1);
  p.kernelParams = args;
  cudaGraphNode_t node = nullptr;
  cudaGraphAddKernelNode(&node, g, deps, n, &p);
  return node;
}

// A conditional node of `type` with `size` bodies after `dep` (if any).
static cudaGraphNode_t cond_node(cudaGraph_t g, cudaGraphNode_t dep, cudaGraphConditionalHandle h,
                                 cudaGraphConditionalNodeType type, unsigned size, cudaGraph_t* bodies,
                                 cudaError_t* err = nullptr) {
  cudaGraphNodeParams p = {};
  p.type = cudaGraphNodeTypeConditional;
  p.conditional.handle = h;
  p.conditional.type = type;
  p.conditional.size = size;
  cudaGraphNode_t node = nullptr;
  cudaError_t e = cudaGraphAddNode(&node, g, dep ? &dep : nullptr, nullptr, dep ? 1 : 0, &p);
  if (err) *err = e;
  if (e == cudaSuccess)
    for (unsigned i = 0; i < size; ++i) bodies[i] = p.conditional.phGraph_out[i];
  return node;
}

static int get(const int* d) {
  int v = 0;
  cudaMemcpy(&v, d, sizeof v, cudaMemcpyDeviceToHost);
  return v;
}
static void put(int* d, int v) { cudaMemcpy(d, &v, sizeof v, cudaMemcpyHostToDevice); }

int main() {
  int *dv, *x, *y, *counter, *runs, *sw;
  cudaMalloc(&dv, sizeof(int));
  cudaMalloc(&x, sizeof(int));
  cudaMalloc(&y, sizeof(int));
  cudaMalloc(&counter, sizeof(int));
  cudaMalloc(&runs, sizeof(int));
  cudaMalloc(&sw, 3 * sizeof(int));
  cudaMemset(x, 0, sizeof(int));
  cudaMemset(y, 0, sizeof(int));
  cudaMemset(runs, 0, sizeof(int));
  cudaMemset(sw, 0, 3 * sizeof(int));
  int one = 1, ten = 10, hundred = 100;

  // if/else: the condition from a kernel; x counts the "then" runs, y the "else" runs.
  {
    cudaGraph_t g;
    cudaGraphCreate(&g, 0);
    cudaGraphConditionalHandle h;
    report("handle_create", cudaGraphConditionalHandleCreate(&h, g, 0, 0));
    void* sargs[] = {&h, &dv};
    cudaGraphNode_t s = kernel_node(g, nullptr, 0, (void*)set_cond, sargs);
    cudaGraph_t bodies[2];
    cudaError_t e;
    cond_node(g, s, h, cudaGraphCondTypeIf, 2, bodies, &e);
    report("add_if_else", e);
    void* then_args[] = {&x, &one};
    void* else_args[] = {&y, &one};
    kernel_node(bodies[0], nullptr, 0, (void*)add_to, then_args);
    kernel_node(bodies[1], nullptr, 0, (void*)add_to, else_args);
    cudaGraphExec_t ex;
    report("instantiate_if", cudaGraphInstantiate(&ex, g, 0));
    for (int v : {0, 1, 5, 0, 0}) {  // then twice, else three times
      put(dv, v);
      cudaGraphLaunch(ex, 0);
    }
    report("if_sync", cudaDeviceSynchronize());
    value("if_then", get(x));
    value("if_else", get(y));
    cudaGraphExecDestroy(ex);
    cudaGraphDestroy(g);
  }

  // while with cudaGraphCondAssignDefault (default 1): the body counts down
  // and clears the condition at 0; each launch starts from the default again.
  {
    cudaGraph_t g;
    cudaGraphCreate(&g, 0);
    cudaGraphConditionalHandle h;
    cudaGraphConditionalHandleCreate(&h, g, 1, cudaGraphCondAssignDefault);
    cudaGraph_t body;
    cond_node(g, nullptr, h, cudaGraphCondTypeWhile, 1, &body);
    void* args[] = {&counter, &runs, &h};
    kernel_node(body, nullptr, 0, (void*)count_down, args);
    cudaGraphExec_t ex;
    report("instantiate_while", cudaGraphInstantiate(&ex, g, 0));
    put(counter, 5);
    cudaGraphLaunch(ex, 0);
    report("while_sync", cudaDeviceSynchronize());
    value("while_runs_first", get(runs));
    value("while_counter", get(counter));
    put(counter, 3);
    cudaGraphLaunch(ex, 0);
    cudaDeviceSynchronize();
    value("while_runs_total", get(runs));
    // Destroyed right after a launch: the launch still runs, its bodies intact.
    put(counter, 2);
    cudaStream_t st;
    cudaStreamCreate(&st);
    cudaGraphLaunch(ex, st);
    report("destroy_pending", cudaGraphExecDestroy(ex));
    cudaStreamSynchronize(st);
    cudaStreamDestroy(st);
    value("while_runs_after_destroy", get(runs));
    cudaGraphDestroy(g);
  }

  // switch of three bodies: body i adds to sw[i]; a value past the last runs none.
  {
    cudaGraph_t g;
    cudaGraphCreate(&g, 0);
    cudaGraphConditionalHandle h;
    cudaGraphConditionalHandleCreate(&h, g, 0, 0);
    void* sargs[] = {&h, &dv};
    cudaGraphNode_t s = kernel_node(g, nullptr, 0, (void*)set_cond, sargs);
    cudaGraph_t bodies[3];
    cond_node(g, s, h, cudaGraphCondTypeSwitch, 3, bodies);
    int* slot[3] = {sw, sw + 1, sw + 2};
    void* args[3][2] = {{&slot[0], &one}, {&slot[1], &ten}, {&slot[2], &hundred}};
    for (int i = 0; i < 3; ++i) kernel_node(bodies[i], nullptr, 0, (void*)add_to, args[i]);
    cudaGraphExec_t ex;
    report("instantiate_switch", cudaGraphInstantiate(&ex, g, 0));
    for (int v : {2, 0, 7, 2}) {
      put(dv, v);
      cudaGraphLaunch(ex, 0);
    }
    report("switch_sync", cudaDeviceSynchronize());
    int h_sw[3];
    cudaMemcpy(h_sw, sw, sizeof h_sw, cudaMemcpyDeviceToHost);
    value("switch_0", h_sw[0]);
    value("switch_1", h_sw[1]);
    value("switch_2", h_sw[2]);
    cudaGraphExecDestroy(ex);
    cudaGraphDestroy(g);
  }

  // A handle's default value, no kernel setting it: the if body runs.
  {
    cudaGraph_t g;
    cudaGraphCreate(&g, 0);
    cudaGraphConditionalHandle h;
    cudaGraphConditionalHandleCreate(&h, g, 1, 0);
    cudaGraph_t body;
    cond_node(g, nullptr, h, cudaGraphCondTypeIf, 1, &body);
    put(x, 0);
    void* args[] = {&x, &ten};
    kernel_node(body, nullptr, 0, (void*)add_to, args);
    cudaGraphExec_t ex;
    cudaGraphInstantiate(&ex, g, 0);
    cudaGraphLaunch(ex, 0);
    cudaDeviceSynchronize();
    value("if_default", get(x));
    cudaGraphExecDestroy(ex);
    cudaGraphDestroy(g);
  }

  // What CUDA refuses: a while node with two bodies, a host node in a body.
  {
    cudaGraph_t g;
    cudaGraphCreate(&g, 0);
    cudaGraphConditionalHandle h;
    cudaGraphConditionalHandleCreate(&h, g, 0, 0);
    cudaGraph_t bodies[2];
    cudaError_t e;
    cond_node(g, nullptr, h, cudaGraphCondTypeWhile, 2, bodies, &e);
    report("while_size_2", e);
    cudaGetLastError();
    cond_node(g, nullptr, h, cudaGraphCondTypeIf, 1, bodies, &e);
    cudaHostNodeParams hp = {};
    hp.fn = [](void*) {};
    cudaGraphNode_t hn;
    cudaGraphAddHostNode(&hn, bodies[0], nullptr, 0, &hp);
    cudaGraphExec_t ex;
    report("instantiate_host_in_body", cudaGraphInstantiate(&ex, g, 0));
    cudaGetLastError();
    cudaGraphDestroy(g);
  }
  report("final_sync", cudaDeviceSynchronize());
  return 0;
}
