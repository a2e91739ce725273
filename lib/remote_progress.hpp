// The watchdog's view across hosts. Inside a host a watchdog reads its peers' progress records
// from shared memory (progress_board.hpp); ranks on other hosts it asks, over a communicator of
// its own, and one of their host peers' watchdog threads answers from that host's board (PeerView).
// Both sides are watchdog threads calling MPI beside a main thread that may be stuck inside MPI,
// so this runs only when every rank has MPI_THREAD_MULTIPLE; otherwise other hosts stay "not
// visible from here" and their own reports and dumps tell their side. Internal.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <list>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "peer_view.hpp"
#include "mpidist/topology.hpp"

namespace mpidist::detail {

class ProgressBoard;

class RemoteProgress {
 public:
  /// Collective over `world`. `thread_level` is what MPI provided here; the channel opens only
  /// when every rank has MPI_THREAD_MULTIPLE.
  RemoteProgress(MPI_Comm world, int thread_level, const Topology& topology, const ProgressBoard& board);
  ~RemoteProgress();
  RemoteProgress(const RemoteProgress&) = delete;
  RemoteProgress& operator=(const RemoteProgress&) = delete;

  bool enabled() const noexcept { return comm_ != MPI_COMM_NULL; }

  /// Answers the queries of other hosts' watchdogs from this host's board. Never blocks; a
  /// thread already inside ask() answers them itself.
  void serve(std::int64_t now) noexcept;

  /// Asks the hosts of `world_ranks` (none of them on this host) what those ranks do about call
  /// `seq` of communicator `key`, waiting at most `patience_seconds` for the answers. Ranks whose
  /// host did not answer (it ended, or is unreachable) are missing from the result.
  std::map<int, PeerView> ask(std::uint64_t key, std::uint64_t seq, const std::vector<int>& world_ranks,
                              double patience_seconds);

  /// Closes the channel (collective over the world, at finalize()).
  void release() noexcept;

 private:
  struct Reply {
    std::vector<PeerView> views;
    MPI_Request request = MPI_REQUEST_NULL;
  };
  void serve_locked(std::int64_t now);
  void reap_replies(bool give_up) noexcept;

  MPI_Comm comm_ = MPI_COMM_NULL;
  const ProgressBoard& board_;
  std::map<std::string, std::vector<int>> ranks_by_host_;  // world ranks per host name, ascending
  const Topology& topology_;
  std::mutex mutex_;             // one query at a time per process; serving too
  std::uint32_t queries_ = 0;    // this process's query serial (reply tags tell stale replies apart)
  std::list<Reply> replies_;     // answers being sent
};

}  // namespace mpidist::detail
