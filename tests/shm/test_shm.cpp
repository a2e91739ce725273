// The host all-reduce through shared memory (one node), hierarchical (simulated nodes) and tensor
// fusion (all_reduce_many), against MPI_Allreduce on the same inputs: integers bitwise equal,
// floats within rounding and bitwise equal on every rank. Run with MPIDIST_HOST_ALLREDUCE forced
// to shm, to mpi and on auto, at 1-4 ranks and on simulated nodes (tests/meson.build).
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "mpi_test.hpp"
#include "mpidist/mpidist.hpp"

namespace {

using namespace mpidist_test;
using mpidist::BufferView;
using mpidist::Communicator;
using mpidist::DataType;
using mpidist::ReduceOp;
using Shm = MpiTest;

constexpr ReduceOp all_ops[] = {ReduceOp::Sum, ReduceOp::Product, ReduceOp::Min, ReduceOp::Max, ReduceOp::Avg};

template <class T>
constexpr bool is_half = std::is_same_v<T, mpidist::float16> || std::is_same_v<T, mpidist::bfloat16>;

// This rank's input: small values (products stay finite), different on every rank and index.
template <class T>
T input(int rank, std::size_t i, ReduceOp op) {
  long k = static_cast<long>((i * 7 + static_cast<std::size_t>(rank) * 13) % 101);
  if constexpr (std::is_integral_v<T>) {
    // 8-bit sums stay in range: Open MPI 4.1's AVX ops saturate 8-bit sums instead of wrapping.
    const long centre = sizeof(T) == 1 ? 10 : 50;
    if (sizeof(T) == 1) k %= 21;
    if (op == ReduceOp::Product) return static_cast<T>(1 + (k % 3));
    return static_cast<T>(std::is_signed_v<T> ? k - centre : k);
  } else {
    const double v = op == ReduceOp::Product ? 1.0 + static_cast<double>(k % 7 - 3) / 16 : static_cast<double>(k - 50) / 4;
    return T(static_cast<float>(v));
  }
}

template <class T>
double as_double(T v) {
  if constexpr (is_half<T>) return static_cast<double>(static_cast<float>(v));
  else return static_cast<double>(v);
}

MPI_Datatype mpi_type(DataType d) {
  switch (d) {
    case DataType::Float32: return MPI_FLOAT;
    case DataType::Float64: return MPI_DOUBLE;
    case DataType::Int8: return MPI_INT8_T;
    case DataType::UInt8: return MPI_UINT8_T;
    case DataType::Int32: return MPI_INT32_T;
    case DataType::Int64: return MPI_INT64_T;
    case DataType::UInt32: return MPI_UINT32_T;
    case DataType::UInt64: return MPI_UINT64_T;
    default: return MPI_UINT16_T;
  }
}
MPI_Op mpi_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::Product: return MPI_PROD;
    case ReduceOp::Min: return MPI_MIN;
    case ReduceOp::Max: return MPI_MAX;
    case ReduceOp::BitAnd: return MPI_BAND;
    case ReduceOp::BitOr: return MPI_BOR;
    case ReduceOp::BitXor: return MPI_BXOR;
    default: return MPI_SUM;
  }
}

// The reference: raw MPI_Allreduce on the group's communicator; halves (which MPI cannot add)
// from every rank's inputs, gathered and combined in double.
template <class T>
std::vector<T> reference(const Communicator& comm, const std::vector<T>& in, ReduceOp op) {
  const std::size_t n = in.size();
  std::vector<T> out(n);
  if constexpr (is_half<T>) {
    std::vector<T> all(n * static_cast<std::size_t>(comm.size()));
    MPI_Allgather(in.data(), static_cast<int>(n), MPI_UINT16_T, all.data(), static_cast<int>(n), MPI_UINT16_T,
                  comm.native());
    for (std::size_t i = 0; i < n; ++i) {
      double acc = as_double(all[i]);
      for (int r = 1; r < comm.size(); ++r) {
        const double v = as_double(all[static_cast<std::size_t>(r) * n + i]);
        if (op == ReduceOp::Product) acc *= v;
        else if (op == ReduceOp::Min) acc = std::min(acc, v);
        else if (op == ReduceOp::Max) acc = std::max(acc, v);
        else acc += v;
      }
      if (op == ReduceOp::Avg) acc /= comm.size();
      out[i] = T(static_cast<float>(acc));
    }
  } else {
    MPI_Allreduce(in.data(), out.data(), static_cast<int>(n), mpi_type(mpidist::dtype_v<T>), mpi_op(op), comm.native());
    if (op == ReduceOp::Avg)
      for (auto& v : out) v = static_cast<T>(v / static_cast<std::common_type_t<T, int>>(comm.size()));
  }
  return out;
}

// `got` against the reference (integers exactly, floats within rounding). (One assertion per
// buffer, not per element: gtest's per-call cost would dominate the multi-MiB cases.)
template <class T>
void expect_close(const std::vector<T>& got, const std::vector<T>& want, const std::string& what) {
  const double tolerance = is_half<T> ? 2e-2 : std::is_same_v<T, float> ? 1e-5 : 1e-12;
  std::size_t i = 0;
  for (; i < got.size(); ++i) {
    if constexpr (std::is_integral_v<T>) {
      if (got[i] != want[i]) break;
    } else {
      const double g = as_double(got[i]), w = as_double(want[i]);
      if (!(std::abs(g - w) <= tolerance * std::max(1.0, std::abs(w)))) break;
    }
  }
  if (i < got.size())
    FAIL() << what << " at " << i << ": " << as_double(got[i]) << " vs " << as_double(want[i]);
}

