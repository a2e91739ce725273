// Emulated CUDA runtime: streams, events and synchronization.
#include <algorithm>
#include <string>

#include "cudart_internal.hpp"

namespace mpidist_emu {
namespace {

using Lock = std::lock_guard<std::recursive_mutex>;
using Clock = std::chrono::steady_clock;

/// An event: the (stream, ticket) of its latest record, and when that record was reached.
struct Event {
  unsigned flags = 0;
  std::shared_ptr<Stream> stream;  ///< null until recorded
  std::uint64_t ticket = 0;
  std::uint64_t generation = 0;    ///< bumps on every record, so a stale record does not stamp
  bool stamped = false;
  Clock::time_point when;
};

std::vector<std::unique_ptr<Event>>& events() {
  static auto* all = new std::vector<std::unique_ptr<Event>>;  // never destroyed: see streams.cpp
  return *all;
}

Event* find_event(cudaEvent_t handle) {
  for (const auto& e : events()) {
    if (reinterpret_cast<cudaEvent_t>(e.get()) == handle) return e.get();
  }
  return nullptr;
}

/// cudaEventRecord's queued part: marks the time the stream reached it.
class RecordWork : public Work {
 public:
  RecordWork(cudaEvent_t handle, std::uint64_t generation) : handle_(handle), generation_(generation) {}
  Step step() override {
    Event* e = find_event(handle_);
    if (e != nullptr && e->generation == generation_) {
      e->stamped = true;
      e->when = Clock::now();
    }
    return Step::Done;
  }
  std::string describe() const override { return "cudaEventRecord " + hex(handle_); }

 private:
  cudaEvent_t handle_;
  std::uint64_t generation_;
};

/// cudaStreamWaitEvent's queued part: no effect, only the ordering edge in `after`.
class WaitEventWork : public Work {
 public:
  explicit WaitEventWork(cudaEvent_t handle) : handle_(handle) {}
  Step step() override { return Step::Done; }
  std::string describe() const override { return "cudaStreamWaitEvent " + hex(handle_); }

 private:
  cudaEvent_t handle_;
};

bool event_complete(const Event& e) { return !e.stream || e.stream->completed >= e.ticket; }

cudaError_t stream_or_fail(cudaStream_t handle, std::shared_ptr<Stream>* stream, const char* call) {
  if (resolve_stream(handle, stream) == cudaSuccess) return cudaSuccess;
  return fail(cudaErrorInvalidResourceHandle, std::string(call) + ": unknown or destroyed stream " + hex(handle));
}

}  // namespace
}  // namespace mpidist_emu

using namespace mpidist_emu;

extern "C" {

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* pStream, unsigned int flags) {
  if (pStream == nullptr || (flags & ~cudaStreamNonBlocking) != 0) return fail(cudaErrorInvalidValue);
  Lock hold(big_lock());
  if (const cudaError_t e = use_context("cudaStreamCreateWithFlags"); e != cudaSuccess) return e;
  *pStream = reinterpret_cast<cudaStream_t>(create_stream(current_device(), flags).get());
  return cudaSuccess;
}

cudaError_t cudaStreamCreate(cudaStream_t* pStream) { return cudaStreamCreateWithFlags(pStream, cudaStreamDefault); }

cudaError_t cudaStreamDestroy(cudaStream_t handle) {
  Lock hold(big_lock());
  std::shared_ptr<Stream> stream;
  if (handle == nullptr || handle == cudaStreamLegacy || handle == cudaStreamPerThread ||
      resolve_stream(handle, &stream) != cudaSuccess)
    return fail(cudaErrorInvalidResourceHandle, "cudaStreamDestroy: unknown or already destroyed stream " + hex(handle));
  // As on real hardware, queued work still completes (at a later synchronization).
  stream->destroyed = true;
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t handle) {
  std::shared_ptr<Stream> stream;
  {
    Lock hold(big_lock());
    if (const cudaError_t e = stream_or_fail(handle, &stream, "cudaStreamSynchronize"); e != cudaSuccess) return e;
  }
  return fail(wait(stream, UINT64_MAX, "cudaStreamSynchronize"));
}

cudaError_t cudaStreamQuery(cudaStream_t handle) {
  Lock hold(big_lock());
  std::shared_ptr<Stream> stream;
  if (const cudaError_t e = stream_or_fail(handle, &stream, "cudaStreamQuery"); e != cudaSuccess) return e;
  if (!progress(*stream)) return cudaErrorNotReady;
  const cudaError_t error = stream->error;
  stream->error = cudaSuccess;
  return fail(error);
}

