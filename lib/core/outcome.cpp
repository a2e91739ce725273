// Agreeing on success or failure over a library channel (outcome.hpp).
#include "core/outcome.hpp"

#include <string>

#include "core/mpi_check.hpp"
#include "core/text_collectives.hpp"
#include "mpidist/error.hpp"

namespace mpidist::detail {

void agree_on_outcome(MPI_Comm comm, const char* operation, std::exception_ptr local) {
  int size = 0, me = 0;
  MPIDIST_MPI_CHECK(MPI_Comm_size(comm, &size));
  MPIDIST_MPI_CHECK(MPI_Comm_rank(comm, &me));
  // The lowest failing rank (or `size` when all succeeded) reaches every rank; then its message.
  const int mine = local ? me : size;
  int first_failed = size;
  MPIDIST_MPI_CHECK(MPI_Allreduce(&mine, &first_failed, 1, MPI_INT, MPI_MIN, comm));
  if (first_failed == size) return;
  std::string message = me == first_failed ? describe_exception(local) : "";
  broadcast_text(comm, first_failed, message);
  throw Error(operation, "rank " + std::to_string(first_failed) + " failed: " + message);
}

}  // namespace mpidist::detail
