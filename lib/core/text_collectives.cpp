// Short strings between ranks over plain MPI, for the library's own bookkeeping.
#include "core/text_collectives.hpp"

#include <numeric>

#include "core/mpi_check.hpp"

namespace mpidist::detail {

void broadcast_text(MPI_Comm comm, int root, std::string& text) {
  int length = static_cast<int>(text.size());
  MPIDIST_MPI_CHECK(MPI_Bcast(&length, 1, MPI_INT, root, comm));
  text.resize(static_cast<std::size_t>(length));
  MPIDIST_MPI_CHECK(MPI_Bcast(text.data(), length, MPI_CHAR, root, comm));
}

std::vector<std::string> all_gather_text(MPI_Comm comm, const std::string& text) {
  int size = 0;
  MPIDIST_MPI_CHECK(MPI_Comm_size(comm, &size));
  const int length = static_cast<int>(text.size());
  std::vector<int> lengths(static_cast<std::size_t>(size));
  MPIDIST_MPI_CHECK(MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, comm));
  std::vector<int> offsets(lengths.size(), 0);
  std::exclusive_scan(lengths.begin(), lengths.end(), offsets.begin(), 0);
  std::string all(static_cast<std::size_t>(offsets.back() + lengths.back()), '\0');
  MPIDIST_MPI_CHECK(MPI_Allgatherv(text.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(),
                                   MPI_CHAR, comm));
  std::vector<std::string> parts;
  for (std::size_t r = 0; r < lengths.size(); ++r)
    parts.push_back(all.substr(static_cast<std::size_t>(offsets[r]), static_cast<std::size_t>(lengths[r])));
  return parts;
}

}  // namespace mpidist::detail
