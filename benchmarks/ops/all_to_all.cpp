// all_to_all: block j of each rank's buffer goes to rank j. Two ops: equal blocks (MPI_Alltoall)
// and all_to_all_v, a fixed skewed split (MPI_Alltoallv): rank r sends rank j
// ((r + j) mod n) + 1 units, so blocks differ up to n-fold while every rank sends and receives
// the same total, n(n+1)/2 units. busbw = algbw × (n−1)/n.
#include <numeric>
#include <vector>

#include "op_util.hpp"

namespace bench::ops {
namespace {

std::size_t weight(int from, int to, int n) { return static_cast<std::size_t>((from + to) % n + 1); }

/// Elements rank `from` sends rank `to`; `unit` elements per weight (0 for equal blocks: then
/// `block` each).
struct Split {
  std::size_t unit = 0, block = 0;
  int n = 1;
  std::size_t count(int from, int to) const { return unit > 0 ? unit * weight(from, to, n) : block; }
  std::size_t offset(int from, int to) const {
    std::size_t at = 0;
    for (int j = 0; j < to; ++j) at += count(from, j);
    return at;
  }
};

Split equal_split(const Run& run) { return {0, run.counts.send / static_cast<std::size_t>(run.nranks), run.nranks}; }
Split skewed_split(const Run& run) {
  const auto n = static_cast<std::size_t>(run.nranks);
  return {run.counts.send / (n * (n + 1) / 2), 0, run.nranks};
}

Counts skewed_counts(std::size_t bytes, std::size_t elem, int nranks) {
  const auto n = static_cast<std::size_t>(nranks);
  const std::size_t total = bytes / elem / (n * (n + 1) / 2) * (n * (n + 1) / 2);
  return {.send = total, .recv = total, .shown = total, .bytes = total * elem};
}
Counts equal_counts(std::size_t bytes, std::size_t elem, int nranks) {
  Counts c = scatter_counts(bytes, elem, nranks);
  c.recv = c.send;
  return c;
}

// Block i of the result is rank i's pattern from where rank i's block for this rank starts.
std::size_t check_split(const Run& run, const Split& split) {
  return with_dtype(run.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    std::size_t wrong = 0, at = 0;
    const auto result = typed<T>(static_cast<const std::byte*>(run.host_recv), run.counts.recv);
    for (int i = 0; i < run.nranks; ++i) {
      const std::size_t k = split.count(i, run.rank);
      wrong += count_wrong(result.subspan(at, k), split.offset(i, run.rank), pattern_table<T>(i, run.nranks));
      at += k;
    }
    return wrong;
  });
}

std::size_t check_equal(const Run& run) { return check_split(run, equal_split(run)); }
std::size_t check_skewed(const Run& run) { return check_split(run, skewed_split(run)); }

void run_mpidist_equal(Run& run) { mpidist::all_to_all(run.comm, send_view(run), recv_view(run)); }

void run_raw_mpi_equal(Run& run) {
  const MPI_Datatype type = mpi_type(run.dtype);
  const int block = mpi_count(run.counts.send / static_cast<std::size_t>(run.nranks));
  MPI_Alltoall(run.send, block, type, run.recv, block, type, run.raw_comm);
}

// The counts of this rank's calls, made once per size step (a user keeps them too).
struct SkewedCounts {
  std::vector<std::size_t> send, recv;
  std::vector<int> send_int, recv_int, send_at, recv_at;
};
const SkewedCounts& skewed_counts_of(const Run& run) {
  static SkewedCounts cached;
  static std::size_t cached_send = ~std::size_t{0};
  static int cached_rank = -1, cached_n = -1;
  if (cached_send == run.counts.send && cached_rank == run.rank && cached_n == run.nranks) return cached;
  const Split split = skewed_split(run);
  SkewedCounts c;
  for (int j = 0; j < run.nranks; ++j) {
    c.send.push_back(split.count(run.rank, j));
    c.recv.push_back(split.count(j, run.rank));
    c.send_int.push_back(mpi_count(c.send.back()));
    c.recv_int.push_back(mpi_count(c.recv.back()));
  }
  c.send_at.resize(c.send_int.size());
  c.recv_at.resize(c.recv_int.size());
  std::exclusive_scan(c.send_int.begin(), c.send_int.end(), c.send_at.begin(), 0);
  std::exclusive_scan(c.recv_int.begin(), c.recv_int.end(), c.recv_at.begin(), 0);
  cached = std::move(c);
  cached_send = run.counts.send, cached_rank = run.rank, cached_n = run.nranks;
  return cached;
}

void run_mpidist_skewed(Run& run) {
  const SkewedCounts& c = skewed_counts_of(run);
  mpidist::all_to_all(run.comm, send_view(run), c.send, recv_view(run), c.recv);
}

void run_raw_mpi_skewed(Run& run) {
  const SkewedCounts& c = skewed_counts_of(run);
  const MPI_Datatype type = mpi_type(run.dtype);
  MPI_Alltoallv(run.send, c.send_int.data(), c.send_at.data(), type, run.recv, c.recv_int.data(), c.recv_at.data(),
                type, run.raw_comm);
}

}  // namespace

extern const OpHooks all_to_all_hooks{
    .name = "all_to_all", .reduces = false, .rooted = false, .has_data = true, .in_place_only = false,
    .out_of_place_only = true, .in_place = OpHooks::InPlace::Same, .counts = equal_counts,
    .bus_factor = factor_gather, .init = init_pattern, .check = check_equal, .run_mpidist = run_mpidist_equal,
    .run_raw_mpi = run_raw_mpi_equal, .run_raw_nccl = nullptr};

extern const OpHooks all_to_all_v_hooks{
    .name = "all_to_all_v", .reduces = false, .rooted = false, .has_data = true, .in_place_only = false,
    .out_of_place_only = true, .in_place = OpHooks::InPlace::Same, .counts = skewed_counts,
    .bus_factor = factor_gather, .init = init_pattern, .check = check_skewed, .run_mpidist = run_mpidist_skewed,
    .run_raw_mpi = run_raw_mpi_skewed, .run_raw_nccl = nullptr};

}  // namespace bench::ops
