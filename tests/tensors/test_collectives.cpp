// Tensor collectives against locally computed expectations: every op x element type x reduction
// x size (0, 1, odd, and 1M+1 for a few combinations) x in place / out of place, at 1-4 ranks.
// With MPIDIST_TEST_DEVICE=1 (CUDA builds) the same tests run on device memory, against the
// device emulation in CI.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <utility>
#include <valarray>
#include <vector>

#include "mpi_test.hpp"
#include "mpidist/mpidist.hpp"
#include "tensor_buffers.hpp"
#include "tensor_values.hpp"

namespace {

using namespace mpidist_test;
using mpidist::ReduceOp;
using Collectives = MpiTest;

constexpr ReduceOp tensor_ops[] = {ReduceOp::Sum, ReduceOp::Product, ReduceOp::Min, ReduceOp::Max, ReduceOp::Avg};
constexpr std::size_t small_counts[] = {0, 1, 1023};
constexpr std::size_t large_count = 1'000'001;

int me() { return mpidist::rank(); }
int size() { return mpidist::world_size(); }

template <class T>
void all_reduce_case(ReduceOp op, std::size_t count, bool in_place) {
  const auto mine = fill<T>(op, me(), count);
  std::vector<double> want(count);
  for (std::size_t i = 0; i < count; ++i) want[i] = expected_at<T>(op, size(), i);
  const auto name = label<T>("all_reduce", op, count, in_place);
  if (in_place) {
    TestBuffer<T> buffer(mine);
    mpidist::all_reduce(buffer.view(), op);
    expect_values(buffer.read(), want, name);
    return;
  }
  TestBuffer<T> in(mine);
  TestBuffer<T> out(std::vector<T>(count, make<T>(99)));
  mpidist::all_reduce(in.view(), out.view(), op);
  expect_values(out.read(), want, name);
  EXPECT_TRUE(in.read() == mine) << name << ": the input changed";
}

template <class T>
void broadcast_case(std::size_t count, int root) {
  TestBuffer<T> buffer(fill<T>(ReduceOp::Sum, me(), count));
  mpidist::broadcast(buffer.view(), root);
  std::vector<double> want(count);
  for (std::size_t i = 0; i < count; ++i) want[i] = value_at<T>(ReduceOp::Sum, root, i);
  expect_values(buffer.read(), want, label<T>("broadcast", ReduceOp::Sum, count, true) + " root " + std::to_string(root));
}

template <class T>
void all_gather_case(std::size_t count) {
  TestBuffer<T> in(fill<T>(ReduceOp::Sum, me(), count));
  TestBuffer<T> out(std::vector<T>(count * static_cast<std::size_t>(size()), make<T>(99)));
  mpidist::all_gather(in.view(), out.view());
  std::vector<double> want;
  for (int r = 0; r < size(); ++r)
    for (std::size_t i = 0; i < count; ++i) want.push_back(value_at<T>(ReduceOp::Sum, r, i));
  expect_values(out.read(), want, label<T>("all_gather", ReduceOp::Sum, count, false));
}

template <class T>
void reduce_scatter_case(ReduceOp op, std::size_t block) {
  const std::size_t n = static_cast<std::size_t>(size());
  TestBuffer<T> in(fill<T>(op, me(), block * n));
  TestBuffer<T> out(std::vector<T>(block, make<T>(99)));
  mpidist::reduce_scatter(in.view(), out.view(), op);
  std::vector<double> want(block);
  for (std::size_t j = 0; j < block; ++j) want[j] = expected_at<T>(op, size(), static_cast<std::size_t>(me()) * block + j);
  expect_values(out.read(), want, label<T>("reduce_scatter", op, block, false));
}

// nccl-tests' in-place layouts: all_gather's input is this rank's block of the output;
// reduce_scatter's output is this rank's block of the input.
template <class T>
void all_gather_in_place_case(std::size_t count) {
  const auto mine = fill<T>(ReduceOp::Sum, me(), count);
  const auto offset = static_cast<std::size_t>(me()) * count;
  std::vector<T> initial(count * static_cast<std::size_t>(size()), make<T>(99));
  std::copy(mine.begin(), mine.end(), initial.begin() + static_cast<std::ptrdiff_t>(offset));
  TestBuffer<T> out(initial);
  mpidist::all_gather(mpidist::BufferView(out.data() + offset, count, mpidist::dtype_v<T>), out.view());
  std::vector<double> want;
  for (int r = 0; r < size(); ++r)
    for (std::size_t i = 0; i < count; ++i) want.push_back(value_at<T>(ReduceOp::Sum, r, i));
  expect_values(out.read(), want, label<T>("all_gather", ReduceOp::Sum, count, true));
}

template <class T>
void reduce_scatter_in_place_case(ReduceOp op, std::size_t block) {
  const auto offset = static_cast<std::size_t>(me()) * block;
  TestBuffer<T> in(fill<T>(op, me(), block * static_cast<std::size_t>(size())));
  mpidist::reduce_scatter(in.view(), mpidist::BufferView(in.data() + offset, block, mpidist::dtype_v<T>), op);
  const auto all = in.read();
  const std::vector<T> mine(all.begin() + static_cast<std::ptrdiff_t>(offset),
                            all.begin() + static_cast<std::ptrdiff_t>(offset + block));
  std::vector<double> want(block);
  for (std::size_t j = 0; j < block; ++j) want[j] = expected_at<T>(op, size(), offset + j);
  expect_values(mine, want, label<T>("reduce_scatter", op, block, true));
}

template <class T>
void reduce_case(ReduceOp op, std::size_t count, int root, bool in_place) {
  const auto mine = fill<T>(op, me(), count);
  const auto name = label<T>("reduce", op, count, in_place) + " root " + std::to_string(root);
  std::vector<double> want(count), untouched(count, 99.0);
  for (std::size_t i = 0; i < count; ++i) want[i] = expected_at<T>(op, size(), i);
  if (in_place) {
    TestBuffer<T> buffer(mine);
    mpidist::reduce(buffer.view(), op, root);  // torch's in-place reduce: in == out
    if (me() == root)
      expect_values(buffer.read(), want, name);
    else
      EXPECT_TRUE(buffer.read() == mine) << name << ": a non-root's buffer changed";
    return;
  }
  TestBuffer<T> in(mine);
  TestBuffer<T> out(std::vector<T>(count, make<T>(99)));
  mpidist::reduce(in.view(), out.view(), op, root);
  expect_values(out.read(), me() == root ? want : untouched, name);
}

// Guards the suite itself: under MPIDIST_TEST_DEVICE=1 the buffers must really be device memory.
TEST_F(Collectives, BuffersLiveWhereTheRunSays) {
  TestBuffer<float> buffer(std::vector<float>(8, 1.0f));
  const auto expected = on_device() ? mpidist::MemoryKind::Device : mpidist::MemoryKind::Host;
  EXPECT_EQ(buffer.view().memory(), expected);
  if (on_device()) {
    EXPECT_EQ(buffer.view().device(), mpidist::device().index);
  }
}

TEST_F(Collectives, NcclCanBeStartedEagerly) {
  const bool started = mpidist::init_nccl();
  EXPECT_EQ(started, mpidist::backend() == "nccl");
  EXPECT_EQ(mpidist::init_nccl(), started);  // a second call finds it ready
}

TEST_F(Collectives, AllReduceEveryTypeOpAndSize) {
  for_each_dtype([]<class T>() {
    for (auto op : tensor_ops)
      for (auto count : small_counts)
        for (bool in_place : {true, false}) all_reduce_case<T>(op, count, in_place);
  });
}

TEST_F(Collectives, AllReduceLarge) {
  all_reduce_case<float>(ReduceOp::Sum, large_count, false);
  all_reduce_case<mpidist::bfloat16>(ReduceOp::Avg, large_count, true);
  all_reduce_case<std::int64_t>(ReduceOp::Max, large_count, true);
}

TEST_F(Collectives, BroadcastEveryTypeSizeAndRoot) {
  for_each_dtype([]<class T>() {
    for (auto count : small_counts) {
      broadcast_case<T>(count, 0);
      broadcast_case<T>(count, size() - 1);
    }
  });
  broadcast_case<std::int8_t>(large_count, size() - 1);
  broadcast_case<double>(large_count, 0);
}

TEST_F(Collectives, AllGatherEveryTypeAndSize) {
  for_each_dtype([]<class T>() {
    for (auto count : small_counts) {
      all_gather_case<T>(count);
      all_gather_in_place_case<T>(count);
    }
  });
  all_gather_case<float>(large_count);
}

// all_gather into a list of tensors, one per rank (torch's tensor_list), on the world and on a
// group whose ranks run backwards: separate buffers (host or device memory), buffers that lie one
// after the other (the direct path), the input as this rank's own entry, vectors of vectors; a
// list of another length or a tensor of another count is an Error on every rank, and the next
// call is right.
TEST_F(Collectives, AllGatherIntoAList) {
  const int me_world = mpidist::rank();
  for (const mpidist::Communicator& comm :
       {mpidist::world(), mpidist::world().split(0, -me_world)}) {
    const int n = comm.size(), me = comm.rank();
    const auto N = static_cast<std::size_t>(n);
    const auto value = [](int rank, std::size_t i) { return static_cast<float>(rank * 1000 + static_cast<int>(i % 997)); };
    for (const std::size_t count : {std::size_t{0}, std::size_t{5}, std::size_t{70001}}) {
      std::vector<float> mine(count);
      for (std::size_t i = 0; i < count; ++i) mine[i] = value(me, i);
      TestBuffer<float> in(mine);
      std::vector<std::unique_ptr<TestBuffer<float>>> held;
      std::vector<mpidist::BufferView> outs;
      for (int r = 0; r < n; ++r) {
        held.push_back(std::make_unique<TestBuffer<float>>(std::vector<float>(count, -1.0f)));
        outs.push_back(held.back()->view());
      }
      mpidist::all_gather(comm, in.view(), outs);
      TestBuffer<float> together(std::vector<float>(count * N, -1.0f));
      std::vector<mpidist::BufferView> adjacent;
      for (std::size_t r = 0; r < N; ++r) adjacent.push_back(mpidist::BufferView(together.data() + r * count, count));
      mpidist::all_gather(comm, in.view(), adjacent);
      held[static_cast<std::size_t>(me)] = std::make_unique<TestBuffer<float>>(mine);  // the input is its own entry
      outs[static_cast<std::size_t>(me)] = held[static_cast<std::size_t>(me)]->view();
      std::vector<std::unique_ptr<TestBuffer<float>>> again;
      for (int r = 0; r < n; ++r)
        if (r != me) {
          again.push_back(std::make_unique<TestBuffer<float>>(std::vector<float>(count, -1.0f)));
          outs[static_cast<std::size_t>(r)] = again.back()->view();
        }
      mpidist::all_gather(comm, outs[static_cast<std::size_t>(me)], outs);
      const auto all = together.read();
      for (int r = 0; r < n; ++r) {
        std::vector<float> want(count);
        for (std::size_t i = 0; i < count; ++i) want[i] = value(r, i);
        EXPECT_EQ(held[static_cast<std::size_t>(r)]->read(), r == me ? mine : want) << "count " << count << " rank " << r;
        EXPECT_EQ(std::vector<float>(all.begin() + static_cast<std::ptrdiff_t>(r * count),
                                     all.begin() + static_cast<std::ptrdiff_t>((r + 1) * count)), want);
      }
      for (std::size_t r = 0, k = 0; r < N; ++r)
        if (r != static_cast<std::size_t>(me)) {
          std::vector<float> want(count);
          for (std::size_t i = 0; i < count; ++i) want[i] = value(static_cast<int>(r), i);
          EXPECT_EQ(again[k++]->read(), want) << "in place, count " << count << " rank " << r;
        }
    }
    // As users hold them: a vector of vectors, a vector of spans.
    std::vector<std::vector<double>> layers(N, std::vector<double>(3, -1.0));
    mpidist::all_gather(comm, std::vector<double>(3, me + 0.5), layers);
    for (int r = 0; r < n; ++r) EXPECT_EQ(layers[static_cast<std::size_t>(r)], std::vector<double>(3, r + 0.5));
    // Errors, alike on every rank; then a call that is right.
    std::vector<std::vector<double>> short_list(N + 1, std::vector<double>(3));
    expect_error([&] { mpidist::all_gather(comm, std::vector<double>(3), short_list); },
                 {"all_gather", "holds " + std::to_string(N + 1) + " tensors", std::to_string(n) + " ranks"});
    layers.back().resize(2);
    expect_error([&] { mpidist::all_gather(comm, std::vector<double>(3), layers); },
                 {"all_gather", "tensor " + std::to_string(n - 1) + " of the list holds 2 float64"});
    layers.back().resize(3);
    mpidist::all_gather(comm, std::vector<double>(3, me * 2.0), layers);
    EXPECT_EQ(layers.back(), std::vector<double>(3, (n - 1) * 2.0));
  }
  // Inside a MainProcessContext the group is this rank alone: a list of one.
  if (mpidist::is_main_process()) {
    mpidist::MainProcessContext main_only;
    std::vector<std::vector<float>> one(1, std::vector<float>(2));
    mpidist::all_gather(std::vector<float>(2, 7.0f), one);
    EXPECT_EQ(one[0], std::vector<float>(2, 7.0f));
  }
}

TEST_F(Collectives, ReduceScatterFromAList) {
  const int me_world = mpidist::rank();
  for (const mpidist::Communicator& comm :
       {mpidist::world(), mpidist::world().split(0, -me_world)}) {
    const int n = comm.size(), me = comm.rank();
    const auto N = static_cast<std::size_t>(n);
    // Rank s's tensor for rank r: small integers, exact in float under every op.
    const auto value = [](int s, int r, std::size_t i) { return static_cast<float>(s * 100 + r * 10 + static_cast<int>(i % 7)); };
    for (const ReduceOp op : {ReduceOp::Sum, ReduceOp::Max})
      for (const std::size_t count : {std::size_t{0}, std::size_t{5}, std::size_t{70001}}) {
        std::vector<float> want(count);
        for (std::size_t i = 0; i < count; ++i) {
          want[i] = value(0, me, i);
          for (int s = 1; s < n; ++s) want[i] = op == ReduceOp::Sum ? want[i] + value(s, me, i) : std::max(want[i], value(s, me, i));
        }
        std::vector<std::unique_ptr<TestBuffer<float>>> held;
        std::vector<mpidist::InputView> ins;
        std::vector<float> together_host(count * N);
        for (int r = 0; r < n; ++r) {
          std::vector<float> mine(count);
          for (std::size_t i = 0; i < count; ++i) mine[i] = together_host[static_cast<std::size_t>(r) * count + i] = value(me, r, i);
          held.push_back(std::make_unique<TestBuffer<float>>(mine));
          ins.push_back(held.back()->view());
        }
        TestBuffer<float> out(std::vector<float>(count, -1.0f));
        mpidist::reduce_scatter(comm, ins, out.view(), op);
        EXPECT_EQ(out.read(), want) << "separate tensors, count " << count;
        TestBuffer<float> together(together_host);
        std::vector<mpidist::InputView> adjacent;
        for (std::size_t r = 0; r < N; ++r) adjacent.push_back(mpidist::BufferView(together.data() + r * count, count));
        TestBuffer<float> out2(std::vector<float>(count, -1.0f));
        mpidist::reduce_scatter(comm, adjacent, out2.view(), op);
        EXPECT_EQ(out2.read(), want) << "one after the other, count " << count;
        // The output as this rank's own entry, of separate tensors and of adjacent ones.
        const mpidist::BufferView own = held[static_cast<std::size_t>(me)]->view();
        mpidist::reduce_scatter(comm, ins, own, op);
        EXPECT_EQ(held[static_cast<std::size_t>(me)]->read(), want) << "in place, count " << count;
        mpidist::reduce_scatter(comm, adjacent, mpidist::BufferView(together.data() + static_cast<std::size_t>(me) * count, count), op);
        const auto all = together.read();
        EXPECT_EQ(std::vector<float>(all.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(me) * count),
                                     all.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(me + 1) * count)),
                  want)
            << "adjacent in place, count " << count;
      }
    // As users hold them: a const vector of vectors, a vector of spans.
    std::vector<std::vector<double>> grads(N);
    for (int r = 0; r < n; ++r) grads[static_cast<std::size_t>(r)].assign(3, me + r * 0.5);
    std::vector<double> mine(3, -1.0);
    mpidist::reduce_scatter(comm, std::as_const(grads), mine);
    const double sum_of_ranks = n * (n - 1) / 2.0;
    EXPECT_EQ(mine, std::vector<double>(3, sum_of_ranks + n * me * 0.5));
    std::vector<std::span<double>> spans(grads.begin(), grads.end());
    mpidist::reduce_scatter(comm, spans, std::span(mine), ReduceOp::Min);
    EXPECT_EQ(mine, std::vector<double>(3, me * 0.5));
    // Errors, alike on every rank; then a call that is right.
    std::vector<std::vector<double>> long_list(N + 1, std::vector<double>(3));
    expect_error([&] { mpidist::reduce_scatter(comm, long_list, mine); },
                 {"reduce_scatter", "holds " + std::to_string(N + 1) + " tensors", std::to_string(n) + " ranks"});
    grads.back().resize(2);
    expect_error([&] { mpidist::reduce_scatter(comm, grads, mine); },
                 {"reduce_scatter", "tensor " + std::to_string(n - 1) + " of the list holds 2 float64", "the output holds 3"});
    grads.back().assign(3, 1.0);
    mpidist::reduce_scatter(comm, grads, mine, ReduceOp::Max);
    EXPECT_EQ(mine, std::vector<double>(3, me == n - 1 ? 1.0 : (n - 1) + me * 0.5));
  }
  // Inside a MainProcessContext the group is this rank alone: a list of one.
  if (mpidist::is_main_process()) {
    mpidist::MainProcessContext main_only;
    const std::vector<std::vector<float>> one(1, std::vector<float>(2, 7.0f));
    std::vector<float> out(2);
    mpidist::reduce_scatter(one, out);
    EXPECT_EQ(out, std::vector<float>(2, 7.0f));
  }
}

