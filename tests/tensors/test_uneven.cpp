// all_to_all (equal and uneven), all_gather_v, gather and scatter on host memory, and on device
// memory with MPIDIST_TEST_DEVICE=1 (NCCL, or staged with MPIDIST_BACKEND=mpi): values on the
// world and on a split group whose main rank is not world rank 0, zero counts, one rank receiving
// everything, a rank with nothing at all, a MainProcessContext, local errors, and (validated:
// MPIDIST_VALIDATE=1, or device runs under auto) mismatches across ranks.
#include <array>
#include <cstdint>
#include <cstdlib>
#include <numeric>
#include <string>
#include <vector>

#include "mpi_test.hpp"
#include "mpidist/mpidist.hpp"
#include "tensor_buffers.hpp"

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

// MPIDIST_VALIDATE=1, or unset in a device run: auto checks where the job has a GPU.
// Whether calls on this run's buffers are checked across the ranks: MPIDIST_VALIDATE=1, or under
// auto the device runs (the emulation reports a GPU).
bool validating() {
  const char* v = std::getenv("MPIDIST_VALIDATE");
  return v != nullptr ? std::string(v) == "1" : on_device();
}
// Whether host calls are checked too: only MPIDIST_VALIDATE=1 (auto leaves them to MPI's contract).
bool validating_host_calls() {
  const char* v = std::getenv("MPIDIST_VALIDATE");
  return v != nullptr && std::string(v) == "1";
}

// The value element x of the block that rank `from` sends rank `to`.
float value(int from, int to, std::size_t x) { return static_cast<float>(from * 10000 + to * 100) + static_cast<float>(x); }

void equal_blocks(const Communicator& comm, std::size_t k) {
  const int me = comm.rank(), n = comm.size();
  std::vector<float> values(k * static_cast<std::size_t>(n));
  for (int j = 0; j < n; ++j)
    for (std::size_t x = 0; x < k; ++x) values[static_cast<std::size_t>(j) * k + x] = value(me, j, x);
  TestBuffer<float> in(values), result(std::vector<float>(values.size(), -1.0f));
  mpidist::all_to_all(comm, in.view(), result.view());
  const auto out = result.read();
  for (int i = 0; i < n; ++i)
    for (std::size_t x = 0; x < k; ++x) ASSERT_EQ(out[static_cast<std::size_t>(i) * k + x], value(i, me, x));
}

// Rank i sends rank j count(i, j) elements; the counts held as std::vector<Int>.
template <class Int = std::size_t, class F>
void uneven_blocks(const Communicator& comm, F count) {
  const int me = comm.rank(), n = comm.size();
  std::vector<Int> send(static_cast<std::size_t>(n)), recv(static_cast<std::size_t>(n));
  for (int j = 0; j < n; ++j) send[static_cast<std::size_t>(j)] = static_cast<Int>(count(me, j));
  for (int i = 0; i < n; ++i) recv[static_cast<std::size_t>(i)] = static_cast<Int>(count(i, me));
  std::vector<float> values;
  for (int j = 0; j < n; ++j)
    for (std::size_t x = 0; x < static_cast<std::size_t>(send[static_cast<std::size_t>(j)]); ++x)
      values.push_back(value(me, j, x));
  const auto total = static_cast<std::size_t>(std::accumulate(recv.begin(), recv.end(), Int{0}));
  TestBuffer<float> in(values), result(std::vector<float>(total, -1.0f));
  mpidist::all_to_all(comm, in.view(), send, result.view(), recv);
  const auto out = result.read();
  std::size_t at = 0;
  for (int i = 0; i < n; ++i)
    for (std::size_t x = 0; x < static_cast<std::size_t>(recv[static_cast<std::size_t>(i)]); ++x)
      ASSERT_EQ(out[at++], value(i, me, x)) << i;
}

