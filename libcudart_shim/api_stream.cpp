// Streams, events, host callbacks and device synchronization (streams.h:
// how operations are ordered and when they run).  The _ptsz entry points
// are what programs built with --default-stream per-thread call: there the
// handle 0 names the calling thread's default stream.
#include <mutex>
#include <set>

#include "graph.h"
#include "runtime.h"

using namespace qgpu::cudart;

namespace {

std::mutex g_events_mu;
std::set<Event*> g_events;

Mark last_mark(Event* ev, bool* recorded) {
  std::lock_guard<std::mutex> g(ev->mu);
  *recorded = ev->recorded;
  return ev->mark;
}

cudaError_t stream_synchronize(cudaStream_t s, bool per_thread) {
  return guarded([&](Runtime& rt) {
    StreamPtr st = stream_of(s, per_thread);
    if (cudaError_t e = capture_forbids(st, "cudaStreamSynchronize")) return e;
    return wait_and_synchronize(rt.streams().marks(st));
  });
}

cudaError_t stream_query(cudaStream_t s, bool per_thread) {
  return guarded([&](Runtime& rt) {
    StreamPtr st = stream_of(s, per_thread);
    if (cudaError_t e = capture_forbids(st, "cudaStreamQuery")) return e;
    return rt.streams().reached(rt.streams().marks(st)) ? cudaSuccess : cudaErrorNotReady;
  });
}

cudaError_t stream_wait_event(cudaStream_t s, cudaEvent_t e, bool per_thread) {
  return guarded([&](Runtime&) {
    StreamPtr st = stream_of(s, per_thread);
    Event* ev = event_of(e);
    if (!ev) return set_error(cudaErrorInvalidResourceHandle);
    if (capture_event_wait(st, ev)) return cudaSuccess;
    wait_event(st, ev);
    return cudaSuccess;
  });
}

cudaError_t add_callback(cudaStream_t s, cudaStreamCallback_t cb, void* data, bool per_thread) {
  if (!cb) return set_error(cudaErrorInvalidValue);
  return guarded([&](Runtime& rt) {
    StreamPtr st = stream_of(s, per_thread);
    Op op;
    op.kind = Op::Host;  // called even after an error, with the error as its status
    op.node_type = cudaGraphNodeTypeHost;
    op.body = [&rt, s, cb, data](double&) {
      cb(s, rt.sticky(), data);
      return cudaSuccess;
    };
    rt.streams().enqueue(st, std::move(op));
    return cudaSuccess;
  });
}

cudaError_t launch_host_func(cudaStream_t s, cudaHostFn_t fn, void* data, bool per_thread) {
  if (!fn) return set_error(cudaErrorInvalidValue);
  return guarded([&](Runtime& rt) {
    StreamPtr st = stream_of(s, per_thread);
    Op op;
    op.kind = Op::Device;  // as CUDA: not called once the context has an error
    op.node_type = cudaGraphNodeTypeHost;
    op.body = [fn, data](double&) {
      fn(data);
      return cudaSuccess;
    };
    rt.streams().enqueue(st, std::move(op));
    return cudaSuccess;
  });
}

cudaError_t event_record(cudaEvent_t e, cudaStream_t s, bool per_thread) {
  return guarded([&](Runtime& rt) {
    Event* ev = event_of(e);
    if (!ev) return set_error(cudaErrorInvalidResourceHandle);
    StreamPtr st = stream_of(s, per_thread);
    if (capturing(st)) capture_event_record(st, ev);
    else record_event(ev, st);
    return cudaSuccess;
  });
}

template <class T>
cudaError_t stream_field(cudaStream_t s, bool per_thread, T* out, T (*get)(const Stream&)) {
  if (!out) return set_error(cudaErrorInvalidValue);
  return guarded([&](Runtime&) {
    *out = get(*stream_of(s, per_thread));
    return cudaSuccess;
  });
}

}  // namespace

