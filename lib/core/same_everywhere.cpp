// The same-on-every-rank checks (same_everywhere.hpp).
#include "core/same_everywhere.hpp"

#include "core/mpi_check.hpp"

namespace mpidist::detail {

Extremes extremes_across_ranks(MPI_Comm comm, std::uint64_t value) {
  return extremes_across_ranks(comm, std::span(&value, 1)).front();
}

std::vector<Extremes> extremes_across_ranks(MPI_Comm comm, std::span<const std::uint64_t> values) {
  const std::size_t n = values.size();
  std::vector<std::uint64_t> both(2 * n);  // max of ~v is ~(min of v)
  for (std::size_t i = 0; i < n; ++i) both[i] = values[i], both[n + i] = ~values[i];
  MPIDIST_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, both.data(), static_cast<int>(2 * n), MPI_UINT64_T, MPI_MAX, comm));
  std::vector<Extremes> extremes(n);
  for (std::size_t i = 0; i < n; ++i) extremes[i] = {~both[n + i], both[i]};
  return extremes;
}

std::uint64_t fnv1a(std::string_view text) noexcept {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (const unsigned char ch : text) h = (h ^ ch) * 0x100000001b3ull;
  return h;
}

}  // namespace mpidist::detail