cudaError_t cudaDeviceSynchronize(void) { return fail(wait_all(current_device(), "cudaDeviceSynchronize")); }

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags) {
  if (event == nullptr || (flags & ~0xfu) != 0) return fail(cudaErrorInvalidValue);
  Lock hold(big_lock());
  if (const cudaError_t e = use_context("cudaEventCreateWithFlags"); e != cudaSuccess) return e;
  auto made = std::make_unique<Event>();
  made->flags = flags;
  *event = reinterpret_cast<cudaEvent_t>(made.get());
  events().push_back(std::move(made));
  return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t* event) { return cudaEventCreateWithFlags(event, cudaEventDefault); }

cudaError_t cudaEventDestroy(cudaEvent_t handle) {
  Lock hold(big_lock());
  auto& all = events();
  const auto it = std::find_if(all.begin(), all.end(), [&](const auto& e) { return reinterpret_cast<cudaEvent_t>(e.get()) == handle; });
  if (it == all.end()) return fail(cudaErrorInvalidResourceHandle, "cudaEventDestroy: unknown event " + hex(handle));
  all.erase(it);
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t handle, cudaStream_t stream_handle) {
  Lock hold(big_lock());
  Event* e = find_event(handle);
  if (e == nullptr) return fail(cudaErrorInvalidResourceHandle, "cudaEventRecord: unknown event " + hex(handle));
  std::shared_ptr<Stream> stream;
  if (const cudaError_t err = stream_or_fail(stream_handle, &stream, "cudaEventRecord"); err != cudaSuccess) return err;
  e->stamped = false;
  enqueue(stream, std::make_unique<RecordWork>(handle, ++e->generation));
  e->stream = stream;
  e->ticket = stream->enqueued;
  return cudaSuccess;
}

cudaError_t cudaEventQuery(cudaEvent_t handle) {
  Lock hold(big_lock());
  Event* e = find_event(handle);
  if (e == nullptr) return fail(cudaErrorInvalidResourceHandle, "cudaEventQuery: unknown event " + hex(handle));
  if (!e->stream) return cudaSuccess;
  return progress(*e->stream, e->ticket) ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t cudaEventSynchronize(cudaEvent_t handle) {
  std::shared_ptr<Stream> stream;
  std::uint64_t ticket = 0;
  {
    Lock hold(big_lock());
    Event* e = find_event(handle);
    if (e == nullptr) return fail(cudaErrorInvalidResourceHandle, "cudaEventSynchronize: unknown event " + hex(handle));
    if (!e->stream) return cudaSuccess;
    stream = e->stream;
    ticket = e->ticket;
  }
  // Only the work up to the record takes effect: later work on that stream stays queued.
  return fail(wait(stream, ticket, "cudaEventSynchronize"));
}

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  if (ms == nullptr) return fail(cudaErrorInvalidValue);
  Lock hold(big_lock());
  Event* a = find_event(start);
  Event* b = find_event(end);
  if (a == nullptr || b == nullptr || !a->stream || !b->stream ||
      ((a->flags | b->flags) & cudaEventDisableTiming) != 0)
    return fail(cudaErrorInvalidResourceHandle, "cudaEventElapsedTime: events must exist, be recorded and time");
  if (!event_complete(*a) || !event_complete(*b) || !a->stamped || !b->stamped) return cudaErrorNotReady;
  *ms = std::chrono::duration<float, std::milli>(b->when - a->when).count();
  return cudaSuccess;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream_handle, cudaEvent_t handle, unsigned int flags) {
  Lock hold(big_lock());
  Event* e = find_event(handle);
  if (e == nullptr) return fail(cudaErrorInvalidResourceHandle, "cudaStreamWaitEvent: unknown event " + hex(handle));
  if (flags != 0 && flags != cudaEventWaitDefault) return fail(cudaErrorInvalidValue);
  std::shared_ptr<Stream> stream;
  if (const cudaError_t err = stream_or_fail(stream_handle, &stream, "cudaStreamWaitEvent"); err != cudaSuccess) return err;
  if (!e->stream) return cudaSuccess;  // waiting for a never-recorded event is a no-op
  auto work = std::make_unique<WaitEventWork>(handle);
  work->after.push_back({e->stream, e->ticket});
  enqueue(stream, std::move(work));
  return cudaSuccess;
}

}  // extern "C"