namespace qgpu::cudart {

Event* event_of(cudaEvent_t e) {
  std::lock_guard<std::mutex> g(g_events_mu);
  auto* ev = reinterpret_cast<Event*>(e);
  return g_events.count(ev) ? ev : nullptr;
}

void record_event(Event* ev, const StreamPtr& s) {
  Op op;
  op.kind = Op::Marker;
  std::lock_guard<std::mutex> g(ev->mu);
  ev->mark = Runtime::get().streams().enqueue(s, std::move(op));
  ev->recorded = true;
  ev->capture.reset();
  ev->capture_nodes.clear();
}

void wait_event(const StreamPtr& s, Event* ev) {
  bool recorded;
  Mark m = last_mark(ev, &recorded);
  if (!recorded) return;  // an event never recorded is complete
  Op op;
  op.kind = Op::Marker;
  op.after.push_back(m);
  Runtime::get().streams().enqueue(s, std::move(op));
}

StreamPtr stream_of(cudaStream_t handle, bool per_thread) {
  StreamPtr s = Runtime::get().streams().find(handle, per_thread);
  if (!s) throw client::Error(cudaErrorInvalidResourceHandle, "the stream handle is not a live stream (destroyed, or never created)");
  return s;
}

cudaError_t wait_and_synchronize(const std::vector<Mark>& marks) {
  Runtime& rt = Runtime::get();
  rt.conn();  // a failed start-up is reported here
  rt.streams().wait(marks);
  return rt.synchronize();
}

cudaError_t check_access_policy(const cudaAccessPolicyWindow& w, const char* call) {
  const qgpu::proto::DeviceInfo& d = Runtime::get().device();
  if (w.num_bytes > d.access_policy_max_window_bytes)
    return fail(cudaErrorInvalidValue, std::string(call) + ": an access-policy window of " +
                                           std::to_string(w.num_bytes) + " bytes; the device's accessPolicyMaxWindowSize is " +
                                           std::to_string(d.access_policy_max_window_bytes));
  if (!(w.hitRatio >= 0.f && w.hitRatio <= 1.f))
    return fail(cudaErrorInvalidValue, std::string(call) + ": an access-policy window's hitRatio must be in [0, 1]");
  for (cudaAccessProperty p : {w.hitProp, w.missProp})
    if (p != cudaAccessPropertyNormal && p != cudaAccessPropertyStreaming && p != cudaAccessPropertyPersisting)
      return fail(cudaErrorInvalidValue, std::string(call) + ": unknown access property " + std::to_string(int(p)));
  return cudaSuccess;
}

}  // namespace qgpu::cudart

extern "C" {

cudaError_t cudaDeviceSynchronize(void) {
  return guarded([](Runtime& rt) { return wait_and_synchronize(rt.streams().all_marks()); });
}

// ---- Streams ---------------------------------------------------------------

cudaError_t cudaStreamCreateWithPriority(cudaStream_t* s, unsigned int flags, int priority) {
  if (!s) return set_error(cudaErrorInvalidValue);
  if (flags & ~unsigned(cudaStreamNonBlocking)) return set_error(cudaErrorInvalidValue);
  *s = Runtime::get().streams().create(flags, priority);
  return cudaSuccess;
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned int flags) { return cudaStreamCreateWithPriority(s, flags, 0); }
cudaError_t cudaStreamCreate(cudaStream_t* s) { return cudaStreamCreateWithPriority(s, cudaStreamDefault, 0); }

cudaError_t cudaStreamDestroy(cudaStream_t s) {
  return Runtime::get().streams().destroy(s) ? cudaSuccess : set_error(cudaErrorInvalidResourceHandle);
}

cudaError_t cudaStreamSynchronize(cudaStream_t s) { return stream_synchronize(s, false); }
cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t s) { return stream_synchronize(s, true); }
cudaError_t cudaStreamQuery(cudaStream_t s) { return stream_query(s, false); }
cudaError_t cudaStreamQuery_ptsz(cudaStream_t s) { return stream_query(s, true); }
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned int) { return stream_wait_event(s, e, false); }
cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t s, cudaEvent_t e, unsigned int) { return stream_wait_event(s, e, true); }
cudaError_t cudaStreamAddCallback(cudaStream_t s, cudaStreamCallback_t cb, void* data, unsigned int) {
  return add_callback(s, cb, data, false);
}
cudaError_t cudaStreamAddCallback_ptsz(cudaStream_t s, cudaStreamCallback_t cb, void* data, unsigned int) {
  return add_callback(s, cb, data, true);
}
cudaError_t cudaLaunchHostFunc(cudaStream_t s, cudaHostFn_t fn, void* data) { return launch_host_func(s, fn, data, false); }
cudaError_t cudaLaunchHostFunc_ptsz(cudaStream_t s, cudaHostFn_t fn, void* data) { return launch_host_func(s, fn, data, true); }