TEST_F(Collectives, AllToAllBetweenLists) {
  const int me_world = mpidist::rank();
  for (const mpidist::Communicator& comm : {mpidist::world(), mpidist::world().split(0, -me_world)}) {
    const int n = comm.size(), me = comm.rank();
    const auto N = static_cast<std::size_t>(n);
    // Rank s sends rank r `count(s, r)` elements (zero for some pairs), each telling where it is from.
    const auto value = [](int s, int r, std::size_t i) { return static_cast<float>(s * 10000 + r * 100 + static_cast<int>(i % 97)); };
    for (const std::size_t base : {std::size_t{0}, std::size_t{70001}}) {
      const auto count = [&](int s, int r) { return base + static_cast<std::size_t>((s * 3 + r) % 4); };
      std::vector<std::vector<float>> want(N);
      std::vector<float> sent_together, want_together;
      for (int r = 0; r < n; ++r) {
        for (std::size_t i = 0; i < count(me, r); ++i) sent_together.push_back(value(me, r, i));
        for (std::size_t i = 0; i < count(r, me); ++i) want[static_cast<std::size_t>(r)].push_back(value(r, me, i));
        want_together.insert(want_together.end(), want[static_cast<std::size_t>(r)].begin(), want[static_cast<std::size_t>(r)].end());
      }
      // Separate tensors (on device memory: staged through host).
      std::vector<std::unique_ptr<TestBuffer<float>>> held_in, held_out;
      std::vector<mpidist::InputView> ins;
      std::vector<mpidist::BufferView> outs;
      for (int r = 0; r < n; ++r) {
        std::vector<float> mine(count(me, r));
        for (std::size_t i = 0; i < mine.size(); ++i) mine[i] = value(me, r, i);
        held_in.push_back(std::make_unique<TestBuffer<float>>(mine));
        ins.push_back(held_in.back()->view());
        held_out.push_back(std::make_unique<TestBuffer<float>>(std::vector<float>(count(r, me), -1.0f)));
        outs.push_back(held_out.back()->view());
      }
      mpidist::all_to_all(comm, ins, outs);
      for (std::size_t r = 0; r < N; ++r) EXPECT_EQ(held_out[r]->read(), want[r]) << "separate, base " << base << " from " << r;
      // Each list one tensor after the other: the uneven all_to_all itself.
      TestBuffer<float> in_together(sent_together), out_together(std::vector<float>(want_together.size(), -1.0f));
      std::vector<mpidist::InputView> in_views;
      std::vector<mpidist::BufferView> out_views;
      for (int r = 0, at_in = 0, at_out = 0; r < n; ++r) {
        in_views.push_back(mpidist::BufferView(in_together.data() + at_in, count(me, r)));
        out_views.push_back(mpidist::BufferView(out_together.data() + at_out, count(r, me)));
        at_in += static_cast<int>(count(me, r));
        at_out += static_cast<int>(count(r, me));
      }
      mpidist::all_to_all(comm, in_views, out_views);
      EXPECT_EQ(out_together.read(), want_together) << "one after the other, base " << base;
    }
    // As users hold them: vectors of vectors, the inputs const.
    std::vector<std::vector<int>> tokens(N), got(N);
    for (int r = 0; r < n; ++r) {
      tokens[static_cast<std::size_t>(r)].assign(static_cast<std::size_t>(r + 1), me);
      got[static_cast<std::size_t>(r)].assign(static_cast<std::size_t>(me + 1), -1);
    }
    mpidist::all_to_all(comm, std::as_const(tokens), got);
    for (int r = 0; r < n; ++r) EXPECT_EQ(got[static_cast<std::size_t>(r)], std::vector<int>(static_cast<std::size_t>(me + 1), r));
    // Errors, alike on every rank; then a call that is right.
    std::vector<std::vector<int>> one_more(N + 1);
    expect_error([&] { mpidist::all_to_all(comm, one_more, got); },
                 {"all_to_all", "ins holds " + std::to_string(N + 1) + " tensors", std::to_string(n) + " ranks"});
    std::vector<std::vector<double>> other_type(N, std::vector<double>(static_cast<std::size_t>(me + 1)));
    expect_error([&] { mpidist::all_to_all(comm, tokens, other_type); }, {"all_to_all", "outs[0] holds float64", "int32"});
    mpidist::all_to_all(comm, tokens, got);
    EXPECT_EQ(got.back(), std::vector<int>(static_cast<std::size_t>(me + 1), n - 1));
  }
  // Inside a MainProcessContext the group is this rank alone: lists of one.
  if (mpidist::is_main_process()) {
    mpidist::MainProcessContext main_only;
    const std::vector<std::vector<float>> one(1, std::vector<float>(2, 7.0f));
    std::vector<std::vector<float>> back(1, std::vector<float>(2));
    mpidist::all_to_all(one, back);
    EXPECT_EQ(back[0], std::vector<float>(2, 7.0f));
  }
}

