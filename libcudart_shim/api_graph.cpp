// CUDA graphs, stream capture, memory pools and stream-ordered allocation
// (graph.h: what they are here and how a graph runs).
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <queue>
#include <set>

#include "graph.h"

using namespace qgpu::cudart;
using qgpu::client::Error;

struct CUgraphNode_st {
  cudaGraph_t graph = nullptr;
  cudaGraphNodeType type = cudaGraphNodeTypeEmpty;
  std::vector<cudaGraphNode_t> deps;  // the nodes it depends on
  cudaGraphNode_t origin = nullptr;   // the node it is a clone of
  // Kernel: the launch, its arguments copied.
  Kernel* kernel = nullptr;
  dim3 grid, block;
  unsigned smem = 0;
  std::vector<std::vector<uint8_t>> args;
  std::vector<void*> arg_ptrs;
  cudaMemcpy3DParms copy{};
  cudaMemsetParams set{};
  cudaHostNodeParams host{};
  cudaEvent_t event = nullptr;
  cudaGraph_t child = nullptr;  // owned
  uint64_t mem = 0;             // allocation and free nodes
  size_t mem_size = 0;
  std::shared_ptr<Op> op;  // an operation captured as it was issued (a captured copy, memset or host function)
  // Conditional: its handle (the device address of the condition's 32-bit
  // value), its kind and its body graphs (owned).
  cudaGraphConditionalHandle cond = 0;
  cudaGraphConditionalNodeType cond_type = cudaGraphCondTypeIf;
  std::vector<cudaGraph_t> bodies;
  // Kernel node attributes kept to be read back (hints: no result changes).
  cudaAccessPolicyWindow access_policy{};
  int priority = 0;
  ~CUgraphNode_st();
};

struct CUgraph_st {
  std::vector<std::unique_ptr<CUgraphNode_st>> nodes;
  // The conditional handles made for this graph: each launch of an
  // executable made from it sets those with cudaGraphCondAssignDefault to
  // their default value first.
  struct CondHandle {
    uint64_t addr = 0;
    unsigned value = 0, flags = 0;
  };
  std::vector<CondHandle> handles;
};

struct CUgraphExec_st {
  cudaGraph_t graph = nullptr;  // the executable's own copy
  std::vector<cudaGraphNode_t> order;
  std::map<cudaGraphNode_t, size_t> index;  // a node of the graph it was made from (or updated with) -> position
  unsigned long long flags = 0;
  bool has_memory_nodes = false;
  // Conditional nodes: their operations read the executable's own graph when
  // the stream reaches them, so destroying or updating it waits for the
  // launches queued before.
  bool has_conditional = false;
};

struct CUmemPoolHandle_st {
  uint64_t threshold = 0;                 // cudaMemPoolAttrReleaseThreshold
  std::multimap<size_t, uint64_t> idle;   // blocks the pool holds for reuse: size -> address
  uint64_t used = 0, reserved = 0, used_high = 0, reserved_high = 0;
  int reuse[3] = {1, 1, 1};               // the reuse policies (accepted; blocks are reused after their free completed)
  bool destroyed = false;
};

