// The rules every point-to-point call checks before anything moves (tensors/p2p.cpp and
// objects/p2p.cpp share them): a local Error at once. Internal.
#pragma once

#include <string>

namespace mpidist::detail {

class Group;

/// mpidist's own messages travel on a group's control channel: no user tag is reserved.
inline constexpr int reserved_tags = 0;

/// MPI_TAG_UB of the group's communicator.
int tag_upper_bound(const Group& group);

/// proc_null (p2p.hpp): the peer of an op that does nothing.
inline constexpr int no_peer = -2;

/// "rank 3", "any rank" (any_source), "proc_null": a peer as errors name it.
std::string describe_peer(int peer);
/// "tag 7", or "any tag" for any_tag.
std::string describe_tag(int tag);

/// Throws Error (naming the group and `operation`) for a broken group, any message inside a
/// MainProcessContext, a peer out of range (any_source, -1, allowed for receives; proc_null, -2,
/// for both), a tag out of
/// [0, MPI_TAG_UB - reserved_tags] (any_tag, -1, allowed for receives), and, for a blocking send
/// (`blocking_send`), a send to this rank itself.
void check_p2p(Group& group, const char* operation, int peer, int tag, bool receiving, bool blocking_send = false);

}  // namespace mpidist::detail