// A bad list on one rank only, where the ranks agree on the lists' layout anyway (every all_to_all
// list; all_gather's and reduce_scatter's on device memory): the same Error on every rank, naming
// the rank and its problem, instead of the others waiting until the timeout; then right calls.
TEST_F(Collectives, OneRanksBadListIsAnErrorOnEveryRank) {
  const int n = size(), last = n - 1;
  const auto N = static_cast<std::size_t>(n);
  const auto named = [&](int bad, const std::string& problem) {
    return me() == bad ? problem : "rank " + std::to_string(bad) + "'s lists: " + problem;
  };
  std::vector<std::vector<int>> tokens(N, std::vector<int>(3, me())), got(N, std::vector<int>(3, -1));
  std::vector<std::vector<int>> sent = tokens;
  if (me() == last) sent.emplace_back(3, me());  // one tensor too many on the last rank
  expect_error([&] { mpidist::all_to_all(sent, got); },
               {"all_to_all", named(last, "ins holds " + std::to_string(N + 1) + " tensors")});
  mpidist::Work started = mpidist::all_to_all_async(sent, got);
  expect_error([&] { started.wait(); }, {"all_to_all", named(last, "ins holds")});
  std::vector<std::vector<double>> wide(N, std::vector<double>(3));
  const auto received = [&](int r) -> mpidist::BufferView {
    auto& slot = got[static_cast<std::size_t>(r)];
    return me() == 0 && r == last ? mpidist::BufferView(std::span(wide.back())) : mpidist::BufferView(std::span(slot));
  };
  std::vector<mpidist::BufferView> outs;
  for (int r = 0; r < n; ++r) outs.push_back(received(r));  // rank 0's last of another type
  expect_error([&] { mpidist::all_to_all(tokens, outs); },
               {"all_to_all", named(0, "outs[" + std::to_string(last) + "] holds float64")});
  mpidist::all_to_all(tokens, got);
  for (int r = 0; r < n; ++r) EXPECT_EQ(got[static_cast<std::size_t>(r)], std::vector<int>(3, r));
  if (!on_device()) return;  // host lists of all_gather and reduce_scatter: each rank's own check, no agreement
  TestBuffer<float> in(std::vector<float>(4, static_cast<float>(me() + 1)));
  std::vector<std::unique_ptr<TestBuffer<float>>> held;
  std::vector<mpidist::BufferView> list;
  for (int r = 0; r < n; ++r) {
    held.push_back(std::make_unique<TestBuffer<float>>(std::vector<float>(me() == last && r == 0 ? 3 : 4)));
    list.push_back(held.back()->view());  // the last rank's first tensor one element short
  }
  expect_error([&] { mpidist::all_gather(in.view(), list); },
               {"all_gather", named(last, "tensor 0 of the list holds 3")});
  expect_error([&] { mpidist::reduce_scatter(list, in.view()); },
               {"reduce_scatter", named(last, "tensor 0 of the list holds 3")});
  held[0] = std::make_unique<TestBuffer<float>>(std::vector<float>(4));
  list[0] = held[0]->view();
  mpidist::all_gather(in.view(), list);
  for (int r = 0; r < n; ++r) EXPECT_EQ(held[static_cast<std::size_t>(r)]->read(), std::vector<float>(4, static_cast<float>(r + 1)));
}