namespace {

std::recursive_mutex g_mu;  // graphs, captures, pools
std::set<cudaGraph_t> g_graphs;
std::set<cudaGraphExec_t> g_execs;
std::atomic<unsigned long long> g_capture_ids{1};
thread_local cudaStreamCaptureMode t_capture_mode = cudaStreamCaptureModeGlobal;

// ---- graph memory (allocation nodes) ---------------------------------------
struct GraphMem {
  size_t size = 0;
  int owners = 0;       // allocation nodes holding the address (the graph's and its clones')
  bool live = false;    // allocated by a launch and not freed yet
  bool backed = false;  // launched (its memory counts) and not trimmed since it was freed
};
std::map<uint64_t, GraphMem> g_graph_mem;
uint64_t g_graph_used_high = 0, g_graph_reserved_high = 0;

// The graphs' footprint: the memory of their allocations from the launch
// that allocates one until it is freed and trimmed (used and reserved are
// the same here: qgpu keeps no memory for graphs beyond their allocations).
void graph_mem_totals(uint64_t* used, uint64_t* reserved) {
  *used = *reserved = 0;
  for (auto& [a, m] : g_graph_mem)
    if (m.backed) *used += m.size, *reserved += m.size;
}

void graph_mem_release_if_unused(uint64_t addr) {
  auto it = g_graph_mem.find(addr);
  if (it == g_graph_mem.end() || it->second.owners > 0 || it->second.live) return;
  g_graph_mem.erase(it);
  Runtime& rt = Runtime::get();
  try {
    rt.conn().free(addr);
  } catch (const Error&) {
  }
  rt.note_free(addr);
}

// ---- pools -------------------------------------------------------------------
CUmemPoolHandle_st g_default_pool;
cudaMemPool_t g_current_pool = &g_default_pool;
std::set<cudaMemPool_t> g_pools{&g_default_pool};
std::map<uint64_t, std::pair<cudaMemPool_t, size_t>> g_pool_blocks;  // live: address -> pool, size

void pool_trim(cudaMemPool_t p, uint64_t keep) {
  Runtime& rt = Runtime::get();
  while (p->reserved > keep && !p->idle.empty()) {
    auto it = std::prev(p->idle.end());  // the largest first
    uint64_t a = it->second;
    size_t n = it->first;
    p->idle.erase(it);
    p->reserved -= n;
    rt.note_free(a);
    rt.conn().free(a);
  }
}

uint64_t pool_alloc(cudaMemPool_t p, size_t size) {
  size_t n = (std::max<size_t>(size, 1) + 511) / 512 * 512;
  uint64_t a = 0;
  auto it = p->idle.lower_bound(n);
  if (it != p->idle.end() && it->first <= 2 * n) {
    n = it->first;
    a = it->second;
    p->idle.erase(it);
  } else {
    Runtime& rt = Runtime::get();
    a = rt.conn().malloc(n);
    rt.note_allocation(a, n);
    p->reserved += n;
    p->reserved_high = std::max(p->reserved_high, p->reserved);
  }
  p->used += n;
  p->used_high = std::max(p->used_high, p->used);
  g_pool_blocks[a] = {p, n};
  return a;
}

void pool_free(uint64_t a) {
  auto it = g_pool_blocks.find(a);
  if (it == g_pool_blocks.end()) return;
  auto [p, n] = it->second;
  g_pool_blocks.erase(it);
  p->used -= n;
  p->idle.emplace(n, a);
  pool_trim(p, p->destroyed ? 0 : p->threshold);
}

// ---- graphs ------------------------------------------------------------------
cudaGraph_t graph_of(cudaGraph_t g) {
  if (!g || !g_graphs.count(g)) throw Error(cudaErrorInvalidValue, "not a live graph (destroyed, or never created)");
  return g;
}

cudaGraphNode_t node_of(cudaGraphNode_t n) {
  if (!n || !n->graph || !g_graphs.count(n->graph)) throw Error(cudaErrorInvalidValue, "not a node of a live graph");
  return n;
}

cudaGraphExec_t exec_of(cudaGraphExec_t e) {
  if (!e || !g_execs.count(e)) throw Error(cudaErrorInvalidValue, "not a live executable graph");
  return e;
}

cudaGraph_t new_graph() {
  auto* g = new CUgraph_st;
  g_graphs.insert(g);
  return g;
}

void delete_graph(cudaGraph_t g) {
  g_graphs.erase(g);
  delete g;
}

cudaGraphNode_t add_node(cudaGraph_t g, const cudaGraphNode_t* deps, size_t n, std::unique_ptr<CUgraphNode_st> node) {
  if (n && !deps) throw Error(cudaErrorInvalidValue, "dependencies is NULL with a nonzero count");
  for (size_t i = 0; i < n; ++i) {
    if (!deps[i] || deps[i]->graph != g) throw Error(cudaErrorInvalidValue, "a dependency is not a node of this graph");
    if (std::find(node->deps.begin(), node->deps.end(), deps[i]) == node->deps.end()) node->deps.push_back(deps[i]);
  }
  node->graph = g;
  g->nodes.push_back(std::move(node));
  return g->nodes.back().get();
}

cudaError_t refuse(const std::string& what) {
  return fail(cudaErrorNotSupported, what);
}

void set_kernel(CUgraphNode_st* n, Kernel* k, dim3 grid, dim3 block, unsigned smem, void** params, void** extra) {
  Runtime& rt = Runtime::get();
  if (!k || !rt.is_kernel(k)) throw Error(cudaErrorInvalidDeviceFunction, "kernel node of a function that is not a registered kernel");
  ResolvedKernel rk = rt.resolve(*k);
  const auto& ps = rk.layout->params;
  const uint8_t* buffer = nullptr;
  size_t buffer_size = 0;
  if (!params && extra) {
    for (size_t i = 0; extra[i] != nullptr; i += 2) {
      if (extra[i] == reinterpret_cast<void*>(1)) buffer = static_cast<const uint8_t*>(extra[i + 1]);
      else if (extra[i] == reinterpret_cast<void*>(2)) buffer_size = *static_cast<size_t*>(extra[i + 1]);
    }
    if (!buffer || buffer_size < rk.layout->param_bytes())
      throw Error(cudaErrorInvalidValue, "kernel node of '" + k->name + "': extra lacks the parameter buffer or its size");
  }
  std::vector<std::vector<uint8_t>> args;
  for (size_t i = 0; i < ps.size(); ++i) {
    const uint8_t* src = buffer ? buffer + ps[i].offset : params ? static_cast<const uint8_t*>(params[i]) : nullptr;
    if (!src) throw Error(cudaErrorInvalidValue, "kernel node of '" + k->name + "': argument " + std::to_string(i) + " is missing");
    args.emplace_back(src, src + ps[i].size);
  }
  n->type = cudaGraphNodeTypeKernel;
  n->kernel = k;
  n->grid = grid;
  n->block = block;
  n->smem = smem;
  n->args = std::move(args);
  n->arg_ptrs.clear();
  for (auto& a : n->args) n->arg_ptrs.push_back(a.data());
}

Kernel* kernel_of_func(const void* func) {
  Kernel* k = Runtime::get().find_kernel(func);
  if (!k) throw Error(cudaErrorInvalidDeviceFunction, "kernel node of a function that is not a registered kernel");
  return k;
}

cudaMemcpy3DParms linear_copy(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  cudaMemcpy3DParms p{};
  p.srcPtr = cudaPitchedPtr{const_cast<void*>(src), count, count, 1};
  p.dstPtr = cudaPitchedPtr{dst, count, count, 1};
  p.extent = cudaExtent{count, 1, 1};
  p.kind = kind;
  return p;
}

void set_copy(CUgraphNode_st* n, const cudaMemcpy3DParms& p) {
  if (p.srcArray || p.dstArray) array_copy_bytes(p);  // checks the arrays now; resolved again when the node runs
  n->type = cudaGraphNodeTypeMemcpy;
  n->copy = p;
}

void set_memset(CUgraphNode_st* n, const cudaMemsetParams& p) {
  if (p.elementSize != 1 && p.elementSize != 2 && p.elementSize != 4)
    throw Error(cudaErrorInvalidValue, "memset node: elementSize must be 1, 2 or 4");
  n->type = cudaGraphNodeTypeMemset;
  n->set = p;
}

void copy_fields(CUgraphNode_st* d, const CUgraphNode_st* s) {
  d->type = s->type;
  d->kernel = s->kernel;
  d->grid = s->grid;
  d->block = s->block;
  d->smem = s->smem;
  d->args = s->args;
  d->arg_ptrs.clear();
  for (auto& a : d->args) d->arg_ptrs.push_back(a.data());
  d->copy = s->copy;
  d->set = s->set;
  d->host = s->host;
  d->event = s->event;
  d->mem = s->mem;
  d->mem_size = s->mem_size;
  d->op = s->op;
  d->cond = s->cond;
  d->cond_type = s->cond_type;
  d->access_policy = s->access_policy;
  d->priority = s->priority;
  if (d->type == cudaGraphNodeTypeMemAlloc) g_graph_mem[d->mem].owners += 1;
}

cudaGraph_t clone_graph(cudaGraph_t g, std::map<cudaGraphNode_t, cudaGraphNode_t>* map = nullptr) {
  cudaGraph_t c = new_graph();
  std::map<cudaGraphNode_t, cudaGraphNode_t> m;
  for (auto& n : g->nodes) {
    auto node = std::make_unique<CUgraphNode_st>();
    copy_fields(node.get(), n.get());
    node->origin = n.get();
    if (n->child) node->child = clone_graph(n->child);
    for (cudaGraph_t b : n->bodies) node->bodies.push_back(clone_graph(b));
    for (cudaGraphNode_t d : n->deps) node->deps.push_back(m.at(d));
    node->graph = c;
    m[n.get()] = node.get();
    c->nodes.push_back(std::move(node));
  }
  c->handles = g->handles;
  if (map) *map = std::move(m);
  return c;
}

// The nodes in an order that respects every dependency (the order they were
// added where the dependencies leave a choice).
std::vector<cudaGraphNode_t> topo(cudaGraph_t g) {
  std::map<cudaGraphNode_t, size_t> pos;
  for (size_t i = 0; i < g->nodes.size(); ++i) pos[g->nodes[i].get()] = i;
  std::vector<size_t> pending(g->nodes.size());
  std::vector<std::vector<size_t>> after(g->nodes.size());
  for (size_t i = 0; i < g->nodes.size(); ++i)
    for (cudaGraphNode_t d : g->nodes[i]->deps) {
      pending[i] += 1;
      after[pos.at(d)].push_back(i);
    }
  std::priority_queue<size_t, std::vector<size_t>, std::greater<size_t>> ready;
  for (size_t i = 0; i < pending.size(); ++i)
    if (!pending[i]) ready.push(i);
  std::vector<cudaGraphNode_t> out;
  while (!ready.empty()) {
    size_t i = ready.top();
    ready.pop();
    out.push_back(g->nodes[i].get());
    for (size_t j : after[i])
      if (--pending[j] == 0) ready.push(j);
  }
  if (out.size() != g->nodes.size()) throw Error(cudaErrorInvalidValue, "the graph has a cycle");
  return out;
}

bool has_memory_nodes(cudaGraph_t g) {
  for (auto& n : g->nodes)
    if (n->type == cudaGraphNodeTypeMemAlloc || n->type == cudaGraphNodeTypeMemFree ||
        (n->child && has_memory_nodes(n->child)))
      return true;
  return false;
}

cudaError_t run_conditional(Runtime& rt, cudaGraphNode_t n, double& seconds);

// The operation a kernel, copy or memset node stands for.
cudaError_t device_op(Runtime& rt, cudaGraphNode_t n, Op* op) {
  if (n->op) {
    *op = *n->op;
    op->done.reset();
    op->after.clear();
    op->waited = false;
    return cudaSuccess;
  }
  op->kind = Op::Device;
  switch (n->type) {
    case cudaGraphNodeTypeKernel:
      return rt.make_launch(n->kernel, n->grid, n->block, n->arg_ptrs.data(), n->smem, op);
    case cudaGraphNodeTypeMemcpy:
      op->body = [&rt, p = n->copy](double& seconds) { return copy3d(rt, array_copy_bytes(p), seconds); };
      return cudaSuccess;
    case cudaGraphNodeTypeMemset:
      op->body = [&rt, p = n->set](double& seconds) { return memset2d(rt, p, seconds); };
      return cudaSuccess;
    default:
      return refuse("graph node of type " + std::to_string(int(n->type)) + " in a conditional body cannot run on qgpu");
  }
}

// Runs a node of a conditional node's body at once, on the stream's runtime
// thread (the body's place in the stream is the conditional node's).
// Bodies hold kernels, copies, memsets, empty nodes, child graphs and
// conditional nodes, as CUDA allows (validate() checks).
cudaError_t run_now(Runtime& rt, cudaGraphNode_t n, double& seconds) {
  switch (n->type) {
    case cudaGraphNodeTypeEmpty: return cudaSuccess;
    case cudaGraphNodeTypeGraph:
      for (cudaGraphNode_t c : topo(n->child))
        if (cudaError_t e = run_now(rt, c, seconds)) return e;
      return cudaSuccess;
    case cudaGraphNodeTypeConditional: return run_conditional(rt, n, seconds);
    default: {
      Op op;
      if (cudaError_t e = device_op(rt, n, &op)) return e;
      return op.body(seconds);
    }
  }
}

// A conditional node: reads the condition's value when the node's turn
// comes (its dependencies done, so a kernel's cudaGraphSetConditional is
// seen) and runs the body it chooses; a while node reads it again after
// each run of its body.
cudaError_t run_conditional(Runtime& rt, cudaGraphNode_t n, double& seconds) {
  auto value = [&] {
    uint32_t v = 0;
    rt.conn().read(&v, n->cond, sizeof v);
    return v;
  };
  auto run_body = [&](cudaGraph_t b) -> cudaError_t {
    for (cudaGraphNode_t c : topo(b))
      if (cudaError_t e = run_now(rt, c, seconds)) return e;
    return cudaSuccess;
  };
  switch (n->cond_type) {
    case cudaGraphCondTypeIf: {
      const uint32_t v = value();
      if (v) return run_body(n->bodies[0]);
      return n->bodies.size() == 2 ? run_body(n->bodies[1]) : cudaSuccess;
    }
    case cudaGraphCondTypeWhile:
      while (value())
        if (cudaError_t e = run_body(n->bodies[0])) return e;
      return cudaSuccess;
    case cudaGraphCondTypeSwitch: {
      const uint32_t v = value();
      return v < n->bodies.size() ? run_body(n->bodies[v]) : cudaSuccess;
    }
    default: return set_error(cudaErrorInvalidValue);
  }
}

bool has_conditional(cudaGraph_t g) {
  for (auto& n : g->nodes)
    if (n->type == cudaGraphNodeTypeConditional || (n->child && has_conditional(n->child))) return true;
  return false;
}

// Queues what a node stands for on `s`.
cudaError_t emit(Runtime& rt, cudaGraphNode_t n, const StreamPtr& s) {
  Op op;
  op.kind = Op::Device;
  switch (n->type) {
    case cudaGraphNodeTypeEmpty:
      return cudaSuccess;
    case cudaGraphNodeTypeKernel:
      if (n->op) break;
      if (cudaError_t e = rt.make_launch(n->kernel, n->grid, n->block, n->arg_ptrs.data(), n->smem, &op)) return e;
      break;
    case cudaGraphNodeTypeMemcpy:
      if (n->op) break;
      op.body = [&rt, p = n->copy](double& seconds) { return copy3d(rt, array_copy_bytes(p), seconds); };
      break;
    case cudaGraphNodeTypeMemset:
      if (n->op) break;
      op.body = [&rt, p = n->set](double& seconds) { return memset2d(rt, p, seconds); };
      break;
    case cudaGraphNodeTypeHost:
      if (n->op) break;
      op.body = [h = n->host](double&) {
        h.fn(h.userData);
        return cudaSuccess;
      };
      break;
    case cudaGraphNodeTypeEventRecord:
      if (Event* ev = event_of(n->event)) record_event(ev, s);
      return cudaSuccess;
    case cudaGraphNodeTypeWaitEvent:
      if (Event* ev = event_of(n->event)) wait_event(s, ev);
      return cudaSuccess;
    case cudaGraphNodeTypeGraph:
      for (cudaGraphNode_t c : topo(n->child))
        if (cudaError_t e = emit(rt, c, s)) return e;
      return cudaSuccess;
    case cudaGraphNodeTypeConditional:
      op.body = [&rt, n](double& seconds) { return run_conditional(rt, n, seconds); };
      break;
    case cudaGraphNodeTypeMemAlloc: {
      // The launch gives the allocation its memory (the footprint grows
      // now); the node makes it allocated when the stream reaches it.
      auto it = g_graph_mem.find(n->mem);
      if (it == g_graph_mem.end()) return set_error(cudaErrorInvalidValue);
      it->second.backed = true;
      uint64_t used, reserved;
      graph_mem_totals(&used, &reserved);
      g_graph_used_high = std::max(g_graph_used_high, used);
      g_graph_reserved_high = std::max(g_graph_reserved_high, reserved);
      op.kind = Op::Host;
      op.body = [a = n->mem](double&) {
        std::lock_guard<std::recursive_mutex> g(g_mu);
        auto it = g_graph_mem.find(a);
        if (it == g_graph_mem.end()) return cudaErrorInvalidValue;
        if (it->second.live)
          return fail(cudaErrorInvalidValue, "graph memory allocation node: the allocation of the previous launch is not freed yet");
        it->second.live = it->second.backed = true;
        return cudaSuccess;
      };
      break;
    }
    case cudaGraphNodeTypeMemFree:
      op.kind = Op::Host;
      op.body = [a = n->mem](double&) {
        std::lock_guard<std::recursive_mutex> g(g_mu);
        if (g_pool_blocks.count(a)) {
          pool_free(a);
          return cudaSuccess;
        }
        auto it = g_graph_mem.find(a);
        if (it == g_graph_mem.end() || !it->second.live)
          return fail(cudaErrorInvalidValue, "graph memory free node: the memory is not allocated");
        it->second.live = false;
        graph_mem_release_if_unused(a);
        return cudaSuccess;
      };
      break;
    default:
      return refuse("graph node of type " + std::to_string(int(n->type)) + " cannot run on qgpu");
  }
  if (n->op) {
    op = *n->op;
    op.done.reset();
    op.after.clear();
    op.waited = false;
  }
  rt.streams().enqueue(s, std::move(op));
  return cudaSuccess;
}

// Checks what instantiation checks: every kernel node can launch; the
// bodies of conditional nodes (and child graphs in them) hold only the
// nodes CUDA allows there.
void validate(Runtime& rt, cudaGraph_t g, bool in_body = false) {
  for (auto& n : g->nodes) {
    if (n->type == cudaGraphNodeTypeKernel && !n->op) {
      Op op;
      if (cudaError_t e = rt.make_launch(n->kernel, n->grid, n->block, n->arg_ptrs.data(), n->smem, &op))
        throw Error(e, "cudaGraphInstantiate: a kernel node cannot launch (see above)");
    }
    if (in_body && n->type != cudaGraphNodeTypeKernel && n->type != cudaGraphNodeTypeEmpty &&
        n->type != cudaGraphNodeTypeGraph && n->type != cudaGraphNodeTypeMemset &&
        n->type != cudaGraphNodeTypeMemcpy && n->type != cudaGraphNodeTypeConditional)
      throw Error(cudaErrorInvalidValue, "cudaGraphInstantiate: a conditional node's body holds a node of type " +
                                             std::to_string(int(n->type)) +
                                             "; bodies may hold kernels, copies, memsets, empty nodes, child graphs "
                                             "and conditional nodes");
    if (n->child) validate(rt, n->child, in_body);
    for (cudaGraph_t b : n->bodies) validate(rt, b, true);
  }
  topo(g);
}

// The conditional handles of a graph and of the graphs inside it.
void collect_handles(cudaGraph_t g, std::vector<CUgraph_st::CondHandle>* out) {
  out->insert(out->end(), g->handles.begin(), g->handles.end());
  for (auto& n : g->nodes) {
    if (n->child) collect_handles(n->child, out);
    for (cudaGraph_t b : n->bodies) collect_handles(b, out);
  }
}

template <class F>
cudaError_t locked(F&& body) {
  return guarded([&](Runtime& rt) {
    std::lock_guard<std::recursive_mutex> g(g_mu);
    return body(rt);
  });
}

cudaError_t list_nodes(const std::vector<cudaGraphNode_t>& v, cudaGraphNode_t* out, size_t* num) {
  if (!num) return set_error(cudaErrorInvalidValue);
  if (out) {
    for (size_t i = 0; i < std::min(*num, v.size()); ++i) out[i] = v[i];
    for (size_t i = v.size(); i < *num; ++i) out[i] = nullptr;
  }
  if (!out || *num > v.size()) *num = v.size();
  return cudaSuccess;
}

cudaError_t add_typed(cudaGraphNode_t* pNode, cudaGraph_t graph, const cudaGraphNode_t* deps, size_t n,
                      const std::function<void(CUgraphNode_st*)>& fill) {
  if (!pNode) return set_error(cudaErrorInvalidValue);
  return locked([&](Runtime&) {
    graph_of(graph);
    auto node = std::make_unique<CUgraphNode_st>();
    fill(node.get());
    *pNode = add_node(graph, deps, n, std::move(node));
    return cudaSuccess;
  });
}

// A graph memory allocation: the address range is the daemon's from now on.
void make_alloc(CUgraphNode_st* n, size_t bytes) {
  if (bytes == 0) throw Error(cudaErrorInvalidValue, "memory allocation node of 0 bytes");
  Runtime& rt = Runtime::get();
  uint64_t a = rt.conn().malloc(bytes);
  rt.note_allocation(a, bytes);
  g_graph_mem[a] = GraphMem{bytes, 1, false, false};
  n->type = cudaGraphNodeTypeMemAlloc;
  n->mem = a;
  n->mem_size = bytes;
}

void check_pool_props(const cudaMemPoolProps& p, const char* call) {
  if (p.allocType != cudaMemAllocationTypePinned || p.location.type != cudaMemLocationTypeDevice || p.location.id != 0)
    throw Error(cudaErrorInvalidValue, std::string(call) + ": qgpu allocates pinned memory on device 0 only");
}

void make_free(CUgraphNode_st* n, void* dptr) {
  n->type = cudaGraphNodeTypeMemFree;
  n->mem = reinterpret_cast<uint64_t>(dptr);
}

// Adds a captured node to the stream's capture.
cudaGraphNode_t capture_node(const StreamPtr& s, std::unique_ptr<CUgraphNode_st> node) {
  CaptureState& c = *s->capture;
  cudaGraphNode_t n = add_node(c.graph, s->capture_deps.data(), s->capture_deps.size(), std::move(node));
  s->capture_deps.assign(1, n);
  return n;
}

// The conditional handles made so far (the device addresses of their values).
std::set<cudaGraphConditionalHandle> g_cond_handles;

}  // namespace

