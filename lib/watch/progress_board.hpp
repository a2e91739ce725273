// The side channel the watchdog reads: every rank's RankRecord in one MPI-3 shared-memory window
// per host, so a rank sees its host peers' progress with plain loads, with no MPI call and
// whatever state their main threads are in (stuck in another collective, or dead). Internal.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "watch/progress_record.hpp"

namespace mpidist::detail {

class ProgressBoard {
 public:
  /// Collective over `world`: allocates this rank's record (`capacity` ring entries) in a window
  /// shared by the ranks of its host. Falls back to private memory where MPI cannot share it.
  ProgressBoard(MPI_Comm world, int world_rank, std::uint32_t capacity, const char* host);
  ~ProgressBoard();
  ProgressBoard(const ProgressBoard&) = delete;
  ProgressBoard& operator=(const ProgressBoard&) = delete;

  RankRecord& mine() noexcept { return *mine_; }
  const RankRecord& mine() const noexcept { return *mine_; }
  /// The record of world rank `world_rank` when it shares this host, else nullptr.
  const RankRecord* peer(int world_rank) const noexcept;
  /// World ranks on this host, in host-rank order.
  const std::vector<int>& host_ranks() const noexcept { return host_world_ranks_; }
  /// Frees the window (collective over the host's ranks); the records become private copies.
  void release() noexcept;

 private:
  MPI_Comm host_ = MPI_COMM_NULL;
  MPI_Win window_ = MPI_WIN_NULL;
  RankRecord* mine_ = nullptr;
  std::vector<int> host_world_ranks_;
  std::vector<const RankRecord*> host_records_;
  std::unique_ptr<std::byte[]> private_;
};

}  // namespace mpidist::detail