cudaError_t cudaStreamGetFlags(cudaStream_t s, unsigned int* flags) {
  return stream_field<unsigned>(s, false, flags, [](const Stream& st) { return st.flags; });
}
cudaError_t cudaStreamGetFlags_ptsz(cudaStream_t s, unsigned int* flags) {
  return stream_field<unsigned>(s, true, flags, [](const Stream& st) { return st.flags; });
}
cudaError_t cudaStreamGetPriority(cudaStream_t s, int* priority) {
  return stream_field<int>(s, false, priority, [](const Stream& st) { return st.priority; });
}
cudaError_t cudaStreamGetPriority_ptsz(cudaStream_t s, int* priority) {
  return stream_field<int>(s, true, priority, [](const Stream& st) { return st.priority; });
}
cudaError_t cudaStreamGetId(cudaStream_t s, unsigned long long* id) {
  return stream_field<unsigned long long>(s, false, id, [](const Stream& st) { return st.id; });
}
cudaError_t cudaStreamGetId_ptsz(cudaStream_t s, unsigned long long* id) {
  return stream_field<unsigned long long>(s, true, id, [](const Stream& st) { return st.id; });
}
cudaError_t cudaStreamGetDevice(cudaStream_t s, int* device) {
  return stream_field<int>(s, false, device, [](const Stream&) { return 0; });
}
cudaError_t cudaStreamGetDevice_ptsz(cudaStream_t s, int* device) {
  return stream_field<int>(s, true, device, [](const Stream&) { return 0; });
}

// Stream attributes: an access-policy window (checked against the device's
// L2, api_device.cpp), the synchronization policy, the memory
// synchronization domain and the priority are kept and read back; none of
// them changes a result.
static cudaError_t stream_set_attribute(cudaStream_t s, cudaLaunchAttributeID id, const cudaLaunchAttributeValue* v,
                                        bool per_thread) {
  if (!v) return set_error(cudaErrorInvalidValue);
  return guarded([&](Runtime&) {
    StreamPtr st = stream_of(s, per_thread);
    switch (id) {
      case cudaLaunchAttributeAccessPolicyWindow:
        if (cudaError_t e = check_access_policy(v->accessPolicyWindow, "cudaStreamSetAttribute")) return e;
        st->access_policy = v->accessPolicyWindow;
        return cudaSuccess;
      case cudaLaunchAttributeSynchronizationPolicy:
        if (v->syncPolicy < cudaSyncPolicyAuto || v->syncPolicy > cudaSyncPolicyBlockingSync)
          return set_error(cudaErrorInvalidValue);
        st->sync_policy = v->syncPolicy;
        return cudaSuccess;
      case cudaLaunchAttributeMemSyncDomain:
        if (v->memSyncDomain != cudaLaunchMemSyncDomainDefault && v->memSyncDomain != cudaLaunchMemSyncDomainRemote)
          return set_error(cudaErrorInvalidValue);
        st->mem_sync_domain = v->memSyncDomain;
        return cudaSuccess;
      case cudaLaunchAttributePriority:
        st->priority = 0;  // the one priority there is (cudaDeviceGetStreamPriorityRange)
        return cudaSuccess;
      default:
        return fail(cudaErrorInvalidValue, "cudaStreamSetAttribute: attribute " + std::to_string(int(id)) +
                                               " is not a stream attribute qgpu keeps (access-policy window, "
                                               "synchronization policy, memory synchronization domain, priority)");
    }
  });
}

static cudaError_t stream_get_attribute(cudaStream_t s, cudaLaunchAttributeID id, cudaLaunchAttributeValue* v,
                                        bool per_thread) {
  if (!v) return set_error(cudaErrorInvalidValue);
  return guarded([&](Runtime&) {
    StreamPtr st = stream_of(s, per_thread);
    switch (id) {
      case cudaLaunchAttributeAccessPolicyWindow: v->accessPolicyWindow = st->access_policy; return cudaSuccess;
      case cudaLaunchAttributeSynchronizationPolicy: v->syncPolicy = st->sync_policy; return cudaSuccess;
      case cudaLaunchAttributeMemSyncDomain: v->memSyncDomain = st->mem_sync_domain; return cudaSuccess;
      case cudaLaunchAttributePriority: v->priority = st->priority; return cudaSuccess;
      default:
        return fail(cudaErrorInvalidValue, "cudaStreamGetAttribute: attribute " + std::to_string(int(id)) +
                                               " is not a stream attribute qgpu keeps (access-policy window, "
                                               "synchronization policy, memory synchronization domain, priority)");
    }
  });
}

static cudaError_t stream_copy_attributes(cudaStream_t dst, cudaStream_t src, bool per_thread) {
  return guarded([&](Runtime&) {
    StreamPtr d = stream_of(dst, per_thread), s = stream_of(src, per_thread);
    d->access_policy = s->access_policy;
    d->sync_policy = s->sync_policy;
    d->mem_sync_domain = s->mem_sync_domain;
    return cudaSuccess;
  });
}