CUgraphNode_st::~CUgraphNode_st() {
  if (child) delete_graph(child);
  for (cudaGraph_t b : bodies) delete_graph(b);
  if (type == cudaGraphNodeTypeMemAlloc) {
    auto it = g_graph_mem.find(mem);
    if (it != g_graph_mem.end()) {
      it->second.owners -= 1;
      graph_mem_release_if_unused(mem);
    }
  }
}

namespace qgpu::cudart {

bool capturing(const StreamPtr& s) { return bool(s->capture); }

Mark capture_op(const StreamPtr& s, Op op) {
  std::lock_guard<std::recursive_mutex> g(g_mu);
  if (s->capture) {
    auto node = std::make_unique<CUgraphNode_st>();
    node->type = op.node_type;
    node->op = std::make_shared<Op>(std::move(op));
    capture_node(s, std::move(node));
  }
  return Mark{nullptr, 0, std::make_shared<Completion>()};
}

cudaError_t capture_launch(const StreamPtr& s, Kernel* k, dim3 grid, dim3 block, void** args, size_t smem) {
  std::lock_guard<std::recursive_mutex> g(g_mu);
  Op check;
  if (cudaError_t e = Runtime::get().make_launch(k, grid, block, args, smem, &check)) return e;
  auto node = std::make_unique<CUgraphNode_st>();
  set_kernel(node.get(), k, grid, block, unsigned(smem), args, nullptr);
  capture_node(s, std::move(node));
  return cudaSuccess;
}

void capture_event_record(const StreamPtr& s, Event* ev) {
  std::lock_guard<std::recursive_mutex> g(g_mu);
  std::lock_guard<std::mutex> e(ev->mu);
  ev->capture = s->capture;
  ev->capture_nodes = s->capture_deps;
}

bool capture_event_wait(const StreamPtr& s, Event* ev) {
  std::lock_guard<std::recursive_mutex> g(g_mu);
  std::shared_ptr<CaptureState> c;
  std::vector<cudaGraphNode_t> nodes;
  {
    std::lock_guard<std::mutex> e(ev->mu);
    c = ev->capture;
    nodes = ev->capture_nodes;
  }
  if (!c) {
    if (s->capture)
      throw Error(cudaErrorStreamCaptureIsolation,
                  "cudaStreamWaitEvent: a capturing stream waits for an event recorded outside the capture");
    return false;
  }
  if (c->invalidated || (s->capture && s->capture != c))
    throw Error(cudaErrorStreamCaptureIsolation, "cudaStreamWaitEvent: the event belongs to another stream capture");
  if (!s->capture) {  // the stream joins the capture
    if (s->kind == Stream::Kind::Legacy)
      throw Error(cudaErrorStreamCaptureImplicit, "the legacy default stream cannot join a stream capture");
    s->capture = c;
    s->capture_deps = nodes;
    c->streams.push_back(s);
    return true;
  }
  for (cudaGraphNode_t n : nodes)
    if (std::find(s->capture_deps.begin(), s->capture_deps.end(), n) == s->capture_deps.end()) s->capture_deps.push_back(n);
  return true;
}

cudaError_t capture_forbids(const StreamPtr& s, const char* call) {
  std::lock_guard<std::recursive_mutex> g(g_mu);
  if (!s->capture) return cudaSuccess;
  s->capture->invalidated = true;
  return fail(cudaErrorStreamCaptureUnsupported,
              std::string(call) + " on a stream that captures a graph (the capture is invalidated)");
}

bool free_stream_ordered(Runtime& rt, uint64_t addr) {
  {
    std::lock_guard<std::recursive_mutex> g(g_mu);
    if (!g_pool_blocks.count(addr) && !g_graph_mem.count(addr)) return false;
  }
  rt.streams().wait(rt.streams().all_marks());  // cudaFree synchronizes
  std::lock_guard<std::recursive_mutex> g(g_mu);
  if (g_pool_blocks.count(addr)) {
    pool_free(addr);
  } else if (auto it = g_graph_mem.find(addr); it != g_graph_mem.end()) {
    if (!it->second.live) throw Error(cudaErrorInvalidValue, "cudaFree of graph memory that is not allocated");
    it->second.live = false;
    graph_mem_release_if_unused(addr);
  }
  return true;
}

}  // namespace qgpu::cudart