void gathers(const Communicator& comm, int root, std::size_t k) {
  const int me = comm.rank(), n = comm.size();
  // all_gather_v: rank r holds r * k + 1 elements.
  Counts counts(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) counts[static_cast<std::size_t>(r)] = static_cast<std::size_t>(r) * k + 1;
  std::vector<float> values(counts[static_cast<std::size_t>(me)]);
  for (std::size_t x = 0; x < values.size(); ++x) values[x] = value(me, 0, x);
  TestBuffer<float> mine(values), everyone(std::vector<float>(std::accumulate(counts.begin(), counts.end(), std::size_t{0})));
  mpidist::all_gather_v(comm, mine.view(), everyone.view(), counts);
  const auto all = everyone.read();
  std::size_t at = 0;
  for (int r = 0; r < n; ++r)
    for (std::size_t x = 0; x < counts[static_cast<std::size_t>(r)]; ++x) ASSERT_EQ(all[at++], value(r, 0, x));
  // gather: non-roots pass an empty out.
  std::vector<float> values_to_root(k);
  for (std::size_t x = 0; x < k; ++x) values_to_root[x] = value(me, root, x);
  TestBuffer<float> block(values_to_root), at_root(std::vector<float>(me == root ? k * static_cast<std::size_t>(n) : 0, -1.0f));
  mpidist::gather(comm, block.view(), at_root.view(), root);
  if (me == root) {
    const auto gathered = at_root.read();
    for (int r = 0; r < n; ++r)
      for (std::size_t x = 0; x < k; ++x) ASSERT_EQ(gathered[static_cast<std::size_t>(r) * k + x], value(r, root, x));
  }
  // scatter: non-roots pass an empty in.
  std::vector<float> source;
  if (me == root)
    for (int r = 0; r < n; ++r)
      for (std::size_t x = 0; x < k; ++x) source.push_back(value(root, r, x));
  TestBuffer<float> from_root(source), mine_of_it(std::vector<float>(k, -1.0f));
  mpidist::scatter(comm, from_root.view(), mine_of_it.view(), root);
  const auto piece = mine_of_it.read();
  for (std::size_t x = 0; x < k; ++x) ASSERT_EQ(piece[x], value(root, me, x));
}

TEST_F(Uneven, AllToAllEqualBlocks) {
  equal_blocks(mpidist::world(), 3);
  equal_blocks(mpidist::world(), 2500);  // past MPIDIST_MPI_MAX_COUNT in the chunked run
  equal_blocks(mpidist::world(), 0);
  const auto rest = reversed_rest();
  if (rest) equal_blocks(rest, 5);
  // The world form.
  const auto n = static_cast<std::size_t>(mpidist::world_size());
  TestBuffer<std::int32_t> in(std::vector<std::int32_t>(n, mpidist::rank())), out{std::vector<std::int32_t>(n)};
  mpidist::all_to_all(in.view(), out.view());
  const auto got = out.read();
  for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(got[i], static_cast<std::int32_t>(i));
}

// Equal blocks around a rank's blocks filling a segment half (256 KiB): across nodes the nodes'
// leaders carry them below it where they take them (MPIDIST_HOST_ALLREDUCE=shm), MPI above; and
// around auto's 32 KiB a rank across hosts and its 128 KiB where a host's ranks share only its cores
// (below it on uneven nodes, from it on even ones). On the world and on a group that interleaves the
// nodes, whose leaders' blocks are not their nodes' lowest ranks'.
TEST_F(Uneven, AllToAllAroundTheSegmentHalf) {
  const Communicator world = mpidist::world();
  const Communicator interleaved = world.split(0, (world.rank() % 2) * world.size() - world.rank());
  for (const Communicator* comm : {&world, &interleaved}) {
    const auto floats = [&](std::size_t bytes) { return bytes / sizeof(float) / static_cast<std::size_t>(comm->size()); };
    // auto's edges: 32 KiB a rank, and 128 KiB where a host's ranks share only its cores.
    const std::size_t fill = floats(std::size_t{256} << 10), automatic = floats(std::size_t{32} << 10),
                      within_hosts = floats(std::size_t{128} << 10);
    for (const std::size_t k : {fill - 1, fill, fill + 1, automatic - 1, automatic, automatic + 1, within_hosts - 1,
                                within_hosts, within_hosts + 1}) {
      SCOPED_TRACE("group of " + std::to_string(comm->size()) + ", blocks of " + std::to_string(k) + " floats");
      equal_blocks(*comm, k);
      if (HasFatalFailure()) return;
    }
  }
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
  // The last rank neither sends nor receives: its buffers are empty (host memory, as far as it can
  // tell) and it still follows the others' path (a device run: their NCCL group, or staging).
  const int last = mpidist::world_size() - 1;
  uneven_blocks(mpidist::world(), [last](int i, int j) { return i == last || j == last ? std::size_t{0} : std::size_t{3}; });
  equal_blocks(mpidist::world(), 2);  // and the ranks are still in step
}

// On one node the blocks go through the segment in steps of at most a quarter MiB a rank, and,
// where MPI moves large messages in one copy (the uneven-single-copy run), from 4 MiB a rank
// through MPI (the ranks decide alike in the first step): blocks over several steps, ranks that
// need different numbers of steps, and a call past the switch.
TEST_F(Uneven, BlocksLargerThanOneStep) {
  uneven_blocks(mpidist::world(), [](int i, int j) { return static_cast<std::size_t>((i * 3 + j) % 4) * 40000; });
  uneven_blocks(mpidist::world(), [](int i, int j) { return i == 0 && j > 0 ? std::size_t{150000} : std::size_t{1}; });
  uneven_blocks(mpidist::world(), [](int, int j) { return j == 0 ? std::size_t{90000} : std::size_t{0}; });
  equal_blocks(mpidist::world(), 1'200'000 / static_cast<std::size_t>(mpidist::world_size()));
  gathers(mpidist::world(), mpidist::world_size() - 1, 70000);
  equal_blocks(mpidist::world(), 3);  // and the ranks are still in step
}

