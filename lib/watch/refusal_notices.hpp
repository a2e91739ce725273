// Refusals across hosts. The progress board (refusals.hpp) is one host's shared memory: a rank
// that refuses a call also tells the group's members on other hosts with a message, and a rank
// there that leaves the call on it tells the refusing rank back, so that its vote ends too; a rank
// whose communicator breaks tells them that it joins no later call. Read by the same polled waits
// as the board, on the thread inside the call, at most once a millisecond. A rank held inside
// MPI's own blocking collective polls nothing: a host peer that read the message relays it on the
// board, and the watchdog covers the rest (at ThreadLevel::Multiple it asks the other hosts).
//
// The messages travel on one channel of the process's own (a duplicate of the world made at
// initialize(), freed at finalize()), never on a group's communicators: a notice nobody waits for
// stays unreceived, and on a communicator freed and made again (MPI reuses its context id) it
// would meet the new one's messages. Whatever has arrived is read into a mailbox, by group and
// call. Internal.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>

#include "watch/refusals.hpp"

namespace mpidist::detail {

class Group;

class RefusalNotices {
 public:
  /// Collective over `world`.
  explicit RefusalNotices(MPI_Comm world);
  ~RefusalNotices();
  RefusalNotices(const RefusalNotices&) = delete;
  RefusalNotices& operator=(const RefusalNotices&) = delete;

  /// Tells every member of `group` that cannot read this host's board that this rank refused
  /// call `seq` because of `why` (cut to fit); never blocks.
  void send_refusals(const Group& group, std::uint64_t seq, const std::string& why) noexcept;
  /// Tells the same members that this rank's communicator broke in call `seq` (with its refusal of
  /// that call, if it refused it) and that it joins no later call.
  void send_break(const Group& group, std::uint64_t seq) noexcept;
  /// Tells `refuser` (a rank of `group`) that this rank went on into call `seq` and left it.
  void send_departure(const Group& group, int refuser, std::uint64_t seq) noexcept;

  /// A member on another host that refused call `seq` of `group`, or whose communicator broke
  /// before it; or none.
  std::optional<PeerNews> refusal(const Group& group, std::uint64_t seq) noexcept;
  /// A member on another host that left call `seq` of `group`, which this rank refused; or none.
  std::optional<PeerNews> departure(const Group& group, std::uint64_t seq) noexcept;
  /// Forgets the refusals of call `seq` of `group` (every rank refused it alike: no wait reads them).
  void forget(const Group& group, std::uint64_t seq) noexcept;

  /// Waits until this rank's notices have left it (at most a second): a rank that goes on
  /// computing makes no MPI call that would move them, and the first message to a rank of another
  /// host waits for its connection. For a rank about to leave a call out of step.
  void flush() noexcept;

  /// Reads what has arrived and frees the channel (finalize(), before MPI_Finalize).
  void release() noexcept;

 private:
  struct Notice;
  enum class Kind : std::uint32_t { Refusal = 1, Departure = 2 };
  using Key = std::tuple<Kind, std::uint64_t, std::uint64_t>;  // kind, communicator key, call

  void send(const Group& group, int to, Kind kind, std::uint64_t seq, const std::string& text,
            std::uint64_t broke_at) noexcept;
  void send_to_other_hosts(const Group& group, std::uint64_t seq, const std::string& text,
                           std::uint64_t broke_at) noexcept;
  std::optional<PeerNews> take(const Group& group, Kind kind, std::uint64_t seq) noexcept;
  void receive_arrived();  // mutex_ held
  void reap_sent() noexcept;  // mutex_ held

  MPI_Comm comm_ = MPI_COMM_NULL;
  std::mutex mutex_;  // the channel and the mailbox: the threads inside calls on different groups
  struct Sent;
  std::list<std::unique_ptr<Sent>> sent_;
  struct Mail {
    int world_rank = -1;  // the sender
    std::string text;
    std::uint64_t broke_at = 0;
  };
  std::map<Key, Mail> mailbox_;
};

}  // namespace mpidist::detail

namespace mpidist::detail {

/// The job's channel (Context::notices); nullptr before initialize() and after finalize().
RefusalNotices* refusal_notices() noexcept;

}  // namespace mpidist::detail
