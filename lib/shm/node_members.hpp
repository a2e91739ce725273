// Which of a group's ranks share each of its nodes, as Group numbers nodes and local ranks. Internal.
#pragma once

#include <vector>

namespace mpidist::detail {
class Group;
}

namespace mpidist::detail::shm {

/// The group's ranks on each of its nodes: node j (Group::leaders rank j; nodes in the order of
/// their leaders, each node's lowest group rank) at [j], its local rank l at [j][l] (group order).
/// From the job's placement table, so alike on every rank and without a message.
std::vector<std::vector<int>> node_members(const Group& group, const char* operation);

/// The node of group rank `rank` in `members`.
int node_holding(const std::vector<std::vector<int>>& members, int rank);

}  // namespace mpidist::detail::shm
