// CUDA graphs, stream capture and stream-ordered memory (api_graph.cpp).
//
// A graph is nodes and their dependencies, kept as the program built them
// (cudaGraphAdd*Node) or as a stream capture recorded them: while a stream
// captures, the operations issued to it (launches, copies, memsets, host
// functions, event records and waits, cudaMallocAsync/cudaFreeAsync) become
// nodes instead of running, and a stream that waits for an event recorded
// in the capture joins it.  An executable graph holds a copy of its graph;
// cudaGraphLaunch queues its nodes on the stream in a topological order, each
// as the operation it stands for (a kernel node is a launch the daemon runs
// as any other), so a graph's work is ordered as the graph says and runs
// after the stream's earlier work and before its later work.
//
// Conditional nodes (if, if/else, while, switch): a handle is the device
// address of a 32-bit value (cudaGraphConditionalHandleCreate allocates it
// and writes its default; a launch writes the default again first when the
// handle has cudaGraphCondAssignDefault), which kernels set with
// cudaGraphSetConditional (a store the daemon defines for modules that
// declare it, docs/protocol.md).  The node is one operation on the stream:
// when its turn comes it reads the value and runs the chosen body graph's
// nodes one after another on the stream's runtime thread, a while node
// reading the value again after each run.  Bodies hold kernels, copies,
// memsets, empty nodes, child graphs and conditional nodes, as CUDA allows
// (instantiation refuses others).
//
// Stream-ordered allocation: cudaMallocAsync takes memory from a pool (the
// device's default pool or one of cudaMemPoolCreate) at the call, reusing a
// block the pool holds or allocating a new one; cudaFreeAsync gives the
// block back to its pool when the stream reaches it, and the pool returns
// memory to the device beyond its release threshold.  A graph's memory
// allocation node has its address from the moment it is added (the daemon
// holds the range); the memory counts as the graph's footprint from the
// launch that allocates it until it is freed and trimmed.
#pragma once

#include <cuda_runtime_api.h>

#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "runtime.h"

namespace qgpu::cudart {

struct Event {
  unsigned flags = 0;
  std::mutex mu;
  bool recorded = false;
  Mark mark;
  // Recorded into a stream capture: the nodes a wait for it depends on.
  std::shared_ptr<CaptureState> capture;
  std::vector<cudaGraphNode_t> capture_nodes;
};

// The event a handle names, or nullptr (api_stream.cpp).
Event* event_of(cudaEvent_t e);
// What cudaEventRecord and cudaStreamWaitEvent do on a stream that is not
// capturing.
void record_event(Event* ev, const StreamPtr& s);
void wait_event(const StreamPtr& s, Event* ev);

struct CaptureState {
  cudaGraph_t graph = nullptr;
  bool owns_graph = true;  // cudaStreamBeginCapture (not ...ToGraph): EndCapture hands it over
  cudaStreamCaptureMode mode = cudaStreamCaptureModeGlobal;
  unsigned long long id = 0;
  StreamPtr origin;
  std::vector<StreamPtr> streams;  // the origin and every stream that joined
  bool invalidated = false;
};

// Whether `s` captures; throws client::Error for a capture that was
// invalidated.
bool capturing(const StreamPtr& s);
// Nodes for the operations the runtime's entry points record while a stream
// captures.
cudaError_t capture_launch(const StreamPtr& s, Kernel* k, dim3 grid, dim3 block, void** args, size_t smem);
void capture_event_record(const StreamPtr& s, Event* ev);
// A wait for `ev` on `s`: true when it was a capture's (handled here).
bool capture_event_wait(const StreamPtr& s, Event* ev);
// Ends a capture, invalidating it, when a capturing stream is synchronised
// or queried (CUDA forbids both).  Returns cudaSuccess unless `s` captures.
cudaError_t capture_forbids(const StreamPtr& s, const char* call);

// cudaFree of memory from cudaMallocAsync or a graph's allocation node:
// true when `addr` was such memory (then freed, after the device is idle).
bool free_stream_ordered(Runtime& rt, uint64_t addr);

}  // namespace qgpu::cudart