namespace {

cudaError_t begin_capture(cudaStream_t stream, bool per_thread, cudaGraph_t graph, const cudaGraphNode_t* deps,
                          size_t n, cudaStreamCaptureMode mode) {
  return locked([&](Runtime&) {
    StreamPtr s = stream_of(stream, per_thread);
    if (s->kind == Stream::Kind::Legacy)
      return fail(cudaErrorStreamCaptureUnsupported, "cudaStreamBeginCapture: the legacy default stream cannot capture");
    if (s->capture) return fail(cudaErrorIllegalState, "cudaStreamBeginCapture: the stream captures already");
    auto c = std::make_shared<CaptureState>();
    c->owns_graph = graph == nullptr;
    c->graph = graph ? graph_of(graph) : new_graph();
    c->mode = mode;
    c->id = g_capture_ids++;
    c->origin = s;
    c->streams.push_back(s);
    s->capture = c;
    s->capture_deps.clear();
    for (size_t i = 0; i < n; ++i) {
      if (!deps || deps[i]->graph != c->graph) throw Error(cudaErrorInvalidValue, "a dependency is not a node of the graph");
      s->capture_deps.push_back(deps[i]);
    }
    return cudaSuccess;
  });
}

cudaError_t end_capture(cudaStream_t stream, cudaGraph_t* pGraph, bool per_thread) {
  return locked([&](Runtime&) {
    StreamPtr s = stream_of(stream, per_thread);
    if (!s->capture) return fail(cudaErrorIllegalState, "cudaStreamEndCapture: the stream is not capturing");
    std::shared_ptr<CaptureState> c = s->capture;
    if (c->origin != s)
      return fail(cudaErrorStreamCaptureUnmatched, "cudaStreamEndCapture on a stream that joined the capture, not the one that began it");
    for (const StreamPtr& t : c->streams) {
      t->capture.reset();
      t->capture_deps.clear();
    }
    if (c->invalidated) {
      if (c->owns_graph) delete_graph(c->graph);
      if (pGraph) *pGraph = nullptr;
      return fail(cudaErrorStreamCaptureInvalidated, "cudaStreamEndCapture: the capture was invalidated by a call it forbids");
    }
    if (pGraph) *pGraph = c->graph;
    return cudaSuccess;
  });
}

cudaError_t is_capturing(cudaStream_t stream, cudaStreamCaptureStatus* st, bool per_thread) {
  if (!st) return set_error(cudaErrorInvalidValue);
  return locked([&](Runtime&) {
    StreamPtr s = stream_of(stream, per_thread);
    *st = !s->capture ? cudaStreamCaptureStatusNone
                      : s->capture->invalidated ? cudaStreamCaptureStatusInvalidated : cudaStreamCaptureStatusActive;
    return cudaSuccess;
  });
}

cudaError_t capture_info(cudaStream_t stream, cudaStreamCaptureStatus* status, unsigned long long* id, cudaGraph_t* graph,
                         const cudaGraphNode_t** deps, const cudaGraphEdgeData** edges, size_t* num, bool per_thread) {
  if (!status) return set_error(cudaErrorInvalidValue);
  return locked([&](Runtime&) {
    StreamPtr s = stream_of(stream, per_thread);
    static thread_local std::vector<cudaGraphEdgeData> t_edges;
    *status = !s->capture ? cudaStreamCaptureStatusNone
                          : s->capture->invalidated ? cudaStreamCaptureStatusInvalidated : cudaStreamCaptureStatusActive;
    if (!s->capture) return cudaSuccess;
    if (id) *id = s->capture->id;
    if (graph) *graph = s->capture->graph;
    if (deps) *deps = s->capture_deps.data();
    if (edges) {
      t_edges.assign(s->capture_deps.size(), cudaGraphEdgeData{});
      *edges = t_edges.data();
    }
    if (num) *num = s->capture_deps.size();
    return cudaSuccess;
  });
}

cudaError_t update_capture_deps(cudaStream_t stream, cudaGraphNode_t* deps, size_t n, unsigned flags, bool per_thread) {
  return locked([&](Runtime&) {
    StreamPtr s = stream_of(stream, per_thread);
    if (!s->capture) return fail(cudaErrorIllegalState, "cudaStreamUpdateCaptureDependencies: the stream is not capturing");
    if (flags == cudaStreamSetCaptureDependencies) s->capture_deps.clear();
    else if (flags != cudaStreamAddCaptureDependencies) return set_error(cudaErrorInvalidValue);
    for (size_t i = 0; i < n; ++i) {
      if (!deps || !deps[i] || deps[i]->graph != s->capture->graph)
        throw Error(cudaErrorInvalidValue, "a dependency is not a node of the capture's graph");
      if (std::find(s->capture_deps.begin(), s->capture_deps.end(), deps[i]) == s->capture_deps.end())
        s->capture_deps.push_back(deps[i]);
    }
    return cudaSuccess;
  });
}

cudaError_t graph_launch(cudaGraphExec_t exec, cudaStream_t stream, bool per_thread) {
  return locked([&](Runtime& rt) {
    exec_of(exec);
    StreamPtr s = stream_of(stream, per_thread);
    if (s->capture) {  // launched into a capture: the graph becomes a child graph node
      auto node = std::make_unique<CUgraphNode_st>();
      node->type = cudaGraphNodeTypeGraph;
      node->child = clone_graph(exec->graph);
      capture_node(s, std::move(node));
      return cudaSuccess;
    }
    std::vector<CUgraph_st::CondHandle> handles;
    collect_handles(exec->graph, &handles);
    for (const auto& h : handles)
      if (h.flags & cudaGraphCondAssignDefault) {
        Op op;
        op.kind = Op::Device;
        op.body = [&rt, h](double&) {
          rt.conn().write(h.addr, &h.value, sizeof h.value);
          return cudaSuccess;
        };
        rt.streams().enqueue(s, std::move(op));
      }
    for (cudaGraphNode_t n : exec->order)
      if (cudaError_t e = emit(rt, n, s)) return e;
    return cudaSuccess;
  });
}

cudaError_t malloc_async(void** ptr, size_t size, cudaMemPool_t pool, cudaStream_t stream, bool per_thread) {
  if (!ptr) return set_error(cudaErrorInvalidValue);
  return locked([&](Runtime& rt) {
    rt.conn();
    StreamPtr s = stream_of(stream, per_thread);
    if (!pool) pool = g_current_pool;
    if (!g_pools.count(pool) || pool->destroyed) return set_error(cudaErrorInvalidValue);
    if (size == 0) {
      *ptr = nullptr;
      return cudaSuccess;
    }
    if (s->capture) {  // an allocation node
      auto node = std::make_unique<CUgraphNode_st>();
      make_alloc(node.get(), size);
      *ptr = reinterpret_cast<void*>(capture_node(s, std::move(node))->mem);
      return cudaSuccess;
    }
    *ptr = reinterpret_cast<void*>(pool_alloc(pool, size));
    return cudaSuccess;
  });
}

cudaError_t free_async(void* ptr, cudaStream_t stream, bool per_thread) {
  return locked([&](Runtime& rt) {
    StreamPtr s = stream_of(stream, per_thread);
    if (!ptr) return cudaSuccess;
    uint64_t a = reinterpret_cast<uint64_t>(ptr);
    if (s->capture) {  // a free node
      auto node = std::make_unique<CUgraphNode_st>();
      make_free(node.get(), ptr);
      capture_node(s, std::move(node));
      return cudaSuccess;
    }
    Op op;
    op.kind = Op::Host;  // the memory goes back even after an error
    op.body = [&rt, a](double&) {
      std::lock_guard<std::recursive_mutex> g(g_mu);
      if (g_pool_blocks.count(a)) {
        pool_free(a);
      } else if (auto it = g_graph_mem.find(a); it != g_graph_mem.end()) {
        it->second.live = false;
        graph_mem_release_if_unused(a);
      } else {
        rt.conn().free(a);  // memory from cudaMalloc
        rt.note_free(a);
      }
      return cudaSuccess;
    };
    rt.streams().enqueue(s, std::move(op));
    return cudaSuccess;
  });
}

cudaError_t instantiate(cudaGraphExec_t* pExec, cudaGraph_t graph, unsigned long long flags) {
  if (!pExec) return set_error(cudaErrorInvalidValue);
  return locked([&](Runtime& rt) {
    graph_of(graph);
    validate(rt, graph);
    auto* e = new CUgraphExec_st;
    std::map<cudaGraphNode_t, cudaGraphNode_t> map;
    e->graph = clone_graph(graph, &map);
    e->order = topo(e->graph);
    for (size_t i = 0; i < graph->nodes.size(); ++i) e->index[graph->nodes[i].get()] = i;
    e->flags = flags;
    e->has_memory_nodes = has_memory_nodes(graph);
    e->has_conditional = has_conditional(graph);
    g_execs.insert(e);
    *pExec = e;
    return cudaSuccess;
  });
}

// The node of an executable graph that `node` (of the graph it was made from) became.
cudaGraphNode_t exec_node(cudaGraphExec_t e, cudaGraphNode_t node, cudaGraphNodeType type) {
  exec_of(e);
  auto it = e->index.find(node);
  if (it == e->index.end() || it->second >= e->graph->nodes.size())
    throw Error(cudaErrorInvalidValue, "the node is not one of the executable graph's");
  cudaGraphNode_t n = e->graph->nodes[it->second].get();
  if (n->type != type) throw Error(cudaErrorInvalidValue, "the node is of another type");
  return n;
}

cudaGraphNode_t typed(cudaGraphNode_t n, cudaGraphNodeType type) {
  node_of(n);
  if (n->type != type) throw Error(cudaErrorInvalidValue, "the node is of another type");
  return n;
}

void kernel_params_out(cudaGraphNode_t n, cudaKernelNodeParams* p) {
  if (n->op) throw Error(cudaErrorInvalidValue, "kernel node without parameters");
  *p = cudaKernelNodeParams{};
  p->func = const_cast<void*>(Runtime::get().host_function(n->kernel));
  p->gridDim = n->grid;
  p->blockDim = n->block;
  p->sharedMemBytes = n->smem;
  p->kernelParams = n->arg_ptrs.data();
}

// cudaGraphAddNode / cudaGraphNodeSetParams / cudaGraphExecNodeSetParams.
void fill_generic(CUgraphNode_st* n, cudaGraphNodeParams* p, bool creating) {
  switch (p->type) {
    case cudaGraphNodeTypeKernel:
      set_kernel(n, kernel_of_func(p->kernel.func), p->kernel.gridDim, p->kernel.blockDim, p->kernel.sharedMemBytes,
                 p->kernel.kernelParams, p->kernel.extra);
      return;
    case cudaGraphNodeTypeMemcpy: set_copy(n, p->memcpy.copyParams); return;
    case cudaGraphNodeTypeMemset: {
      cudaMemsetParams m{p->memset.dst, p->memset.pitch, p->memset.value, p->memset.elementSize, p->memset.width,
                         p->memset.height};
      set_memset(n, m);
      return;
    }
    case cudaGraphNodeTypeHost:
      if (!p->host.fn) throw Error(cudaErrorInvalidValue, "host node without a function");
      n->type = cudaGraphNodeTypeHost;
      n->host = {p->host.fn, p->host.userData};
      return;
    case cudaGraphNodeTypeGraph:
      n->type = cudaGraphNodeTypeGraph;
      if (n->child) delete_graph(n->child);
      n->child = clone_graph(graph_of(p->graph.graph));
      if (creating) p->graph.graph = n->child;
      return;
    case cudaGraphNodeTypeEmpty: n->type = cudaGraphNodeTypeEmpty; return;
    case cudaGraphNodeTypeEventRecord:
    case cudaGraphNodeTypeWaitEvent:
      if (!event_of(p->type == cudaGraphNodeTypeEventRecord ? p->eventRecord.event : p->eventWait.event))
        throw Error(cudaErrorInvalidResourceHandle, "event node of an event that is not live");
      n->type = p->type;
      n->event = p->type == cudaGraphNodeTypeEventRecord ? p->eventRecord.event : p->eventWait.event;
      return;
    case cudaGraphNodeTypeMemAlloc:
      if (!creating) throw Error(cudaErrorInvalidValue, "a memory allocation node's parameters cannot change");
      check_pool_props(p->alloc.poolProps, "cudaGraphAddNode");
      make_alloc(n, p->alloc.bytesize);
      p->alloc.dptr = reinterpret_cast<void*>(n->mem);
      return;
    case cudaGraphNodeTypeMemFree:
      if (!creating) throw Error(cudaErrorInvalidValue, "a memory free node's parameters cannot change");
      make_free(n, p->free.dptr);
      return;
    case cudaGraphNodeTypeConditional: {
      if (!creating) throw Error(cudaErrorInvalidValue, "a conditional node's parameters cannot change");
      const cudaConditionalNodeParams& c = p->conditional;
      if (!g_cond_handles.count(c.handle))
        throw Error(cudaErrorInvalidValue, "conditional node: the handle is not one cudaGraphConditionalHandleCreate made");
      const bool size_ok = c.type == cudaGraphCondTypeIf       ? c.size == 1 || c.size == 2
                           : c.type == cudaGraphCondTypeWhile  ? c.size == 1
                           : c.type == cudaGraphCondTypeSwitch ? c.size >= 1
                                                               : false;
      if (!size_ok)
        throw Error(cudaErrorInvalidValue, "conditional node: type " + std::to_string(int(c.type)) + " with size " +
                                               std::to_string(c.size) +
                                               " (if: 1 or 2, while: 1, switch: at least 1)");
      n->type = cudaGraphNodeTypeConditional;
      n->cond = c.handle;
      n->cond_type = c.type;
      for (unsigned i = 0; i < c.size; ++i) n->bodies.push_back(new_graph());
      p->conditional.phGraph_out = n->bodies.data();
      return;
    }
    default:
      throw Error(cudaErrorNotSupported, "graph node of type " + std::to_string(int(p->type)) +
                                             " (external semaphores): qgpu has no external semaphores");
  }
}

}  // namespace

