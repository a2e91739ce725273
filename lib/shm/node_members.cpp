// node_members.hpp: the group's ranks on each node, from the job's placement table.
#include "shm/node_members.hpp"

#include <algorithm>
#include <cstddef>

#include "core/context.hpp"
#include "core/group.hpp"

namespace mpidist::detail::shm {

const std::vector<std::vector<int>>& node_members(Group& group, const char* operation) {
  auto& members = group.node_members;
  if (!members.empty()) return members;
  const auto& placement = context(operation).topology.ranks;
  std::vector<int> node_ids;  // the world's node of each of the group's nodes, in leader order
  for (int r = 0; r < group.topology.size; ++r) {
    const int id = placement[static_cast<std::size_t>(group.world_ranks[static_cast<std::size_t>(r)])].node_rank;
    const auto at = std::find(node_ids.begin(), node_ids.end(), id);
    if (at == node_ids.end()) {
      node_ids.push_back(id);
      members.push_back({r});
    } else {
      members[static_cast<std::size_t>(at - node_ids.begin())].push_back(r);
    }
  }
  return members;
}

bool consecutive_nodes(const std::vector<std::vector<int>>& members) {
  int next = 0;
  for (const auto& node : members)
    for (const int r : node)
      if (r != next++) return false;
  return true;
}

int node_holding(const std::vector<std::vector<int>>& members, int rank) {
  for (std::size_t j = 0; j < members.size(); ++j)
    if (std::find(members[j].begin(), members[j].end(), rank) != members[j].end()) return static_cast<int>(j);
  return -1;
}

}  // namespace mpidist::detail::shm
