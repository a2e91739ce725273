// all_gather_v: rank r contributes r + 1 units (a fixed uneven split), and every rank ends with
// all of them in rank order (MPI_Allgatherv). The size is the gathered total, n(n+1)/2 units.
// busbw = algbw × (n−1)/n.
#include <numeric>
#include <vector>

#include "op_util.hpp"

namespace bench::ops {
namespace {

std::size_t triangle(int n) { return static_cast<std::size_t>(n) * static_cast<std::size_t>(n + 1) / 2; }
std::size_t unit_of(const Run& run) { return run.counts.recv / triangle(run.nranks); }
std::size_t mine(const Run& run) { return unit_of(run) * static_cast<std::size_t>(run.rank + 1); }

// The send buffer is sized for the largest part (rank n-1's).
Counts uneven_counts(std::size_t bytes, std::size_t elem, int nranks) {
  const std::size_t unit = bytes / elem / triangle(nranks);
  const std::size_t total = unit * triangle(nranks);
  return {.send = unit * static_cast<std::size_t>(nranks), .recv = total, .shown = total, .bytes = total * elem};
}

std::size_t check(const Run& run) {
  return with_dtype(run.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const auto result = typed<T>(static_cast<const std::byte*>(run.host_recv), run.counts.recv);
    std::size_t wrong = 0, at = 0;
    for (int r = 0; r < run.nranks; ++r) {
      const std::size_t k = unit_of(run) * static_cast<std::size_t>(r + 1);
      wrong += count_wrong(result.subspan(at, k), 0, pattern_table<T>(r, run.nranks));
      at += k;
    }
    return wrong;
  });
}

struct Parts {
  std::vector<std::size_t> counts;
  std::vector<int> counts_int, at;
};
Parts parts_of(const Run& run) {
  Parts p;
  for (int r = 0; r < run.nranks; ++r) {
    p.counts.push_back(unit_of(run) * static_cast<std::size_t>(r + 1));
    p.counts_int.push_back(mpi_count(p.counts.back()));
  }
  p.at.resize(p.counts_int.size());
  std::exclusive_scan(p.counts_int.begin(), p.counts_int.end(), p.at.begin(), 0);
  return p;
}

void run_mpidist(Run& run) {
  const Parts p = parts_of(run);
  mpidist::all_gather_v(run.comm, mpidist::BufferView(run.send, mine(run), run.dtype), recv_view(run), p.counts);
}

void run_raw_mpi(Run& run) {
  const Parts p = parts_of(run);
  const MPI_Datatype type = mpi_type(run.dtype);
  MPI_Allgatherv(run.send, mpi_count(mine(run)), type, run.recv, p.counts_int.data(), p.at.data(), type,
                 run.raw_comm);
}

}  // namespace

extern const OpHooks all_gather_v_hooks{
    .name = "all_gather_v", .reduces = false, .rooted = false, .has_data = true, .in_place_only = false,
    .out_of_place_only = true, .in_place = OpHooks::InPlace::Same, .counts = uneven_counts,
    .bus_factor = factor_gather, .init = init_pattern, .check = check, .run_mpidist = run_mpidist,
    .run_raw_mpi = run_raw_mpi, .run_raw_nccl = nullptr};

}  // namespace bench::ops