extern "C" {

// ---- graphs ------------------------------------------------------------------

cudaError_t cudaGraphCreate(cudaGraph_t* pGraph, unsigned int flags) {
  if (!pGraph || flags != 0) return set_error(cudaErrorInvalidValue);
  std::lock_guard<std::recursive_mutex> g(g_mu);
  *pGraph = new_graph();
  return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  return locked([&](Runtime&) {
    delete_graph(graph_of(graph));
    return cudaSuccess;
  });
}

cudaError_t cudaGraphClone(cudaGraph_t* pClone, cudaGraph_t original) {
  if (!pClone) return set_error(cudaErrorInvalidValue);
  return locked([&](Runtime&) {
    *pClone = clone_graph(graph_of(original));
    return cudaSuccess;
  });
}

cudaError_t cudaGraphNodeFindInClone(cudaGraphNode_t* pNode, cudaGraphNode_t original, cudaGraph_t clone) {
  if (!pNode) return set_error(cudaErrorInvalidValue);
  return locked([&](Runtime&) {
    for (auto& n : graph_of(clone)->nodes)
      if (n->origin == original) {
        *pNode = n.get();
        return cudaSuccess;
      }
    return set_error(cudaErrorInvalidValue);
  });
}

cudaError_t cudaGraphAddKernelNode(cudaGraphNode_t* pNode, cudaGraph_t graph, const cudaGraphNode_t* deps, size_t n,
                                   const cudaKernelNodeParams* p) {
  if (!p) return set_error(cudaErrorInvalidValue);
  return add_typed(pNode, graph, deps, n, [&](CUgraphNode_st* node) {
    set_kernel(node, kernel_of_func(p->func), p->gridDim, p->blockDim, p->sharedMemBytes, p->kernelParams, p->extra);
  });
}

cudaError_t cudaGraphKernelNodeGetParams(cudaGraphNode_t node, cudaKernelNodeParams* p) {
  if (!p) return set_error(cudaErrorInvalidValue);
  return locked([&](Runtime&) {
    kernel_params_out(typed(node, cudaGraphNodeTypeKernel), p);
    return cudaSuccess;
  });
}

cudaError_t cudaGraphKernelNodeSetParams(cudaGraphNode_t node, const cudaKernelNodeParams* p) {
  if (!p) return set_error(cudaErrorInvalidValue);
  return locked([&](Runtime&) {
    set_kernel(typed(node, cudaGraphNodeTypeKernel), kernel_of_func(p->func), p->gridDim, p->blockDim,
               p->sharedMemBytes, p->kernelParams, p->extra);
    return cudaSuccess;
  });
}

// Kernel node attributes: the access-policy window (checked against the
// device's L2 figures, as a stream's) and the priority are kept and read
// back; neither changes a result.
cudaError_t cudaGraphKernelNodeSetAttribute(cudaGraphNode_t node, cudaKernelNodeAttrID attr,
                                            const cudaKernelNodeAttrValue* v) {
  if (!v) return set_error(cudaErrorInvalidValue);
  return locked([&](Runtime&) {
    cudaGraphNode_t n = typed(node, cudaGraphNodeTypeKernel);
    switch (attr) {
      case cudaLaunchAttributeAccessPolicyWindow:
        if (cudaError_t e = check_access_policy(v->accessPolicyWindow, "cudaGraphKernelNodeSetAttribute")) return e;
        n->access_policy = v->accessPolicyWindow;
        return cudaSuccess;
      case cudaLaunchAttributePriority: n->priority = v->priority; return cudaSuccess;
      default:
        return fail(cudaErrorInvalidValue, "cudaGraphKernelNodeSetAttribute: attribute " + std::to_string(int(attr)) +
                                               " is not a kernel node attribute qgpu keeps (access-policy window, "
                                               "priority)");
    }
  });
}

cudaError_t cudaGraphKernelNodeGetAttribute(cudaGraphNode_t node, cudaKernelNodeAttrID attr,
                                            cudaKernelNodeAttrValue* v) {
  if (!v) return set_error(cudaErrorInvalidValue);
  return locked([&](Runtime&) {
    cudaGraphNode_t n = typed(node, cudaGraphNodeTypeKernel);
    switch (attr) {
      case cudaLaunchAttributeAccessPolicyWindow: v->accessPolicyWindow = n->access_policy; return cudaSuccess;
      case cudaLaunchAttributePriority: v->priority = n->priority; return cudaSuccess;
      default:
        return fail(cudaErrorInvalidValue, "cudaGraphKernelNodeGetAttribute: attribute " + std::to_string(int(attr)) +
                                               " is not a kernel node attribute qgpu keeps (access-policy window, "
                                               "priority)");
    }
  });
}

cudaError_t cudaGraphKernelNodeCopyAttributes(cudaGraphNode_t dst, cudaGraphNode_t src) {
  return locked([&](Runtime&) {
    cudaGraphNode_t d = typed(dst, cudaGraphNodeTypeKernel), s = typed(src, cudaGraphNodeTypeKernel);
    d->access_policy = s->access_policy;
    d->priority = s->priority;
    return cudaSuccess;
  });
}

cudaError_t cudaGraphAddMemcpyNode(cudaGraphNode_t* pNode, cudaGraph_t graph, const cudaGraphNode_t* deps, size_t n,
                                   const cudaMemcpy3DParms* p) {
  if (!p) return set_error(cudaErrorInvalidValue);
  return add_typed(pNode, graph, deps, n, [&](CUgraphNode_st* node) { set_copy(node, *p); });
}

cudaError_t cudaGraphAddMemcpyNode1D(cudaGraphNode_t* pNode, cudaGraph_t graph, const cudaGraphNode_t* deps, size_t n,
                                     void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  return add_typed(pNode, graph, deps, n, [&](CUgraphNode_st* node) { set_copy(node, linear_copy(dst, src, count, kind)); });
}

cudaError_t cudaGraphAddMemcpyNodeToSymbol(cudaGraphNode_t* pNode, cudaGraph_t graph, const cudaGraphNode_t* deps,
                                           size_t n, const void* symbol, const void* src, size_t count, size_t offset,
                                           cudaMemcpyKind kind) {
  return add_typed(pNode, graph, deps, n, [&](CUgraphNode_st* node) {
    auto [base, size] = Runtime::get().symbol(symbol);
    if (offset > size || count > size - offset) throw Error(cudaErrorInvalidValue, "memcpy node: beyond the symbol's size");
    set_copy(node, linear_copy(reinterpret_cast<void*>(base + offset), src, count, kind));
  });
}

cudaError_t cudaGraphAddMemcpyNodeFromSymbol(cudaGraphNode_t* pNode, cudaGraph_t graph, const cudaGraphNode_t* deps,
                                             size_t n, void* dst, const void* symbol, size_t count, size_t offset,
                                             cudaMemcpyKind kind) {
  return add_typed(pNode, graph, deps, n, [&](CUgraphNode_st* node) {
    auto [base, size] = Runtime::get().symbol(symbol);
    if (offset > size || count > size - offset) throw Error(cudaErrorInvalidValue, "memcpy node: beyond the symbol's size");
    set_copy(node, linear_copy(dst, reinterpret_cast<void*>(base + offset), count, kind));
  });
}

cudaError_t cudaGraphMemcpyNodeGetParams(cudaGraphNode_t node, cudaMemcpy3DParms* p) {
  if (!p) return set_error(cudaErrorInvalidValue);
  return locked([&](Runtime&) {
    cudaGraphNode_t n = typed(node, cudaGraphNodeTypeMemcpy);
    if (n->op) throw Error(cudaErrorInvalidValue, "a captured memcpy node's parameters are not kept");
    *p = n->copy;
    return cudaSuccess;
  });
}

cudaError_t cudaGraphMemcpyNodeSetParams(cudaGraphNode_t node, const cudaMemcpy3DParms* p) {
  if (!p) return set_error(cudaErrorInvalidValue);
  return locked([&](Runtime&) {
    cudaGraphNode_t n = typed(node, cudaGraphNodeTypeMemcpy);
    n->op.reset();
    set_copy(n, *p);
    return cudaSuccess;
  });
}

cudaError_t cudaGraphMemcpyNodeSetParams1D(cudaGraphNode_t node, void* dst, const void* src, size_t count,
                                           cudaMemcpyKind kind) {
  cudaMemcpy3DParms p = linear_copy(dst, src, count, kind);
  return cudaGraphMemcpyNodeSetParams(node, &p);
}

cudaError_t cudaGraphAddMemsetNode(cudaGraphNode_t* pNode, cudaGraph_t graph, const cudaGraphNode_t* deps, size_t n,
                                   const cudaMemsetParams* p) {
  if (!p) return set_error(cudaErrorInvalidValue);
  return add_typed(pNode, graph, deps, n, [&](CUgraphNode_st* node) { set_memset(node, *p); });
}

cudaError_t cudaGraphMemsetNodeGetParams(cudaGraphNode_t node, cudaMemsetParams* p) {
  if (!p) return set_error(cudaErrorInvalidValue);
  return locked([&](Runtime&) {
    cudaGraphNode_t n = typed(node, cudaGraphNodeTypeMemset);
    if (n->op) throw Error(cudaErrorInvalidValue, "a captured memset node's parameters are not kept");
    *p = n->set;
    return cudaSuccess;
  });
}

cudaError_t cudaGraphMemsetNodeSetParams(cudaGraphNode_t node, const cudaMemsetParams* p) {
  if (!p) return set_error(cudaErrorInvalidValue);
  return locked([&](Runtime&) {
    cudaGraphNode_t n = typed(node, cudaGraphNodeTypeMemset);
    n->op.reset();
    set_memset(n, *p);
    return cudaSuccess;
  });
}

cudaError_t cudaGraphAddHostNode(cudaGraphNode_t* pNode, cudaGraph_t graph, const cudaGraphNode_t* deps, size_t n,
                                 const cudaHostNodeParams* p) {
  if (!p || !p->fn) return set_error(cudaErrorInvalidValue);
  return add_typed(pNode, graph, deps, n, [&](CUgraphNode_st* node) {
    node->type = cudaGraphNodeTypeHost;
    node->host = *p;
  });
}

cudaError_t cudaGraphHostNodeGetParams(cudaGraphNode_t node, cudaHostNodeParams* p) {
  if (!p) return set_error(cudaErrorInvalidValue);
  return locked([&](Runtime&) {
    cudaGraphNode_t n = typed(node, cudaGraphNodeTypeHost);
    if (n->op) throw Error(cudaErrorInvalidValue, "a captured host node's parameters are not kept");
    *p = n->host;
    return cudaSuccess;
  });
}

cudaError_t cudaGraphHostNodeSetParams(cudaGraphNode_t node, const cudaHostNodeParams* p) {
  if (!p || !p->fn) return set_error(cudaErrorInvalidValue);
  return locked([&](Runtime&) {
    cudaGraphNode_t n = typed(node, cudaGraphNodeTypeHost);
    n->op.reset();
    n->host = *p;
    return cudaSuccess;
  });
}

cudaError_t cudaGraphAddChildGraphNode(cudaGraphNode_t* pNode, cudaGraph_t graph, const cudaGraphNode_t* deps, size_t n,
                                       cudaGraph_t child) {
  return add_typed(pNode, graph, deps, n, [&](CUgraphNode_st* node) {
    node->type = cudaGraphNodeTypeGraph;
    node->child = clone_graph(graph_of(child));
  });
}

cudaError_t cudaGraphChildGraphNodeGetGraph(cudaGraphNode_t node, cudaGraph_t* pGraph) {
  if (!pGraph) return set_error(cudaErrorInvalidValue);
  return locked([&](Runtime&) {
    *pGraph = typed(node, cudaGraphNodeTypeGraph)->child;
    return cudaSuccess;
  });
}

cudaError_t cudaGraphAddEmptyNode(cudaGraphNode_t* pNode, cudaGraph_t graph, const cudaGraphNode_t* deps, size_t n) {
  return add_typed(pNode, graph, deps, n, [](CUgraphNode_st* node) { node->type = cudaGraphNodeTypeEmpty; });
}

static cudaError_t add_event_node(cudaGraphNode_t* pNode, cudaGraph_t graph, const cudaGraphNode_t* deps, size_t n,
                                  cudaEvent_t event, cudaGraphNodeType type) {
  return add_typed(pNode, graph, deps, n, [&](CUgraphNode_st* node) {
    if (!event_of(event)) throw Error(cudaErrorInvalidResourceHandle, "event node of an event that is not live");
    node->type = type;
    node->event = event;
  });
}

cudaError_t cudaGraphAddEventRecordNode(cudaGraphNode_t* pNode, cudaGraph_t graph, const cudaGraphNode_t* deps, size_t n,
                                        cudaEvent_t event) {
  return add_event_node(pNode, graph, deps, n, event, cudaGraphNodeTypeEventRecord);
}
cudaError_t cudaGraphAddEventWaitNode(cudaGraphNode_t* pNode, cudaGraph_t graph, const cudaGraphNode_t* deps, size_t n,
                                      cudaEvent_t event) {
  return add_event_node(pNode, graph, deps, n, event, cudaGraphNodeTypeWaitEvent);
}

static cudaError_t node_event(cudaGraphNode_t node, cudaEvent_t* out, cudaEvent_t in, cudaGraphNodeType type) {
  return locked([&](Runtime&) {
    cudaGraphNode_t n = typed(node, type);
    if (out) *out = n->event;
    if (in) {
      if (!event_of(in)) return set_error(cudaErrorInvalidResourceHandle);
      n->event = in;
    }
    return cudaSuccess;
  });
}
cudaError_t cudaGraphEventRecordNodeGetEvent(cudaGraphNode_t node, cudaEvent_t* e) {
  return e ? node_event(node, e, nullptr, cudaGraphNodeTypeEventRecord) : set_error(cudaErrorInvalidValue);
}
cudaError_t cudaGraphEventRecordNodeSetEvent(cudaGraphNode_t node, cudaEvent_t e) {
  return node_event(node, nullptr, e, cudaGraphNodeTypeEventRecord);
}
cudaError_t cudaGraphEventWaitNodeGetEvent(cudaGraphNode_t node, cudaEvent_t* e) {
  return e ? node_event(node, e, nullptr, cudaGraphNodeTypeWaitEvent) : set_error(cudaErrorInvalidValue);
}
cudaError_t cudaGraphEventWaitNodeSetEvent(cudaGraphNode_t node, cudaEvent_t e) {
  return node_event(node, nullptr, e, cudaGraphNodeTypeWaitEvent);
}

cudaError_t cudaGraphAddMemAllocNode(cudaGraphNode_t* pNode, cudaGraph_t graph, const cudaGraphNode_t* deps, size_t n,
                                     cudaMemAllocNodeParams* p) {
  if (!p) return set_error(cudaErrorInvalidValue);
  return add_typed(pNode, graph, deps, n, [&](CUgraphNode_st* node) {
    check_pool_props(p->poolProps, "cudaGraphAddMemAllocNode");
    make_alloc(node, p->bytesize);
    p->dptr = reinterpret_cast<void*>(node->mem);
  });
}

cudaError_t cudaGraphMemAllocNodeGetParams(cudaGraphNode_t node, cudaMemAllocNodeParams* p) {
  if (!p) return set_error(cudaErrorInvalidValue);
  return locked([&](Runtime&) {
    cudaGraphNode_t n = typed(node, cudaGraphNodeTypeMemAlloc);
    *p = cudaMemAllocNodeParams{};
    p->poolProps.allocType = cudaMemAllocationTypePinned;
    p->poolProps.location = {cudaMemLocationTypeDevice, 0};
    p->bytesize = n->mem_size;
    p->dptr = reinterpret_cast<void*>(n->mem);
    return cudaSuccess;
  });
}

cudaError_t cudaGraphAddMemFreeNode(cudaGraphNode_t* pNode, cudaGraph_t graph, const cudaGraphNode_t* deps, size_t n,
                                    void* dptr) {
  return add_typed(pNode, graph, deps, n, [&](CUgraphNode_st* node) { make_free(node, dptr); });
}

cudaError_t cudaGraphMemFreeNodeGetParams(cudaGraphNode_t node, void* dptr_out) {
  if (!dptr_out) return set_error(cudaErrorInvalidValue);
  return locked([&](Runtime&) {
    *static_cast<void**>(dptr_out) = reinterpret_cast<void*>(typed(node, cudaGraphNodeTypeMemFree)->mem);
    return cudaSuccess;
  });
}

cudaError_t cudaGraphAddNode(cudaGraphNode_t* pNode, cudaGraph_t graph, const cudaGraphNode_t* deps,
                             const cudaGraphEdgeData*, size_t n, cudaGraphNodeParams* p) {
  if (!p) return set_error(cudaErrorInvalidValue);
  return add_typed(pNode, graph, deps, n, [&](CUgraphNode_st* node) { fill_generic(node, p, true); });
}

cudaError_t cudaGraphNodeSetParams(cudaGraphNode_t node, cudaGraphNodeParams* p) {
  if (!p) return set_error(cudaErrorInvalidValue);
  return locked([&](Runtime&) {
    typed(node, p->type)->op.reset();
    fill_generic(node, p, false);
    return cudaSuccess;
  });
}

// A conditional handle is the device address of a 32-bit value: kernels set
// it with cudaGraphSetConditional (a store there: the daemon defines the
// device function, docs/protocol.md), conditional nodes read it.  It starts
// at the default value, and a launch resets it to that value first when the
// flags say cudaGraphCondAssignDefault.
cudaError_t cudaGraphConditionalHandleCreate(cudaGraphConditionalHandle* handle, cudaGraph_t graph,
                                             unsigned int defaultLaunchValue, unsigned int flags) {
  if (!handle) return set_error(cudaErrorInvalidValue);
  if (flags & ~unsigned(cudaGraphCondAssignDefault)) return set_error(cudaErrorInvalidValue);
  return locked([&](Runtime& rt) {
    graph_of(graph);
    const uint64_t a = rt.conn().malloc(sizeof(unsigned));
    rt.note_allocation(a, sizeof(unsigned));
    rt.conn().write(a, &defaultLaunchValue, sizeof defaultLaunchValue);
    graph->handles.push_back({a, defaultLaunchValue, flags});
    g_cond_handles.insert(a);
    *handle = a;
    return cudaSuccess;
  });
}

// ---- structure -------------------------------------------------------------------

cudaError_t cudaGraphNodeGetType(cudaGraphNode_t node, cudaGraphNodeType* t) {
  if (!t) return set_error(cudaErrorInvalidValue);
  return locked([&](Runtime&) {
    *t = node_of(node)->type;
    return cudaSuccess;
  });
}

cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t* nodes, size_t* num) {
  return locked([&](Runtime&) {
    std::vector<cudaGraphNode_t> v;
    for (auto& n : graph_of(graph)->nodes) v.push_back(n.get());
    return list_nodes(v, nodes, num);
  });
}