// Separately allocated tensors may lie one after the other on some ranks only: on device memory the
// layout picks the collective, so the ranks must pick alike (here rank 0's lists are adjacent, the
// others' separate; in all_to_all the last rank moves nothing at all).
TEST_F(Collectives, ListLayoutsThatDifferByRank) {
  const int n = mpidist::world_size(), me = mpidist::rank();
  const auto N = static_cast<std::size_t>(n);
  for (const std::size_t count : {std::size_t{5}, std::size_t{70001}}) {
    const auto value = [](int from, int to, std::size_t i) { return static_cast<float>(from * 1000 + to * 10 + static_cast<int>(i % 7)); };
    // One buffer cut into views (rank 0), or one buffer per view (the others), each filled by `fill(r)`.
    struct Lists {
      std::vector<std::unique_ptr<TestBuffer<float>>> held;
      std::vector<mpidist::BufferView> views;
    };
    const auto make = [&](const std::vector<std::size_t>& counts, auto fill) {
      Lists lists;
      if (me == 0) {
        std::vector<float> all;
        for (std::size_t r = 0; r < counts.size(); ++r) {
          const auto part = fill(static_cast<int>(r), counts[r]);
          all.insert(all.end(), part.begin(), part.end());
        }
        lists.held.push_back(std::make_unique<TestBuffer<float>>(all));
        for (std::size_t r = 0, at = 0; r < counts.size(); at += counts[r], ++r)
          lists.views.push_back(mpidist::BufferView(lists.held[0]->data() + at, counts[r]));
      } else {
        for (std::size_t r = 0; r < counts.size(); ++r) {
          lists.held.push_back(std::make_unique<TestBuffer<float>>(fill(static_cast<int>(r), counts[r])));
          lists.views.push_back(lists.held.back()->view());
        }
      }
      return lists;
    };
    const auto read = [&](Lists& lists, std::size_t r, std::size_t k) {
      if (me != 0) return lists.held[r]->read();
      std::size_t at = 0;
      for (std::size_t q = 0; q < r; ++q) at += lists.views[q].count();
      const auto all = lists.held[0]->read();
      return std::vector<float>(all.begin() + static_cast<std::ptrdiff_t>(at), all.begin() + static_cast<std::ptrdiff_t>(at + k));
    };
    const auto blank = [](int, std::size_t k) { return std::vector<float>(k, -1.0f); };
    const auto values_to = [&](int r, std::size_t k) {
      std::vector<float> v(k);
      for (std::size_t i = 0; i < k; ++i) v[i] = value(me, r, i);
      return v;
    };
    std::vector<float> mine(count);
    for (std::size_t i = 0; i < count; ++i) mine[i] = value(me, me, i);
    TestBuffer<float> in(mine);
    Lists gathered = make(std::vector<std::size_t>(N, count), blank);
    mpidist::all_gather(in.view(), gathered.views);
    for (int r = 0; r < n; ++r) {
      std::vector<float> want(count);
      for (std::size_t i = 0; i < count; ++i) want[i] = value(r, r, i);
      EXPECT_EQ(read(gathered, static_cast<std::size_t>(r), count), want) << "all_gather, count " << count;
    }
    Lists scattered = make(std::vector<std::size_t>(N, count), values_to);
    std::vector<mpidist::InputView> ins(scattered.views.begin(), scattered.views.end());
    TestBuffer<float> out(std::vector<float>(count, -1.0f));
    mpidist::reduce_scatter(ins, out.view());
    std::vector<float> sum(count, 0.0f);
    for (int s = 0; s < n; ++s)
      for (std::size_t i = 0; i < count; ++i) sum[i] += value(s, me, i);
    EXPECT_EQ(out.read(), sum) << "reduce_scatter, count " << count;
    const auto pair = [&](int s, int r) { return s == n - 1 || r == n - 1 ? std::size_t{0} : count + static_cast<std::size_t>(s + r); };
    std::vector<std::size_t> send(N), recv(N);
    for (int r = 0; r < n; ++r) send[static_cast<std::size_t>(r)] = pair(me, r), recv[static_cast<std::size_t>(r)] = pair(r, me);
    Lists sent = make(send, values_to), received = make(recv, blank);
    std::vector<mpidist::InputView> send_views(sent.views.begin(), sent.views.end());
    mpidist::all_to_all(send_views, received.views);
    for (int r = 0; r < n; ++r) {
      std::vector<float> want(pair(r, me));
      for (std::size_t i = 0; i < want.size(); ++i) want[i] = value(r, me, i);
      EXPECT_EQ(read(received, static_cast<std::size_t>(r), want.size()), want) << "all_to_all, count " << count << " from " << r;
    }
  }
}

