// Which of a group's ranks share each of its nodes, as Group numbers nodes and local ranks. Internal.
#pragma once

#include <vector>

namespace mpidist::detail {
class Group;
}

namespace mpidist::detail::shm {

/// The group's ranks on each of its nodes: node j (Group::leaders rank j; nodes in the order of
/// their leaders, each node's lowest group rank) at [j], its local rank l at [j][l] (group order).
/// From the job's placement table, so alike on every rank and without a message; worked out at the
/// group's first call and kept in Group::node_members.
const std::vector<std::vector<int>>& node_members(Group& group, const char* operation);

/// Whether node j's ranks in `members` are the group ranks that follow node j - 1's: data in group
/// rank order is then already in the leaders' packed order (node by node).
bool consecutive_nodes(const std::vector<std::vector<int>>& members);

/// The node of group rank `rank` in `members`.
int node_holding(const std::vector<std::vector<int>>& members, int rank);

}  // namespace mpidist::detail::shm
