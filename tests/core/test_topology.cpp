// Topology at 1-4 ranks: one host, separate hosts (tests/hosts), simulated nodes (MPIDIST_RANKS_PER_NODE).
#include <mpi.h>

#include <algorithm>
#include <cstdlib>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "mpi_test.hpp"
#include "mpidist/mpidist.hpp"

namespace {

using TopologyTest = mpidist_test::MpiTest;

int simulated_node_size() {
  const char* k = std::getenv("MPIDIST_RANKS_PER_NODE");
  return k ? std::atoi(k) : 0;
}

std::vector<int> numbers(const char* listed) {
  std::vector<int> values;
  std::istringstream in(listed);
  for (std::string n; std::getline(in, n, ',');) values.push_back(std::stoi(n));
  return values;
}

// The node each rank must find itself on, in rank order. Where a test script placed the ranks on
// real hosts (tests/hosts): MPIDIST_TEST_RANK_NODES ("0,1,0,1", mpiexec --map-by node) or
// MPIDIST_TEST_NODE_SIZES ("3,1": ranks per node, by slot). Simulated: nodes of
// MPIDIST_RANKS_PER_NODE. Else one host.
std::vector<int> expected_rank_nodes(int size) {
  if (const char* listed = std::getenv("MPIDIST_TEST_RANK_NODES")) return numbers(listed);
  std::vector<int> sizes;
  if (const char* listed = std::getenv("MPIDIST_TEST_NODE_SIZES")) {
    sizes = numbers(listed);
  } else if (const int k = simulated_node_size(); k > 0) {
    for (int first = 0; first < size; first += k) sizes.push_back(std::min(k, size - first));
  } else {
    sizes.push_back(size);
  }
  std::vector<int> nodes;
  for (std::size_t node = 0; node < sizes.size(); ++node) nodes.insert(nodes.end(), sizes[node], static_cast<int>(node));
  return nodes;
}

TEST_F(TopologyTest, WorldMatchesMpi) {
  int rank = -1, size = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  EXPECT_EQ(mpidist::rank(), rank);
  EXPECT_EQ(mpidist::world_size(), size);
  EXPECT_EQ(mpidist::is_distributed(), size > 1);
  EXPECT_EQ(mpidist::is_main_process(), rank == 0);
  EXPECT_TRUE(mpidist::is_initialized());
}

TEST_F(TopologyTest, KnowsWhetherALauncherStartedIt) {
  // tests/meson.build marks the singleton runs (no mpiexec) with MPIDIST_TEST_SINGLETON=1.
  EXPECT_EQ(mpidist::started_by_launcher(), std::getenv("MPIDIST_TEST_SINGLETON") == nullptr);
}

TEST_F(TopologyTest, LibraryOwnsADuplicateCommunicator) {
  int result = MPI_UNEQUAL;
  MPI_Comm_compare(mpidist::communicator(), MPI_COMM_WORLD, &result);
  EXPECT_EQ(result, MPI_CONGRUENT);  // same group, different context: never MPI_IDENT
}

TEST_F(TopologyTest, NodesMatchExpectedLayout) {
  const int size = mpidist::world_size(), rank = mpidist::rank();
  const auto nodes = expected_rank_nodes(size);
  ASSERT_EQ(static_cast<int>(nodes.size()), size) << "the expected layout does not place every rank";
  const int node = nodes[static_cast<std::size_t>(rank)];
  EXPECT_EQ(mpidist::node_rank(), node);
  EXPECT_EQ(mpidist::num_nodes(), *std::max_element(nodes.begin(), nodes.end()) + 1);
  // Local ranks count a node's ranks in rank order, wherever the launcher put the others.
  EXPECT_EQ(mpidist::local_rank(), std::count(nodes.begin(), nodes.begin() + rank, node));
  EXPECT_EQ(mpidist::local_size(), std::count(nodes.begin(), nodes.end(), node));  // the last node may be short
  EXPECT_EQ(mpidist::topology().simulated_ranks_per_node, simulated_node_size());
}

TEST_F(TopologyTest, JobTableIsConsistentOnEveryRank) {
  const auto& t = mpidist::topology();
  ASSERT_EQ(static_cast<int>(t.ranks.size()), mpidist::world_size());
  std::set<std::pair<int, int>> seen;
  int max_node = 0;
  for (int r = 0; r < mpidist::world_size(); ++r) {
    const auto& p = t.ranks[static_cast<std::size_t>(r)];
    EXPECT_EQ(p.rank, r);
    EXPECT_FALSE(p.hostname.empty());
    EXPECT_TRUE(seen.insert({p.node_rank, p.local_rank}).second) << "rank " << r << " repeats a (node, local) pair";
    max_node = std::max(max_node, p.node_rank);
  }
  EXPECT_EQ(max_node + 1, mpidist::num_nodes());
  const auto& mine = t.ranks[static_cast<std::size_t>(mpidist::rank())];
  EXPECT_EQ(mine.node_rank, mpidist::node_rank());
  EXPECT_EQ(mine.local_rank, mpidist::local_rank());
  EXPECT_EQ(mine.hostname, mpidist::hostname());
  // Local sizes from the table agree with what each rank's node reports.
  int on_my_node = 0;
  for (const auto& p : t.ranks) on_my_node += p.node_rank == mpidist::node_rank();
  EXPECT_EQ(on_my_node, mpidist::local_size());
}

TEST_F(TopologyTest, SetLocalRankOverridesAndValidates) {
  const int original = mpidist::local_rank();
  mpidist::set_local_rank(mpidist::local_size() - 1);
  EXPECT_EQ(mpidist::local_rank(), mpidist::local_size() - 1);
  try {
    mpidist::set_local_rank(mpidist::local_size());
    ADD_FAILURE() << "no Error for an out-of-range local rank";
  } catch (const mpidist::Error& e) {
    EXPECT_EQ(e.operation(), "set_local_rank");
    EXPECT_EQ(e.rank(), mpidist::rank());
    EXPECT_NE(std::string(e.what()).find("out of range"), std::string::npos) << e.what();
  }
  mpidist::set_local_rank(original);
  EXPECT_EQ(mpidist::local_rank(), original);
}

TEST_F(TopologyTest, RankPrefixedMessage) {
  const std::string expected =
      "[rank " + std::to_string(mpidist::rank()) + "/" + std::to_string(mpidist::world_size()) + "] hello";
  EXPECT_EQ(mpidist::rank_prefixed_message("hello"), expected);
}

}  // namespace
