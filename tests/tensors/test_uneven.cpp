// all_to_all (equal and uneven), all_gather_v, gather and scatter on host memory: values on the
// world and on a split group whose main rank is not world rank 0, zero counts, one rank receiving
// everything, a MainProcessContext, local errors, and (MPIDIST_VALIDATE=1) mismatches across ranks.
#include <cstdint>
#include <cstdlib>
#include <numeric>
#include <string>
#include <vector>

#include "mpi_test.hpp"
#include "mpidist/mpidist.hpp"

namespace {

using namespace mpidist_test;
using mpidist::Communicator;
using Uneven = MpiTest;
using Counts = std::vector<std::size_t>;

Communicator reversed_rest() {
  const int me = mpidist::rank();
  if (mpidist::world_size() == 1) return mpidist::world();
  return mpidist::world().split(me == 0 ? Communicator::undefined : 7, -me);
}

bool validating() {
  const char* v = std::getenv("MPIDIST_VALIDATE");
  return v != nullptr && std::string(v) == "1";
}

// The value element x of the block that rank `from` sends rank `to`.
float value(int from, int to, std::size_t x) { return static_cast<float>(from * 10000 + to * 100) + static_cast<float>(x); }

void equal_blocks(const Communicator& comm, std::size_t k) {
  const int me = comm.rank(), n = comm.size();
  std::vector<float> in(k * static_cast<std::size_t>(n)), out(in.size(), -1.0f);
  for (int j = 0; j < n; ++j)
    for (std::size_t x = 0; x < k; ++x) in[static_cast<std::size_t>(j) * k + x] = value(me, j, x);
  mpidist::all_to_all(comm, std::span(in), std::span(out));
  for (int i = 0; i < n; ++i)
    for (std::size_t x = 0; x < k; ++x) ASSERT_EQ(out[static_cast<std::size_t>(i) * k + x], value(i, me, x));
}

// Rank i sends rank j count(i, j) elements.
template <class F>
void uneven_blocks(const Communicator& comm, F count) {
  const int me = comm.rank(), n = comm.size();
  Counts send(static_cast<std::size_t>(n)), recv(static_cast<std::size_t>(n));
  for (int j = 0; j < n; ++j) send[static_cast<std::size_t>(j)] = count(me, j);
  for (int i = 0; i < n; ++i) recv[static_cast<std::size_t>(i)] = count(i, me);
  std::vector<float> in, out(std::accumulate(recv.begin(), recv.end(), std::size_t{0}), -1.0f);
  for (int j = 0; j < n; ++j)
    for (std::size_t x = 0; x < send[static_cast<std::size_t>(j)]; ++x) in.push_back(value(me, j, x));
  mpidist::all_to_all(comm, std::span(in), send, std::span(out), recv);
  std::size_t at = 0;
  for (int i = 0; i < n; ++i)
    for (std::size_t x = 0; x < recv[static_cast<std::size_t>(i)]; ++x) ASSERT_EQ(out[at++], value(i, me, x)) << i;
}

void gathers(const Communicator& comm, int root, std::size_t k) {
  const int me = comm.rank(), n = comm.size();
  // all_gather_v: rank r holds r * k + 1 elements.
  Counts counts(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) counts[static_cast<std::size_t>(r)] = static_cast<std::size_t>(r) * k + 1;
  std::vector<float> mine(counts[static_cast<std::size_t>(me)]);
  for (std::size_t x = 0; x < mine.size(); ++x) mine[x] = value(me, 0, x);
  std::vector<float> all(std::accumulate(counts.begin(), counts.end(), std::size_t{0}));
  mpidist::all_gather_v(comm, std::span(mine), std::span(all), counts);
  std::size_t at = 0;
  for (int r = 0; r < n; ++r)
    for (std::size_t x = 0; x < counts[static_cast<std::size_t>(r)]; ++x) ASSERT_EQ(all[at++], value(r, 0, x));
  // gather: non-roots pass an empty out.
  std::vector<float> block(k);
  for (std::size_t x = 0; x < k; ++x) block[x] = value(me, root, x);
  std::vector<float> gathered(me == root ? k * static_cast<std::size_t>(n) : 0, -1.0f);
  mpidist::gather(comm, std::span(block), std::span(gathered), root);
  if (me == root) {
    for (int r = 0; r < n; ++r)
      for (std::size_t x = 0; x < k; ++x) ASSERT_EQ(gathered[static_cast<std::size_t>(r) * k + x], value(r, root, x));
  }
  // scatter: non-roots pass an empty in.
  std::vector<float> source;
  if (me == root)
    for (int r = 0; r < n; ++r)
      for (std::size_t x = 0; x < k; ++x) source.push_back(value(root, r, x));
  std::vector<float> piece(k, -1.0f);
  mpidist::scatter(comm, std::span(source), std::span(piece), root);
  for (std::size_t x = 0; x < k; ++x) ASSERT_EQ(piece[x], value(root, me, x));
}

TEST_F(Uneven, AllToAllEqualBlocks) {
  equal_blocks(mpidist::world(), 3);
  equal_blocks(mpidist::world(), 2500);  // past MPIDIST_MPI_MAX_COUNT in the chunked run
  equal_blocks(mpidist::world(), 0);
  const auto rest = reversed_rest();
  if (rest) equal_blocks(rest, 5);
  // The world form.
  const int n = mpidist::world_size();
  std::vector<std::int32_t> in(static_cast<std::size_t>(n), mpidist::rank()), out(in.size());
  mpidist::all_to_all(std::span(in), std::span(out));
  for (int i = 0; i < n; ++i) EXPECT_EQ(out[static_cast<std::size_t>(i)], i);
}

TEST_F(Uneven, AllToAllUnevenWithZeroCounts) {
  uneven_blocks(mpidist::world(), [](int i, int j) { return static_cast<std::size_t>((i + 2 * j) % 3); });
  uneven_blocks(mpidist::world(), [](int i, int j) { return static_cast<std::size_t>((i * 7 + j * 3) % 5) * 700; });
  const auto rest = reversed_rest();
  if (rest) uneven_blocks(rest, [](int i, int j) { return static_cast<std::size_t>(i + j); });
}

TEST_F(Uneven, AllToAllOneRankReceivesEverything) {
  uneven_blocks(mpidist::world(), [](int, int j) { return j == 0 ? std::size_t{4} : std::size_t{0}; });
  const auto rest = reversed_rest();
  if (rest) uneven_blocks(rest, [](int, int j) { return j == 0 ? std::size_t{1500} : std::size_t{0}; });
  // Nobody sends anything at all.
  uneven_blocks(mpidist::world(), [](int, int) { return std::size_t{0}; });
}

TEST_F(Uneven, AllGatherVGatherScatter) {
  const int last = mpidist::world_size() - 1;
  gathers(mpidist::world(), last, 3);
  gathers(mpidist::world(), 0, 1200);
  const auto rest = reversed_rest();
  if (rest) gathers(rest, 0, 4);
  // World forms.
  std::vector<double> one{static_cast<double>(mpidist::rank())}, all(static_cast<std::size_t>(mpidist::world_size()));
  Counts counts(all.size(), 1);
  mpidist::all_gather_v(std::span(one), std::span(all), counts);
  for (std::size_t r = 0; r < all.size(); ++r) EXPECT_EQ(all[r], static_cast<double>(r));
  std::vector<double> none;
  mpidist::gather(std::span(one), mpidist::rank() == 0 ? std::span(all) : std::span(none), 0);
  if (mpidist::rank() == 0) {
    for (std::size_t r = 0; r < all.size(); ++r) EXPECT_EQ(all[r], static_cast<double>(r));
  }
  std::vector<double> got(1);
  mpidist::scatter(mpidist::rank() == 0 ? std::span(all) : std::span(none), std::span(got), 0);
  EXPECT_EQ(got[0], static_cast<double>(mpidist::rank()));
}

TEST_F(Uneven, InsideAMainProcessContextAGroupOfOne) {
  if (mpidist::rank() != 0) return;
  mpidist::MainProcessContext main_only;
  std::vector<float> in{1, 2, 3}, out(3);
  mpidist::all_to_all(std::span(in), std::span(out));
  EXPECT_EQ(out, in);
  std::vector<float> v(3);
  mpidist::all_gather_v(std::span(in), std::span(v), Counts{3});
  EXPECT_EQ(v, in);
  std::vector<float> g(3);
  mpidist::gather(std::span(in), std::span(g), 0);
  EXPECT_EQ(g, in);
  expect_error([&] { mpidist::scatter(std::span(in), std::span(g), 1); }, {"scatter", "root 1 out of range", "MainProcessContext"});
}

TEST_F(Uneven, CountsThatDoNotAddUpAreErrors) {
  const int n = mpidist::world_size();
  const auto N = static_cast<std::size_t>(n);
  std::vector<float> in(N * 2), out(N * 2);
  Counts two(N, 2), wrong(N, 2);
  wrong[0] = 3;
  // Every rank makes the same mistake: the same Error everywhere, and the communicator goes on.
  expect_error([&] { mpidist::all_to_all(std::span(in), wrong, std::span(out), two); },
               {"all_to_all", "send_counts", "add up to " + std::to_string(2 * N + 1), "in has " + std::to_string(2 * N)});
  expect_error([&] { mpidist::all_to_all(std::span(in), two, std::span(out), wrong); }, {"all_to_all", "recv_counts", "add up to"});
  expect_error([&] { mpidist::all_to_all(std::span(in), Counts(N + 1, 0), std::span(out), two); },
               {"send_counts has " + std::to_string(N + 1) + " entries"});
  std::vector<float> odd(N * 2 + 1);
  if (n > 1) expect_error([&] { mpidist::all_to_all(std::span(odd), std::span(odd)); }, {"not a multiple of the world size"});
  expect_error([&] { mpidist::all_gather_v(std::span(odd), std::span(out), two); },
               {"all_gather_v", "] is 2 but this rank's in has " + std::to_string(2 * N + 1) + " elements"});
  expect_error([&] { mpidist::gather(std::span(in), std::span(out), n); }, {"gather", "root " + std::to_string(n) + " out of range"});
  std::vector<std::int32_t> ints(N * 2);
  expect_error([&] { mpidist::all_to_all(std::span(in), std::span(ints)); }, {"element type float32 but out has int32"});
  expect_error([&] { mpidist::all_to_all(std::span(in), std::span(in)); }, {"overlap"});
  equal_blocks(mpidist::world(), 2);
}

TEST_F(Uneven, MismatchesAcrossRanksNameEachRanksValue) {
  if (!validating() || mpidist::world_size() == 1) GTEST_SKIP() << "needs MPIDIST_VALIDATE=1 and two ranks";
  const int me = mpidist::rank(), n = mpidist::world_size();
  const auto N = static_cast<std::size_t>(n);
  // Rank 1 expects one element more from rank 0 than rank 0 sends it.
  Counts send(N, 1), recv(N, 1);
  if (me == 1) recv[0] = 2;
  std::vector<float> in(N), out(me == 1 ? N + 1 : N);
  expect_error([&] { mpidist::all_to_all(std::span(in), send, std::span(out), recv); },
               {"all_to_all", "recv_counts do not match", "rank 1: recv_counts[0] is 2 but rank 0 sends 1"});
  // Ranks disagree on all_gather_v's counts: rank 1 thinks rank 0 has 2.
  Counts counts(N, 1);
  if (me == 1) counts[0] = 2;
  std::vector<float> one(1), all(me == 1 ? N + 1 : N);
  expect_error([&] { mpidist::all_gather_v(std::span(one), std::span(all), counts); },
               {"all_gather_v", "ranks disagree on the counts", "rank 0 has [1, 1", "rank 1 has [2, 1"});
  // gather with different block sizes.
  std::vector<float> block(me == 0 ? 2 : 3), gathered(me == 0 ? 2 * N : 0);
  expect_error([&] { mpidist::gather(std::span(block), std::span(gathered), 0); },
               {"gather", "ranks disagree on in's count", "rank 0 has 2", "rank 1 has 3"});
  // The communicator is still usable: every rank raised the same Error.
  equal_blocks(mpidist::world(), 2);
}

}  // namespace
