// The async lane (lib/core/async_lane.hpp) alone, without MPI, built with ThreadSanitizer: the one
// new piece of concurrency behind the non-blocking collectives. Jobs run in push order whether the
// lane's thread or a waiter runs them, their exceptions reach the waiter, drain() waits for all,
// and stop() leaves nothing running. (The MPI suites cannot run under TSan: Open MPI's own
// uninstrumented threads and its shared-memory transport are reported as races; see README.)
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "core/async_lane.hpp"

namespace {

using mpidist::detail::AsyncLane;
using mpidist::detail::LaneJob;

TEST(AsyncLane, JobsRunInPushOrderWhoeverRunsThem) {
  AsyncLane lane;
  std::vector<int> ran;  // written by whichever thread runs a job, one at a time
  std::vector<std::shared_ptr<LaneJob>> jobs;
  for (int i = 0; i < 2000; ++i) {
    jobs.push_back(lane.push([&ran, i] { ran.push_back(i); }));
    if (i % 7 == 0) lane.await(*jobs.back());  // often the waiter runs it itself
    if (i % 100 == 99) std::this_thread::sleep_for(std::chrono::microseconds(200));  // the lane's thread runs some
  }
  lane.drain();
  EXPECT_TRUE(lane.idle());
  ASSERT_EQ(ran.size(), 2000u);
  for (int i = 0; i < 2000; ++i) ASSERT_EQ(ran[static_cast<std::size_t>(i)], i);
  for (const auto& job : jobs) EXPECT_TRUE(job->done.load());
  EXPECT_EQ(lane.completed(), 2000u);
}

TEST(AsyncLane, ProgressesWithoutTheCaller) {
  AsyncLane lane;
  std::atomic<int> count{0};
  for (int i = 0; i < 10; ++i) lane.push([&] { count.fetch_add(1); });
  for (int i = 0; i < 2000 && count.load() < 10; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(count.load(), 10);
  EXPECT_TRUE(lane.running());
}

TEST(AsyncLane, AnExceptionReachesTheWaiterAndTheLaneGoesOn) {
  AsyncLane lane;
  auto bad = lane.push([] { throw std::runtime_error("step failed"); });
  int after = 0;
  auto good = lane.push([&] { after = 1; });
  lane.await(*good);
  lane.await(*bad);
  ASSERT_TRUE(bad->error);
  EXPECT_THROW(std::rethrow_exception(bad->error), std::runtime_error);
  EXPECT_FALSE(good->error);
  EXPECT_EQ(after, 1);
}

TEST(AsyncLane, DrainOnTheLanesOwnThreadDoesNotDeadlockAndStopRestarts) {
  AsyncLane lane;
  auto job = lane.push([&] { lane.drain(); });
  lane.await(*job);
  lane.stop();
  EXPECT_FALSE(lane.running());
  int v = 0;
  auto again = lane.push([&] { v = 5; });  // a new thread
  lane.await(*again);
  EXPECT_EQ(v, 5);
  lane.stop();
  lane.stop();  // idempotent
}

TEST(AsyncLane, ManyProducersEachWaitingForTheirOwnJobs) {
  // The lane's users push from one thread; waiters may be several (wait_all on another thread).
  AsyncLane lane;
  std::vector<std::shared_ptr<LaneJob>> jobs;
  std::atomic<long> sum{0};
  for (int i = 1; i <= 500; ++i) jobs.push_back(lane.push([&sum, i] { sum.fetch_add(i); }));
  std::thread other([&] {
    for (std::size_t i = 1; i < jobs.size(); i += 2) lane.await(*jobs[i]);
  });
  for (std::size_t i = 0; i < jobs.size(); i += 2) lane.await(*jobs[i]);
  other.join();
  lane.drain();
  EXPECT_EQ(sum.load(), 500L * 501 / 2);
}

}  // namespace
