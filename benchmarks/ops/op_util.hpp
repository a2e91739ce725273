// Pieces the per-operation files share: element counts, bus-bandwidth factors, buffer views.
#pragma once

#include <cstring>

#include "../bench.hpp"
#include "../data.hpp"
#include "../raw_mpi.hpp"
#include "mpidist/collectives.hpp"

namespace bench::ops {

/// all_reduce, broadcast, reduce: every rank holds the whole `count`.
inline Counts whole_counts(std::size_t bytes, std::size_t elem, int) {
  const std::size_t c = bytes / elem;
  return {.send = c, .recv = c, .shown = c, .bytes = c * elem};
}
/// all_gather: each rank sends a 1/n block; the receive buffer (the "size") holds all n.
inline Counts gather_counts(std::size_t bytes, std::size_t elem, int nranks) {
  const std::size_t block = bytes / elem / static_cast<std::size_t>(nranks);
  const std::size_t total = block * static_cast<std::size_t>(nranks);
  return {.send = block, .recv = total, .shown = total, .bytes = total * elem};
}
/// reduce_scatter: each rank sends all n blocks and receives its own.
inline Counts scatter_counts(std::size_t bytes, std::size_t elem, int nranks) {
  const std::size_t block = bytes / elem / static_cast<std::size_t>(nranks);
  const std::size_t total = block * static_cast<std::size_t>(nranks);
  return {.send = total, .recv = block, .shown = total, .bytes = total * elem};
}

inline double factor_one(int) { return 1.0; }
inline double factor_all_reduce(int n) { return 2.0 * (n - 1) / n; }
inline double factor_gather(int n) { return static_cast<double>(n - 1) / n; }

inline mpidist::BufferView send_view(const Run& run) { return {run.send, run.counts.send, run.dtype}; }
inline mpidist::BufferView recv_view(const Run& run) { return {run.recv, run.counts.recv, run.dtype}; }

/// Zeroes the host receive buffer (so an unwritten result is caught: the patterns are never 0),
/// then writes this rank's pattern into the host send buffer. In place, send lies inside recv
/// (or recv inside send), so the order matters.
inline void zero_then_fill(Run& run, std::size_t first_index) {
  std::memset(run.host_recv, 0, run.counts.recv * mpidist::size_of(run.dtype));
  with_dtype(run.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    fill_pattern(typed<T>(run.host_send, run.counts.send), run.rank, first_index, run.nranks, run.redop);
  });
}

/// The init hook of the data collectives: the pattern from global index 0, results zeroed.
inline void init_pattern(Run& run) { zero_then_fill(run, 0); }

/// Wrong elements of this rank's reduced output, whose first element is the pattern's index
/// `first` (all_reduce, reduce: 0; reduce_scatter: where this rank's block starts).
inline std::size_t count_wrong_reduction(const Run& run, std::size_t first = 0) {
  return with_dtype(run.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return count_wrong(typed<T>(static_cast<const std::byte*>(run.host_recv), run.counts.recv), first,
                       expected_reduction<T>(run.nranks, run.redop));
  });
}

/// Raw MPI's Avg: MPI_SUM, then this divide on the result.
inline void finish_avg(const Run& run, void* result, std::size_t count) {
  if (run.redop == mpidist::ReduceOp::Avg) divide_in_place(result, count, run.dtype, run.nranks);
}

}  // namespace bench::ops
