// Where this rank runs: world rank, node, local rank, host — and the same for every rank of the job.
#pragma once

#include <string>
#include <vector>

namespace mpidist {

/// One rank's place in the job, as every rank sees it.
struct RankPlacement {
  int rank = 0;
  int node_rank = 0;
  int local_rank = 0;
  std::string hostname;
};

/// The job's shape, discovered once at initialization.
struct Topology {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_size = 1;
  int node_rank = 0;
  int num_nodes = 1;
  std::string hostname;
  /// Set when MPIDIST_RANKS_PER_NODE grouped ranks into simulated nodes.
  int simulated_ranks_per_node = 0;
  /// Every rank's placement, indexed by world rank.
  std::vector<RankPlacement> ranks;
};

/// World rank of this process (ignite `get_rank`, speechbrain `RANK`).
int rank();
/// Number of ranks in the job (ignite `get_world_size`).
int world_size();
/// Rank within the node (ignite `get_local_rank`, speechbrain `LOCAL_RANK`), or the value given to
/// set_local_rank().
int local_rank();
/// Ranks on this node (ignite `get_nproc_per_node`).
int local_size();
/// Index of this rank's node, 0..num_nodes()-1 in order of the nodes' lowest world ranks.
int node_rank();
/// Number of nodes (ignite `get_nnodes`).
int num_nodes();
/// Host name of this rank, as MPI_Get_processor_name reports it.
std::string hostname();
/// The whole topology, including every rank's placement.
const Topology& topology();
/// Overrides local_rank() (ignite `set_local_rank`), e.g. when a launcher knows better. Must be in
/// [0, local_size()).
void set_local_rank(int local_rank);

}  // namespace mpidist