// The byte x of the block that rank `from` sends rank `to`.
std::uint8_t byte_value(int from, int to, std::size_t x) { return static_cast<std::uint8_t>(from * 53 + to * 17 + x * 3 + 1); }

// Rank i sends rank j count(i, j) bytes, all_to_all's split form.
template <class F>
void uneven_bytes(const Communicator& comm, F count) {
  const int me = comm.rank(), n = comm.size();
  Counts send(static_cast<std::size_t>(n)), recv(static_cast<std::size_t>(n));
  std::vector<std::uint8_t> values;
  for (int j = 0; j < n; ++j) {
    send[static_cast<std::size_t>(j)] = count(me, j);
    recv[static_cast<std::size_t>(j)] = count(j, me);
    for (std::size_t x = 0; x < count(me, j); ++x) values.push_back(byte_value(me, j, x));
  }
  TestBuffer<std::uint8_t> in(values), result(std::vector<std::uint8_t>(std::accumulate(recv.begin(), recv.end(), std::size_t{0}), 0));
  mpidist::all_to_all(comm, in.view(), send, result.view(), recv);
  const auto out = result.read();
  std::size_t at = 0;
  for (int i = 0; i < n; ++i)
    for (std::size_t x = 0; x < recv[static_cast<std::size_t>(i)]; ++x)
      ASSERT_EQ(out[at++], byte_value(i, me, x)) << "from rank " << i << ", byte " << x;
}

// Every shape at every size around a control line's 56 payload bytes: a step whose header (a byte
// for its form, one per rank) and pieces fit goes in the sender's control line, one byte more in
// its half; the two forms meet when ranks send different amounts.
TEST_F(Uneven, SmallMessagesAroundTheControlLine) {
  const Communicator world = mpidist::world();
  const int me = world.rank(), n = world.size();
  const auto ranks = static_cast<std::size_t>(n);
  for (std::size_t k = 0; k <= 64; ++k) {
    SCOPED_TRACE("k = " + std::to_string(k));
    // Equal blocks: (n - 1) k bytes from every rank.
    uneven_bytes(world, [k](int, int) { return k; });
    std::vector<std::uint8_t> blocks;
    for (int j = 0; j < n; ++j)
      for (std::size_t x = 0; x < k; ++x) blocks.push_back(byte_value(me, j, x));
    TestBuffer<std::uint8_t> in(blocks), out(std::vector<std::uint8_t>(blocks.size(), 0));
    mpidist::all_to_all(world, in.view(), out.view());
    const auto got = out.read();
    for (int i = 0; i < n; ++i)
      for (std::size_t x = 0; x < k; ++x) ASSERT_EQ(got[static_cast<std::size_t>(i) * k + x], byte_value(i, me, x));
    // Ranks that send different amounts (some in line, some in their half), and one rank
    // receiving everything.
    uneven_bytes(world, [k](int i, int j) { return (k + static_cast<std::size_t>(i) * 5 + static_cast<std::size_t>(j)) % 61; });
    uneven_bytes(world, [k, n](int, int j) { return j == n - 1 ? k : std::size_t{0}; });
    // all_gather_v: rank r contributes k + r bytes (one copy in line for all).
    Counts counts(ranks);
    for (std::size_t r = 0; r < ranks; ++r) counts[r] = k + r;
    std::vector<std::uint8_t> mine(counts[static_cast<std::size_t>(me)]);
    for (std::size_t x = 0; x < mine.size(); ++x) mine[x] = byte_value(me, 0, x);
    TestBuffer<std::uint8_t> mine_buffer(mine), all(std::vector<std::uint8_t>(std::accumulate(counts.begin(), counts.end(), std::size_t{0}), 0));
    mpidist::all_gather_v(world, mine_buffer.view(), all.view(), counts);
    const auto everyone = all.read();
    std::size_t at = 0;
    for (int r = 0; r < n; ++r)
      for (std::size_t x = 0; x < counts[static_cast<std::size_t>(r)]; ++x) ASSERT_EQ(everyone[at++], byte_value(r, 0, x));
    // gather and scatter of k bytes a rank, rooted at the last rank.
    const int root = n - 1;
    std::vector<std::uint8_t> to_root(k), from_root;
    for (std::size_t x = 0; x < k; ++x) to_root[x] = byte_value(me, root, x);
    if (me == root)
      for (int r = 0; r < n; ++r)
        for (std::size_t x = 0; x < k; ++x) from_root.push_back(byte_value(root, r, x));
    TestBuffer<std::uint8_t> block(to_root), at_root(std::vector<std::uint8_t>(me == root ? k * ranks : 0, 0));
    mpidist::gather(world, block.view(), at_root.view(), root);
    if (me == root) {
      const auto gathered = at_root.read();
      for (int r = 0; r < n; ++r)
        for (std::size_t x = 0; x < k; ++x) ASSERT_EQ(gathered[static_cast<std::size_t>(r) * k + x], byte_value(r, root, x));
    }
    TestBuffer<std::uint8_t> source(from_root), piece(std::vector<std::uint8_t>(k, 0));
    mpidist::scatter(world, source.view(), piece.view(), root);
    const auto mine_of_it = piece.read();
    for (std::size_t x = 0; x < k; ++x) ASSERT_EQ(mine_of_it[x], byte_value(root, me, x));
  }
}