cudaError_t cudaGraphGetRootNodes(cudaGraph_t graph, cudaGraphNode_t* nodes, size_t* num) {
  return locked([&](Runtime&) {
    std::vector<cudaGraphNode_t> v;
    for (auto& n : graph_of(graph)->nodes)
      if (n->deps.empty()) v.push_back(n.get());
    return list_nodes(v, nodes, num);
  });
}

cudaError_t cudaGraphGetEdges(cudaGraph_t graph, cudaGraphNode_t* from, cudaGraphNode_t* to, cudaGraphEdgeData* data,
                              size_t* num) {
  if (!num || (bool(from) != bool(to))) return set_error(cudaErrorInvalidValue);
  return locked([&](Runtime&) {
    std::vector<std::pair<cudaGraphNode_t, cudaGraphNode_t>> edges;
    for (auto& n : graph_of(graph)->nodes)
      for (cudaGraphNode_t d : n->deps) edges.emplace_back(d, n.get());
    if (from) {
      for (size_t i = 0; i < *num; ++i) {
        from[i] = i < edges.size() ? edges[i].first : nullptr;
        to[i] = i < edges.size() ? edges[i].second : nullptr;
        if (data) data[i] = cudaGraphEdgeData{};
      }
    }
    if (!from || *num > edges.size()) *num = edges.size();
    return cudaSuccess;
  });
}

cudaError_t cudaGraphNodeGetDependencies(cudaGraphNode_t node, cudaGraphNode_t* deps, cudaGraphEdgeData* data,
                                         size_t* num) {
  return locked([&](Runtime&) {
    cudaError_t e = list_nodes(node_of(node)->deps, deps, num);
    if (data && num)
      for (size_t i = 0; i < *num; ++i) data[i] = cudaGraphEdgeData{};
    return e;
  });
}

cudaError_t cudaGraphNodeGetDependentNodes(cudaGraphNode_t node, cudaGraphNode_t* out, cudaGraphEdgeData* data,
                                           size_t* num) {
  return locked([&](Runtime&) {
    std::vector<cudaGraphNode_t> v;
    for (auto& n : node_of(node)->graph->nodes)
      if (std::find(n->deps.begin(), n->deps.end(), node) != n->deps.end()) v.push_back(n.get());
    cudaError_t e = list_nodes(v, out, num);
    if (data && num)
      for (size_t i = 0; i < *num; ++i) data[i] = cudaGraphEdgeData{};
    return e;
  });
}

cudaError_t cudaGraphAddDependencies(cudaGraph_t graph, const cudaGraphNode_t* from, const cudaGraphNode_t* to,
                                     const cudaGraphEdgeData*, size_t n) {
  return locked([&](Runtime&) {
    graph_of(graph);
    for (size_t i = 0; i < n; ++i) {
      if (!from || !to || node_of(from[i])->graph != graph || node_of(to[i])->graph != graph)
        return set_error(cudaErrorInvalidValue);
      auto& d = to[i]->deps;
      if (std::find(d.begin(), d.end(), from[i]) != d.end()) return set_error(cudaErrorInvalidValue);
      d.push_back(from[i]);
    }
    return cudaSuccess;
  });
}

cudaError_t cudaGraphRemoveDependencies(cudaGraph_t graph, const cudaGraphNode_t* from, const cudaGraphNode_t* to,
                                        const cudaGraphEdgeData*, size_t n) {
  return locked([&](Runtime&) {
    graph_of(graph);
    for (size_t i = 0; i < n; ++i) {
      if (!from || !to || node_of(to[i])->graph != graph) return set_error(cudaErrorInvalidValue);
      auto& d = to[i]->deps;
      auto it = std::find(d.begin(), d.end(), from[i]);
      if (it == d.end()) return set_error(cudaErrorInvalidValue);
      d.erase(it);
    }
    return cudaSuccess;
  });
}

cudaError_t cudaGraphDestroyNode(cudaGraphNode_t node) {
  return locked([&](Runtime&) {
    cudaGraph_t g = node_of(node)->graph;
    for (auto& n : g->nodes) std::erase(n->deps, node);
    std::erase_if(g->nodes, [node](const std::unique_ptr<CUgraphNode_st>& n) { return n.get() == node; });
    return cudaSuccess;
  });
}

