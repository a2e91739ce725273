// Cheap checks that every rank holds the same value (a length, a hash of key names): one
// all-reduce of two integers, before any rank acts on a value the others may not share. Internal.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace mpidist::detail {

/// The smallest and largest of one value over the ranks of a communicator.
struct Extremes {
  std::uint64_t smallest;
  std::uint64_t largest;
  bool same() const noexcept { return smallest == largest; }
};

/// Collective over `comm`: min and max of `value` over its ranks (one MPI_Allreduce of max(v), max(~v)).
Extremes extremes_across_ranks(MPI_Comm comm, std::uint64_t value);
/// The same for several values at once, each on its own (one MPI_Allreduce of 2n integers).
std::vector<Extremes> extremes_across_ranks(MPI_Comm comm, std::span<const std::uint64_t> values);

/// FNV-1a: a hash that is the same in every process, for comparing strings across ranks.
std::uint64_t fnv1a(std::string_view text) noexcept;

}  // namespace mpidist::detail