// `got` against the reference, and bitwise the same as rank 0's.
// Byte equality of two element ranges; empty ranges (whose data() may be null) are equal.
template <class T>
bool same_bytes(const T* a, const T* b, std::size_t count) {
  return count == 0 || std::memcmp(a, b, count * sizeof(T)) == 0;
}

template <class T>
void expect_matches(const Communicator& comm, const std::vector<T>& got, const std::vector<T>& want,
                    const std::string& what) {
  expect_close(got, want, what);
  std::vector<T> first(got);
  MPI_Bcast(first.data(), static_cast<int>(first.size() * sizeof(T)), MPI_BYTE, 0, comm.native());
  ASSERT_TRUE(same_bytes(first.data(), got.data(), got.size())) << what << ": ranks differ";
}

template <class T>
void check_all_reduce(const Communicator& comm, std::size_t count, ReduceOp op, bool in_place) {
  std::vector<T> in(count);
  for (std::size_t i = 0; i < count; ++i) in[i] = input<T>(comm.rank(), i, op);
  std::vector<T> out(in);
  if (in_place) mpidist::all_reduce(comm, BufferView(std::span(out)), op);
  else mpidist::all_reduce(comm, BufferView(std::span(in)), BufferView(std::span(out)), op);
  const std::string what = std::string(mpidist::to_string(mpidist::dtype_v<T>)) + " " +
                           std::string(mpidist::to_string(op)) + " count " + std::to_string(count) +
                           (in_place ? " in place" : " out of place") + " on " + comm.name();
  expect_matches(comm, out, reference(comm, in, op), what);
}

// Element counts one below, at and one above every byte threshold of the shm path (56 B: the
// payload of a control line; 16 KiB: the one-shot limit; 256 KiB: a segment half, the chunk) and
// beyond the segment.
std::vector<std::size_t> counts_for(std::size_t element, bool large) {
  std::vector<std::size_t> counts{0, 1, 3, 31};
  std::vector<std::size_t> edges{56, 16 * 1024};
  if (large) edges = {256 << 10, 1 << 20};
  for (const std::size_t edge : edges)
    for (const long d : {-1L, 0L, 1L}) counts.push_back(static_cast<std::size_t>(static_cast<long>(edge / element) + d));
  if (large) counts.push_back((3 << 20) / element + 5);  // three halves and a bit: larger than the segment
  return counts;
}

template <class T>
void sweep(const Communicator& comm, bool large, std::initializer_list<ReduceOp> ops) {
  for (const ReduceOp op : ops)
    for (const std::size_t count : counts_for(sizeof(T), large)) {
      check_all_reduce<T>(comm, count, op, true);
      if (::testing::Test::HasFatalFailure()) return;
    }
}

TEST_F(Shm, EveryTypeAndOpAroundTheSmallThresholds) {
  const Communicator world = mpidist::world();
  const std::initializer_list<ReduceOp> arithmetic{ReduceOp::Sum, ReduceOp::Product, ReduceOp::Min, ReduceOp::Max,
                                                   ReduceOp::Avg};
  const std::initializer_list<ReduceOp> integer{ReduceOp::Sum, ReduceOp::Product, ReduceOp::Min,    ReduceOp::Max,
                                                ReduceOp::Avg, ReduceOp::BitAnd,  ReduceOp::BitOr, ReduceOp::BitXor};
  sweep<mpidist::float16>(world, false, arithmetic);
  sweep<mpidist::bfloat16>(world, false, arithmetic);
  sweep<float>(world, false, arithmetic);
  sweep<double>(world, false, arithmetic);
  sweep<std::int8_t>(world, false, integer);
  sweep<std::uint8_t>(world, false, integer);
  sweep<std::int32_t>(world, false, integer);
  sweep<std::int64_t>(world, false, integer);
  sweep<std::uint32_t>(world, false, integer);
  sweep<std::uint64_t>(world, false, integer);
}

TEST_F(Shm, LargerThanTheSegmentInChunks) {
  const Communicator world = mpidist::world();
  sweep<float>(world, true, {ReduceOp::Sum});
  sweep<std::int32_t>(world, true, {ReduceOp::Max});
  // The other types and ops once past a half and once past the whole segment.
  for (const std::size_t bytes : {std::size_t{(1 << 20) + 64}, std::size_t{(3 << 20) + 40}}) {
    check_all_reduce<float>(world, bytes / 4 + 1, ReduceOp::Avg, true);
    check_all_reduce<mpidist::bfloat16>(world, bytes / 2 + 1, ReduceOp::Sum, true);
    check_all_reduce<mpidist::float16>(world, bytes / 2 + 3, ReduceOp::Max, true);
    check_all_reduce<std::uint8_t>(world, bytes + 7, ReduceOp::Min, true);
    check_all_reduce<std::int64_t>(world, bytes / 8 + 1, ReduceOp::Avg, true);
    check_all_reduce<double>(world, bytes / 8 + 5, ReduceOp::Product, true);
    check_all_reduce<std::uint64_t>(world, bytes / 8 + 3, ReduceOp::BitXor, true);
    check_all_reduce<std::int8_t>(world, bytes + 5, ReduceOp::BitOr, true);
  }
}

