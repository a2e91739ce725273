// What every rank of the job runs on, gathered and printed as one table (apps/mpidist-info).
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "mpidist/communicator.hpp"

namespace mpidist {

/// One rank's view of its machine and libraries.
struct RankReport {
  int rank = 0;
  int local_rank = 0;
  int node_rank = 0;
  std::string hostname;
  long pid = 0;
  std::string cpu_affinity;    ///< CPUs this rank may run on, e.g. "0-3,8"
  std::string cuda_device;     ///< "cuda:0 NVIDIA H100 80GB HBM3" or "none (why)"
  std::string mpi_library;     ///< first line of MPI_Get_library_version
  std::string cuda_aware_mpi;  ///< "yes", "no" or "unknown" (no mpi-ext.h)
  std::string nccl_version;    ///< "2.28.9" or "none"
  /// MPIDIST_RANKS_PER_NODE: nodes simulated by grouping ranks on one host (node_rank is then not
  /// a machine); 0 for real nodes.
  int simulated_ranks_per_node = 0;
};

/// This rank's report (local, no communication).
RankReport local_report();

/// Collective: every rank's report, indexed by rank (of the world, or of `comm`), on every rank.
std::vector<RankReport> job_config();
std::vector<RankReport> job_config(const Communicator& comm);

enum class ConfigFormat { Table, Json };

/// Collective: rank 0 writes the job-wide configuration to `out` (an aligned table with one row
/// per rank, or a JSON array); other ranks write nothing. Simulated nodes (MPIDIST_RANKS_PER_NODE)
/// are marked: "1 (sim)" in the node column and a line under the table. With `comm`: the rows of its ranks
/// (world ranks in the rank column), written by its rank 0.
void show_config(std::ostream& out, ConfigFormat format = ConfigFormat::Table);
void show_config(const Communicator& comm, std::ostream& out, ConfigFormat format = ConfigFormat::Table);
/// The same on standard output (`mpidist::show_config()`).
void show_config(ConfigFormat format = ConfigFormat::Table);
void show_config(const Communicator& comm, ConfigFormat format = ConfigFormat::Table);

}  // namespace mpidist
