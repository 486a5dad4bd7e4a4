#include "streams.h"

#include <thread>

#include "runtime.h"

namespace qgpu::cudart {
namespace {

// The calling thread's default stream (created on first use); forgotten
// when the thread ends, once its work has completed.
struct PerThread {
  Streams* owner = nullptr;
  StreamPtr stream;
  ~PerThread() {
    if (owner && stream) owner->destroy(reinterpret_cast<cudaStream_t>(stream.get()));
  }
};
thread_local PerThread t_stream;
thread_local bool t_runtime_thread = false;

}  // namespace

StreamPtr Streams::legacy_locked() {
  if (!legacy_) {
    legacy_ = std::make_shared<Stream>();
    legacy_->kind = Stream::Kind::Legacy;
    legacy_->id = next_id_++;
    live_[legacy_.get()] = legacy_;
  }
  return legacy_;
}

StreamPtr Streams::find(cudaStream_t handle, bool per_thread) {
  std::lock_guard<std::mutex> g(mu_);
  if (handle == cudaStreamLegacy || (handle == nullptr && !per_thread)) return legacy_locked();
  if (handle == cudaStreamPerThread || handle == nullptr) {
    if (!t_stream.stream) {
      auto s = std::make_shared<Stream>();
      s->kind = Stream::Kind::PerThread;
      s->id = next_id_++;
      live_[s.get()] = s;
      t_stream.owner = this;
      t_stream.stream = s;
    }
    return t_stream.stream;
  }
  auto it = live_.find(reinterpret_cast<const Stream*>(handle));
  if (it == live_.end() || it->second->destroyed || it->second->kind != Stream::Kind::Created) return nullptr;
  return it->second;
}

cudaStream_t Streams::create(unsigned flags, int priority) {
  auto s = std::make_shared<Stream>();
  s->flags = flags;
  s->priority = priority;
  std::lock_guard<std::mutex> g(mu_);
  s->id = next_id_++;
  live_[s.get()] = s;
  return reinterpret_cast<cudaStream_t>(s.get());
}

bool Streams::destroy(cudaStream_t handle) {
  std::lock_guard<std::mutex> g(mu_);
  auto it = live_.find(reinterpret_cast<const Stream*>(handle));
  if (it == live_.end() || it->second->destroyed || it->second->kind == Stream::Kind::Legacy) return false;
  StreamPtr s = it->second;
  s->destroyed = true;
  if (s->completed == s->enqueued) {
    live_.erase(it);
    cv_.notify_all();  // its idle runtime thread ends
  }
  return true;
}

void Streams::add_implicit_locked(const StreamPtr& s, Op& op) {
  if (s->kind == Stream::Kind::Legacy) {
    for (auto& [p, t] : live_)
      if (t->blocking() && t->enqueued > t->completed) op.after.push_back(tail_locked(t));
  } else if (s->blocking() && legacy_ && legacy_->enqueued > legacy_->completed) {
    op.after.push_back(tail_locked(legacy_));
  }
  if (!op.done) op.done = std::make_shared<Completion>();
}

Mark Streams::enqueue(const StreamPtr& s, Op op) {
  std::unique_lock<std::mutex> g(mu_);
  if (s->capture) {
    g.unlock();
    return capture_op(s, std::move(op));
  }
  add_implicit_locked(s, op);
  Mark m{s, s->enqueued + 1, op.done};
  s->queue.push_back(std::move(op));
  s->enqueued += 1;
  if (!s->started) {
    s->started = true;
    std::thread([this, s] { serve(s); }).detach();
  }
  cv_.notify_all();
  return m;
}

Mark Streams::run(const StreamPtr& s, Op op) {
  op.waited = true;
  std::unique_lock<std::mutex> g(mu_);
  if (s->capture) {
    g.unlock();
    return capture_op(s, std::move(op));
  }
  add_implicit_locked(s, op);
  bool ready = s->completed == s->enqueued;
  for (const Mark& m : op.after) ready &= reached_locked(m);
  if (!ready) {
    g.unlock();
    Mark m = enqueue(s, std::move(op));
    wait(m);
    return m;
  }
  // The stream is idle: the operation runs here, counted as queued so that
  // work queued meanwhile (on this stream, or waiting for it) waits for it.
  s->enqueued += 1;
  Mark m{s, s->enqueued, op.done};
  g.unlock();
  double seconds = 0;
  cudaError_t e = execute(op, seconds);
  g.lock();
  complete_locked(s, op, e, seconds);
  return m;
}

bool Streams::on_runtime_thread() { return t_runtime_thread; }

cudaError_t Streams::execute(Op& op, double& seconds) {
  Runtime& rt = Runtime::get();
  cudaError_t e = cudaSuccess;
  if (op.kind == Op::Device && rt.sticky() != cudaSuccess) {
    e = rt.sticky();
  } else if (op.body) {
    try {
      e = op.body(seconds);
    } catch (const client::Error& x) {
      if (x.lost) rt.make_sticky(cudaError_t(x.code));
      e = fail(cudaError_t(x.code), x.what());
    } catch (const std::exception& x) {
      e = fail(cudaErrorUnknown, x.what());
    }
  }
  // An error nobody waits for is reported by the next synchronizing call
  // (a sticky one already is, by every call).
  if (e != cudaSuccess && !op.waited && !is_execution_error(e) && e != rt.sticky()) rt.defer_error(e);
  return e;
}

void Streams::complete_locked(const StreamPtr& s, Op& op, cudaError_t e, double seconds) {
  clock_ += seconds;
  op.done->error = e;
  op.done->clock = clock_;
  s->completed += 1;
  op = Op{};  // drops what the operation held (staged bytes, marks) before waking waiters
  cv_.notify_all();
}

bool Streams::reached(const Mark& m) {
  std::lock_guard<std::mutex> g(mu_);
  return reached_locked(m);
}

void Streams::wait(const Mark& m) {
  std::unique_lock<std::mutex> g(mu_);
  cv_.wait(g, [&] { return reached_locked(m); });
}

std::vector<Mark> Streams::marks(const StreamPtr& s) {
  std::lock_guard<std::mutex> g(mu_);
  std::vector<Mark> ms{tail_locked(s)};
  if (s->kind == Stream::Kind::Legacy)
    for (auto& [p, t] : live_)
      if (t->blocking()) ms.push_back(tail_locked(t));
  return ms;
}

std::vector<Mark> Streams::all_marks() {
  std::lock_guard<std::mutex> g(mu_);
  std::vector<Mark> ms;
  for (auto& [p, t] : live_) ms.push_back(tail_locked(t));
  return ms;
}

bool Streams::reached(const std::vector<Mark>& ms) {
  std::lock_guard<std::mutex> g(mu_);
  for (const Mark& m : ms)
    if (!reached_locked(m)) return false;
  return true;
}

void Streams::wait(const std::vector<Mark>& ms) {
  std::unique_lock<std::mutex> g(mu_);
  cv_.wait(g, [&] {
    for (const Mark& m : ms)
      if (!reached_locked(m)) return false;
    return true;
  });
}

double Streams::clock() {
  std::lock_guard<std::mutex> g(mu_);
  return clock_;
}

void Streams::serve(StreamPtr s) {
  t_runtime_thread = true;
  std::unique_lock<std::mutex> g(mu_);
  for (;;) {
    cv_.wait(g, [&] {
      if (s->queue.empty()) return s->destroyed;
      // Nothing of this stream in flight (an operation run by its caller),
      // and what the next operation waits for is reached.
      if (s->completed + s->queue.size() != s->enqueued) return false;
      for (const Mark& m : s->queue.front().after)
        if (!reached_locked(m)) return false;
      return true;
    });
    if (s->queue.empty()) break;  // destroyed and drained
    Op op = std::move(s->queue.front());
    s->queue.pop_front();
    g.unlock();
    double seconds = 0;
    cudaError_t e = execute(op, seconds);
    g.lock();
    complete_locked(s, op, e, seconds);
  }
  live_.erase(s.get());
  cv_.notify_all();
}

}  // namespace qgpu::cudart