// One element below, at and above auto's crossover to the hierarchical all-reduce for groups
// that span nodes (16 KiB, lib/shm/collectives.cpp): under auto on simulated nodes
// (shm-auto-np4-nodes-of-2) the sizes below take MPI_Allreduce, the others the hierarchical
// path; against MPI_Allreduce either way, in place and out of place.
template <class T>
void around_the_crossover(const Communicator& comm, ReduceOp op) {
  constexpr std::size_t crossover = 16 * 1024;
  for (const long d : {-1L, 0L, 1L}) {
    const auto count = static_cast<std::size_t>(static_cast<long>(crossover / sizeof(T)) + d);
    check_all_reduce<T>(comm, count, op, true);
    check_all_reduce<T>(comm, count, op, false);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TEST_F(Shm, AroundTheCrossoverAcrossNodes) {
  const Communicator world = mpidist::world();
  around_the_crossover<float>(world, ReduceOp::Sum);
  around_the_crossover<float>(world, ReduceOp::Avg);
  around_the_crossover<std::int32_t>(world, ReduceOp::Sum);
  around_the_crossover<std::int32_t>(world, ReduceOp::BitXor);
  around_the_crossover<double>(world, ReduceOp::Max);
  around_the_crossover<mpidist::bfloat16>(world, ReduceOp::Sum);
  // Every rank's neighbour group of two: on nodes of 2 it lies in one node, on nodes of 3 the
  // group of ranks 2 and 3 spans two.
  if (world.size() == 4) {
    const Communicator pair = world.split(world.rank() / 2);
    around_the_crossover<std::int64_t>(pair, ReduceOp::Sum);
  }
}

// The 2D all-reduce's edges (lib/shm/two_level.cpp; run with MPIDIST_HOST_ALLREDUCE=2d on nodes of
// equal size, tests/meson.build): nothing, fewer elements than ranks, counts that no local size
// divides, one element either side of a slice's 64-byte rounding, of a slice's 32 KiB pieces, of a
// chunk (a segment half, 256 KiB), of the four chunks in flight, and more than that: every op, in
// place and out of place. In the other runs on several nodes the same sizes through the path that
// run picks; skipped on one node, where the one-node sweeps above cover the segment (tests stay fast).
template <class T>
void two_level_edges(const Communicator& comm, std::initializer_list<ReduceOp> ops) {
  constexpr std::size_t half = 256 << 10;
  // The same counts on every rank: the 2D path's nodes are of equal size (size / nodes); other
  // layouts take another path and only need sizes around these.
  const auto local_size = static_cast<std::size_t>(comm.size() / comm.num_nodes());
  const std::size_t one_piece_each = std::min(half, std::size_t{32 << 10} * local_size);
  std::vector<std::size_t> counts{0, 1, 2, 3, 5, 7};
  for (const std::size_t edge : {std::size_t{64} * 2, std::size_t{64} * 3, one_piece_each, half, 4 * half, 5 * half})
    for (const long d : {-1L, 0L, 1L}) counts.push_back(static_cast<std::size_t>(static_cast<long>(edge / sizeof(T)) + d));
  for (const ReduceOp op : ops)
    for (const std::size_t count : counts) {
      check_all_reduce<T>(comm, count, op, count % 2 == 0);
      if (::testing::Test::HasFatalFailure()) return;
    }
}

TEST_F(Shm, ChunkEdgesOfTheTwoLevelAllReduce) {
  if (mpidist::num_nodes() < 2) GTEST_SKIP() << "for groups that span nodes";
  const Communicator world = mpidist::world();
  two_level_edges<float>(world, {ReduceOp::Sum, ReduceOp::Avg});
  two_level_edges<std::int32_t>(world, {ReduceOp::Sum, ReduceOp::Max});
  two_level_edges<std::int64_t>(world, {ReduceOp::Avg});
  two_level_edges<mpidist::bfloat16>(world, {ReduceOp::Sum});
  two_level_edges<double>(world, {ReduceOp::Product, ReduceOp::Min});
  // A group of the same local rank on every node (one rank a node: the leader path) and the world
  // again after it, so that each group's communicators are its own.
  const Communicator same_local = world.split(world.local_rank());
  two_level_edges<float>(same_local, {ReduceOp::Sum});
  check_all_reduce<float>(world, 5 * (256 << 10) / 4 + 3, ReduceOp::Sum, true);
}

TEST_F(Shm, OutOfPlace) {
  const Communicator world = mpidist::world();
  for (const std::size_t count : {std::size_t{5}, std::size_t{5000}, std::size_t{700001}}) {
    check_all_reduce<float>(world, count, ReduceOp::Sum, false);
    check_all_reduce<std::int64_t>(world, count, ReduceOp::Avg, false);
  }
}

// Two groups (even and odd world ranks) reduce at the same time, each through its own segment,
// interleaved with the world's.
TEST_F(Shm, SplitGroupsUseTheirSegmentsAtOnce) {
  const Communicator world = mpidist::world();
  const Communicator half = world.split(world.rank() % 2);
  for (int round = 0; round < 3; ++round) {
    check_all_reduce<float>(half, 600000 + static_cast<std::size_t>(round), ReduceOp::Sum, true);
    check_all_reduce<std::int32_t>(world, 300001, ReduceOp::Sum, true);
    check_all_reduce<std::int32_t>(half, 4099, ReduceOp::Max, true);
    check_all_reduce<double>(world, 17, ReduceOp::Avg, true);
  }
}

// The layout tests/hosts/two_hosts.sh gives the ranks on its separate hosts: ranks per host by slot
// (MPIDIST_TEST_NODE_SIZES, "2,2" or "3,1"), or each rank's host where they are dealt to the hosts in
// turn (MPIDIST_TEST_RANK_NODES, "0,1,0,1"); nullptr elsewhere.
const char* real_hosts_layout() {
  const char* sizes = std::getenv("MPIDIST_TEST_NODE_SIZES");
  return sizes != nullptr ? sizes : std::getenv("MPIDIST_TEST_RANK_NODES");
}

// On separate hosts (tests/hosts/two_hosts.sh, real_hosts_layout) with
// MPIDIST_HOST_ALLREDUCE=shm or 2d and no simulated nodes, every host all-reduce takes the hierarchical
// transport: shared memory inside each host, MPI between the hosts' leaders (shm, and 2d at 3 + 1)
// or between the ranks of each local index (2d at 2 + 2). Here the nodes are
// real (host names), and sizes below the 32 MiB that `auto` would wait for reach it too.
TEST_F(Shm, HierarchicalAcrossRealHosts) {
  const char* sizes = real_hosts_layout();
  if (sizes == nullptr) GTEST_SKIP() << "only across the hosts of tests/hosts (MPIDIST_TEST_NODE_SIZES)";
  const char* forced = std::getenv("MPIDIST_HOST_ALLREDUCE");
  ASSERT_TRUE(forced != nullptr && (std::string(forced) == "shm" || std::string(forced) == "2d"))
      << "run with MPIDIST_HOST_ALLREDUCE=shm or 2d";
  ASSERT_EQ(std::getenv("MPIDIST_RANKS_PER_NODE"), nullptr) << "the nodes must be real hosts";
  ASSERT_EQ(mpidist::num_nodes(), 2) << sizes;
  const Communicator world = mpidist::world();
  for (const std::size_t count : {std::size_t{1}, std::size_t{4099}, std::size_t{300001}, std::size_t{(5 << 20) + 3}}) {
    check_all_reduce<float>(world, count, ReduceOp::Sum, true);
    check_all_reduce<std::int64_t>(world, count, ReduceOp::Avg, false);
    check_all_reduce<double>(world, count, ReduceOp::Max, true);
  }
}

// The same hosts with MPIDIST_HOST_ALLREDUCE=auto: the choice between the leader path, the 2D path
// and MPI depends on the size and on how the group's ranks sit on the hosts (lib/shm/collectives.cpp:
// uneven nodes the leader path, even ones the leader path below 16 KiB, MPI at [1 MiB, 2 MiB) and the
// 2D path between and above; one rank a node the leader path from 16 KiB), and every member must make
// the same one, or the call hangs. Groups of every kind the two layouts give: the world
// (2 + 2 even, 3 + 1 uneven), the world
// without rank 1 (1 + 2, 2 + 1: uneven), even and odd ranks (1 + 1 across the hosts, or two ranks on
// one host), at sizes around the 16 KiB crossover and just past the leaders' 4 MiB pieces.
TEST_F(Shm, AutoAcrossRealHosts) {
  const char* sizes = real_hosts_layout();
  if (sizes == nullptr) GTEST_SKIP() << "only across the hosts of tests/hosts (MPIDIST_TEST_NODE_SIZES)";
  const char* forced = std::getenv("MPIDIST_HOST_ALLREDUCE");
  ASSERT_TRUE(forced == nullptr || std::string(forced) == "auto") << "run with MPIDIST_HOST_ALLREDUCE unset or auto";
  ASSERT_EQ(std::getenv("MPIDIST_RANKS_PER_NODE"), nullptr) << "the nodes must be real hosts";
  const Communicator world = mpidist::world();
  const Communicator without_one = world.split(world.rank() == 1 ? 1 : 0);
  const Communicator half = world.split(world.rank() % 2);
  for (const Communicator* comm : {&world, &without_one, &half}) {
    // Floats around 1 KiB and 16 KiB, the leaders' 64 KiB exchange, both edges of the MPI band (1
    // and 2 MiB), inside it, past it, and 4 MiB (the 2D path's start where a host's ranks share only
    // its own cores).
    for (const std::size_t count : {std::size_t{1}, std::size_t{255}, std::size_t{256}, std::size_t{257},
                                    std::size_t{4095}, std::size_t{4096}, std::size_t{4097},
                                    std::size_t{16383}, std::size_t{16384}, std::size_t{262143}, std::size_t{262144},
                                    std::size_t{(3 << 20) / 8 + 3}, std::size_t{524287}, std::size_t{524288},
                                    std::size_t{1048575}, std::size_t{1048576}, std::size_t{1048577},
                                    std::size_t{(9 << 20) / 8 + 3}}) {
      check_all_reduce<float>(*comm, count, ReduceOp::Sum, true);
      check_all_reduce<std::int64_t>(*comm, count / 2 + 1, ReduceOp::Avg, false);
    }
    check_all_reduce<double>(world, 2049, ReduceOp::Max, true);  // the world between the groups' calls
  }
  check_all_reduce<float>(world, (std::size_t{16} << 20) / 4 + 1, ReduceOp::Sum, true);  // 16 MiB + 4 B: 65 chunks
}

// broadcast, reduce, reduce_scatter and all_gather through the segment, against MPI on the same
// inputs: sizes 0, 1, odd, around every threshold (a control line's 56 B, the one-shot 16 KiB, and
// with `large` a half's 256 KiB per rank and per piece, and past the whole segment); roots other
// than 0.
std::vector<std::size_t> other_counts(std::size_t element, int ranks, bool large) {
  std::vector<std::size_t> counts{0, 1, 3, 31, 7001};
  const auto n = static_cast<std::size_t>(ranks);
  std::vector<std::size_t> edges{56, 56 / n, std::size_t{16} << 10};
  if (large) edges.insert(edges.end(), {std::size_t{256} << 10, (std::size_t{256} << 10) / n});
  for (const std::size_t edge : edges)
    for (const long d : {-1L, 0L, 1L})
      if (static_cast<long>(edge / element) + d >= 0) counts.push_back(static_cast<std::size_t>(static_cast<long>(edge / element) + d));
  if (large) counts.push_back((std::size_t{3} << 20) / element + 5);  // more than the segment
  return counts;
}

std::vector<int> roots_of(const Communicator& comm) {
  std::vector<int> roots{0, comm.size() - 1};
  if (comm.size() > 2) roots.push_back(1);
  return roots;
}

template <class T>
std::vector<T> inputs(const Communicator& comm, std::size_t count, ReduceOp op, std::size_t salt = 0) {
  std::vector<T> in(count);
  for (std::size_t i = 0; i < count; ++i) in[i] = input<T>(comm.rank(), i + salt, op);
  return in;
}

template <class T>
void check_broadcast(const Communicator& comm, std::size_t count, int root) {
  std::vector<T> got = inputs<T>(comm, count, ReduceOp::Sum, 5);
  std::vector<T> want(got);
  MPI_Bcast(want.data(), static_cast<int>(count * sizeof(T)), MPI_BYTE, root, comm.native());
  mpidist::broadcast(comm, std::span(got), root);
  ASSERT_TRUE(same_bytes(got.data(), want.data(), count))
      << "broadcast count " << count << " root " << root << " on " << comm.name();
}

template <class T>
void check_reduce(const Communicator& comm, std::size_t count, ReduceOp op, int root, bool in_place) {
  const std::vector<T> in = inputs<T>(comm, count, op);
  const std::vector<T> want = reference(comm, in, op);
  std::vector<T> out = in;
  const bool is_root = comm.rank() == root;
  if (in_place) mpidist::reduce(comm, std::span(out), std::span(out), op, root);
  else if (is_root) mpidist::reduce(comm, std::span(in), std::span(out), op, root);
  else mpidist::reduce(comm, BufferView(std::span(in)), BufferView(nullptr, 0, mpidist::dtype_v<T>), op, root);
  const std::string what = "reduce " + std::string(mpidist::to_string(mpidist::dtype_v<T>)) + " " +
                           std::string(mpidist::to_string(op)) + " count " + std::to_string(count) + " root " +
                           std::to_string(root) + (in_place ? " in place" : "") + " on " + comm.name();
  if (is_root) expect_close(out, want, what);
  else ASSERT_TRUE(same_bytes(out.data(), in.data(), count)) << what << ": a non-root buffer changed";
}

template <class T>
void check_reduce_scatter(const Communicator& comm, std::size_t block, ReduceOp op) {
  const auto n = static_cast<std::size_t>(comm.size());
  const std::vector<T> in = inputs<T>(comm, block * n, op, 3);
  const std::vector<T> all = reference(comm, in, op);
  const std::vector<T> want(all.begin() + static_cast<long>(block * static_cast<std::size_t>(comm.rank())),
                            all.begin() + static_cast<long>(block * static_cast<std::size_t>(comm.rank() + 1)));
  std::vector<T> out(block);
  mpidist::reduce_scatter(comm, std::span(in), std::span(out), op);
  const std::string what = "reduce_scatter " + std::string(mpidist::to_string(mpidist::dtype_v<T>)) + " " +
                           std::string(mpidist::to_string(op)) + " block " + std::to_string(block) + " on " + comm.name();
  expect_close(out, want, what);
  // In place (out is this rank's block of in), as nccl-tests lays it out.
  std::vector<T> buffer = in;
  mpidist::reduce_scatter(comm, std::span(buffer),
                          std::span(buffer).subspan(block * static_cast<std::size_t>(comm.rank()), block), op);
  for (std::size_t i = 0; i < block; ++i)
    ASSERT_TRUE(same_bytes(&buffer[block * static_cast<std::size_t>(comm.rank()) + i], &out[i], 1))
        << what << " in place at " << i;
}

template <class T>
void check_all_gather(const Communicator& comm, std::size_t block) {
  const auto n = static_cast<std::size_t>(comm.size());
  const std::vector<T> in = inputs<T>(comm, block, ReduceOp::Sum, 9);
  std::vector<T> want(block * n), out(block * n);
  MPI_Allgather(in.data(), static_cast<int>(block * sizeof(T)), MPI_BYTE, want.data(), static_cast<int>(block * sizeof(T)),
                MPI_BYTE, comm.native());
  mpidist::all_gather(comm, std::span(in), std::span(out));
  ASSERT_TRUE(same_bytes(out.data(), want.data(), out.size()))
      << "all_gather block " << block << " on " << comm.name();
  std::vector<T> buffer(block * n);
  std::copy(in.begin(), in.end(), buffer.begin() + static_cast<long>(block * static_cast<std::size_t>(comm.rank())));
  mpidist::all_gather(comm, std::span(buffer).subspan(block * static_cast<std::size_t>(comm.rank()), block), std::span(buffer));
  ASSERT_TRUE(same_bytes(buffer.data(), want.data(), buffer.size()))
      << "all_gather in place block " << block << " on " << comm.name();
}

// Past the one-shot's 16 KiB the root's part runs the same code for every root: one root (not 0)
// there. `large`: the chunked sizes too (they took 60% of the shm runs' time under ASan when every
// type swept them; element sizes 1, 4 and 8 B cover the chunk edges' alignments).
template <class T>
void sweep_others(const Communicator& comm, std::initializer_list<ReduceOp> ops, bool large) {
  for (const std::size_t count : other_counts(sizeof(T), comm.size(), large)) {
    const bool chunked = count * sizeof(T) > (std::size_t{16} << 10);
    for (const int root : chunked ? std::vector<int>{comm.size() - 1} : roots_of(comm)) {
      check_broadcast<T>(comm, count, root);
      // In place at the last root; chunked sizes, with one root, alternate by count.
      const bool in_place = chunked ? count % 2 == 1 : root == comm.size() - 1;
      for (const ReduceOp op : ops) check_reduce<T>(comm, count, op, root, in_place);
    }
    // The largest counts as the whole input: past the segment without a 4x larger buffer.
    const std::size_t block = count >= (std::size_t{1} << 16) ? count / static_cast<std::size_t>(comm.size()) : count;
    for (const ReduceOp op : ops) check_reduce_scatter<T>(comm, block, op);
    check_all_gather<T>(comm, count);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TEST_F(Shm, OtherCollectivesAgainstMpi) {
  const Communicator world = mpidist::world();
  sweep_others<float>(world, {ReduceOp::Sum, ReduceOp::Avg}, true);
  sweep_others<std::int32_t>(world, {ReduceOp::Max, ReduceOp::Sum}, false);
  sweep_others<std::uint8_t>(world, {ReduceOp::Min}, true);
  sweep_others<double>(world, {ReduceOp::Product}, true);
  sweep_others<mpidist::bfloat16>(world, {ReduceOp::Sum}, false);
}

// Small counts of every type and op, where the data ride in the control lines.
TEST_F(Shm, OtherCollectivesEveryTypeAndOpSmall) {
  const Communicator world = mpidist::world();
  auto each = [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (const std::size_t count : {std::size_t{1}, std::size_t{5}, 56 / sizeof(T), 56 / sizeof(T) + 1}) {
      for (const ReduceOp op : all_ops) {
        check_reduce<T>(world, count, op, world.size() - 1, false);
        check_reduce_scatter<T>(world, count, op);
      }
      check_all_gather<T>(world, count);
      check_broadcast<T>(world, count, world.size() - 1);
    }
  };
  each(std::type_identity<mpidist::float16>{});
  each(std::type_identity<mpidist::bfloat16>{});
  each(std::type_identity<float>{});
  each(std::type_identity<double>{});
  each(std::type_identity<std::int8_t>{});
  each(std::type_identity<std::uint8_t>{});
  each(std::type_identity<std::int32_t>{});
  each(std::type_identity<std::int64_t>{});
  each(std::type_identity<std::uint32_t>{});
  each(std::type_identity<std::uint64_t>{});
}

// Two groups at once, each through its own segment, interleaved with the world's.
TEST_F(Shm, OtherCollectivesOnSplitGroups) {
  const Communicator world = mpidist::world();
  const Communicator half = world.split(world.rank() % 2);
  for (int round = 0; round < 2; ++round) {
    check_reduce_scatter<float>(half, 70001, ReduceOp::Sum);
    check_all_gather<std::int32_t>(world, 9001);
    check_broadcast<double>(half, 40001, half.size() - 1);
    check_reduce<std::int64_t>(world, 50001, ReduceOp::Sum, world.size() - 1, false);
    check_all_gather<float>(half, 3);
  }
}

// The broadcast across nodes (lib/shm/hierarchical_broadcast.cpp: MPIDIST_HOST_ALLREDUCE=shm or 2d
// on simulated nodes, and across the hosts of tests/hosts forced and under auto, where every member
// must choose alike) against MPI_Bcast, from every root: a node's leader, and a rank that is not
// (it sends the other nodes' leaders the message itself, or with three nodes and from 1 MiB its
// node's segment first). Sizes in the control line and past it, either side of auto's 1 KiB (where
// ranks share cores) and of the 1 MiB pieces, several pieces; on the world, a group whose ranks
// interleave the nodes (a node's leader is not its lowest world rank), and one without rank 1
// (uneven nodes). Then a zero-count call.
TEST_F(Shm, BroadcastAcrossNodesFromEveryRoot) {
  if (mpidist::num_nodes() < 2) GTEST_SKIP() << "for groups that span nodes";
  const Communicator world = mpidist::world();
  const int nodes = world.num_nodes(), node = world.node_rank(), local = world.local_rank();
  const Communicator interleaved = world.split(0, local * nodes + node);
  const Communicator without_one = world.split(world.rank() == 1 ? 1 : 0);
  constexpr std::size_t mib = std::size_t{1} << 20;
  for (const Communicator* comm : {&world, &interleaved, &without_one}) {
    if (comm->size() < 2) continue;
    for (int root = 0; root < comm->size(); ++root) {
      for (const std::size_t count : {std::size_t{1}, std::size_t{15}, std::size_t{255}, std::size_t{256}, std::size_t{4097}})
        check_broadcast<float>(*comm, count, root);
      if (root == 0 || root == comm->size() - 1) {
        for (const std::size_t bytes : {mib - 8, mib, mib + 8, 3 * mib + 256 * 1024 + 24}) check_broadcast<double>(*comm, bytes / 8, root);
        check_broadcast<std::uint8_t>(*comm, mib + 3, root);
      }
      if (::testing::Test::HasFatalFailure()) return;
    }
    std::vector<float> nothing;
    mpidist::broadcast(*comm, std::span(nothing), comm->size() - 1);
  }
  check_broadcast<std::int64_t>(world, 3, 0);  // and the world is still in step
}

// The 2D all-gather and reduce-scatter (lib/shm/two_level_all_gather.cpp,
// two_level_reduce_scatter.cpp; MPIDIST_HOST_ALLREDUCE=2d on nodes of equal size, and auto across
// real hosts) against MPI on the same inputs, in place and out of place: blocks in the control
// lines and either side of them, of the reduce-scatter's 32 KiB pieces and its four in flight, of a
// segment half and of several; on the world and on groups whose ranks interleave the nodes, where a
// rank's counterparts' blocks are not side by side. With 4 ranks on two nodes of 2, `crossed` makes
// the two local indices order the nodes differently (node 0 holds group ranks 0 and 3). Uneven
// nodes (3 + 1) take the paths through the nodes' leaders instead (lib/shm/leader_all_gather.cpp,
// leader_reduce_scatter.cpp), whose leaders pack the blocks where a group's nodes interleave.
template <class T>
void two_level_block_sizes(const Communicator& comm, ReduceOp op) {
  constexpr std::size_t half = 256 << 10, piece = 32 << 10;
  for (const std::size_t bytes : {sizeof(T), std::size_t{56}, std::size_t{64}, std::size_t{8192}, piece, 5 * piece,
                                  half - 64, half + 64, 3 * half + 8})
    for (const std::size_t count : {bytes / sizeof(T), bytes / sizeof(T) + 1}) {
      check_all_gather<T>(comm, count);
      check_reduce_scatter<T>(comm, count, op);
      if (::testing::Test::HasFatalFailure()) return;
    }
}

TEST_F(Shm, TwoLevelBlockPlaces) {
  if (mpidist::num_nodes() < 2) GTEST_SKIP() << "for groups that span nodes";
  const Communicator world = mpidist::world();
  two_level_block_sizes<float>(world, ReduceOp::Avg);
  two_level_block_sizes<std::uint8_t>(world, ReduceOp::Max);
  two_level_block_sizes<double>(world, ReduceOp::Sum);
  two_level_block_sizes<mpidist::bfloat16>(world, ReduceOp::Sum);
  const int nodes = world.num_nodes(), node = world.node_rank(), local = world.local_rank();
  const Communicator interleaved = world.split(0, local * nodes + node);
  two_level_block_sizes<std::int32_t>(interleaved, ReduceOp::Sum);
  if (world.size() == 4 && nodes == 2 && world.local_size() == 2) {
    const Communicator crossed = world.split(0, node == 0 ? 3 * local : 1 + local);
    ASSERT_EQ(crossed.local_rank(), local);
    two_level_block_sizes<float>(crossed, ReduceOp::Sum);
    two_level_block_sizes<std::int64_t>(world, ReduceOp::Product);  // the world's own after the others'
  }
}

// Auto's all_gather and reduce_scatter across real hosts (tests/hosts, MPIDIST_HOST_ALLREDUCE unset):
// the 2D all-gather from 4 KiB gathered (64 KiB where two hosts share cores; never where a host's
// ranks share only its own, MPIDIST_HOST_CPUS) and the 2D reduce-scatter on even nodes of more than
// one rank (at every size; from 64 KiB in where a host's ranks share only its own, the leaders' below:
// the 64 KiB edges below); below the 2D all-gather, the leaders' all-gather where no ranks share cores
// or only a host's own do (MPI where hosts share them), and on uneven nodes (3 + 1, the group without
// rank 1) at every size where ranks share cores, below 1 MiB gathered where none do, and there the
// leaders' reduce-scatter below 64 KiB in (4 MiB where a host's ranks share only its cores); MPI
// elsewhere. Every member must choose alike, or the call hangs. The groups of AutoAcrossRealHosts,
// blocks either side of every crossover and of earlier ones.
TEST_F(Shm, AutoGatherAndScatterAcrossRealHosts) {
  if (real_hosts_layout() == nullptr) GTEST_SKIP() << "only across the hosts of tests/hosts";
  const Communicator world = mpidist::world();
  const Communicator without_one = world.split(world.rank() == 1 ? 1 : 0);
  const Communicator half = world.split(world.rank() % 2);
  for (const Communicator* comm : {&world, &without_one, &half}) {
    const auto per_rank = [&](std::size_t bytes) { return bytes / sizeof(float) / static_cast<std::size_t>(comm->size()); };
    for (const std::size_t edge : {per_rank(4 << 10), per_rank(16 << 10), per_rank(64 << 10), per_rank(256 << 10),
                                    per_rank(1 << 20), per_rank(4 << 20)})
      for (const std::size_t count : {edge - 1, edge, edge + 1}) {
        check_all_gather<float>(*comm, count);
        check_reduce_scatter<float>(*comm, count, ReduceOp::Sum);
      }
    for (const std::size_t count : {std::size_t{1}, std::size_t{(1 << 20) + 3}}) {
      check_all_gather<float>(*comm, count);
      check_reduce_scatter<float>(*comm, count, ReduceOp::Sum);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

// all_reduce_many against one all_reduce per buffer on copies of the same inputs.
TEST_F(Shm, AllReduceManyMatchesSeparateCalls) {
  const Communicator world = mpidist::world();
  for (const ReduceOp op : {ReduceOp::Sum, ReduceOp::Avg, ReduceOp::Max}) {
    std::vector<std::vector<float>> floats;
    std::vector<std::vector<std::int32_t>> ints;
    std::vector<std::vector<double>> doubles;
    for (const std::size_t n : {std::size_t{100}, std::size_t{0}, std::size_t{3}, std::size_t{300000}, std::size_t{1}})
      floats.emplace_back(n);
    for (const std::size_t n : {std::size_t{0}, std::size_t{5000}, std::size_t{7}}) ints.emplace_back(n);
    doubles.emplace_back(20000);
    std::size_t salt = 0;
    auto fill = [&](auto& v) {
      using T = typename std::decay_t<decltype(v)>::value_type;
      for (std::size_t i = 0; i < v.size(); ++i) v[i] = input<T>(world.rank(), i + salt, op);
      salt += 11;
    };
    for (auto& v : floats) fill(v);
    for (auto& v : ints) fill(v);
    for (auto& v : doubles) fill(v);
    auto floats_ref = floats;
    auto ints_ref = ints;
    auto doubles_ref = doubles;
    // Types interleaved, empty buffers among them.
    std::vector<BufferView> views{std::span(floats[0]), std::span(ints[0]), std::span(floats[1]), std::span(doubles[0]),
                                  std::span(ints[1]),   std::span(floats[2]), std::span(floats[3]), std::span(ints[2]),
                                  std::span(floats[4])};
    mpidist::all_reduce_many(world, views, op);
    for (auto& v : floats_ref) mpidist::all_reduce(world, std::span(v), op);
    for (auto& v : ints_ref) mpidist::all_reduce(world, std::span(v), op);
    for (auto& v : doubles_ref) mpidist::all_reduce(world, std::span(v), op);
    for (std::size_t k = 0; k < ints.size(); ++k) ASSERT_EQ(ints[k], ints_ref[k]) << "int buffer " << k;
    for (std::size_t k = 0; k < floats.size(); ++k) expect_matches(world, floats[k], floats_ref[k], "float buffer " + std::to_string(k));
    expect_matches(world, doubles[0], doubles_ref[0], "double buffer");
    if (HasFatalFailure()) return;
  }
}

TEST_F(Shm, AllReduceManyOfNothing) {
  std::vector<float> empty;
  mpidist::all_reduce_many({});
  const std::vector<BufferView> views{std::span(empty), std::span(empty)};
  mpidist::all_reduce_many(views);
}

TEST_F(Shm, ThousandSmallBuffersFused) {
  const Communicator world = mpidist::world();
  std::vector<std::vector<float>> grads(1000, std::vector<float>(256));
  for (std::size_t k = 0; k < grads.size(); ++k)
    for (std::size_t i = 0; i < 256; ++i) grads[k][i] = static_cast<float>((k + i) % 17 + world.rank());
  std::vector<BufferView> views;
  for (auto& g : grads) views.emplace_back(std::span(g));
  mpidist::all_reduce_many(world, views, ReduceOp::Avg);
  const float ranks_mean = static_cast<float>(world.size() - 1) / 2;
  for (std::size_t k = 0; k < grads.size(); ++k)
    for (std::size_t i = 0; i < 256; ++i) ASSERT_FLOAT_EQ(grads[k][i], static_cast<float>((k + i) % 17) + ranks_mean);
}

// With validation on, a rank whose list is wrong makes every rank raise before data moves, and
// the group stays usable.
TEST_F(Shm, AllReduceManyBadArgumentOnOneRankFailsEveryRank) {
  const char* validate = std::getenv("MPIDIST_VALIDATE");
  if (validate == nullptr || std::string(validate) != "1") GTEST_SKIP() << "needs MPIDIST_VALIDATE=1";
  const Communicator world = mpidist::world();
  if (world.size() < 2) GTEST_SKIP() << "needs two ranks";
  std::vector<float> a(1000, 1.0f), b(40000, 2.0f);
  const std::vector<BufferView> views{std::span(a), std::span(b)};
  expect_error([&] { mpidist::all_reduce_many(world, views, world.rank() == 1 ? ReduceOp::And : ReduceOp::Sum); },
               {"all_reduce_many", "rank 1"});
  const std::vector<BufferView> fewer{std::span(a)};
  expect_error([&] { mpidist::all_reduce_many(world, world.rank() == 1 ? fewer : views); },
               {"all_reduce_many", "number of buffers"});
  std::vector<float> shorter(999, 1.0f);
  const std::vector<BufferView> other{std::span(shorter), std::span(b)};
  expect_error([&] { mpidist::all_reduce_many(world, world.rank() == 1 ? other : views); },
               {"all_reduce_many", "buffer counts and types"});
  mpidist::all_reduce_many(world, views);
  for (const float v : a) ASSERT_EQ(v, static_cast<float>(world.size()));
}

// Four ranks on two cores: the waits must give the cores away, or this takes minutes.
TEST_F(Shm, ManyCallsFinishInBoundedTime) {
  const Communicator world = mpidist::world();
  std::vector<float> small(1024, 1.0f), large(1 << 20, 1.0f);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 200; ++i) mpidist::all_reduce(world, std::span(small), ReduceOp::Max);
  for (int i = 0; i < 20; ++i) mpidist::all_reduce(world, std::span(large), ReduceOp::Max);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 20.0);
  EXPECT_EQ(large[12345], 1.0f);
}

}  // namespace
