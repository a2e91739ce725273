// The same-on-every-rank checks (same_everywhere.hpp).
#include "core/same_everywhere.hpp"

#include "core/mpi_check.hpp"

namespace mpidist::detail {

Extremes extremes_across_ranks(MPI_Comm comm, std::uint64_t value) {
  std::uint64_t both[2] = {value, ~value};  // max of ~v is ~(min of v)
  MPIDIST_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, both, 2, MPI_UINT64_T, MPI_MAX, comm));
  return {~both[1], both[0]};
}

std::uint64_t fnv1a(std::string_view text) noexcept {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (const unsigned char ch : text) h = (h ^ ch) * 0x100000001b3ull;
  return h;
}

}  // namespace mpidist::detail