TEST_F(Collectives, GatherAndScatterWithLists) {
  const int me_world = mpidist::rank();
  for (const mpidist::Communicator& comm : {mpidist::world(), mpidist::world().split(0, -me_world)}) {
    const int n = comm.size(), me = comm.rank();
    const auto N = static_cast<std::size_t>(n);
    const auto value = [](int from, int to, std::size_t i) { return static_cast<float>(from * 1000 + to * 10 + static_cast<int>(i % 7)); };
    for (const int root : {0, n - 1})
      for (const std::size_t count : {std::size_t{0}, std::size_t{5}, std::size_t{70001}}) {
        const std::string where = "root " + std::to_string(root) + ", count " + std::to_string(count);
        std::vector<float> mine(count);
        for (std::size_t i = 0; i < count; ++i) mine[i] = value(me, root, i);
        TestBuffer<float> in(mine);
        // gather: separate tensors on root, then one after the other; nothing elsewhere.
        std::vector<std::unique_ptr<TestBuffer<float>>> held;
        std::vector<mpidist::BufferView> outs;
        TestBuffer<float> together(std::vector<float>(me == root ? count * N : 0, -1.0f));
        std::vector<mpidist::BufferView> adjacent;
        if (me == root)
          for (std::size_t r = 0; r < N; ++r) {
            held.push_back(std::make_unique<TestBuffer<float>>(std::vector<float>(count, -1.0f)));
            outs.push_back(held.back()->view());
            adjacent.push_back(mpidist::BufferView(together.data() + r * count, count));
          }
        mpidist::gather(comm, in.view(), outs, root);
        mpidist::gather(comm, in.view(), adjacent, root);
        if (me == root) {
          const auto all = together.read();
          for (int r = 0; r < n; ++r) {
            std::vector<float> want(count);
            for (std::size_t i = 0; i < count; ++i) want[i] = value(r, root, i);
            EXPECT_EQ(held[static_cast<std::size_t>(r)]->read(), want) << "gather, " << where << ", from " << r;
            EXPECT_EQ(std::vector<float>(all.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(r) * count),
                                         all.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(r + 1) * count)),
                      want)
                << "gather one after the other, " << where;
          }
        }
        // scatter: root's tensors for each rank, separate and one after the other.
        std::vector<mpidist::InputView> ins;
        std::vector<float> for_all;
        std::vector<std::unique_ptr<TestBuffer<float>>> parts;
        if (me == root)
          for (int r = 0; r < n; ++r) {
            std::vector<float> part(count);
            for (std::size_t i = 0; i < count; ++i) part[i] = value(root, r, i);
            for_all.insert(for_all.end(), part.begin(), part.end());
            parts.push_back(std::make_unique<TestBuffer<float>>(part));
            ins.push_back(parts.back()->view());
          }
        TestBuffer<float> from_root(for_all);
        std::vector<mpidist::InputView> ins_adjacent;
        if (me == root)
          for (std::size_t r = 0; r < N; ++r) ins_adjacent.push_back(mpidist::BufferView(from_root.data() + r * count, count));
        std::vector<float> want(count);
        for (std::size_t i = 0; i < count; ++i) want[i] = value(root, me, i);
        TestBuffer<float> out(std::vector<float>(count, -1.0f)), out2(std::vector<float>(count, -1.0f));
        mpidist::scatter(comm, ins, out.view(), root);
        mpidist::scatter(comm, ins_adjacent, out2.view(), root);
        EXPECT_EQ(out.read(), want) << "scatter, " << where;
        EXPECT_EQ(out2.read(), want) << "scatter one after the other, " << where;
      }
    // As users hold them: vectors of vectors on root, an empty list elsewhere.
    std::vector<std::vector<double>> per_rank(me == 0 ? N : 0, std::vector<double>(3, -1.0));
    mpidist::gather(comm, std::vector<double>(3, me + 0.5), per_rank, 0);
    for (int r = 0; me == 0 && r < n; ++r) EXPECT_EQ(per_rank[static_cast<std::size_t>(r)], std::vector<double>(3, r + 0.5));
    std::vector<double> got(3);
    mpidist::scatter(comm, std::as_const(per_rank), got, 0);
    EXPECT_EQ(got, std::vector<double>(3, me + 0.5));
    // A bad list on root is the same Error on every rank (root checks it and tells the others), then a right call.
    std::vector<std::vector<double>> short_list(me == n - 1 ? N + 1 : 0, std::vector<double>(3));
    expect_error([&] { mpidist::gather(comm, std::vector<double>(3), short_list, n - 1); },
                 {"gather", "holds " + std::to_string(N + 1) + " tensors"});
    std::vector<std::vector<double>> wrong_size(me == n - 1 ? N : 0, std::vector<double>(2));
    expect_error([&] { mpidist::scatter(comm, wrong_size, got, n - 1); }, {"scatter", "of the list holds 2 float64"});
    mpidist::gather(comm, std::vector<double>(3, me * 2.0), per_rank, 0);
    if (me == 0) {
      EXPECT_EQ(per_rank.back(), std::vector<double>(3, (n - 1) * 2.0));
    }
  }
}

