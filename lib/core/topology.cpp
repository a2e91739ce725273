// Discovering where every rank runs: nodes, local ranks, host names.
#include "mpidist/topology.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "core/context.hpp"
#include "core/cpu_share.hpp"
#include "core/mpi_check.hpp"
#include "mpidist/error.hpp"

namespace mpidist {
namespace detail {
namespace {

// MPIDIST_RANKS_PER_NODE=k: consecutive ranks are grouped into nodes of k (the last may be
// smaller), so multi-node code paths can be exercised on one host.
int simulated_ranks_per_node() {
  const char* text = std::getenv("MPIDIST_RANKS_PER_NODE");
  if (text == nullptr || *text == '\0') return 0;
  char* end = nullptr;
  errno = 0;
  const long value = std::strtol(text, &end, 10);
  if (errno != 0 || *end != '\0' || value < 1 || value > 1 << 30)
    throw Error("initialize", std::string("MPIDIST_RANKS_PER_NODE must be a positive integer, got '") + text + "'");
  return static_cast<int>(value);
}

struct PlacementRecord {
  int node_rank;
  int local_rank;
  std::array<char, MPI_MAX_PROCESSOR_NAME + 1> host;
  std::array<char, 64> machine;  // machine_id(), cut to fit (a boot id is 36 characters)
  CpuMask cpus;
};

// The ranks on one machine and the CPUs they may run on together.
struct MachineLoad {
  int ranks = 0;
  CpuMask cpus{};
};

}  // namespace

int node_color(MPI_Comm world, int rank) {
  const int per_node = simulated_ranks_per_node();
  if (per_node > 0) return rank / per_node;
  MPI_Comm node = MPI_COMM_NULL;
  MPIDIST_MPI_CHECK(MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node));
  int lowest = rank;  // key = rank, so the node's rank 0 has its lowest world rank
  const int rc = MPI_Bcast(&lowest, 1, MPI_INT, 0, node);
  MPI_Comm_free(&node);
  MPIDIST_MPI_CHECK(rc);
  return lowest;
}

void discover_topology(Context& ctx) {
  Topology& t = ctx.topology;
  const GroupTopology& g = ctx.world->topology;
  t.rank = g.rank;
  t.world_size = g.size;
  t.local_rank = g.local_rank;
  t.local_size = g.local_size;
  t.node_rank = g.node_rank;
  t.num_nodes = g.num_nodes;
  t.simulated_ranks_per_node = simulated_ranks_per_node();

  std::array<char, MPI_MAX_PROCESSOR_NAME + 1> host{};
  int length = 0;
  MPIDIST_MPI_CHECK(MPI_Get_processor_name(host.data(), &length));
  t.hostname.assign(host.data(), static_cast<std::size_t>(length));

  // The job-wide table, gathered once so topology() never communicates.
  PlacementRecord mine{t.node_rank, t.local_rank, host, {}, own_cpus()};
  const std::string machine = machine_id(t.hostname);
  machine.copy(mine.machine.data(), mine.machine.size() - 1);
  std::vector<PlacementRecord> all(static_cast<std::size_t>(t.world_size));
  MPIDIST_MPI_CHECK(
      MPI_Allgather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE, ctx.world->control));
  t.ranks.clear();
  std::map<std::string, MachineLoad> machines;  // by machine id
  std::vector<RankPlace> places;
  places.reserve(all.size());
  for (int r = 0; r < t.world_size; ++r) {
    const auto& record = all[static_cast<std::size_t>(r)];
    t.ranks.push_back({r, record.node_rank, record.local_rank, std::string(record.host.data())});
    places.push_back({std::string(record.machine.data()), std::string(record.host.data()), record.cpus});
    MachineLoad& load = machines[std::string(record.machine.data())];
    ++load.ranks;
    for (std::size_t w = 0; w < load.cpus.size(); ++w) load.cpus[w] |= record.cpus[w];
  }
  const MachineLoad& own = machines[std::string(mine.machine.data())];
  ctx.machine_ranks = own.ranks;
  ctx.machine_cpus = count_cpus(own.cpus);
  ctx.cores_shared_somewhere = std::any_of(machines.begin(), machines.end(), [](const auto& machine) {
    return machine.second.ranks > count_cpus(machine.second.cpus);
  });
  ctx.hosts_share_cores = hosts_share_cores(places);
}

}  // namespace detail

int rank() { return detail::context("rank").topology.rank; }
int world_size() { return detail::context("world_size").topology.world_size; }
int local_rank() { return detail::context("local_rank").topology.local_rank; }
int local_size() { return detail::context("local_size").topology.local_size; }
int node_rank() { return detail::context("node_rank").topology.node_rank; }
int num_nodes() { return detail::context("num_nodes").topology.num_nodes; }
std::string hostname() { return detail::context("hostname").topology.hostname; }
const Topology& topology() { return detail::context("topology").topology; }

void set_local_rank(int local_rank) {
  auto& t = detail::context("set_local_rank").topology;
  if (local_rank < 0 || local_rank >= t.local_size)
    throw Error("set_local_rank", "local rank " + std::to_string(local_rank) + " out of range for " +
                                      std::to_string(t.local_size) + " ranks on this node");
  t.local_rank = local_rank;
  t.ranks[static_cast<std::size_t>(t.rank)].local_rank = local_rank;
  detail::world_group("set_local_rank").topology.local_rank = local_rank;
}

}  // namespace mpidist