cudaError_t cudaGraphDebugDotPrint(cudaGraph_t graph, const char* path, unsigned int) {
  if (!path) return set_error(cudaErrorInvalidValue);
  return locked([&](Runtime&) {
    FILE* f = std::fopen(path, "w");
    if (!f) return set_error(cudaErrorInvalidValue);
    std::fprintf(f, "digraph qgpu_graph {\n");
    for (auto& n : graph_of(graph)->nodes) {
      std::fprintf(f, "  \"%p\" [label=\"type %d\"];\n", static_cast<void*>(n.get()), int(n->type));
      for (cudaGraphNode_t d : n->deps)
        std::fprintf(f, "  \"%p\" -> \"%p\";\n", static_cast<void*>(d), static_cast<void*>(n.get()));
    }
    std::fprintf(f, "}\n");
    std::fclose(f);
    return cudaSuccess;
  });
}

// ---- executable graphs -------------------------------------------------------------

cudaError_t cudaGraphInstantiate(cudaGraphExec_t* pExec, cudaGraph_t graph, unsigned long long flags) {
  return instantiate(pExec, graph, flags);
}
cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t* pExec, cudaGraph_t graph, unsigned long long flags) {
  return instantiate(pExec, graph, flags);
}
cudaError_t cudaGraphInstantiateWithParams(cudaGraphExec_t* pExec, cudaGraph_t graph, cudaGraphInstantiateParams* p) {
  if (!p) return set_error(cudaErrorInvalidValue);
  cudaError_t e = instantiate(pExec, graph, p->flags);
  p->result_out = e == cudaSuccess ? cudaGraphInstantiateSuccess : cudaGraphInstantiateError;
  p->errNode_out = nullptr;
  return e;
}
cudaError_t cudaGraphInstantiateWithParams_ptsz(cudaGraphExec_t* pExec, cudaGraph_t graph, cudaGraphInstantiateParams* p) {
  return cudaGraphInstantiateWithParams(pExec, graph, p);
}

cudaError_t cudaGraphExecGetFlags(cudaGraphExec_t exec, unsigned long long* flags) {
  if (!flags) return set_error(cudaErrorInvalidValue);
  return locked([&](Runtime&) {
    *flags = exec_of(exec)->flags;
    return cudaSuccess;
  });
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  bool wait = false;
  {
    std::lock_guard<std::recursive_mutex> g(g_mu);
    if (!exec || !g_execs.count(exec)) return set_error(cudaErrorInvalidValue);
    wait = exec->has_memory_nodes || exec->has_conditional;
  }
  // Its allocations are released (and its conditional nodes' graphs deleted)
  // once the launches queued before have run.
  if (wait && !Streams::on_runtime_thread()) Runtime::get().streams().wait(Runtime::get().streams().all_marks());
  return locked([&](Runtime&) {
    g_execs.erase(exec_of(exec));
    delete_graph(exec->graph);
    delete exec;
    return cudaSuccess;
  });
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) { return graph_launch(exec, stream, false); }
cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t exec, cudaStream_t stream) { return graph_launch(exec, stream, true); }

// Uploading prepares nothing here: a launch issues the nodes as it goes.
cudaError_t cudaGraphUpload(cudaGraphExec_t exec, cudaStream_t stream) {
  return locked([&](Runtime&) {
    exec_of(exec);
    stream_of(stream, false);
    return cudaSuccess;
  });
}
cudaError_t cudaGraphUpload_ptsz(cudaGraphExec_t exec, cudaStream_t stream) {
  return locked([&](Runtime&) {
    exec_of(exec);
    stream_of(stream, true);
    return cudaSuccess;
  });
}

cudaError_t cudaGraphExecKernelNodeSetParams(cudaGraphExec_t exec, cudaGraphNode_t node, const cudaKernelNodeParams* p) {
  if (!p) return set_error(cudaErrorInvalidValue);
  return locked([&](Runtime&) {
    cudaGraphNode_t n = exec_node(exec, node, cudaGraphNodeTypeKernel);
    set_kernel(n, kernel_of_func(p->func), p->gridDim, p->blockDim, p->sharedMemBytes, p->kernelParams, p->extra);
    return cudaSuccess;
  });
}

cudaError_t cudaGraphExecMemcpyNodeSetParams(cudaGraphExec_t exec, cudaGraphNode_t node, const cudaMemcpy3DParms* p) {
  if (!p) return set_error(cudaErrorInvalidValue);
  return locked([&](Runtime&) {
    cudaGraphNode_t n = exec_node(exec, node, cudaGraphNodeTypeMemcpy);
    n->op.reset();
    set_copy(n, *p);
    return cudaSuccess;
  });
}

cudaError_t cudaGraphExecMemcpyNodeSetParams1D(cudaGraphExec_t exec, cudaGraphNode_t node, void* dst, const void* src,
                                               size_t count, cudaMemcpyKind kind) {
  cudaMemcpy3DParms p = linear_copy(dst, src, count, kind);
  return cudaGraphExecMemcpyNodeSetParams(exec, node, &p);
}

cudaError_t cudaGraphExecMemsetNodeSetParams(cudaGraphExec_t exec, cudaGraphNode_t node, const cudaMemsetParams* p) {
  if (!p) return set_error(cudaErrorInvalidValue);
  return locked([&](Runtime&) {
    cudaGraphNode_t n = exec_node(exec, node, cudaGraphNodeTypeMemset);
    n->op.reset();
    set_memset(n, *p);
    return cudaSuccess;
  });
}

cudaError_t cudaGraphExecHostNodeSetParams(cudaGraphExec_t exec, cudaGraphNode_t node, const cudaHostNodeParams* p) {
  if (!p || !p->fn) return set_error(cudaErrorInvalidValue);
  return locked([&](Runtime&) {
    cudaGraphNode_t n = exec_node(exec, node, cudaGraphNodeTypeHost);
    n->op.reset();
    n->host = *p;
    return cudaSuccess;
  });
}

cudaError_t cudaGraphExecChildGraphNodeSetParams(cudaGraphExec_t exec, cudaGraphNode_t node, cudaGraph_t child) {
  return locked([&](Runtime&) {
    cudaGraphNode_t n = exec_node(exec, node, cudaGraphNodeTypeGraph);
    cudaGraph_t c = clone_graph(graph_of(child));
    delete_graph(n->child);
    n->child = c;
    return cudaSuccess;
  });
}

cudaError_t cudaGraphExecEventRecordNodeSetEvent(cudaGraphExec_t exec, cudaGraphNode_t node, cudaEvent_t e) {
  return locked([&](Runtime&) {
    if (!event_of(e)) return set_error(cudaErrorInvalidResourceHandle);
    exec_node(exec, node, cudaGraphNodeTypeEventRecord)->event = e;
    return cudaSuccess;
  });
}

cudaError_t cudaGraphExecEventWaitNodeSetEvent(cudaGraphExec_t exec, cudaGraphNode_t node, cudaEvent_t e) {
  return locked([&](Runtime&) {
    if (!event_of(e)) return set_error(cudaErrorInvalidResourceHandle);
    exec_node(exec, node, cudaGraphNodeTypeWaitEvent)->event = e;
    return cudaSuccess;
  });
}

cudaError_t cudaGraphExecNodeSetParams(cudaGraphExec_t exec, cudaGraphNode_t node, cudaGraphNodeParams* p) {
  if (!p) return set_error(cudaErrorInvalidValue);
  return locked([&](Runtime&) {
    cudaGraphNode_t n = exec_node(exec, node, p->type);
    n->op.reset();
    fill_generic(n, p, false);
    return cudaSuccess;
  });
}

// The executable graph takes the parameters of `graph`, whose nodes must
// be those of the executable's graph: the same number, in the same order,
// of the same types, with the same dependencies.
cudaError_t cudaGraphExecUpdate(cudaGraphExec_t exec, cudaGraph_t graph, cudaGraphExecUpdateResultInfo* info) {
  bool wait = false;
  {
    std::lock_guard<std::recursive_mutex> g(g_mu);
    wait = exec && g_execs.count(exec) && exec->has_conditional;
  }
  // The launches queued before read the graph this replaces.
  if (wait && !Streams::on_runtime_thread()) Runtime::get().streams().wait(Runtime::get().streams().all_marks());
  return locked([&](Runtime& rt) {
    exec_of(exec);
    graph_of(graph);
    if (info) *info = cudaGraphExecUpdateResultInfo{cudaGraphExecUpdateSuccess, nullptr, nullptr};
    auto mismatch = [&](cudaGraphExecUpdateResult r, cudaGraphNode_t n) {
      if (info) *info = cudaGraphExecUpdateResultInfo{r, n, nullptr};
      return set_error(cudaErrorGraphExecUpdateFailure);
    };
    cudaGraph_t old = exec->graph;
    if (old->nodes.size() != graph->nodes.size()) return mismatch(cudaGraphExecUpdateErrorTopologyChanged, nullptr);
    std::map<cudaGraphNode_t, size_t> pos_new, pos_old;
    for (size_t i = 0; i < graph->nodes.size(); ++i) pos_new[graph->nodes[i].get()] = i, pos_old[old->nodes[i].get()] = i;
    for (size_t i = 0; i < graph->nodes.size(); ++i) {
      cudaGraphNode_t a = old->nodes[i].get(), b = graph->nodes[i].get();
      if (a->type != b->type) return mismatch(cudaGraphExecUpdateErrorNodeTypeChanged, b);
      if (a->deps.size() != b->deps.size()) return mismatch(cudaGraphExecUpdateErrorTopologyChanged, b);
      for (size_t j = 0; j < a->deps.size(); ++j)
        if (pos_old[a->deps[j]] != pos_new[b->deps[j]]) return mismatch(cudaGraphExecUpdateErrorTopologyChanged, b);
      if (a->type == cudaGraphNodeTypeMemAlloc || a->type == cudaGraphNodeTypeMemFree)
        if (a->mem != b->mem) return mismatch(cudaGraphExecUpdateErrorAttributesChanged, b);
    }
    validate(rt, graph);
    exec->graph = clone_graph(graph);
    exec->has_conditional = has_conditional(graph);
    exec->order = topo(exec->graph);
    for (size_t i = 0; i < graph->nodes.size(); ++i) exec->index[graph->nodes[i].get()] = i;
    delete_graph(old);
    return cudaSuccess;
  });
}

// ---- stream capture ----------------------------------------------------------------

