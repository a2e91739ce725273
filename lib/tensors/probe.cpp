// probe and iprobe (p2p.hpp): what waits to be received, left for a receive.
#include <mpi.h>

#include <optional>
#include <string>
#include <thread>

#include "core/group.hpp"
#include "core/p2p_rules.hpp"
#include "core/seconds_text.hpp"
#include "mpi/p2p_messages.hpp"
#include "watch/timeout.hpp"
#include "watch/watchdog.hpp"
#include "mpidist/error.hpp"
#include "mpidist/p2p.hpp"

namespace mpidist {
namespace detail {
namespace {

// `waits`: probe, polling until a message matches or the timeout passes; else one look (iprobe).
std::optional<Status> look(const Communicator* comm, const char* operation, int src, int tag, bool waits) {
  Group& group = comm != nullptr ? group_of(*comm, operation) : world_group(operation);
  check_p2p(group, operation, src, tag, true);
  if (src == no_peer) return Status{no_peer, any_tag, 0};
  const int mpi_src = src == any_source ? MPI_ANY_SOURCE : src, mpi_tag = tag == any_tag ? MPI_ANY_TAG : tag;
  return naming_errors(group.name, [&]() -> std::optional<Status> {
    std::optional<Deadline> deadline;  // made at the 16th look: a message that waits costs no clock
    for (unsigned looks = 0;; ++looks) {
      if (auto status = mpi::probe_once(group.comm, mpi_src, mpi_tag)) return status;
      if (!waits) return std::nullopt;
      if (looks % 16 == 15) {
        if (!deadline) deadline.emplace(operation, &group);
        else if (deadline->passed())
          throw Error(group.name, operation,
                      "timed out after " + seconds_text(deadline->seconds()) + " waiting for a message from " +
                          describe_peer(src) + " (" + describe_tag(tag) + ")" + deadline->setting() +
                          "; the peer never sent it, or sent it with another tag. Nothing was received: the "
                          "communicator can still be used" + describe_wait_in_flight());
      }
      if (looks >= 64) std::this_thread::yield();  // ranks that oversubscribe cores let the sender run
    }
  });
}

}  // namespace
}  // namespace detail

Status probe(int src, int tag) { return *detail::look(nullptr, "probe", src, tag, true); }
Status probe(const Communicator& comm, int src, int tag) { return *detail::look(&comm, "probe", src, tag, true); }
std::optional<Status> iprobe(int src, int tag) { return detail::look(nullptr, "iprobe", src, tag, false); }
std::optional<Status> iprobe(const Communicator& comm, int src, int tag) {
  return detail::look(&comm, "iprobe", src, tag, false);
}

}  // namespace mpidist
