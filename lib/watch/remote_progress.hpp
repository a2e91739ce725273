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

#include "watch/peer_view.hpp"
#include "mpidist/topology.hpp"

namespace mpidist::detail {

class ProgressBoard;

/// Two ranks on different hosts whose fingerprint hashes differ after the same number of calls on
/// communicator `key` (0: none found), with the other host's rank's recent completed calls there.
struct HashConflict {
  std::uint64_t key = 0;
  std::uint64_t done = 0;
  int here = -1;   // world rank on this host
  int there = -1;  // world rank on the other host
  std::map<std::uint64_t, EntrySnapshot> their_calls;
};

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

  /// How many queries about a call (ask()'s) this rank has answered, by asking world rank.
  using Questions = std::map<int, std::uint32_t>;
  Questions questions();

  /// Answers queries until each of `askers` has asked once more than in `before`, or until
  /// `deadline_ns` (steady clock); at once where this rank answers none (not its host's first).
  void answer_until(const Questions& before, const std::vector<int>& askers, std::int64_t deadline_ns) noexcept;

  /// Asks the hosts of `world_ranks` (none of them on this host) what those ranks do about call
  /// `seq` of communicator `key`, waiting at most `patience_seconds` for the answers. Ranks whose
  /// host did not answer (it ended, or is unreachable) are missing from the result.
  std::map<int, PeerView> ask(std::uint64_t key, std::uint64_t seq, const std::vector<int>& world_ranks,
                              double patience_seconds);

  /// Sends every rank's (communicator, calls finished, hash) of this host to the other hosts,
  /// which compare them with their own ranks' (the background consistency check across hosts).
  /// Waits at most `patience_seconds`; returns the first conflict an answer names.
  HashConflict compare_hashes(double patience_seconds);

  /// Closes the channel (collective over the world, at finalize()).
  void release() noexcept;

 private:
  // One query to one host and its answer.
  struct Exchange {
    int server = -1;
    std::vector<std::byte> query, answer;
    bool answered = false;
    MPI_Request sent = MPI_REQUEST_NULL, received = MPI_REQUEST_NULL;
  };
  // An answer being sent.
  struct Reply {
    std::vector<std::byte> bytes;
    MPI_Request request = MPI_REQUEST_NULL;
  };
  /// Sends the queries, waits for the answers (serving meanwhile) until `patience_seconds`.
  void exchange(std::vector<Exchange>& exchanges, std::uint32_t serial, double patience_seconds);
  /// The lowest world rank of every host but this one.
  std::vector<int> other_hosts() const;
  void serve_locked(std::int64_t now);
  /// Answers queries (another host may be asking this one meanwhile), a millisecond apart, until
  /// `done()` or `deadline_ns` (steady clock). The caller holds mutex_.
  template <class Done>
  void serve_until(std::int64_t deadline_ns, Done&& done);
  std::vector<std::byte> answer_views(const std::byte* body, std::size_t size, std::uint64_t key, std::uint64_t seq,
                                      std::int64_t now) const;
  std::vector<std::byte> answer_hashes(const std::byte* body, std::size_t size) const;
  void reap_replies(bool give_up) noexcept;

  MPI_Comm comm_ = MPI_COMM_NULL;
  const ProgressBoard& board_;
  std::map<std::string, std::vector<int>> ranks_by_host_;  // world ranks per host name, ascending
  const Topology& topology_;
  std::string my_host_;
  std::mutex mutex_;             // one query at a time per process; serving too
  std::uint32_t queries_ = 0;    // this process's query serial (reply tags tell stale replies apart)
  std::list<Reply> replies_;     // answers being sent
  Questions questions_;          // ask()'s queries answered, by asker
};

}  // namespace mpidist::detail