cudaError_t cudaStreamBeginCapture(cudaStream_t s, cudaStreamCaptureMode mode) {
  return begin_capture(s, false, nullptr, nullptr, 0, mode);
}
cudaError_t cudaStreamBeginCapture_ptsz(cudaStream_t s, cudaStreamCaptureMode mode) {
  return begin_capture(s, true, nullptr, nullptr, 0, mode);
}
cudaError_t cudaStreamBeginCaptureToGraph(cudaStream_t s, cudaGraph_t graph, const cudaGraphNode_t* deps,
                                          const cudaGraphEdgeData*, size_t n, cudaStreamCaptureMode mode) {
  if (!graph) return set_error(cudaErrorInvalidValue);
  return begin_capture(s, false, graph, deps, n, mode);
}
cudaError_t cudaStreamBeginCaptureToGraph_ptsz(cudaStream_t s, cudaGraph_t graph, const cudaGraphNode_t* deps,
                                               const cudaGraphEdgeData*, size_t n, cudaStreamCaptureMode mode) {
  if (!graph) return set_error(cudaErrorInvalidValue);
  return begin_capture(s, true, graph, deps, n, mode);
}
cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t* g) { return end_capture(s, g, false); }
cudaError_t cudaStreamEndCapture_ptsz(cudaStream_t s, cudaGraph_t* g) { return end_capture(s, g, true); }
cudaError_t cudaStreamIsCapturing(cudaStream_t s, cudaStreamCaptureStatus* st) { return is_capturing(s, st, false); }
cudaError_t cudaStreamIsCapturing_ptsz(cudaStream_t s, cudaStreamCaptureStatus* st) { return is_capturing(s, st, true); }
cudaError_t cudaStreamGetCaptureInfo(cudaStream_t s, cudaStreamCaptureStatus* status, unsigned long long* id,
                                     cudaGraph_t* graph, const cudaGraphNode_t** deps, const cudaGraphEdgeData** edges,
                                     size_t* num) {
  return capture_info(s, status, id, graph, deps, edges, num, false);
}
cudaError_t cudaStreamGetCaptureInfo_ptsz(cudaStream_t s, cudaStreamCaptureStatus* status, unsigned long long* id,
                                          cudaGraph_t* graph, const cudaGraphNode_t** deps,
                                          const cudaGraphEdgeData** edges, size_t* num) {
  return capture_info(s, status, id, graph, deps, edges, num, true);
}
cudaError_t cudaStreamUpdateCaptureDependencies(cudaStream_t s, cudaGraphNode_t* deps, const cudaGraphEdgeData*,
                                                size_t n, unsigned int flags) {
  return update_capture_deps(s, deps, n, flags, false);
}
cudaError_t cudaStreamUpdateCaptureDependencies_ptsz(cudaStream_t s, cudaGraphNode_t* deps, const cudaGraphEdgeData*,
                                                     size_t n, unsigned int flags) {
  return update_capture_deps(s, deps, n, flags, true);
}

// The calling thread's capture mode is kept and exchanged; qgpu does not
// refuse the calls a global or thread-local capture forbids elsewhere.
cudaError_t cudaThreadExchangeStreamCaptureMode(cudaStreamCaptureMode* mode) {
  if (!mode) return set_error(cudaErrorInvalidValue);
  std::swap(*mode, t_capture_mode);
  return cudaSuccess;
}

// ---- stream-ordered allocation and memory pools ------------------------------------------

cudaError_t cudaMallocAsync(void** p, size_t size, cudaStream_t s) { return malloc_async(p, size, nullptr, s, false); }
cudaError_t cudaMallocAsync_ptsz(void** p, size_t size, cudaStream_t s) { return malloc_async(p, size, nullptr, s, true); }
cudaError_t cudaMallocFromPoolAsync(void** p, size_t size, cudaMemPool_t pool, cudaStream_t s) {
  if (!pool) return set_error(cudaErrorInvalidValue);
  return malloc_async(p, size, pool, s, false);
}
cudaError_t cudaMallocFromPoolAsync_ptsz(void** p, size_t size, cudaMemPool_t pool, cudaStream_t s) {
  if (!pool) return set_error(cudaErrorInvalidValue);
  return malloc_async(p, size, pool, s, true);
}
cudaError_t cudaFreeAsync(void* p, cudaStream_t s) { return free_async(p, s, false); }
cudaError_t cudaFreeAsync_ptsz(void* p, cudaStream_t s) { return free_async(p, s, true); }

cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t* pool, int device) {
  if (!pool) return set_error(cudaErrorInvalidValue);
  if (device != 0) return set_error(cudaErrorInvalidDevice);
  *pool = &g_default_pool;
  return cudaSuccess;
}

cudaError_t cudaDeviceGetMemPool(cudaMemPool_t* pool, int device) {
  if (!pool) return set_error(cudaErrorInvalidValue);
  if (device != 0) return set_error(cudaErrorInvalidDevice);
  std::lock_guard<std::recursive_mutex> g(g_mu);
  *pool = g_current_pool;
  return cudaSuccess;
}

cudaError_t cudaDeviceSetMemPool(int device, cudaMemPool_t pool) {
  if (device != 0) return set_error(cudaErrorInvalidDevice);
  std::lock_guard<std::recursive_mutex> g(g_mu);
  if (!g_pools.count(pool) || pool->destroyed) return set_error(cudaErrorInvalidValue);
  g_current_pool = pool;
  return cudaSuccess;
}

cudaError_t cudaMemPoolCreate(cudaMemPool_t* pool, const cudaMemPoolProps* props) {
  if (!pool || !props) return set_error(cudaErrorInvalidValue);
  return locked([&](Runtime&) {
    check_pool_props(*props, "cudaMemPoolCreate");
    auto* p = new CUmemPoolHandle_st;
    g_pools.insert(p);
    *pool = p;
    return cudaSuccess;
  });
}

// The blocks still allocated from it stay valid until freed; then its
// memory goes back to the device.
cudaError_t cudaMemPoolDestroy(cudaMemPool_t pool) {
  return locked([&](Runtime&) {
    if (!g_pools.count(pool) || pool->destroyed || pool == &g_default_pool) return set_error(cudaErrorInvalidValue);
    pool->destroyed = true;
    pool_trim(pool, 0);
    if (g_current_pool == pool) g_current_pool = &g_default_pool;
    return cudaSuccess;
  });
}

cudaError_t cudaMemPoolTrimTo(cudaMemPool_t pool, size_t keep) {
  return locked([&](Runtime&) {
    if (!g_pools.count(pool) || pool->destroyed) return set_error(cudaErrorInvalidValue);
    pool_trim(pool, keep);
    return cudaSuccess;
  });
}

cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t pool, cudaMemPoolAttr attr, void* value) {
  if (!value) return set_error(cudaErrorInvalidValue);
  return locked([&](Runtime&) {
    if (!g_pools.count(pool) || pool->destroyed) return set_error(cudaErrorInvalidValue);
    uint64_t v64 = *static_cast<uint64_t*>(value);
    switch (attr) {
      case cudaMemPoolReuseFollowEventDependencies:
      case cudaMemPoolReuseAllowOpportunistic:
      case cudaMemPoolReuseAllowInternalDependencies:
        pool->reuse[int(attr) - 1] = *static_cast<int*>(value);
        return cudaSuccess;
      case cudaMemPoolAttrReleaseThreshold:
        pool->threshold = v64;
        return cudaSuccess;
      case cudaMemPoolAttrReservedMemHigh:
        if (v64) return set_error(cudaErrorInvalidValue);
        pool->reserved_high = pool->reserved;
        return cudaSuccess;
      case cudaMemPoolAttrUsedMemHigh:
        if (v64) return set_error(cudaErrorInvalidValue);
        pool->used_high = pool->used;
        return cudaSuccess;
      default:
        return set_error(cudaErrorInvalidValue);
    }
  });
}

cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t pool, cudaMemPoolAttr attr, void* value) {
  if (!value) return set_error(cudaErrorInvalidValue);
  return locked([&](Runtime&) {
    if (!g_pools.count(pool) || pool->destroyed) return set_error(cudaErrorInvalidValue);
    auto* v64 = static_cast<uint64_t*>(value);
    switch (attr) {
      case cudaMemPoolReuseFollowEventDependencies:
      case cudaMemPoolReuseAllowOpportunistic:
      case cudaMemPoolReuseAllowInternalDependencies:
        *static_cast<int*>(value) = pool->reuse[int(attr) - 1];
        return cudaSuccess;
      case cudaMemPoolAttrReleaseThreshold: *v64 = pool->threshold; return cudaSuccess;
      case cudaMemPoolAttrReservedMemCurrent: *v64 = pool->reserved; return cudaSuccess;
      case cudaMemPoolAttrReservedMemHigh: *v64 = pool->reserved_high; return cudaSuccess;
      case cudaMemPoolAttrUsedMemCurrent: *v64 = pool->used; return cudaSuccess;
      case cudaMemPoolAttrUsedMemHigh: *v64 = pool->used_high; return cudaSuccess;
      default: return set_error(cudaErrorInvalidValue);
    }
  });
}

cudaError_t cudaMemPoolSetAccess(cudaMemPool_t pool, const cudaMemAccessDesc* list, size_t count) {
  std::lock_guard<std::recursive_mutex> g(g_mu);
  if (!g_pools.count(pool) || (count && !list)) return set_error(cudaErrorInvalidValue);
  for (size_t i = 0; i < count; ++i)
    if (list[i].location.type != cudaMemLocationTypeDevice || list[i].location.id != 0)
      return set_error(cudaErrorInvalidDevice);
  return cudaSuccess;
}

cudaError_t cudaMemPoolGetAccess(cudaMemAccessFlags* flags, cudaMemPool_t pool, cudaMemLocation* location) {
  if (!flags || !location) return set_error(cudaErrorInvalidValue);
  std::lock_guard<std::recursive_mutex> g(g_mu);
  if (!g_pools.count(pool)) return set_error(cudaErrorInvalidValue);
  *flags = location->type == cudaMemLocationTypeDevice && location->id == 0 ? cudaMemAccessFlagsProtReadWrite
                                                                              : cudaMemAccessFlagsProtNone;
  return cudaSuccess;
}

// ---- graph memory ------------------------------------------------------------------

cudaError_t cudaDeviceGetGraphMemAttribute(int device, cudaGraphMemAttributeType attr, void* value) {
  if (!value) return set_error(cudaErrorInvalidValue);
  if (device != 0) return set_error(cudaErrorInvalidDevice);
  std::lock_guard<std::recursive_mutex> g(g_mu);
  uint64_t used, reserved;
  graph_mem_totals(&used, &reserved);
  auto* v = static_cast<uint64_t*>(value);
  switch (attr) {
    case cudaGraphMemAttrUsedMemCurrent: *v = used; return cudaSuccess;
    case cudaGraphMemAttrUsedMemHigh: *v = g_graph_used_high; return cudaSuccess;
    case cudaGraphMemAttrReservedMemCurrent: *v = reserved; return cudaSuccess;
    case cudaGraphMemAttrReservedMemHigh: *v = g_graph_reserved_high; return cudaSuccess;
    default: return set_error(cudaErrorInvalidValue);
  }
}

cudaError_t cudaDeviceSetGraphMemAttribute(int device, cudaGraphMemAttributeType attr, void* value) {
  if (!value || *static_cast<uint64_t*>(value) != 0) return set_error(cudaErrorInvalidValue);
  if (device != 0) return set_error(cudaErrorInvalidDevice);
  std::lock_guard<std::recursive_mutex> g(g_mu);
  uint64_t used, reserved;
  graph_mem_totals(&used, &reserved);
  if (attr == cudaGraphMemAttrUsedMemHigh) g_graph_used_high = used;
  else if (attr == cudaGraphMemAttrReservedMemHigh) g_graph_reserved_high = reserved;
  else return set_error(cudaErrorInvalidValue);
  return cudaSuccess;
}

// Memory of graph allocations that are not allocated now stops counting as
// reserved (the daemon's global memory is backed lazily; the address
// ranges stay the allocation nodes').
cudaError_t cudaDeviceGraphMemTrim(int device) {
  if (device != 0) return set_error(cudaErrorInvalidDevice);
  return guarded([&](Runtime& rt) {
    rt.streams().wait(rt.streams().all_marks());
    std::lock_guard<std::recursive_mutex> g(g_mu);
    for (auto& [a, m] : g_graph_mem)
      if (!m.live) m.backed = false;
    return cudaSuccess;
  });
}

}  // extern "C"
