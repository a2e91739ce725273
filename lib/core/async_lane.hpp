// A communicator's lane of non-blocking work: a queue and the one thread that empties it in issue
// order, so that queued collectives progress while the caller computes or sleeps, without calling
// into mpidist again. The lane knows nothing of collectives: a job is a function, and whoever
// queues it decides that it may run off the caller's thread (no MPI call at a thread level below
// Multiple). Internal.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "mpidist/work.hpp"

namespace mpidist::detail {

/// The outcome of one queued job: written once by the lane's thread, read by the Work.
struct LaneJob {
  std::function<void()> run;
  std::atomic<bool> done{false};
  std::exception_ptr error;  // written before `done` (release), read after it (acquire)
};

class AsyncLane {
 public:
  AsyncLane() = default;
  ~AsyncLane();  // drains, then joins the thread
  AsyncLane(const AsyncLane&) = delete;
  AsyncLane& operator=(const AsyncLane&) = delete;

  /// Queues `run` behind every job queued before it; starts the thread at the first job.
  std::shared_ptr<LaneJob> push(std::function<void()> run);
  /// Returns once every queued job has run. A no-op inside a job (on the thread that runs it).
  void drain() noexcept;
  /// True while no job is queued or running (cheap: one atomic load).
  bool idle() const noexcept { return pending_.load(std::memory_order_acquire) == 0; }
  /// Blocks until `job` has run. When it is next in line and nothing runs, the caller runs it
  /// itself (a small collective waited for at once pays no hand-over between threads); else it
  /// spins briefly, then sleeps on the lane's condition.
  void await(const LaneJob& job) noexcept;
  /// Stops the thread after draining. Idempotent; push() afterwards restarts it.
  void stop() noexcept;

  /// Jobs run so far (tests check that a step's jobs all ran on the lane).
  std::uint64_t completed() const noexcept { return completed_.load(std::memory_order_acquire); }
  /// Whether the thread runs (tests: no thread per step, one per communicator).
  bool running() const noexcept { return thread_.joinable(); }

 private:
  void loop();
  // Runs `job` (taken off the queue by this thread) and publishes its end.
  void run(const std::shared_ptr<LaneJob>& job);

  std::mutex mutex_;
  std::condition_variable wake_;      // the thread: a job arrived, or stop
  std::condition_variable finished_;  // waiters: a job finished
  std::deque<std::shared_ptr<LaneJob>> queue_;
  std::atomic<std::uint64_t> pending_{0};  // queued + running
  std::atomic<std::uint64_t> completed_{0};
  bool stopping_ = false;
  bool running_ = false;  // a job runs (on the lane's thread, or on a waiter that took it)
  std::thread thread_;
  std::atomic<std::thread::id> thread_id_{};
  std::atomic<std::thread::id> runner_{};  // the thread running a job now (the lane's, or a waiter)
};

/// A Work whose operation is a job on a lane. `lane` outlives the Work's waits: the group that owns
/// it drains the lane before it goes.
class LaneWork final : public WorkState {
 public:
  LaneWork(std::string communicator, std::string operation, std::shared_ptr<AsyncLane> lane,
           std::shared_ptr<LaneJob> job)
      : WorkState(std::move(communicator), std::move(operation)), lane_(std::move(lane)), job_(std::move(job)) {}
  bool poll() override;
  void complete() override;

 private:
  std::shared_ptr<AsyncLane> lane_;
  std::shared_ptr<LaneJob> job_;
};

/// A Work that is already over: done, or failed with `error` (rethrown by every wait()).
class DoneWork final : public WorkState {
 public:
  DoneWork(std::string communicator, std::string operation, std::exception_ptr error)
      : WorkState(std::move(communicator), std::move(operation)), error_(std::move(error)) {}
  bool poll() override {
    if (error_) std::rethrow_exception(error_);
    return true;
  }
  void complete() override { poll(); }

 private:
  std::exception_ptr error_;
};

/// A Work for an operation that ended at issue: a default (done) Work on success, else one that
/// rethrows `error`.
Work finished_work(const std::string& communicator, const char* operation, std::exception_ptr error);

}  // namespace mpidist::detail