// Every rank sends every other its block of count(me, j) values and checks what it got.
template <class F>
void host_uneven_blocks(const Communicator& comm, F count) {
  const int me = comm.rank(), n = comm.size();
  Counts send(static_cast<std::size_t>(n)), recv(static_cast<std::size_t>(n));
  std::vector<float> values;
  for (int j = 0; j < n; ++j) {
    send[static_cast<std::size_t>(j)] = count(me, j);
    recv[static_cast<std::size_t>(j)] = count(j, me);
    for (std::size_t x = 0; x < count(me, j); ++x) values.push_back(value(me, j, x));
  }
  std::vector<float> out(std::accumulate(recv.begin(), recv.end(), std::size_t{0}), -1.0f);
  mpidist::all_to_all(comm, std::span<const float>(values), send, std::span<float>(out), recv);
  std::size_t at = 0;
  for (int i = 0; i < n; ++i)
    for (std::size_t x = 0; x < recv[static_cast<std::size_t>(i)]; ++x) ASSERT_EQ(out[at++], value(i, me, x)) << i;
}

// On a fresh communicator, rank 0 sends rank 1 `sent` elements where rank 1 expects `expected`
// (the others 2 each): rank 1 gets an Error naming both and its communicator is broken; the others
// complete, and nothing is written past rank 1's block.
void rank_0_sends_rank_1(std::size_t sent, std::size_t expected = 2) {
  const int me = mpidist::rank();
  const auto n = static_cast<std::size_t>(mpidist::world_size());
  const Communicator comm = mpidist::world().split(0, me);
  Counts send(n, 2), recv(n, 2);
  if (me == 0) send[1] = sent;
  if (me == 1) recv[0] = expected;
  std::vector<float> values(std::accumulate(send.begin(), send.end(), std::size_t{0}), 5.0f);
  std::vector<float> out(std::accumulate(recv.begin(), recv.end(), std::size_t{0}) + 1, -1.0f);  // + a guard
  std::string error;
  try {
    mpidist::all_to_all(comm, std::span<const float>(values), send, std::span<float>(out).first(out.size() - 1), recv);
  } catch (const mpidist::Error& e) {
    error = e.what();
  }
  if (me == 1) {
    for (const std::string& part : {"recv_counts[0] is " + std::to_string(expected) + " but", std::string("rank 0 "),
                                    std::to_string(sent)})
      EXPECT_NE(error.find(part), std::string::npos) << part << "\n" << error;
    EXPECT_THROW(mpidist::barrier(comm), mpidist::Error);  // broken here
  } else {
    EXPECT_EQ(error, "");
  }
  EXPECT_EQ(out.back(), -1.0f);  // nothing past the block
}

// Unchecked (no MPIDIST_VALIDATE=1), a receiver whose recv_counts differ from what its sender sends
// gets an Error naming both, and nothing is written past its block. As after any Error raised on
// one rank alone, its communicator is broken there (a fresh one each). Through the node's segment
// more and fewer elements in the sender's control line (8 or 12 bytes to rank 1), and more in its
// half (120 bytes, past the line) and past a piece of the chunked run against 8 expected; on MPI's
// pairwise path (groups across nodes) the same, never MPI's truncation (a wait that Open MPI could
// leave unfinished, an abort under MPICH), also past 64 KiB. Then a receiver that expects nothing:
// an Error there too, where the block had once waited silently for the communicator's next call.
// Then the world's splits go on, right on every rank.
TEST_F(Uneven, UncheckedCountMismatchIsAnErrorOnTheReceiver) {
  if (validating_host_calls() || on_device() || mpidist::world_size() < 2)
    GTEST_SKIP() << "host memory, unchecked, two ranks or more";
  for (const std::size_t sent : {3, 1, 30, 2000, 2500, 20000}) rank_0_sends_rank_1(sent);
  rank_0_sends_rank_1(2, 0);
  rank_0_sends_rank_1(1000, 2000);  // in the chunked run: one full piece, where two were expected
  // Blocks past TCP's eager size (64 KiB: 16384 floats), more and fewer.
  rank_0_sends_rank_1(2, 20000);
  rank_0_sends_rank_1(16384, 20000);
  rank_0_sends_rank_1(20000, 16384);
  equal_blocks(mpidist::world(), 2);  // the world goes on
  host_uneven_blocks(mpidist::world(), [](int i, int j) { return static_cast<std::size_t>((i + 2 * j) % 3); });
  // Blocks of whole pieces (the chunked run's 1000 elements), and none, beside each other.
  host_uneven_blocks(mpidist::world(), [](int i, int j) { return static_cast<std::size_t>((i + j) % 3 * 1000); });
  // Blocks on both sides of 64 KiB, and none, beside each other.
  const std::size_t around_64k[] = {0, 16383, 16384, 16385, 40000};
  host_uneven_blocks(mpidist::world(), [&](int i, int j) { return around_64k[static_cast<std::size_t>(i + 2 * j) % 5]; });
}