// Bits that differ by rank and index (splitmix64's finalizer): every bit of T is set somewhere,
// negative values too.
template <class T>
T bits_at(int rank, std::size_t i) {
  std::uint64_t x = (static_cast<std::uint64_t>(rank) + 1) * 0x9E3779B97F4A7C15ull + i * 0xBF58476D1CE4E5B9ull;
  x ^= x >> 31;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 29;
  return static_cast<T>(x);
}

template <class T>
T bitwise_over_ranks(ReduceOp op, int n, std::size_t i) {
  T acc = bits_at<T>(0, i);
  for (int r = 1; r < n; ++r) {
    const T v = bits_at<T>(r, i);
    acc = static_cast<T>(op == ReduceOp::BitAnd ? acc & v : op == ReduceOp::BitOr ? acc | v : acc ^ v);
  }
  return acc;
}

TEST_F(Collectives, BitwiseReductionsOnIntegers) {
  const int me_world = mpidist::rank();
  for (const mpidist::Communicator& comm : {mpidist::world(), mpidist::world().split(0, -me_world)}) {
    const int n = comm.size(), me = comm.rank();
    const auto N = static_cast<std::size_t>(n);
    const auto each_op_and_size = [&]<class T>() {
      for (const ReduceOp op : {ReduceOp::BitAnd, ReduceOp::BitOr, ReduceOp::BitXor})
        for (const std::size_t count : {std::size_t{0}, std::size_t{5}, std::size_t{70001}}) {
          const std::string where = std::string(mpidist::to_string(op)) + " of " +
                                    std::string(mpidist::to_string(mpidist::dtype_v<T>)) + ", count " + std::to_string(count);
          std::vector<T> mine(count), want(count);
          for (std::size_t i = 0; i < count; ++i) mine[i] = bits_at<T>(me, i), want[i] = bitwise_over_ranks<T>(op, n, i);
          TestBuffer<T> buffer(mine);
          mpidist::all_reduce(comm, buffer.view(), op);
          EXPECT_EQ(buffer.read(), want) << "all_reduce, " << where;
          TestBuffer<T> in(mine), out{std::vector<T>(count)};
          mpidist::reduce(comm, in.view(), out.view(), op, n - 1);
          if (me == n - 1) {
            EXPECT_EQ(out.read(), want) << "reduce, " << where;
          }
          std::vector<T> blocks(count * N), block_want(count);
          for (std::size_t j = 0; j < blocks.size(); ++j) blocks[j] = bits_at<T>(me, j);
          for (std::size_t i = 0; i < count; ++i) block_want[i] = bitwise_over_ranks<T>(op, n, static_cast<std::size_t>(me) * count + i);
          TestBuffer<T> scatter_in(blocks), scatter_out{std::vector<T>(count)};
          mpidist::reduce_scatter(comm, scatter_in.view(), scatter_out.view(), op);
          EXPECT_EQ(scatter_out.read(), block_want) << "reduce_scatter, " << where;
        }
    };
    for_each_integer_dtype(each_op_and_size);
    // Fused, and non-blocking: which ranks are done, as a bit mask (torch's BOR on a flag tensor).
    std::vector<std::uint64_t> done(3, std::uint64_t{1} << me);
    std::vector<std::int32_t> ids(4, me);
    mpidist::all_reduce_many(comm, {std::span(done), std::span(ids)}, ReduceOp::BitOr);
    std::int32_t any_id = 0;
    for (int r = 0; r < n; ++r) any_id |= r;
    EXPECT_EQ(done, std::vector<std::uint64_t>(3, (std::uint64_t{1} << n) - 1));
    EXPECT_EQ(ids, std::vector<std::int32_t>(4, any_id));
    std::vector<std::int64_t> parity(2, me);
    mpidist::all_reduce_async(comm, std::span(parity), ReduceOp::BitXor).wait();
    std::int64_t xor_of_ranks = 0;
    for (int r = 0; r < n; ++r) xor_of_ranks ^= r;
    EXPECT_EQ(parity, std::vector<std::int64_t>(2, xor_of_ranks));
    // Floating-point elements have no bits to combine: an Error on every rank, then a right call.
    std::vector<float> loss(3, 1.0f);
    expect_error([&] { mpidist::all_reduce(comm, std::span(loss), ReduceOp::BitOr); }, {"all_reduce", "'bor'", "float32"});
    expect_error([&] { mpidist::all_reduce_many(comm, {std::span(done), std::span(loss)}, ReduceOp::BitAnd); },
                 {"'band'", "float32"});
    mpidist::all_reduce(comm, std::span(done), ReduceOp::BitAnd);
    EXPECT_EQ(done, std::vector<std::uint64_t>(3, (std::uint64_t{1} << n) - 1));
  }
  EXPECT_EQ(mpidist::reduce_op_from_string("bxor"), ReduceOp::BitXor);
  EXPECT_EQ(mpidist::reduce_op_from_string("bit_and"), ReduceOp::BitAnd);
  EXPECT_EQ(mpidist::to_string(ReduceOp::BitOr), "bor");
}

