// The non-blocking tensor collectives (async_collectives.hpp): results equal the blocking calls'
// for every collective, type and reduction, on host memory or (MPIDIST_TEST_DEVICE=1) the device
// emulation; order on one communicator and independence across two; progress while the caller
// sleeps; calls that return before their peers issue theirs; device Works waited for with and
// without a stream; Errors rethrown by wait() on every rank; dropped Works; MainProcessContext; the
// list forms (host buffers copied out when waited) and gather/scatter.
#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "mpi_test.hpp"
#include "mpidist/mpidist.hpp"
#include "tensor_buffers.hpp"

namespace {

using namespace mpidist_test;
using mpidist::BufferView;
using mpidist::ReduceOp;
using mpidist::Work;
using Async = MpiTest;

template <class T>
std::vector<T> pattern(std::size_t n, int salt) {
  std::vector<T> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = static_cast<T>((i * 5 + static_cast<std::size_t>(mpidist::rank() * 3 + salt)) % 7 + 1);
  return v;
}

bool validating() {
  const char* v = std::getenv("MPIDIST_VALIDATE");
  return v != nullptr && std::string(v) == "1";
}

bool env_is(const char* name, const char* value) {
  const char* v = std::getenv(name);
  return v != nullptr && std::string(v) == value;
}

// Whether the ranks check each call together at issue, so that no rank's issue returns before
// every rank issued: MPIDIST_VALIDATE=1, and by default on device memory (where a GPU is seen).
bool agreed_at_issue() { return validating() || (on_device() && !env_is("MPIDIST_VALIDATE", "0")); }

// Whether this run's host steps that need MPI run on the lanes' threads (ThreadLevel::Multiple).
bool mpi_steps_in_background() { return env_is("MPIDIST_TEST_THREAD_LEVEL", "multiple") && mpidist::world_size() > 1; }

// Rank 0 issues first; the others issue only once it says so (or after 10 s, so that a call that
// waits for its peers at issue fails the test instead of hanging it). `before_go` thus sees rank
// 0's Work while no peer has issued: work that completed at issue would have waited for them.
Work held_back(const std::function<Work()>& issue, const std::function<void(Work&)>& before_go) {
  constexpr int tag = 2121;
  int word = 0;
  if (mpidist::rank() != 0) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    int arrived = 0;
    while (arrived == 0 && std::chrono::steady_clock::now() < end) {
      MPI_Iprobe(0, tag, MPI_COMM_WORLD, &arrived, MPI_STATUS_IGNORE);
      if (arrived == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    Work work = issue();
    // The word is here already, or on its way; meanwhile test() drives the work (the device
    // emulation progresses only when polled), which a rank 0 wrongly waiting for it needs.
    MPI_Request request = MPI_REQUEST_NULL;
    MPI_Irecv(&word, 1, MPI_INT, 0, tag, MPI_COMM_WORLD, &request);
    for (int received = 0; received == 0;) {
      MPI_Test(&request, &received, MPI_STATUS_IGNORE);
      if (received == 0) work.test();
    }
    return work;
  }
  Work work = issue();
  before_go(work);
  for (int r = 1; r < mpidist::world_size(); ++r) MPI_Send(&word, 1, MPI_INT, r, tag, MPI_COMM_WORLD);
  return work;
}

// Issued on rank 0 while the peers hold back, `issue`'s Work is not done yet.
Work not_done_before_the_peers(const std::function<Work()>& issue) {
  return held_back(issue, [](Work& w) { EXPECT_FALSE(w.test()) << "the call completed at issue"; });
}

// Every collective of one type, async against blocking on equal inputs. Small values: products
// and sums are exact in any order.
template <class T>
void async_equals_blocking(const std::vector<ReduceOp>& ops) {
  const auto size = static_cast<std::size_t>(mpidist::world_size());
  for (const std::size_t n : {std::size_t{1}, std::size_t{37}, std::size_t{5000}}) {
    for (const ReduceOp op : ops) {
      SCOPED_TRACE("n " + std::to_string(n) + " op " + std::string(mpidist::to_string(op)));
      {  // all_reduce in place
        TestBuffer<T> a(pattern<T>(n, 1)), ref(pattern<T>(n, 1));
        Work w = mpidist::all_reduce_async(a.view(), op);
        mpidist::all_reduce(ref.view(), op);
        w.wait();
        EXPECT_EQ(a.read(), ref.read());
      }
      {  // out of place
        TestBuffer<T> in(pattern<T>(n, 2)), out{std::vector<T>(n)}, ref{std::vector<T>(n)};
        Work w = mpidist::all_reduce_async(in.view(), out.view(), op);
        w.wait();
        mpidist::all_reduce(in.view(), ref.view(), op);
        EXPECT_EQ(out.read(), ref.read());
      }
      {  // reduce_scatter
        TestBuffer<T> in(pattern<T>(n * size, 3)), out{std::vector<T>(n)}, ref{std::vector<T>(n)};
        Work w = mpidist::reduce_scatter_async(in.view(), out.view(), op);
        w.wait();
        mpidist::reduce_scatter(in.view(), ref.view(), op);
        EXPECT_EQ(out.read(), ref.read());
      }
      {  // reduce at the last rank
        const int root = mpidist::world_size() - 1;
        TestBuffer<T> in(pattern<T>(n, 4)), out{std::vector<T>(n)}, ref{std::vector<T>(n)};
        mpidist::reduce_async(in.view(), out.view(), op, root).wait();
        mpidist::reduce(in.view(), ref.view(), op, root);
        EXPECT_EQ(out.read(), ref.read());
        TestBuffer<T> in_place(pattern<T>(n, 4));  // in place: root's becomes ref, the others' stays in
        mpidist::reduce_async(in_place.view(), op, root).wait();
        EXPECT_EQ(in_place.read(), mpidist::rank() == root ? ref.read() : in.read());
      }
    }
    {  // broadcast from every root
      for (int root = 0; root < mpidist::world_size(); ++root) {
        TestBuffer<T> a(pattern<T>(n, 5 + root)), ref(pattern<T>(n, 5 + root));
        Work w = mpidist::broadcast_async(a.view(), root);
        mpidist::broadcast(ref.view(), root);
        w.wait();
        EXPECT_EQ(a.read(), ref.read());
      }
    }
    {  // all_gather
      TestBuffer<T> in(pattern<T>(n, 6)), out{std::vector<T>(n * size)}, ref{std::vector<T>(n * size)};
      Work w = mpidist::all_gather_async(in.view(), out.view());
      w.wait();
      mpidist::all_gather(in.view(), ref.view());
      EXPECT_EQ(out.read(), ref.read());
    }
  }
}

TEST_F(Async, EqualsBlockingFloat) {
  async_equals_blocking<float>({ReduceOp::Sum, ReduceOp::Product, ReduceOp::Min, ReduceOp::Max, ReduceOp::Avg});
}
TEST_F(Async, EqualsBlockingDouble) { async_equals_blocking<double>({ReduceOp::Sum, ReduceOp::Max, ReduceOp::Avg}); }
TEST_F(Async, EqualsBlockingInt32) {
  async_equals_blocking<std::int32_t>({ReduceOp::Sum, ReduceOp::Product, ReduceOp::Min, ReduceOp::Avg});
}
TEST_F(Async, EqualsBlockingInt64) { async_equals_blocking<std::int64_t>({ReduceOp::Sum, ReduceOp::Max}); }
TEST_F(Async, EqualsBlockingInt8) { async_equals_blocking<std::int8_t>({ReduceOp::Sum, ReduceOp::Min}); }

TEST_F(Async, AverageAndManyEqualBlocking) {
  TestBuffer<float> a(pattern<float>(1000, 1)), a_ref(pattern<float>(1000, 1));
  mpidist::average_async(a.view()).wait();
  mpidist::average(a_ref.view());
  EXPECT_EQ(a.read(), a_ref.read());
  for (const ReduceOp op : {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Avg}) {
    TestBuffer<float> x(pattern<float>(300, 1)), x_ref(pattern<float>(300, 1));
    TestBuffer<std::int32_t> y(pattern<std::int32_t>(0, 2)), y_ref(pattern<std::int32_t>(0, 2));
    TestBuffer<double> z(pattern<double>(70000, 3)), z_ref(pattern<double>(70000, 3));
    std::vector<BufferView> views{x.view(), y.view(), z.view()};
    Work w = mpidist::all_reduce_many_async(views, op);
    views.clear();  // the call copied the list
    w.wait();
    const std::vector<BufferView> refs{x_ref.view(), y_ref.view(), z_ref.view()};
    mpidist::all_reduce_many(refs, op);
    EXPECT_EQ(x.read(), x_ref.read());
    EXPECT_EQ(z.read(), z_ref.read());
  }
}

TEST_F(Async, UnevenCollectivesAndBarrier) {
  if (on_device()) GTEST_SKIP() << "the uneven collectives are host memory only";
  const int size = mpidist::world_size();
  const int me = mpidist::rank();
  std::vector<float> in(static_cast<std::size_t>(size) * 3), out(in.size()), ref(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(me * 100 + static_cast<int>(i));
  mpidist::all_to_all_async(std::span(in), std::span(out)).wait();
  mpidist::all_to_all(std::span(in), std::span(ref));
  EXPECT_EQ(out, ref);
  // Uneven: rank r sends r+1 elements to everyone.
  std::vector<std::size_t> send(static_cast<std::size_t>(size), static_cast<std::size_t>(me + 1)), recv;
  for (int r = 0; r < size; ++r) recv.push_back(static_cast<std::size_t>(r + 1));
  std::vector<float> vin(static_cast<std::size_t>((me + 1) * size), static_cast<float>(me));
  std::vector<float> vout(static_cast<std::size_t>(size * (size + 1) / 2)), vref(vout.size());
  mpidist::all_to_all_async(std::span(vin), send, std::span(vout), recv).wait();
  mpidist::all_to_all(std::span(vin), send, std::span(vref), recv);
  EXPECT_EQ(vout, vref);
  std::vector<float> mine(static_cast<std::size_t>(me + 1), static_cast<float>(me)), all(vout.size()), all_ref(vout.size());
  mpidist::all_gather_v_async(std::span(mine), std::span(all), recv).wait();
  mpidist::all_gather_v(std::span(mine), std::span(all_ref), recv);
  EXPECT_EQ(all, all_ref);
  Work b = mpidist::barrier_async();
  b.wait();
  EXPECT_TRUE(b.test());
  mpidist::barrier_async(mpidist::world()).wait();
}

// Where the MPI steps run on the lanes' threads (ThreadLevel::Multiple), all_to_all (both forms)
// and all_gather_v return before they complete, as all_reduce does there; results equal the
// blocking calls'. (Below Multiple they run at issue: UnevenCollectivesAndBarrier.)
TEST_F(Async, UnevenCollectivesReturnBeforeThePeersIssue) {
  if (on_device() || agreed_at_issue() || !mpi_steps_in_background())
    GTEST_SKIP() << "host memory at ThreadLevel::Multiple, 2+ ranks, without MPIDIST_VALIDATE (which agrees at issue)";
  const auto size = static_cast<std::size_t>(mpidist::world_size());
  const int me = mpidist::rank();
  std::vector<double> warm(4, 1.0);
  mpidist::all_reduce(std::span(warm));  // the path's one-time set-up (collective) before the held-back calls
  {
    std::vector<double> v(1000, 1.0);
    not_done_before_the_peers([&] { return mpidist::all_reduce_async(std::span(v)); }).wait();
    EXPECT_EQ(v[999], static_cast<double>(size));
  }
  std::vector<float> in(size * 5), out(in.size()), ref(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(me * 1000 + static_cast<int>(i));
  not_done_before_the_peers([&] { return mpidist::all_to_all_async(std::span(in), std::span(out)); }).wait();
  mpidist::all_to_all(std::span(in), std::span(ref));
  EXPECT_EQ(out, ref);
  // Uneven: rank r sends r+2 elements to everyone.
  std::vector<std::size_t> send(size, static_cast<std::size_t>(me + 2)), recv;
  for (std::size_t r = 0; r < size; ++r) recv.push_back(r + 2);
  std::vector<std::int32_t> vin(static_cast<std::size_t>(me + 2) * size), vout(size * (size + 3) / 2), vref(vout.size());
  for (std::size_t i = 0; i < vin.size(); ++i) vin[i] = me * 100 + static_cast<std::int32_t>(i);
  const auto comm = mpidist::world();
  not_done_before_the_peers([&] {
    return mpidist::all_to_all_async(comm, std::span(vin), send, std::span(vout), recv);
  }).wait();
  mpidist::all_to_all(comm, std::span(vin), send, std::span(vref), recv);
  EXPECT_EQ(vout, vref);
  std::vector<std::int32_t> mine(static_cast<std::size_t>(me + 2), me), all(vout.size()), all_ref(vout.size());
  not_done_before_the_peers([&] { return mpidist::all_gather_v_async(comm, std::span(mine), std::span(all), recv); })
      .wait();
  mpidist::all_gather_v(comm, std::span(mine), std::span(all_ref), recv);
  EXPECT_EQ(all, all_ref);
}

// On one node, all_to_all with equal blocks and all_gather_v stay in the node's segment (every rank
// knows the plan): they return before the peers issue at every thread level, as all_reduce does.
TEST_F(Async, UnevenCollectivesInTheSegmentReturnBeforeThePeersIssue) {
  const char* path = std::getenv("MPIDIST_HOST_ALLREDUCE");
  if (on_device() || agreed_at_issue() || mpidist::world_size() < 2 || mpidist::num_nodes() > 1 ||
      (path != nullptr && std::string(path) == "mpi"))
    GTEST_SKIP() << "host memory on one node, 2+ ranks, the segment, without MPIDIST_VALIDATE (which agrees at issue)";
  const auto size = static_cast<std::size_t>(mpidist::world_size());
  const int me = mpidist::rank();
  std::vector<float> in(size * 5), out(in.size()), ref(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(me * 1000 + static_cast<int>(i));
  mpidist::all_to_all(std::span(in), std::span(ref));  // the segment is made (collective) before the held-back calls
  not_done_before_the_peers([&] { return mpidist::all_to_all_async(std::span(in), std::span(out)); }).wait();
  EXPECT_EQ(out, ref);
  std::vector<std::size_t> counts;
  for (std::size_t r = 0; r < size; ++r) counts.push_back(r + 2);
  std::vector<std::int32_t> mine(static_cast<std::size_t>(me + 2), me), all(size * (size + 3) / 2), all_ref(all.size());
  not_done_before_the_peers([&] { return mpidist::all_gather_v_async(std::span(mine), std::span(all), counts); }).wait();
  mpidist::all_gather_v(std::span(mine), std::span(all_ref), counts);
  EXPECT_EQ(all, all_ref);
}

// The uneven calls queued behind one another and behind an all_reduce on one communicator run in
// issue order: each reads what the one before it wrote.
TEST_F(Async, UnevenCollectivesKeepTheIssueOrder) {
  if (on_device()) GTEST_SKIP() << "the uneven collectives are host memory only";
  const auto size = static_cast<std::size_t>(mpidist::world_size());
  std::vector<double> a(size * 3, 1.0), b(a.size()), c(a.size() * size);
  std::vector<std::size_t> counts(size, a.size());
  std::vector<Work> works;
  works.push_back(mpidist::all_reduce_async(std::span(a)));                      // a = size
  works.push_back(mpidist::all_to_all_async(std::span(a), std::span(b)));        // b = size
  works.push_back(mpidist::all_gather_v_async(std::span(b), std::span(c), counts));  // c = size
  mpidist::wait_all(works);
  for (const double v : c) ASSERT_EQ(v, static_cast<double>(size));
  std::vector<double> ones(a.size(), 1.0), gathered(c.size());
  mpidist::all_gather_v(std::span(ones), std::span(gathered), counts);
  for (const double v : gathered) ASSERT_EQ(v, 1.0);
}

// Many outstanding Works on two communicators, each one's calls depending on the one before (the
// order rule), with blocking calls in between; results checked against a closed form.
TEST_F(Async, ManyOutstandingOnTwoCommunicatorsWithBlockingCallsBetween) {
  const auto world = mpidist::world();
  const auto other = world.split(0, world.rank());  // the same ranks, another communicator
  const int size = world.size();
  constexpr int rounds = 24;
  std::vector<std::unique_ptr<TestBuffer<double>>> a, b;
  std::vector<Work> works;
  for (int i = 0; i < rounds; ++i) {
    a.push_back(std::make_unique<TestBuffer<double>>(std::vector<double>(100 + i, 1.0)));
    b.push_back(std::make_unique<TestBuffer<double>>(std::vector<double>(3000, static_cast<double>(i))));
  }
  TestBuffer<double> chain(std::vector<double>(64, 1.0));
  for (int i = 0; i < rounds; ++i) {
    works.push_back(mpidist::all_reduce_async(world, a[i]->view()));
    works.push_back(mpidist::all_reduce_async(other, b[i]->view(), ReduceOp::Max));
    // Each all-reduce of `chain` reads the result of the one before it: size^(k) after k of them.
    if (i < 4) works.push_back(mpidist::all_reduce_async(world, chain.view()));
    if (i % 8 == 7) {
      std::vector<float> blocking(10, 1.0f);
      mpidist::all_reduce(other, std::span(blocking));  // waits for other's queued work first
      EXPECT_EQ(blocking[0], static_cast<float>(size));
    }
  }
  mpidist::wait_all(works);
  for (int i = 0; i < rounds; ++i) {
    for (const double v : a[i]->read()) ASSERT_EQ(v, static_cast<double>(size));
    for (const double v : b[i]->read()) ASSERT_EQ(v, static_cast<double>(i));
  }
  for (const double v : chain.read()) ASSERT_EQ(v, static_cast<double>(size * size * size * size));
  // A blocking call after pending async ones on the same buffer sees their result.
  TestBuffer<float> x(std::vector<float>(10, 1.0f));
  Work w = mpidist::all_reduce_async(x.view());
  mpidist::all_reduce(x.view());
  w.wait();
  for (const float v : x.read()) ASSERT_EQ(v, static_cast<float>(size * size));
}

// The tensors of a list as a test holds them: one buffer cut into views (`adjacent`), or a buffer
// each (host memory, or the device emulation's).
struct TestList {
  std::vector<std::unique_ptr<TestBuffer<float>>> held;
  std::vector<BufferView> views;
  std::vector<std::size_t> counts;
  bool adjacent;

  TestList(const std::vector<std::vector<float>>& values, bool adjacent_) : adjacent(adjacent_) {
    for (const auto& v : values) counts.push_back(v.size());
    if (adjacent) {
      std::vector<float> all;
      for (const auto& v : values) all.insert(all.end(), v.begin(), v.end());
      held.push_back(std::make_unique<TestBuffer<float>>(all));
      for (std::size_t r = 0, at = 0; r < values.size(); at += counts[r], ++r)
        views.push_back(BufferView(held[0]->data() + at, counts[r]));
    } else {
      for (const auto& v : values) {
        held.push_back(std::make_unique<TestBuffer<float>>(v));
        views.push_back(held.back()->view());
      }
    }
  }
  std::vector<std::vector<float>> read() {
    std::vector<std::vector<float>> out;
    if (!adjacent) {
      for (auto& buffer : held) out.push_back(buffer->read());
      return out;
    }
    const auto all = held[0]->read();
    for (std::size_t r = 0, at = 0; r < counts.size(); at += counts[r], ++r)
      out.emplace_back(all.begin() + static_cast<std::ptrdiff_t>(at), all.begin() + static_cast<std::ptrdiff_t>(at + counts[r]));
    return out;
  }
};

std::vector<float> drawn(std::size_t n, int salt) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>((i * 3 + static_cast<std::size_t>(mpidist::rank() * 7 + salt)) % 11 + 1);
  return v;
}

// The list forms (torch's async_op=True on tensor lists), all five outstanding at once, then waited
// for in the reverse order: the results equal the blocking forms' on the same lists, whether the
// lists lie one after the other (the direct path) or not (host buffers, or a call per rank on device
// memory). The vectors of views are temporaries: the Work keeps what it needs.
TEST_F(Async, ListFormsEqualTheBlockingForms) {
  const int size = mpidist::world_size(), me = mpidist::rank(), root = size - 1;
  const auto N = static_cast<std::size_t>(size);
  for (const std::size_t count : {std::size_t{0}, std::size_t{5}, std::size_t{3000}}) {
    for (const bool adjacent : {false, true}) {
      SCOPED_TRACE("count " + std::to_string(count) + (adjacent ? ", adjacent lists" : ", separate tensors"));
      const std::vector<std::vector<float>> zeros(N, std::vector<float>(count));
      // all_gather into a list; reduce_scatter from one (max); all_to_all between lists whose sizes
      // differ by sender and receiver; gather to and scatter from the last rank.
      TestBuffer<float> in(drawn(count, 1)), reduced{std::vector<float>(count)}, scattered{std::vector<float>(count)};
      TestList gathered(zeros, adjacent);
      std::vector<std::vector<float>> parts, sent, received, rooted;
      for (int r = 0; r < size; ++r) {
        parts.push_back(drawn(count, 10 + r));
        sent.push_back(drawn(count + static_cast<std::size_t>((me + r) % 2) * 3, 20 + r));
        received.emplace_back(count + static_cast<std::size_t>((r + me) % 2) * 3);
        if (me == root) rooted.push_back(drawn(count, 30 + r));
      }
      TestList ins(parts, adjacent), send(sent, adjacent), recv(received, adjacent), root_ins(rooted, adjacent),
          root_outs(me == root ? zeros : std::vector<std::vector<float>>{}, adjacent);
      std::vector<Work> works;
      works.push_back(mpidist::all_gather_async(in.view(), std::vector<BufferView>(gathered.views)));
      works.push_back(mpidist::reduce_scatter_async(std::vector<BufferView>(ins.views), reduced.view(), ReduceOp::Max));
      works.push_back(mpidist::all_to_all_async(std::vector<BufferView>(send.views), std::vector<BufferView>(recv.views)));
      works.push_back(mpidist::gather_async(mpidist::world(), in.view(), std::vector<BufferView>(root_outs.views), root));
      works.push_back(mpidist::scatter_async(mpidist::world(), std::vector<BufferView>(root_ins.views), scattered.view(), root));
      for (auto w = works.rbegin(); w != works.rend(); ++w) w->wait();

      TestBuffer<float> reduced_ref{std::vector<float>(count)}, scattered_ref{std::vector<float>(count)};
      TestList gathered_ref(zeros, adjacent), recv_ref(received, adjacent),
          root_outs_ref(me == root ? zeros : std::vector<std::vector<float>>{}, adjacent);
      mpidist::all_gather(in.view(), gathered_ref.views);
      mpidist::reduce_scatter(ins.views, reduced_ref.view(), ReduceOp::Max);
      mpidist::all_to_all(send.views, recv_ref.views);
      mpidist::gather(mpidist::world(), in.view(), root_outs_ref.views, root);
      mpidist::scatter(mpidist::world(), root_ins.views, scattered_ref.view(), root);
      EXPECT_EQ(gathered.read(), gathered_ref.read());
      EXPECT_EQ(reduced.read(), reduced_ref.read());
      EXPECT_EQ(recv.read(), recv_ref.read());
      EXPECT_EQ(root_outs.read(), root_outs_ref.read());
      EXPECT_EQ(scattered.read(), scattered_ref.read());
      if (count > 0) {  // and the values themselves: rank r's first element is (7r + salt) % 11 + 1
        const auto first = [](int r, int salt) { return static_cast<float>((r * 7 + salt) % 11 + 1); };
        const auto all = gathered.read();
        for (int r = 0; r < size; ++r) EXPECT_EQ(all[static_cast<std::size_t>(r)][0], first(r, 1));
        EXPECT_EQ(scattered.read()[0], first(root, 30 + me));
      }
    }
  }
}

// The contiguous gather and scatter (torch's gather/scatter with async_op=True), root not 0.
TEST_F(Async, GatherAndScatterEqualTheBlockingForms) {
  const int size = mpidist::world_size(), me = mpidist::rank(), root = size - 1;
  const auto N = static_cast<std::size_t>(size);
  for (const std::size_t count : {std::size_t{0}, std::size_t{7}, std::size_t{5000}}) {
    SCOPED_TRACE("count " + std::to_string(count));
    TestBuffer<float> in(drawn(count, 2)), all(std::vector<float>(me == root ? N * count : 0));
    TestBuffer<float> parts(me == root ? drawn(N * count, 3) : std::vector<float>{}), mine{std::vector<float>(count)};
    Work g = mpidist::gather_async(in.view(), all.view(), root);
    Work s = mpidist::scatter_async(mpidist::world(), parts.view(), mine.view(), root);
    s.wait();
    g.wait();
    TestBuffer<float> all_ref(std::vector<float>(me == root ? N * count : 0)), mine_ref{std::vector<float>(count)};
    mpidist::gather(in.view(), all_ref.view(), root);
    mpidist::scatter(parts.view(), mine_ref.view(), root);
    EXPECT_EQ(all.read(), all_ref.read());
    EXPECT_EQ(mine.read(), mine_ref.read());
  }
}

// A bad list is the Work's Error: on every rank where every rank's list is bad, and on every rank for
// root's bad list of gather and scatter (root sends its verdict). The communicator stays usable.
TEST_F(Async, ListFormsRethrowTheirErrorsOnEveryRank) {
  const int size = mpidist::world_size(), me = mpidist::rank(), root = size - 1;
  const auto N = static_cast<std::size_t>(size);
  std::vector<float> in(4, 1.0f);
  std::vector<std::vector<float>> too_many(N + 1, std::vector<float>(4));
  Work w = mpidist::all_gather_async(std::span<const float>(in), too_many);
  expect_error([&] { w.wait(); }, {"all_gather", "holds " + std::to_string(N + 1) + " tensors"});
  expect_error([&] { w.wait(); }, {"all_gather"});  // the same Error again
  EXPECT_TRUE(w.test());
  std::vector<std::vector<float>> short_ones(me == root ? N : 0, std::vector<float>(3));
  Work g = mpidist::gather_async(std::span<const float>(in), short_ones, root);
  expect_error([&] { g.wait(); }, {"gather", me == root ? "holds 3" : "root " + std::to_string(root) + "'s list"});
  Work s = mpidist::scatter_async(short_ones, std::span<float>(in), root);
  expect_error([&] { s.wait(); }, {"scatter", me == root ? "holds 3" : "root " + std::to_string(root) + "'s list"});
  Work bad_root = mpidist::gather_async(std::span<const float>(in), std::span<float>(), size);
  expect_error([&] { bad_root.wait(); }, {"gather", "root"});
  // Then right calls, in step on every rank.
  std::vector<std::vector<float>> outs(N, std::vector<float>(4));
  mpidist::all_gather_async(std::span<const float>(in), outs).wait();
  for (const auto& out : outs) EXPECT_EQ(out, in);
  std::vector<float> sum(4);
  mpidist::reduce_scatter_async(outs, std::span(sum)).wait();
  EXPECT_EQ(sum[3], static_cast<float>(size));
}

// Host lists of all_gather and reduce_scatter need no agreement at issue: where MPI steps run on the
// lanes' threads, the call returns before the peers issue theirs, and wait() copies the results.
TEST_F(Async, ListFormsReturnBeforeThePeersIssue) {
  if (on_device() || agreed_at_issue() || !mpi_steps_in_background())
    GTEST_SKIP() << "host memory at ThreadLevel::Multiple, 2+ ranks, without MPIDIST_VALIDATE (which agrees at issue)";
  const auto N = static_cast<std::size_t>(mpidist::world_size());
  std::vector<double> warm(4, 1.0);
  mpidist::all_reduce(std::span(warm));  // the path's one-time set-up (collective) before the held-back calls
  const std::vector<float> in = drawn(1000, 4);
  std::vector<std::vector<float>> outs(N, std::vector<float>(1000));
  not_done_before_the_peers([&] { return mpidist::all_gather_async(std::span(in), outs); }).wait();
  std::vector<std::vector<float>> ref(N, std::vector<float>(1000));
  mpidist::all_gather(std::span(in), ref);
  EXPECT_EQ(outs, ref);
  std::vector<float> mine(1000), mine_ref(1000);
  not_done_before_the_peers([&] { return mpidist::reduce_scatter_async(ref, std::span(mine)); }).wait();
  mpidist::reduce_scatter(ref, std::span(mine_ref));
  EXPECT_EQ(mine, mine_ref);
}

TEST_F(Async, ListFormsInsideMainProcessContextAGroupOfOne) {
  std::vector<float> in(3, 2.0f), out(3);
  std::vector<std::vector<float>> one(1, std::vector<float>(3)), other(1, std::vector<float>(3));
  {
    mpidist::MainProcessContext alone;
    mpidist::all_gather_async(std::span<const float>(in), one).wait();
    mpidist::reduce_scatter_async(one, std::span(out)).wait();
    mpidist::gather_async(std::span<const float>(in), one, 0).wait();
    mpidist::scatter_async(one, std::span(out), 0).wait();
    mpidist::all_to_all_async(one, other).wait();
    Work bad = mpidist::all_to_all_async(one, one);  // the same tensors: the Error in the Work
    expect_error([&] { bad.wait(); }, {"all_to_all", "overlap"});
  }
  EXPECT_EQ(one[0], in);
  EXPECT_EQ(other[0], in);
  EXPECT_EQ(out, in);
}

TEST_F(Async, HostWorkProgressesWhileTheCallerSleeps) {
  if (on_device() || mpidist::num_nodes() > 1) GTEST_SKIP() << "host memory on one node only";
  const char* path = std::getenv("MPIDIST_HOST_ALLREDUCE");
  if (path != nullptr && std::string(path) == "mpi") GTEST_SKIP() << "the MPI path runs at issue below Multiple";
  std::vector<float> v(1 << 16, 1.0f), w(1 << 16, 2.0f);
  // The uneven collectives whose plan every rank knows stay in the node's segment too.
  const auto size = static_cast<std::size_t>(mpidist::world_size());
  const int me = mpidist::rank();
  std::vector<std::int32_t> in(size * 300, me), out(in.size(), -1), mine(static_cast<std::size_t>(me) + 1, me);
  std::vector<std::size_t> counts(size);
  for (std::size_t r = 0; r < size; ++r) counts[r] = r + 1;
  std::vector<std::int32_t> all(size * (size + 1) / 2, -1);
  std::vector<Work> works;
  works.push_back(mpidist::all_reduce_async(std::span(v)));
  works.push_back(mpidist::all_reduce_async(std::span(w)));
  works.push_back(mpidist::all_to_all_async(std::span(in), std::span(out)));
  works.push_back(mpidist::all_gather_v_async(std::span(mine), std::span(all), counts));
  // No mpidist call while every rank sleeps: the lanes finish the work on their own.
  std::this_thread::sleep_for(std::chrono::milliseconds(mpidist::world_size() > 1 ? 500 : 10));
  for (std::size_t i = 0; i < works.size(); ++i) EXPECT_TRUE(works[i].test()) << i;
  mpidist::wait_all(works);
  EXPECT_EQ(v[100], static_cast<float>(mpidist::world_size()));
  for (std::size_t i = 0; i < out.size(); ++i) ASSERT_EQ(out[i], static_cast<std::int32_t>(i / 300));
  std::size_t at = 0;
  for (std::size_t r = 0; r < size; ++r)
    for (std::size_t x = 0; x <= r; ++x) ASSERT_EQ(all[at++], static_cast<std::int32_t>(r));
}

TEST_F(Async, WaitRethrowsABadRootOnEveryRankAndAgain) {
  std::vector<float> v(8, 1.0f);
  Work w = mpidist::broadcast_async(std::span(v), mpidist::world_size());
  expect_error([&] { w.wait(); }, {"broadcast", "root", "out of range"});
  expect_error([&] { w.wait(); }, {"broadcast", "root"});  // the same Error again
  EXPECT_TRUE(w.test());
  // The communicator stays usable: every rank raised it alike.
  mpidist::all_reduce_async(std::span(v)).wait();
  EXPECT_EQ(v[0], static_cast<float>(mpidist::world_size()));
}

TEST_F(Async, WaitRethrowsAValidationMismatchOnEveryRank) {
  if (!validating() || mpidist::world_size() < 2) GTEST_SKIP() << "needs MPIDIST_VALIDATE=1 and 2 ranks";
  std::vector<float> v(mpidist::rank() == 0 ? 10 : 11, 1.0f);
  Work w = mpidist::all_reduce_async(std::span(v));
  expect_error([&] { w.wait(); }, {"all_reduce", "rank 0", "rank 1", "10", "11"});
  std::vector<float> ok(4, 1.0f);
  mpidist::all_reduce_async(std::span(ok)).wait();
  EXPECT_EQ(ok[0], static_cast<float>(mpidist::world_size()));
}

TEST_F(Async, DroppedWorkIsWaitedFor) {
  TestBuffer<float> a(std::vector<float>(2000, 1.0f));
  { Work w = mpidist::all_reduce_async(a.view()); }  // its destructor waits
  for (const float v : a.read()) ASSERT_EQ(v, static_cast<float>(mpidist::world_size()));
  Work reused = mpidist::all_reduce_async(a.view());
  reused = mpidist::all_reduce_async(a.view());  // assigning over waits for the first
  reused.wait();
  const auto s = static_cast<float>(mpidist::world_size());
  for (const float v : a.read()) ASSERT_EQ(v, s * s * s);
  Work none;
  EXPECT_TRUE(none.test());
  none.wait();
}

TEST_F(Async, InsideMainProcessContextAGroupOfOne) {
  std::vector<float> v(5, 3.0f), out(5);
  {
    mpidist::MainProcessContext alone;
    Work w = mpidist::all_reduce_async(std::span(v));
    EXPECT_TRUE(w.test());
    w.wait();
    mpidist::all_reduce_async(BufferView(std::span(v)), BufferView(std::span(out))).wait();
    mpidist::barrier_async().wait();
  }
  EXPECT_EQ(v[0], 3.0f);
  EXPECT_EQ(out[4], 3.0f);
}

TEST_F(Async, TestPollsUntilDone) {
  std::vector<double> v(100000, 1.0);
  Work w = mpidist::all_reduce_async(std::span(v));
  int polls = 0;
  while (!w.test()) ++polls;
  w.wait();
  EXPECT_EQ(v.back(), static_cast<double>(mpidist::world_size()));
  Work again = mpidist::all_reduce_async(std::span(v));
  while (!again.is_completed()) ++polls;  // torch's name for test()
  EXPECT_EQ(v.back(), static_cast<double>(mpidist::world_size() * mpidist::world_size()));
}

#if MPIDIST_TEST_HAVE_CUDA
// The NCCL path (not staged through MPI, which runs at issue).
bool through_nccl() { return on_device() && !env_is("MPIDIST_BACKEND", "mpi"); }

struct TestStream {
  TestStream() { cuda_ok(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags"); }
  ~TestStream() { cudaStreamDestroy(stream); }
  TestStream(const TestStream&) = delete;
  TestStream& operator=(const TestStream&) = delete;
  cudaStream_t stream = nullptr;
};

// Device memory with a stream: wait() orders the stream after the call, so work queued on it
// afterwards sees the result. The emulation applies queued work only when a stream is driven and
// reports a read racing with an unfinished write on another stream, so a wait() that did not
// order the stream (the call runs on the communicator's) fails the synchronization or the values.
TEST_F(Async, OnDeviceWaitOrdersTheCallersStream) {
  if (!on_device()) GTEST_SKIP() << "device runs only";
  mpidist::device();
  TestStream s;
  TestBuffer<float> a(pattern<float>(4097, 1)), copy{std::vector<float>(4097)}, ref(pattern<float>(4097, 1));
  Work w = mpidist::all_reduce_async(a.view(), ReduceOp::Sum, s.stream);
  Work v = mpidist::broadcast_async(a.view(), 0, s.stream);  // after the all-reduce, on the communicator
  mpidist::wait_all(std::span(&w, 1));
  v.wait();
  cuda_ok(cudaMemcpyAsync(copy.data(), a.data(), a.bytes(), cudaMemcpyDeviceToDevice, s.stream), "cudaMemcpyAsync");
  cuda_ok(cudaStreamSynchronize(s.stream), "cudaStreamSynchronize");
  mpidist::all_reduce(ref.view(), ReduceOp::Sum);
  mpidist::broadcast(ref.view(), 0);
  EXPECT_EQ(copy.read(), ref.read());
  EXPECT_EQ(a.read(), ref.read());
  // all_reduce_many (GradientBuckets' call) in the same way.
  TestBuffer<float> x(pattern<float>(300, 2)), x_ref(pattern<float>(300, 2));
  TestBuffer<double> y(pattern<double>(70, 3)), y_ref(pattern<double>(70, 3)), y_copy{std::vector<double>(70)};
  const std::vector<BufferView> views{x.view(), y.view()}, refs{x_ref.view(), y_ref.view()};
  mpidist::all_reduce_many_async(views, ReduceOp::Max, s.stream).wait();
  cuda_ok(cudaMemcpyAsync(y_copy.data(), y.data(), y.bytes(), cudaMemcpyDeviceToDevice, s.stream), "cudaMemcpyAsync");
  cuda_ok(cudaStreamSynchronize(s.stream), "cudaStreamSynchronize");
  mpidist::all_reduce_many(refs, ReduceOp::Max);
  EXPECT_EQ(x.read(), x_ref.read());
  EXPECT_EQ(y_copy.read(), y_ref.read());
}

// With a stream, wait() returns while the collective still waits for the peers (the host does not
// wait): the caller's stream, ordered after it, cannot get past it until they issue theirs.
TEST_F(Async, OnDeviceWaitWithAStreamDoesNotBlockTheHost) {
  if (!through_nccl() || agreed_at_issue() || mpidist::world_size() < 2)
    GTEST_SKIP() << "NCCL on device memory, 2+ ranks, MPIDIST_VALIDATE=0 (the check agrees at issue)";
  mpidist::device();
  TestStream s;
  TestBuffer<float> a(pattern<float>(1000, 1)), ref(pattern<float>(1000, 1));
  mpidist::all_reduce(ref.view());  // the NCCL communicator (made collectively) before the held-back call
  cudaEvent_t after = nullptr;
  cuda_ok(cudaEventCreateWithFlags(&after, cudaEventDisableTiming), "cudaEventCreateWithFlags");
  Work w = held_back([&] { return mpidist::all_reduce_async(a.view(), ReduceOp::Sum, s.stream); },
                     [&](Work& mine) {
                       EXPECT_FALSE(mine.test()) << "the collective completed before the peers issued theirs";
                       mine.wait();  // must not wait for the peers
                       cuda_ok(cudaEventRecord(after, s.stream), "cudaEventRecord");
                       EXPECT_EQ(cudaEventQuery(after), cudaErrorNotReady) << "the stream is not after the collective";
                     });
  w.wait();
  cuda_ok(cudaStreamSynchronize(s.stream), "cudaStreamSynchronize");
  if (mpidist::rank() == 0) {
    EXPECT_EQ(cudaEventQuery(after), cudaSuccess);
  }
  cudaEventDestroy(after);
  TestBuffer<float> expected(pattern<float>(1000, 1));
  mpidist::all_reduce(expected.view());
  EXPECT_EQ(a.read(), expected.read());
}

// Without a stream the call is queued at issue too (not done before the peers issue); wait()
// blocks the host until the result is there.
TEST_F(Async, OnDeviceWithoutAStreamWaitBlocksUntilDone) {
  if (!through_nccl() || agreed_at_issue() || mpidist::world_size() < 2)
    GTEST_SKIP() << "NCCL on device memory, 2+ ranks, MPIDIST_VALIDATE=0 (the check agrees at issue)";
  TestBuffer<double> a(pattern<double>(513, 4)), ref(pattern<double>(513, 4));
  mpidist::all_reduce(ref.view(), ReduceOp::Max);
  Work w = not_done_before_the_peers([&] { return mpidist::all_reduce_async(a.view(), ReduceOp::Max); });
  w.wait();
  EXPECT_TRUE(w.test());
  EXPECT_EQ(a.read(), ref.read());  // a synchronous copy: the emulation refuses it while the collective is pending
}

// The uneven calls on device memory are queued at issue as the others are (they had waited at
// issue for their NCCL group to finish, the peers' issue included): all_to_all of equal blocks and
// all_gather_v, whose paths every rank knows without a vote.
TEST_F(Async, OnDeviceUnevenCallsAreQueuedAtIssue) {
  if (!through_nccl() || agreed_at_issue() || mpidist::world_size() < 2)
    GTEST_SKIP() << "NCCL on device memory, 2+ ranks, MPIDIST_VALIDATE=0 (the check agrees at issue)";
  const auto size = static_cast<std::size_t>(mpidist::world_size());
  const int me = mpidist::rank();
  std::vector<float> values(size * 3);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(me * 100) + static_cast<float>(i);
  TestBuffer<float> in(values), out{std::vector<float>(values.size())}, ref{std::vector<float>(values.size())};
  mpidist::all_to_all(in.view(), ref.view());  // the NCCL communicator (made collectively) before the held-back calls
  not_done_before_the_peers([&] { return mpidist::all_to_all_async(in.view(), out.view()); }).wait();
  EXPECT_EQ(out.read(), ref.read());
  // all_gather_v: rank r gives r + 1 elements.
  std::vector<std::size_t> counts(size);
  for (std::size_t r = 0; r < size; ++r) counts[r] = r + 1;
  std::vector<float> mine(static_cast<std::size_t>(me) + 1, static_cast<float>(me));
  std::vector<float> expected;
  for (std::size_t r = 0; r < size; ++r) expected.insert(expected.end(), r + 1, static_cast<float>(r));
  TestBuffer<float> part(mine), gathered{std::vector<float>(expected.size())};
  not_done_before_the_peers([&] { return mpidist::all_gather_v_async(part.view(), gathered.view(), counts); }).wait();
  EXPECT_EQ(gathered.read(), expected);
}
#endif

}  // namespace