// In a job with a GPU (the device runs), host memory's splits carry each rank's standing with
// their blocks, in the segment on one node and in a header beside each block on MPI's path
// (MPIDIST_HOST_ALLREDUCE=mpi, simulated nodes): blocks inline in the header (up to 1 KiB) and on
// both sides of it, in pieces (MPIDIST_MPI_MAX_COUNT), a rank with nothing, then a receiver whose
// recv_counts differ from its sender's (more and fewer: both named, not MPI's truncation error).
TEST_F(Uneven, HostSplitsInAJobWithAGpu) {
  if (!on_device() || validating_host_calls() || mpidist::world_size() < 2)
    GTEST_SKIP() << "host memory in a device run, unchecked, two ranks or more";
  const Communicator world = mpidist::world();
  for (const std::size_t k : {0, 1, 255, 256, 257, 3001}) {
    SCOPED_TRACE("k = " + std::to_string(k));
    host_uneven_blocks(world, [k](int, int) { return k; });
    host_uneven_blocks(world, [k](int i, int j) { return (i + j) % 2 == 0 ? k : std::size_t{3}; });
  }
  const int last = mpidist::world_size() - 1;
  host_uneven_blocks(world, [last](int i, int j) { return i == last || j == last ? std::size_t{0} : std::size_t{300}; });
  for (const std::size_t sent : {1, 3, 300}) {
    SCOPED_TRACE("sent = " + std::to_string(sent));
    rank_0_sends_rank_1(sent);
  }
  host_uneven_blocks(world, [](int i, int j) { return static_cast<std::size_t>((i + 2 * j) % 3); });  // in step
  equal_blocks(world, 2);
}

TEST_F(Uneven, AllGatherVGatherScatter) {
  const int last = mpidist::world_size() - 1;
  gathers(mpidist::world(), last, 3);
  gathers(mpidist::world(), 0, 1200);
  const auto rest = reversed_rest();
  if (rest) gathers(rest, 0, 4);
  // World forms.
  const auto n = static_cast<std::size_t>(mpidist::world_size());
  std::vector<double> ranks(n);
  std::iota(ranks.begin(), ranks.end(), 0.0);
  TestBuffer<double> one(std::vector<double>{static_cast<double>(mpidist::rank())}), all(std::vector<double>(n, -1.0));
  mpidist::all_gather_v(one.view(), all.view(), Counts(n, 1));
  EXPECT_EQ(all.read(), ranks);
  TestBuffer<double> none(std::vector<double>{}), at_root(std::vector<double>(n, -1.0));
  mpidist::gather(one.view(), mpidist::rank() == 0 ? at_root.view() : none.view(), 0);
  if (mpidist::rank() == 0) {
    EXPECT_EQ(at_root.read(), ranks);
  }
  TestBuffer<double> got(std::vector<double>{-1.0});
  mpidist::scatter(mpidist::rank() == 0 ? all.view() : none.view(), got.view(), 0);
  EXPECT_EQ(got.read(), std::vector<double>{static_cast<double>(mpidist::rank())});
  // Calls that move no element on any rank return at once, as MPI's do, and leave the ranks in
  // step for the next call (which would otherwise pair with another rank's different call).
  for (int root : {0, last}) {
    mpidist::all_gather_v(none.view(), none.view(), Counts(n, 0));
    mpidist::gather(none.view(), none.view(), root);
    mpidist::scatter(none.view(), none.view(), root);
    mpidist::all_to_all(none.view(), none.view());
    gathers(mpidist::world(), root, 2);
  }
}

