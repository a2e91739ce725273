// The stream engine: queued work takes effect only when a synchronization drives the stream.
//
// Ordering model (CUDA's legacy default stream semantics):
//   1. Each stream is a FIFO; an operation runs only after the ones queued before it.
//   2. Work queued on the legacy default stream waits for everything already queued on the
//      device's blocking streams, and work queued on a blocking stream waits for everything
//      already queued on the legacy stream. Non-blocking streams get neither edge.
//   3. cudaStreamWaitEvent adds an explicit edge to the recording stream's ticket.
//   4. Nothing runs in the background: a stream advances only inside a query or synchronization,
//      so a result read without synchronizing is stale, as it may be on real hardware.
//   5. When an operation starts, an earlier-queued, still-pending operation on another stream that
//      touches the same bytes (one of them writing) is a race: it is reported and the
//      synchronization returns cudaErrorIllegalState.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>
#include <thread>

#include "emu.hpp"

namespace mpidist_emu {
namespace {

std::uint64_t g_sequence = 0;

// Streams by device; destroyed streams stay until their queue drains.
// Registries are never destroyed: production code may still call in from static destructors.
std::vector<std::shared_ptr<Stream>>& streams() {
  static auto* all = new std::vector<std::shared_ptr<Stream>>;
  return *all;
}

std::map<int, std::shared_ptr<Stream>>& legacy_streams() {
  static auto* all = new std::map<int, std::shared_ptr<Stream>>;
  return *all;
}

bool overlaps(const Access& a, const Access& b) {
  if (!a.write && !b.write) return false;
  return a.begin < b.begin + b.bytes && b.begin < a.begin + a.bytes;
}

bool conflicts(const Work& a, const Work& b) {
  for (const Access& x : a.accesses) {
    for (const Access& y : b.accesses) {
      if (overlaps(x, y)) return true;
    }
  }
  return false;
}

// Rule 5 above: reported once per operation when it starts; returns whether it found a race.
bool check_races(const Stream& own, Work& work) {
  for (const auto& other : streams()) {
    if (other.get() == &own) continue;
    for (const auto& queued : other->queue) {
      if (queued->sequence > work.sequence || queued->cancelled || !conflicts(*queued, work)) continue;
      diagnose("race: " + work.describe() + " on " + own.name() + " touches memory that " + queued->describe() +
               ", queued earlier on " + other->name() +
               ", has not finished with; synchronize that stream or make " + own.name() +
               " wait for it (cudaStreamWaitEvent)");
      return true;
    }
  }
  return false;
}

void drop_drained_streams() {
  auto& all = streams();
  all.erase(std::remove_if(all.begin(), all.end(), [](const auto& s) { return s->destroyed && s->queue.empty(); }),
            all.end());
}

std::string pending_summary() {
  std::ostringstream text;
  for (const auto& s : streams()) {
    for (const auto& w : s->queue) text << "\n  " << s->name() << ": " << w->describe();
  }
  return text.str();
}

// At exit, work still queued never took effect: on real hardware it would have, so say so.
void report_unsynchronized() {
  std::lock_guard<std::recursive_mutex> hold(big_lock());
  int count = 0;
  for (const auto& s : streams()) {
    for (const auto& w : s->queue) count += w->cancelled ? 0 : 1;
  }
  if (count > 0)
    diagnose("at exit, " + std::to_string(count) + " queued operation(s) were never synchronized and never took effect:" +
             pending_summary());
}

[[maybe_unused]] const int g_report_registered = std::atexit(report_unsynchronized);

}  // namespace

Work::~Work() = default;

std::string Stream::name() const {
  if (legacy) return "the legacy default stream of device " + std::to_string(device);
  std::ostringstream text;
  text << ((flags & cudaStreamNonBlocking) != 0 ? "non-blocking" : "blocking") << " stream " << this << " of device "
       << device;
  return text.str();
}

std::shared_ptr<Stream> legacy_stream(int device) {
  auto& slot = legacy_streams()[device];
  if (!slot) {
    slot = std::make_shared<Stream>();
    slot->device = device;
    slot->legacy = true;
    streams().push_back(slot);
  }
  return slot;
}

/// Creates a registered stream (cudaStreamCreate*); the handle is its address.
std::shared_ptr<Stream> create_stream(int device, unsigned flags) {
  auto s = std::make_shared<Stream>();
  s->device = device;
  s->flags = flags;
  streams().push_back(s);
  return s;
}

cudaError_t resolve_stream(cudaStream_t handle, std::shared_ptr<Stream>* out, int device) {
  if (device < 0) device = current_device();
  if (handle == nullptr || handle == cudaStreamLegacy) {
    *out = legacy_stream(device);
    return cudaSuccess;
  }
  if (handle == cudaStreamPerThread) {
    thread_local std::map<int, std::shared_ptr<Stream>> per_thread;
    auto& slot = per_thread[device];
    if (!slot) slot = create_stream(device, cudaStreamDefault);
    *out = slot;
    return cudaSuccess;
  }
  for (const auto& s : streams()) {
    if (reinterpret_cast<cudaStream_t>(s.get()) == handle && !s->destroyed && !s->legacy) {
      *out = s;
      return cudaSuccess;
    }
  }
  return cudaErrorInvalidResourceHandle;
}

void enqueue(const std::shared_ptr<Stream>& stream, std::unique_ptr<Work> work) {
  work->sequence = ++g_sequence;
  if (stream->legacy) {
    for (const auto& other : streams()) {
      if (other->device == stream->device && !other->legacy && other->blocking() && other->enqueued > other->completed)
        work->after.push_back({other, other->enqueued});
    }
  } else if (stream->blocking()) {
    auto legacy = legacy_stream(stream->device);
    if (legacy->enqueued > legacy->completed) work->after.push_back({legacy, legacy->enqueued});
  }
  stream->queue.push_back(std::move(work));
  ++stream->enqueued;
}

bool progress(Stream& stream, std::uint64_t until) {
  while (stream.completed < until && !stream.queue.empty()) {
    Work& work = *stream.queue.front();
    if (!work.cancelled) {
      for (const Dependency& d : work.after) {
        if (d.stream->completed < d.ticket && !progress(*d.stream, d.ticket)) return false;
      }
      if (!work.race_checked) {
        work.race_checked = true;
        if (check_races(stream, work)) stream.error = cudaErrorIllegalState;
      }
      if (work.step() == Step::Pending) return false;
    }
    stream.queue.pop_front();
    ++stream.completed;
  }
  drop_drained_streams();
  return stream.completed >= until || stream.queue.empty();
}

cudaError_t wait(const std::shared_ptr<Stream>& stream, std::uint64_t until, const char* what) {
  const auto start = std::chrono::steady_clock::now();
  for (int polls = 0;; ++polls) {
    {
      std::lock_guard<std::recursive_mutex> hold(big_lock());
      if (progress(*stream, until)) {
        const cudaError_t error = stream->error;
        stream->error = cudaSuccess;
        return error;
      }
      const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (config().hang_seconds > 0 && waited > config().hang_seconds) {
        diagnose(std::string(what) + " waited " + std::to_string(static_cast<int>(waited)) + " s on " + stream->name() +
                 " (MPIDIST_EMU_HANG_SECONDS); a peer never joined? Pending work:" + pending_summary());
        std::abort();
      }
    }
    // Spin briefly for latency, then back off so oversubscribed ranks get the cores.
    if (polls > 100) std::this_thread::sleep_for(std::chrono::microseconds(polls > 2000 ? 500 : 20));
  }
}

cudaError_t wait_all(int device, const char* what) {
  cudaError_t first = cudaSuccess;
  std::vector<std::shared_ptr<Stream>> targets;
  {
    std::lock_guard<std::recursive_mutex> hold(big_lock());
    for (const auto& s : streams()) {
      if (device < 0 || s->device == device) targets.push_back(s);
    }
  }
  for (const auto& s : targets) {
    const cudaError_t error = wait(s, UINT64_MAX, what);
    if (first == cudaSuccess) first = error;
  }
  return first;
}

std::vector<std::shared_ptr<Stream>> all_streams() { return streams(); }

const Work* conflicting_nonblocking_work(const Access& access, const Stream** where) {
  for (const auto& s : streams()) {
    if (s->blocking()) continue;
    for (const auto& w : s->queue) {
      if (w->cancelled) continue;
      for (const Access& a : w->accesses) {
        if (overlaps(a, access)) {
          *where = s.get();
          return w.get();
        }
      }
    }
  }
  return nullptr;
}

}  // namespace mpidist_emu

extern "C" int mpidist_emu_pending_work() {
  std::lock_guard<std::recursive_mutex> hold(mpidist_emu::big_lock());
  int count = 0;
  for (const auto& s : mpidist_emu::all_streams()) {
    for (const auto& w : s->queue) count += w->cancelled ? 0 : 1;
  }
  return count;
}
