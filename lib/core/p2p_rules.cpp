// The point-to-point rules (p2p_rules.hpp).
#include "core/p2p_rules.hpp"

#include <mpi.h>

#include <string>

#include "core/group.hpp"
#include "mpidist/error.hpp"
#include "mpidist/guards.hpp"

namespace mpidist::detail {
namespace {
constexpr int any = -1;  // any_source, any_tag (p2p.hpp)
}  // namespace

std::string describe_peer(int peer) {
  return peer == any ? "any rank" : peer == no_peer ? "proc_null" : "rank " + std::to_string(peer);
}

std::string describe_tag(int tag) { return tag == any ? "any tag" : "tag " + std::to_string(tag); }

int tag_upper_bound(const Group& group) { return group.tag_upper_bound; }

void check_p2p(Group& group, const char* operation, int peer, int tag, bool receiving, bool blocking_send) {
  if (group.is_broken())
    throw Error(group.name, operation, "this communicator can no longer be used: " + group.broken +
                                           ". Make a new one, or end the job");
  if (MainProcessContext::depth() > 0)
    throw Error(group.name, operation,
                "point-to-point with " + describe_peer(peer) + " inside a MainProcessContext, where only the main "
                "process runs and no other rank would ever match it; send before or after the main-process block");
  if (!(receiving && peer == any) && peer != no_peer) check_rank(group, operation, peer, false, receiving ? "source rank" : "destination rank");
  if (!(receiving && tag == any)) {
    const int limit = tag_upper_bound(group) - reserved_tags;
    if (tag < 0 || tag > limit)
      throw Error(group.name, operation, "tag " + std::to_string(tag) + " out of range: tags are 0 to " +
                                             std::to_string(limit) + " (MPI_TAG_UB of this MPI)" +
                                             (receiving ? ", or mpidist::any_tag" : ""));
  }
  if (blocking_send && peer == group.topology.rank)
    throw Error(group.name, operation, "a blocking send to this rank itself (rank " + std::to_string(peer) +
                                           ") would never return: use isend, or batch_isend_irecv");
}

}  // namespace mpidist::detail