TEST_F(Uneven, InsideAMainProcessContextAGroupOfOne) {
  if (mpidist::rank() != 0) return;
  mpidist::MainProcessContext main_only;
  const std::vector<float> values{1, 2, 3};
  TestBuffer<float> in(values), out(std::vector<float>(3)), v(std::vector<float>(3)), g(std::vector<float>(3));
  mpidist::all_to_all(in.view(), out.view());
  EXPECT_EQ(out.read(), values);
  mpidist::all_gather_v(in.view(), v.view(), Counts{3});
  EXPECT_EQ(v.read(), values);
  mpidist::gather(in.view(), g.view(), 0);
  EXPECT_EQ(g.read(), values);
  expect_error([&] { mpidist::scatter(in.view(), g.view(), 1); }, {"scatter", "root 1 out of range", "MainProcessContext"});
}

TEST_F(Uneven, CountsThatDoNotAddUpAreErrors) {
  const int n = mpidist::world_size();
  const auto N = static_cast<std::size_t>(n);
  TestBuffer<float> in_buffer(std::vector<float>(N * 2)), out_buffer(std::vector<float>(N * 2));
  const auto in = in_buffer.view(), out = out_buffer.view();
  Counts two(N, 2), wrong(N, 2);
  wrong[0] = 3;
  // Every rank makes the same mistake: the same Error everywhere, and the communicator goes on.
  expect_error([&] { mpidist::all_to_all(in, wrong, out, two); },
               {"all_to_all", "send_counts", "add up to " + std::to_string(2 * N + 1), "in has " + std::to_string(2 * N)});
  expect_error([&] { mpidist::all_to_all(in, two, out, wrong); }, {"all_to_all", "recv_counts", "add up to"});
  expect_error([&] { mpidist::all_to_all(in, Counts(N + 1, 0), out, two); },
               {"send_counts has " + std::to_string(N + 1) + " entries"});
  TestBuffer<float> odd_buffer(std::vector<float>(N * 2 + 1));
  const auto odd = odd_buffer.view();
  if (n > 1) expect_error([&] { mpidist::all_to_all(odd, odd); }, {"not a multiple of the world size"});
  expect_error([&] { mpidist::all_gather_v(odd, out, two); },
               {"all_gather_v", "] is 2 but this rank's in has " + std::to_string(2 * N + 1) + " elements"});
  expect_error([&] { mpidist::gather(in, out, n); }, {"gather", "root " + std::to_string(n) + " out of range"});
  TestBuffer<std::int32_t> ints(std::vector<std::int32_t>(N * 2));
  expect_error([&] { mpidist::all_to_all(in, ints.view()); }, {"element type float32 but out has int32"});
  if (on_device()) {  // in and out in different memory
    std::vector<float> host(N * 2);
    expect_error([&] { mpidist::all_to_all(in, std::span(host)); }, {"all_to_all", "same memory", "out on host memory"});
  }
  expect_error([&] { mpidist::all_to_all(in, in); }, {"overlap"});
  equal_blocks(mpidist::world(), 2);
}