cudaError_t cudaStreamSetAttribute(cudaStream_t s, cudaLaunchAttributeID id, const cudaLaunchAttributeValue* v) {
  return stream_set_attribute(s, id, v, false);
}
cudaError_t cudaStreamSetAttribute_ptsz(cudaStream_t s, cudaLaunchAttributeID id, const cudaLaunchAttributeValue* v) {
  return stream_set_attribute(s, id, v, true);
}
cudaError_t cudaStreamGetAttribute(cudaStream_t s, cudaLaunchAttributeID id, cudaLaunchAttributeValue* v) {
  return stream_get_attribute(s, id, v, false);
}
cudaError_t cudaStreamGetAttribute_ptsz(cudaStream_t s, cudaLaunchAttributeID id, cudaLaunchAttributeValue* v) {
  return stream_get_attribute(s, id, v, true);
}
cudaError_t cudaStreamCopyAttributes(cudaStream_t dst, cudaStream_t src) { return stream_copy_attributes(dst, src, false); }
cudaError_t cudaStreamCopyAttributes_ptsz(cudaStream_t dst, cudaStream_t src) {
  return stream_copy_attributes(dst, src, true);
}

// Managed memory is one range for every stream: attaching changes nothing.
cudaError_t cudaStreamAttachMemAsync(cudaStream_t s, void*, size_t, unsigned int) {
  return guarded([&](Runtime&) {
    stream_of(s, false);
    return cudaSuccess;
  });
}
cudaError_t cudaStreamAttachMemAsync_ptsz(cudaStream_t s, void*, size_t, unsigned int) {
  return guarded([&](Runtime&) {
    stream_of(s, true);
    return cudaSuccess;
  });
}

// ---- Events: a point in a stream, and the device clock when it was reached.

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned int flags) {
  if (!e) return set_error(cudaErrorInvalidValue);
  auto* ev = new Event;
  ev->flags = flags;
  std::lock_guard<std::mutex> g(g_events_mu);
  g_events.insert(ev);
  *e = reinterpret_cast<cudaEvent_t>(ev);
  return cudaSuccess;
}
cudaError_t cudaEventCreate(cudaEvent_t* e) { return cudaEventCreateWithFlags(e, cudaEventDefault); }

cudaError_t cudaEventDestroy(cudaEvent_t e) {
  auto* ev = reinterpret_cast<Event*>(e);
  {
    std::lock_guard<std::mutex> g(g_events_mu);
    if (!g_events.erase(ev)) return set_error(cudaErrorInvalidResourceHandle);
  }
  delete ev;  // operations waiting for it hold its mark, not the event
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) { return event_record(e, s, false); }
cudaError_t cudaEventRecord_ptsz(cudaEvent_t e, cudaStream_t s) { return event_record(e, s, true); }
cudaError_t cudaEventRecordWithFlags(cudaEvent_t e, cudaStream_t s, unsigned int) { return event_record(e, s, false); }
cudaError_t cudaEventRecordWithFlags_ptsz(cudaEvent_t e, cudaStream_t s, unsigned int) { return event_record(e, s, true); }

cudaError_t cudaEventSynchronize(cudaEvent_t e) {
  return guarded([&](Runtime&) {
    Event* ev = event_of(e);
    if (!ev) return set_error(cudaErrorInvalidResourceHandle);
    bool recorded;
    Mark m = last_mark(ev, &recorded);
    return wait_and_synchronize(recorded ? std::vector<Mark>{m} : std::vector<Mark>{});
  });
}

cudaError_t cudaEventQuery(cudaEvent_t e) {
  return guarded([&](Runtime& rt) {
    Event* ev = event_of(e);
    if (!ev) return set_error(cudaErrorInvalidResourceHandle);
    bool recorded;
    Mark m = last_mark(ev, &recorded);
    return !recorded || rt.streams().reached(m) ? cudaSuccess : cudaErrorNotReady;
  });
}

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  if (!ms) return set_error(cudaErrorInvalidValue);
  return guarded([&](Runtime& rt) {
    Event *a = event_of(start), *b = event_of(end);
    if (!a || !b) return set_error(cudaErrorInvalidResourceHandle);
    if ((a->flags | b->flags) & cudaEventDisableTiming) return set_error(cudaErrorInvalidResourceHandle);
    bool ra, rb;
    Mark ma = last_mark(a, &ra), mb = last_mark(b, &rb);
    if (!ra || !rb) return set_error(cudaErrorInvalidResourceHandle);
    if (!rt.streams().reached(ma) || !rt.streams().reached(mb)) return set_error(cudaErrorNotReady);
    *ms = float((mb.at->clock - ma.at->clock) * 1000.0);
    return cudaSuccess;
  });
}

}  // extern "C"