TEST_F(Collectives, ReduceScatterEveryTypeOpAndSize) {
  for_each_dtype([]<class T>() {
    for (auto op : tensor_ops)
      for (auto block : small_counts) {
        reduce_scatter_case<T>(op, block);
        reduce_scatter_in_place_case<T>(op, block);
      }
  });
  reduce_scatter_case<std::int32_t>(ReduceOp::Sum, large_count);
}

TEST_F(Collectives, ReduceEveryTypeOpSizeAndRoot) {
  for_each_dtype([]<class T>() {
    for (auto op : tensor_ops)
      for (auto count : small_counts) {
        reduce_case<T>(op, count, size() - 1, false);
        reduce_case<T>(op, count, 0, true);
      }
  });
  reduce_case<mpidist::float16>(ReduceOp::Sum, large_count, size() - 1, false);
  // In place off root 0 with a count past MPICH's small-message algorithm: non-roots must not hand
  // MPI their buffer as both send and receive buffer (MPICH 4.0.2 crashed in memcpy).
  reduce_case<float>(ReduceOp::Sum, large_count, size() - 1, true);
  reduce_case<std::int64_t>(ReduceOp::Max, large_count, size() / 2, true);
}

// Non-const std::vector and std::array pass where a buffer is taken, as std::span(v) would: the
// forms with in and out, the non-blocking ones, average. Where a call has a form for the vector
// itself (all_reduce(v, op), broadcast(v, root)), that form is chosen, as before.
TEST_F(Collectives, ContainersPassAsBuffers) {
  const int n = mpidist::world_size(), me = mpidist::rank();
  const auto N = static_cast<std::size_t>(n);
  const int last = n - 1;
  std::vector<float> mine(3, static_cast<float>(me)), everyone(3 * N, -1.0f);
  mpidist::all_gather(mine, everyone);
  for (int r = 0; r < n; ++r) EXPECT_EQ(everyone[3 * static_cast<std::size_t>(r)], static_cast<float>(r));
  std::vector<std::int64_t> blocks(2 * N, 1), block(2, 0);
  mpidist::reduce_scatter(blocks, block, ReduceOp::Sum);
  EXPECT_EQ(block, std::vector<std::int64_t>(2, n));
  std::array<double, 4> in{1.0, 2.0, 3.0, static_cast<double>(me)}, out{};
  mpidist::all_reduce(in, out, ReduceOp::Max);
  EXPECT_EQ(out, (std::array<double, 4>{1.0, 2.0, 3.0, static_cast<double>(last)}));
  std::vector<std::int32_t> to_each(N), from_each(N);
  for (int j = 0; j < n; ++j) to_each[static_cast<std::size_t>(j)] = me * 100 + j;
  mpidist::all_to_all(to_each, from_each);
  for (int i = 0; i < n; ++i) EXPECT_EQ(from_each[static_cast<std::size_t>(i)], i * 100 + me);
  std::vector<float> at_root(me == last ? 3 * N : 0);
  mpidist::gather(mine, at_root, last);
  if (me == last) {
    EXPECT_EQ(at_root, everyone);
  }
  std::vector<float> part(3);
  mpidist::scatter(at_root, part, last);
  EXPECT_EQ(part, mine);
  std::vector<float> grad(100, static_cast<float>(me));
  mpidist::Work sum = mpidist::all_reduce_async(grad, ReduceOp::Sum);
  std::vector<std::uint8_t> flags(5, static_cast<std::uint8_t>(me + 1));
  mpidist::Work flags_from_last = mpidist::broadcast_async(flags, last);
  sum.wait();
  flags_from_last.wait();
  EXPECT_EQ(grad, std::vector<float>(100, static_cast<float>(n * (n - 1) / 2)));
  EXPECT_EQ(flags, std::vector<std::uint8_t>(5, static_cast<std::uint8_t>(n)));
  std::vector<double> loss{static_cast<double>(me)};
  mpidist::average(loss);
  EXPECT_EQ(loss[0], (n - 1) / 2.0);
  // The object forms of the vector itself: in place, the vector resized to the root's.
  std::vector<float> resized(static_cast<std::size_t>(me) + 1, 2.0f);
  mpidist::broadcast(resized, last);
  EXPECT_EQ(resized, std::vector<float>(N, 2.0f));
  std::vector<long long> steps(2, me);
  mpidist::all_reduce(steps, ReduceOp::Min);
  EXPECT_EQ(steps, std::vector<long long>(2, 0));
  // Any other contiguous container of elements (std::valarray) is a tensor, in place.
  std::valarray<double> field(static_cast<double>(me + 1), 4);
  mpidist::all_reduce(field, ReduceOp::Sum);
  EXPECT_EQ(field[3], n * (n + 1) / 2.0);
  std::valarray<double> fields(-1.0, 4 * N);
  mpidist::all_gather(field, fields);
  EXPECT_EQ(fields[4 * N - 1], n * (n + 1) / 2.0);
  // Raw bytes: std::byte elements are uint8, std::as_bytes views any tensor's.
  std::vector<std::byte> bytes(5, static_cast<std::byte>(me)), all_bytes(5 * N);
  mpidist::all_gather(bytes, all_bytes);
  EXPECT_EQ(all_bytes[5 * N - 1], static_cast<std::byte>(last));
  std::vector<std::byte> field_bytes(4 * sizeof(double) * N);
  mpidist::all_gather(std::as_bytes(std::span(std::as_const(mine))), std::span(field_bytes).first(3 * sizeof(float) * N));
  float from_last = 0;
  std::memcpy(&from_last, field_bytes.data() + 3 * sizeof(float) * (N - 1), sizeof from_last);
  EXPECT_EQ(from_last, static_cast<float>(last));
  std::vector<double> weights(3, me * 0.5);
  mpidist::broadcast(std::as_writable_bytes(std::span(weights)), last);
  EXPECT_EQ(weights, std::vector<double>(3, last * 0.5));
  mpidist::all_reduce(bytes, ReduceOp::Max);
  EXPECT_EQ(bytes, std::vector<std::byte>(5, static_cast<std::byte>(last)));
  // A const container where the call only reads it (InputView): in of the collectives.
  const std::vector<float>& read_only = mine;
  std::vector<float> gathered_again(3 * N, -1.0f);
  mpidist::all_gather(read_only, gathered_again);
  EXPECT_EQ(gathered_again, everyone);
  const std::vector<std::int32_t>& sent_to_each = to_each;
  std::vector<std::int32_t> again(N);
  mpidist::all_to_all(sent_to_each, std::vector<int>(N, 1), again, std::vector<long>(N, 1));
  EXPECT_EQ(again, from_each);
  std::vector<float> summed(3);
  mpidist::all_reduce_async(read_only, summed, ReduceOp::Sum).wait();
  EXPECT_EQ(summed, std::vector<float>(3, static_cast<float>(n * (n - 1) / 2)));
  // A typed pointer and a count, as from a raw array or cudaMalloc: the dtype is the pointer's.
  auto raw = std::make_unique<std::int64_t[]>(5);
  for (int i = 0; i < 5; ++i) raw[static_cast<std::size_t>(i)] = me + i;
  mpidist::all_reduce(mpidist::BufferView(raw.get(), 5), ReduceOp::Sum);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(raw[static_cast<std::size_t>(i)], n * (n - 1) / 2 + n * i);
  const double* input = in.data();
  std::vector<double> gathered(4 * N);
  mpidist::all_gather(mpidist::BufferView(input, 4), gathered);
  EXPECT_EQ(mpidist::BufferView(input, 4).dtype(), mpidist::DataType::Float64);
  EXPECT_EQ(gathered[4 * N - 1], static_cast<double>(last));
}