// Counts as users hold them: MPI's int, long long, unsigned, std::size_t, a span of const int, a
// braced list, an array; blocking and not (the non-blocking forms copy a temporary list at issue).
// A negative count is a local Error naming it (never a huge size_t), and the communicator goes on.
TEST_F(Uneven, CountsOfAnyIntegerType) {
  const int me = mpidist::rank(), n = mpidist::world_size();
  const auto N = static_cast<std::size_t>(n);
  const auto count = [](int i, int j) { return static_cast<std::size_t>((i + 2 * j) % 3); };
  uneven_blocks<int>(mpidist::world(), count);
  uneven_blocks<long long>(mpidist::world(), count);
  uneven_blocks<unsigned>(mpidist::world(), count);
  uneven_blocks<std::int8_t>(mpidist::world(), count);
  const auto rest = reversed_rest();
  if (rest) uneven_blocks<int>(rest, [](int i, int j) { return static_cast<std::size_t>(i + j + 1); });

  // all_gather_v: rank r holds r + 1 elements.
  std::vector<int> counts(N);
  for (int r = 0; r < n; ++r) counts[static_cast<std::size_t>(r)] = r + 1;
  const std::size_t total = N * (N + 1) / 2;
  std::vector<double> expected;
  for (int r = 0; r < n; ++r)
    for (int x = 0; x <= r; ++x) expected.push_back(r * 100.0 + x);
  std::vector<double> values(static_cast<std::size_t>(me) + 1);
  for (std::size_t x = 0; x < values.size(); ++x) values[x] = me * 100.0 + static_cast<double>(x);
  TestBuffer<double> mine(values);
  const auto gathered = [&](const auto& call) {  // call(out) into a fresh buffer; its contents
    TestBuffer<double> all(std::vector<double>(total, -1.0));
    call(all.view());
    return all.read();
  };
  EXPECT_EQ(gathered([&](mpidist::BufferView all) { mpidist::all_gather_v(mine.view(), all, counts); }), expected);
  EXPECT_EQ(gathered([&](mpidist::BufferView all) {
              mpidist::all_gather_v(mpidist::world(), mine.view(), all, std::span<const int>(counts));
            }), expected);
  EXPECT_EQ(gathered([&](mpidist::BufferView all) {
              auto work = mpidist::all_gather_v_async(mine.view(), all, std::vector<long>(counts.begin(), counts.end()));
              work.wait();
            }), expected);
  if (n <= 3) {  // a braced list holds a fixed number of ranks
    EXPECT_EQ(gathered([&](mpidist::BufferView all) {
                if (n == 1) mpidist::all_gather_v(mine.view(), all, {1});
                if (n == 2) mpidist::all_gather_v(mine.view(), all, {1, 2});
                if (n == 3) mpidist::all_gather_v(mine.view(), all, std::array<std::uint64_t, 3>{1, 2, 3});
              }), expected);
  }

  // Negative counts, the same on every rank: the same Error everywhere, naming the count.
  std::vector<int> negative(N, 1);
  negative[N - 1] = -1;
  TestBuffer<double> ones(std::vector<double>(N, 1.0)), out(std::vector<double>(N, -1.0));
  TestBuffer<double> all(std::vector<double>(total, -1.0));
  expect_error([&] { mpidist::all_gather_v(mine.view(), all.view(), negative); },
               {"all_gather_v", "counts[" + std::to_string(N - 1) + "] is -1", "cannot be negative"});
  std::vector<long long> ones_to_each(N, 1), minus(N, 1);
  minus[0] = -5;
  expect_error([&] { mpidist::all_to_all(ones.view(), minus, out.view(), ones_to_each); },
               {"all_to_all", "send_counts[0] is -5", "cannot be negative"});
  expect_error([&] { mpidist::all_to_all(ones.view(), ones_to_each, out.view(), minus); },
               {"all_to_all", "recv_counts[0] is -5"});
  auto failed = mpidist::all_to_all_async(ones.view(), minus, out.view(), ones_to_each);
  expect_error([&] { failed.wait(); }, {"all_to_all", "send_counts[0] is -5"});
  EXPECT_EQ(out.read(), std::vector<double>(N, -1.0));  // nothing moved
  equal_blocks(mpidist::world(), 3);
  uneven_blocks<int>(mpidist::world(), count);
}

// One rank's own bad arguments where the ranks check their calls together, or vote on the path of
// all_to_all's splits (a job with a GPU: on one node the vote travels in the segment's first step):
// every rank raises the Error naming that rank, nothing moves, and the communicator goes on.
TEST_F(Uneven, OneRanksOwnFailureIsAnErrorOnEveryRank) {
  if (mpidist::world_size() < 2 || !(validating_host_calls() || on_device()))
    GTEST_SKIP() << "checked host calls, or a device run (the ranks vote on the path)";
  const int me = mpidist::rank();
  const auto N = static_cast<std::size_t>(mpidist::world_size());
  TestBuffer<float> in(std::vector<float>(N * 2, 1.0f)), out(std::vector<float>(N * 2, -1.0f));
  Counts two(N, 2), bad(N, 2);
  bad[0] = 3;  // rank 1's send_counts add up to one more than its in holds
  for (int round = 0; round < 2; ++round) {
    expect_error([&] { mpidist::all_to_all(in.view(), me == 1 ? bad : two, out.view(), two); },
                 {"all_to_all", "rank 1 failed", "send_counts", "add up to " + std::to_string(2 * N + 1)});
    EXPECT_EQ(out.read(), std::vector<float>(N * 2, -1.0f));  // nothing moved
    uneven_blocks(mpidist::world(), [](int i, int j) { return static_cast<std::size_t>((i + 2 * j) % 3); });
  }
  std::vector<int> twos(N, 2), negative(N, 2);
  negative[1] = -2;
  expect_error([&] { mpidist::all_to_all(in.view(), twos, out.view(), me == 1 ? negative : twos); },
               {"all_to_all", "rank 1 failed", "recv_counts[1] is -2"});
  EXPECT_EQ(out.read(), std::vector<float>(N * 2, -1.0f));
  // Under auto a device run checks device calls: a rank in host memory among ranks in device memory
  // is the agreement's Error on every rank, after the vote sent them all to the device path.
  if (on_device() && std::getenv("MPIDIST_VALIDATE") == nullptr) {
    std::vector<float> host_in(N * 2), host_out(N * 2);
    expect_error([&] {
      if (me == 0) mpidist::all_to_all(std::span<const float>(host_in), two, std::span<float>(host_out), two);
      else mpidist::all_to_all(in.view(), two, out.view(), two);
    }, {"all_to_all", "ranks disagree on the memory", "rank 0 has host memory", "rank 1 has device memory"});
  }
  equal_blocks(mpidist::world(), 2);
}

