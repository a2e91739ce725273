// The lane's thread and the waits on its jobs.
#include "core/async_lane.hpp"

#include <chrono>

namespace mpidist::detail {
namespace {

// How long a waiter (and the idle thread) polls before it sleeps: long enough that a small
// collective's wait() never pays a futex wake-up, short enough that a rank computing beside an
// idle lane loses no measurable time to it.
constexpr auto spin_for = std::chrono::microseconds(50);

template <class Ready>
bool spin_until(Ready ready) {
  const auto end = std::chrono::steady_clock::now() + spin_for;
  for (unsigned polls = 0;; ++polls) {
    if (ready()) return true;
    if (polls % 16 == 15 && std::chrono::steady_clock::now() >= end) return false;
    std::this_thread::yield();  // oversubscribed ranks must let the others run
  }
}

}  // namespace

AsyncLane::~AsyncLane() { stop(); }

std::shared_ptr<LaneJob> AsyncLane::push(std::function<void()> run) {
  auto job = std::make_shared<LaneJob>();
  job->run = std::move(run);
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(job);
    pending_.fetch_add(1, std::memory_order_acq_rel);
    if (!thread_.joinable()) {
      stopping_ = false;
      thread_ = std::thread([this] { loop(); });
    }
  }
  wake_.notify_one();
  return job;
}

void AsyncLane::loop() {
  thread_id_.store(std::this_thread::get_id(), std::memory_order_release);
  for (;;) {
    std::shared_ptr<LaneJob> job;
    {
      std::unique_lock lock(mutex_);
      if (queue_.empty()) {
        // Polled a little first: the next collective of a step usually follows within microseconds.
        lock.unlock();
        spin_until([&] { return pending_.load(std::memory_order_acquire) != 0; });
        lock.lock();
      }
      wake_.wait(lock, [&] { return stopping_ || (!queue_.empty() && !running_); });
      if (queue_.empty()) return;  // stopping, and nothing left
      job = std::move(queue_.front());
      queue_.pop_front();
      running_ = true;
    }
    run(job);
  }
}

void AsyncLane::run(const std::shared_ptr<LaneJob>& job) {
  runner_.store(std::this_thread::get_id(), std::memory_order_release);
  try {
    job->run();
  } catch (...) {
    job->error = std::current_exception();
  }
  job->run = nullptr;  // the closure's captures (the buffers' list) go now
  {
    std::lock_guard lock(mutex_);
    runner_.store(std::thread::id(), std::memory_order_release);
    running_ = false;
    job->done.store(true, std::memory_order_release);
    completed_.fetch_add(1, std::memory_order_acq_rel);
    pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
  finished_.notify_all();
  wake_.notify_one();  // a job left behind while a waiter ran this one
}

void AsyncLane::await(const LaneJob& job) noexcept {
  if (job.done.load(std::memory_order_acquire)) return;
  std::shared_ptr<LaneJob> mine;
  {
    std::lock_guard lock(mutex_);
    if (!running_ && !queue_.empty() && queue_.front().get() == &job) {
      mine = std::move(queue_.front());
      queue_.pop_front();
      running_ = true;
    }
  }
  if (mine) return run(mine);
  if (spin_until([&] { return job.done.load(std::memory_order_acquire); })) return;
  std::unique_lock lock(mutex_);
  finished_.wait(lock, [&] { return job.done.load(std::memory_order_acquire); });
}

void AsyncLane::drain() noexcept {
  if (idle() || runner_.load(std::memory_order_acquire) == std::this_thread::get_id()) return;
  for (;;) {
    // Queued steps that nothing runs yet are run here, in order, rather than handed over.
    std::shared_ptr<LaneJob> next;
    {
      std::lock_guard lock(mutex_);
      if (idle()) return;
      if (!running_ && !queue_.empty()) {
        next = std::move(queue_.front());
        queue_.pop_front();
        running_ = true;
      }
    }
    if (next) {
      run(next);
      continue;
    }
    if (spin_until([&] { return idle(); })) return;
    std::unique_lock lock(mutex_);
    finished_.wait(lock, [&] { return idle() || (!running_ && !queue_.empty()); });
  }
}

void AsyncLane::stop() noexcept {
  if (thread_id_.load(std::memory_order_acquire) == std::this_thread::get_id()) return;
  {
    std::lock_guard lock(mutex_);
    if (!thread_.joinable()) return;
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();  // the thread empties the queue before it sees stopping_
  thread_ = std::thread();
  thread_id_.store(std::thread::id(), std::memory_order_release);
}

}  // namespace mpidist::detail