TEST_F(Collectives, AverageOneTensorAndADictionary) {
  TestBuffer<float> loss(fill<float>(ReduceOp::Avg, me(), 5));
  TestBuffer<double> accuracy(fill<double>(ReduceOp::Avg, me(), 3));
  mpidist::average(loss.view());
  std::vector<double> want_loss(5), want_accuracy(3);
  for (std::size_t i = 0; i < 5; ++i) want_loss[i] = expected_at<float>(ReduceOp::Avg, size(), i);
  for (std::size_t i = 0; i < 3; ++i) want_accuracy[i] = expected_at<double>(ReduceOp::Avg, size(), i);
  expect_values(loss.read(), want_loss, "average(view)");
  // The dictionary form averages every entry; loss is averaged a second time (a no-op on equal values).
  mpidist::average({{"loss", loss.view()}, {"accuracy", accuracy.view()}});
  expect_values(loss.read(), want_loss, "average(map) loss");
  expect_values(accuracy.read(), want_accuracy, "average(map) accuracy");
}

TEST_F(Collectives, SpanOverloads) {
  std::vector<std::int32_t> values(4, me() + 1);
  mpidist::all_reduce(std::span(values));
  EXPECT_EQ(values[3], size() * (size() + 1) / 2);
  std::vector<double> weights(3, me() == 0 ? 0.5 : -1.0);
  mpidist::broadcast(std::span(weights), 0);
  EXPECT_EQ(weights[2], 0.5);
}

#if MPIDIST_TEST_HAVE_CUDA
// With a caller's stream the collective is queued on it and the caller synchronizes; the
// emulation applies queued work only at synchronization, so a missing one would show here.
TEST_F(Collectives, ExplicitStreamOrdersTheCollective) {
  if (!on_device()) GTEST_SKIP() << "device runs only";
  mpidist::device();  // the stream must belong to this rank's device, as NCCL requires
  cudaStream_t stream = nullptr;
  cuda_ok(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  TestBuffer<float> buffer(fill<float>(ReduceOp::Sum, me(), 4097));
  TestBuffer<double> in(fill<double>(ReduceOp::Max, me(), 33));
  TestBuffer<double> out(std::vector<double>(33 * static_cast<std::size_t>(size()), 0.0));
  mpidist::all_reduce(buffer.view(), ReduceOp::Sum, stream);
  mpidist::all_gather(in.view(), out.view(), stream);
  cuda_ok(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  std::vector<double> want(4097), gathered;
  for (std::size_t i = 0; i < want.size(); ++i) want[i] = expected_at<float>(ReduceOp::Sum, size(), i);
  for (int r = 0; r < size(); ++r)
    for (std::size_t i = 0; i < 33; ++i) gathered.push_back(value_at<double>(ReduceOp::Max, r, i));
  expect_values(buffer.read(), want, "all_reduce on a stream");
  expect_values(out.read(), gathered, "all_gather on a stream");
  cudaStreamDestroy(stream);
}
#endif

// MPI counts are ints; the host path splits larger collectives. A small per-call limit reaches
// those code paths with small buffers (the NCCL path takes size_t counts and ignores it).
// Registered as its own run with MPIDIST_MPI_MAX_COUNT=1000 (the library reads it once).
TEST_F(Collectives, ChunkedAboveTheMpiCountLimit) {
  const char* limit = std::getenv("MPIDIST_MPI_MAX_COUNT");
  if (limit == nullptr || std::string(limit) != "1000") GTEST_SKIP() << "runs as collectives-chunked";
  all_reduce_case<float>(ReduceOp::Sum, 10'001, false);
  all_reduce_case<mpidist::float16>(ReduceOp::Avg, 2'501, true);
  broadcast_case<std::int8_t>(4'001, size() - 1);
  all_gather_case<double>(2'501);                              // blocks above the limit
  reduce_scatter_case<std::int64_t>(ReduceOp::Sum, 2'501);     // blocks above the limit
  reduce_scatter_case<mpidist::bfloat16>(ReduceOp::Max, 999);  // below it: one call
  reduce_case<std::uint8_t>(ReduceOp::Max, 3'001, size() - 1, false);
}

}  // namespace
