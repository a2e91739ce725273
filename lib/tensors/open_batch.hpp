// Device isend/irecv through NCCL wait in an open batch until something needs them on the wire
// (p2p.cpp). Internal.
#pragma once

namespace mpidist::detail {

class Group;

/// Launches the open batch of `group`, if any, now: before a call that queues NCCL work of its own
/// on the group (a blocking send or receive, a batch, an uneven collective), so that NCCL matches
/// the messages of two ranks in the order they were issued.
void launch_open_batch(Group& group, const char* operation);

}  // namespace mpidist::detail
