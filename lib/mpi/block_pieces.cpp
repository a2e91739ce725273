// Blocks between pairs of ranks in pieces whose receiver learns the sender's count (block_pieces.hpp).
#include "mpi/block_pieces.hpp"

#include <algorithm>

#include "core/mpi_check.hpp"
#include "mpi/host_collectives.hpp"
#include "mpidist/error.hpp"

namespace mpidist::detail::mpi {

BlockPieces::BlockPieces(MPI_Comm comm, int tag, bool counts_agreed)
    : comm_(comm), tag_(tag), counts_agreed_(counts_agreed), limit_(max_count()) {}

// Full pieces, then the short last one (empty where count is a multiple of the limit).
void BlockPieces::post(bool sending, int peer, char* at, std::size_t count, DataType dtype) {
  const MPI_Datatype type = datatype(dtype);
  for (std::size_t off = 0;; off += limit_) {
    const auto k = static_cast<int>(std::min(limit_, count - off));
    char* piece = at + off * size_of(dtype);
    requests_.push_back(MPI_REQUEST_NULL);
    if (sending) MPIDIST_MPI_CHECK(MPI_Isend(piece, k, type, peer, tag_, comm_, &requests_.back()));
    else MPIDIST_MPI_CHECK(MPI_Irecv(piece, k, type, peer, tag_, comm_, &requests_.back()));
    if (static_cast<std::size_t>(k) < limit_) return;
  }
}

void BlockPieces::send(int peer, const void* from, std::size_t count, DataType dtype) {
  post(true, peer, const_cast<char*>(static_cast<const char*>(from)), count, dtype);
}

void BlockPieces::receive(int peer, void* into, std::size_t count, DataType dtype) {
  if (counts_agreed_) post(false, peer, static_cast<char*>(into), count, dtype);
  else expected_.push_back(Expected{peer, static_cast<char*>(into), count, dtype});
}

// The block's next piece if it has come: into the block where it fits, else into a buffer of its
// own that is dropped. False while none has.
bool BlockPieces::take_piece(Expected& block) {
  int arrived = 0;
  MPI_Message message = MPI_MESSAGE_NULL;
  MPI_Status status;
  MPIDIST_MPI_CHECK(MPI_Improbe(block.peer, tag_, comm_, &arrived, &message, &status));
  if (!arrived) return false;
  // Whole elements of the block's type; a sender of another element size (unchecked) is read as
  // bytes and dropped.
  MPI_Datatype type = datatype(block.dtype);
  int count = 0;
  MPIDIST_MPI_CHECK(MPI_Get_count(&status, type, &count));
  if (count == MPI_UNDEFINED) {
    block.whole = false;
    type = MPI_BYTE;
    MPIDIST_MPI_CHECK(MPI_Get_count(&status, type, &count));
    if (count == MPI_UNDEFINED)
      throw Error("all_to_all", "rank " + std::to_string(block.peer) + " sent a piece of over 2 GiB that is not whole " +
                                    std::string(to_string(block.dtype)) + " elements");
  }
  const std::size_t unit = block.whole ? size_of(block.dtype) : 1;
  const auto k = static_cast<std::size_t>(count) * unit / size_of(block.dtype);  // elements, rounded down
  requests_.push_back(MPI_REQUEST_NULL);
  if (block.whole && block.got + k <= block.count) {
    MPIDIST_MPI_CHECK(MPI_Imrecv(block.into + block.got * unit, count, type, &message, &requests_.back()));
  } else {
    dropped_.push_back(std::make_unique_for_overwrite<char[]>(std::max<std::size_t>(count * unit, 1)));
    MPIDIST_MPI_CHECK(MPI_Imrecv(dropped_.back().get(), count, type, &message, &requests_.back()));
  }
  block.got += k;
  block.done = k < limit_ || !block.whole;
  return true;
}

std::string BlockPieces::wait() {
  // Every block's pieces, in whatever order the senders' come. One probe of any sender a pass (each
  // probe runs MPI's progress, the sends' included): the first piece waiting, taken where its block
  // is open; where it is a later call's, from a sender done with this one, a probe of each open
  // block's sender instead. No pass gives the core away: on the two-host harness, with more ranks
  // than cores, yielding after an empty pass cost 10-20% more at 4-64 KiB.
  std::sort(expected_.begin(), expected_.end(), [](const Expected& a, const Expected& b) { return a.peer < b.peer; });
  const auto block_of = [this](int peer) {
    const auto at = std::lower_bound(expected_.begin(), expected_.end(), peer,
                                     [](const Expected& block, int p) { return block.peer < p; });
    return at != expected_.end() && at->peer == peer && !at->done ? &*at : nullptr;
  };
  std::size_t open = 0;
  for (const Expected& block : expected_) open += block.done ? 0 : 1;
  while (open > 0) {
    int waiting = 0;
    MPI_Status status;
    MPIDIST_MPI_CHECK(MPI_Iprobe(MPI_ANY_SOURCE, tag_, comm_, &waiting, &status));
    if (!waiting) continue;
    if (Expected* first = block_of(status.MPI_SOURCE)) {
      take_piece(*first);
      if (first->done) --open;
      continue;
    }
    for (Expected& block : expected_)
      while (!block.done && take_piece(block))
        if (block.done) --open;
  }
  if (!requests_.empty())
    MPIDIST_MPI_CHECK(MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE));
  std::string problem;
  for (const Expected& block : expected_) {
    if (block.whole && block.got == block.count) continue;
    problem += (problem.empty() ? "" : ", ") + std::string("recv_counts[") + std::to_string(block.peer) + "] is " +
               std::to_string(block.count) + " but rank " + std::to_string(block.peer) +
               (block.whole ? " sent " + std::to_string(block.got)
                            : " sent a piece that is not whole " + std::string(to_string(block.dtype)) + " elements");
  }
  return problem;
}

}  // namespace mpidist::detail::mpi