TEST_F(Uneven, MismatchesAcrossRanksNameEachRanksValue) {
  if (!validating() || mpidist::world_size() == 1) GTEST_SKIP() << "needs validation and two ranks";
  const int me = mpidist::rank(), n = mpidist::world_size();
  const auto N = static_cast<std::size_t>(n);
  // Rank 1 expects one element more from rank 0 than rank 0 sends it.
  Counts send(N, 1), recv(N, 1);
  if (me == 1) recv[0] = 2;
  TestBuffer<float> in{std::vector<float>(N)}, out(std::vector<float>(me == 1 ? N + 1 : N));
  expect_error([&] { mpidist::all_to_all(in.view(), send, out.view(), recv); },
               {"all_to_all", "recv_counts do not match", "rank 1: recv_counts[0] is 2 but rank 0 sends 1"});
  // Ranks disagree on all_gather_v's counts: rank 1 thinks rank 0 has 2.
  Counts counts(N, 1);
  if (me == 1) counts[0] = 2;
  TestBuffer<float> one(std::vector<float>(1)), all(std::vector<float>(me == 1 ? N + 1 : N));
  expect_error([&] { mpidist::all_gather_v(one.view(), all.view(), counts); },
               {"all_gather_v", "ranks disagree on the counts", "rank 0 has [1, 1", "rank 1 has [2, 1"});
  // gather with different block sizes.
  TestBuffer<float> block(std::vector<float>(me == 0 ? 2 : 3)), gathered(std::vector<float>(me == 0 ? 2 * N : 0));
  expect_error([&] { mpidist::gather(block.view(), gathered.view(), 0); },
               {"gather", "ranks disagree on in's count", "rank 0 has 2", "rank 1 has 3"});
  if (on_device() && validating_host_calls()) {
    // Rank 0 in host memory, the others in device memory: they would take different paths. Under
    // auto rank 0's host call is not checked and the others' wait in the agreement: the timeout's
    // Error or the watchdog's report, as for any unchecked mismatch.
    std::vector<float> host_in(N), host_out(N);
    TestBuffer<float> dev_in{std::vector<float>(N)}, dev_out{std::vector<float>(N)};
    expect_error([&] {
      if (me == 0) mpidist::all_to_all(std::span(host_in), std::span(host_out));
      else mpidist::all_to_all(dev_in.view(), dev_out.view());
    }, {"all_to_all", "ranks disagree on the memory", "rank 0 has host memory", "rank 1 has device memory"});
  }
  // The communicator is still usable: every rank raised the same Error.
  equal_blocks(mpidist::world(), 2);
}

#if MPIDIST_TEST_HAVE_CUDA
// With a caller's stream each call is queued on it (NCCL) or ordered after it (staged), and the
// caller synchronizes; the emulation applies queued work only then, so a missing one would show.
TEST_F(Uneven, ExplicitStreamOrdersTheCalls) {
  if (!on_device()) GTEST_SKIP() << "device runs only";
  mpidist::device();  // the stream must belong to this rank's device, as NCCL requires
  cudaStream_t stream = nullptr;
  cuda_ok(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  const int me = mpidist::rank(), n = mpidist::world_size(), root = n - 1;
  const auto N = static_cast<std::size_t>(n);
  // all_to_all: rank i sends rank j i + j + 1 elements.
  Counts send(N), recv(N);
  std::vector<float> values;
  for (int j = 0; j < n; ++j) {
    send[static_cast<std::size_t>(j)] = static_cast<std::size_t>(me + j + 1);
    recv[static_cast<std::size_t>(j)] = static_cast<std::size_t>(j + me + 1);
    for (std::size_t x = 0; x < send[static_cast<std::size_t>(j)]; ++x) values.push_back(value(me, j, x));
  }
  TestBuffer<float> in(values), out(std::vector<float>(std::accumulate(recv.begin(), recv.end(), std::size_t{0}), -1.0f));
  TestBuffer<float> block(std::vector<float>{value(me, root, 0), value(me, root, 1)});
  TestBuffer<float> gathered(std::vector<float>(me == root ? 2 * N : 0, -1.0f)), piece(std::vector<float>(2, -1.0f));
  mpidist::all_to_all(in.view(), send, out.view(), recv, stream);
  mpidist::gather(block.view(), gathered.view(), root, stream);
  mpidist::scatter(gathered.view(), piece.view(), root, stream);
  cuda_ok(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  const auto got = out.read();
  std::size_t at = 0;
  for (int i = 0; i < n; ++i)
    for (std::size_t x = 0; x < recv[static_cast<std::size_t>(i)]; ++x) EXPECT_EQ(got[at++], value(i, me, x)) << i;
  // The root scattered back what it gathered: every rank has its own block again.
  EXPECT_EQ(piece.read(), (std::vector<float>{value(me, root, 0), value(me, root, 1)}));
  cudaStreamDestroy(stream);
}
#endif

}  // namespace
