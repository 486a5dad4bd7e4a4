// Streams: CUDA's ordering rules over one connection to model_host.
//
// Each stream is a queue of operations served in order by its own runtime
// thread, which issues the operation's blocking calls to the daemon (the
// connection serialises calls from all threads; the daemon serves the
// process's one session in order).  An operation may wait for points of
// other streams first: that is how the legacy default stream synchronises
// with every blocking stream (work on it waits for all work queued before
// on blocking streams, and work queued later on a blocking stream waits for
// it), and how cudaStreamWaitEvent orders one stream after another.
// Streams created with cudaStreamNonBlocking take no part in the legacy
// stream's synchronisation; per-thread default streams do, as CUDA's do.
//
// The device clock: the sum of the daemon-reported execution times of the
// work completed so far (kernels: the time the daemon reports running
// them; copies and memsets: the time their messages took).  An event
// records the clock when the work queued before it has completed, so
// cudaEventElapsedTime measures the device's work between two events,
// never time spent waiting in a queue or in a host callback.
#pragma once

#include <cuda_runtime_api.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace qgpu::cudart {

struct Stream;
using StreamPtr = std::shared_ptr<Stream>;

// Filled in by the runtime thread before the operation counts as completed.
struct Completion {
  cudaError_t error = cudaSuccess;
  double clock = 0;  // the device clock (seconds) once the operation completed
};

// A point in a stream's order: reached once `seq` operations completed.
struct Mark {
  StreamPtr stream;
  uint64_t seq = 0;
  std::shared_ptr<Completion> at;  // the operation that ends at this point
};

struct Op {
  enum Kind {
    Device,  // work for the daemon: skipped (failing with the sticky error) once the context is broken
    Host,    // a host callback: always runs
    Marker,  // an event record or a wait: no work of its own
  };
  Kind kind = Device;
  // What a graph shows for the operation when a stream capture records it
  // instead of running it (graph.h).
  cudaGraphNodeType node_type = cudaGraphNodeTypeEmpty;
  // Runs on the stream's runtime thread; adds the daemon-reported execution
  // time of its work to `seconds`.  May throw client::Error.
  std::function<cudaError_t(double& seconds)> body;
  std::vector<Mark> after;  // points of other streams to wait for first
  std::shared_ptr<Completion> done;  // made by enqueue when empty
  // A caller waits for the operation and takes its error: it is then not
  // reported again at the next synchronization.
  bool waited = false;
};

struct Stream {
  enum class Kind { Legacy, PerThread, Created };
  Kind kind = Kind::Created;
  unsigned flags = 0;
  int priority = 0;
  unsigned long long id = 0;
  // Stream attributes (cudaStreamSetAttribute): hints that change no result
  // (memory is flat, streams are served in order), kept to be read back.
  cudaAccessPolicyWindow access_policy{};
  cudaSynchronizationPolicy sync_policy = cudaSyncPolicyAuto;
  cudaLaunchMemSyncDomain mem_sync_domain = cudaLaunchMemSyncDomainDefault;
  std::deque<Op> queue;
  uint64_t enqueued = 0, completed = 0;  // operations queued (or running) and completed
  bool started = false;    // its runtime thread runs
  bool destroyed = false;  // the thread ends once the queue is empty
  // Stream capture (graph.h): while set, operations issued to the stream
  // become nodes of the capture's graph, depending on `capture_deps`.
  std::shared_ptr<struct CaptureState> capture;
  std::vector<cudaGraphNode_t> capture_deps;
  bool blocking() const { return kind != Kind::Legacy && !(flags & cudaStreamNonBlocking); }
};

// Records `op` as a node of the graph `s` is capturing into (graph.h);
// returns a point that counts as reached.
Mark capture_op(const StreamPtr& s, Op op);

class Streams {
 public:
  // The stream a handle names: 0 is the legacy default stream, or the
  // calling thread's default stream when `per_thread` (the _ptsz/_ptds
  // entry points); cudaStreamLegacy and cudaStreamPerThread name those two.
  // nullptr for a handle that is not a live stream.
  StreamPtr find(cudaStream_t handle, bool per_thread);
  cudaStream_t create(unsigned flags, int priority);
  // Forgets the handle; queued work still completes.  False if unknown.
  bool destroy(cudaStream_t handle);

  // Queues `op` on `s` (with the legacy stream's implicit dependencies) and
  // returns the point after it.
  Mark enqueue(const StreamPtr& s, Op op);
  // Queues `op` and waits for it; runs it on the calling thread when the
  // stream is idle and nothing it waits for is pending (a synchronous copy
  // then costs no hand-over to the runtime thread).
  Mark run(const StreamPtr& s, Op op);
  bool reached(const Mark& m);
  void wait(const Mark& m);
  // The points a synchronisation of `s` waits for: its own queue, and for
  // the legacy stream every blocking stream's as well.
  std::vector<Mark> marks(const StreamPtr& s);
  // ... of every stream (cudaDeviceSynchronize).
  std::vector<Mark> all_marks();
  bool reached(const std::vector<Mark>& ms);
  void wait(const std::vector<Mark>& ms);
  double clock();
  // Whether the calling thread is a stream's runtime thread.
  static bool on_runtime_thread();

 private:
  void serve(StreamPtr s);
  void add_implicit_locked(const StreamPtr& s, Op& op);
  static cudaError_t execute(Op& op, double& seconds);
  void complete_locked(const StreamPtr& s, Op& op, cudaError_t e, double seconds);
  StreamPtr legacy_locked();
  bool reached_locked(const Mark& m) const { return !m.stream || m.stream->completed >= m.seq; }
  Mark tail_locked(const StreamPtr& s) const { return {s, s->enqueued, nullptr}; }

  std::mutex mu_;
  std::condition_variable cv_;
  std::map<const Stream*, StreamPtr> live_;  // every stream with a handle or pending work
  StreamPtr legacy_;
  unsigned long long next_id_ = 1;
  double clock_ = 0;
};

}  // namespace qgpu::cudart
