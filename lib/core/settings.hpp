// Job-wide settings: read once at initialization from the environment and agreed by every rank,
// so no rank ever takes a decision (check the call, pick NCCL, give up waiting) another rank does
// not take. Internal.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <cstddef>
#include <optional>
#include <string>

#include "mpidist/collectives.hpp"
#include "mpidist/detail/stall_warning.hpp"

namespace mpidist::detail {

/// Default MPIDIST_TIMEOUT in seconds: PyTorch's default for NCCL process groups (10 minutes).
inline constexpr double default_timeout_seconds = 600.0;
/// Default MPIDIST_FUSION_BYTES: Horovod's default fusion buffer (64 MiB).
inline constexpr std::size_t default_fusion_bytes = std::size_t{64} << 20;

/// MPIDIST_HOST_ALLREDUCE: how a host all_reduce travels. Auto picks per size and placement from
/// measurements; Mpi, Shm and TwoD force one. Across nodes Shm is the leader-only hierarchical
/// all-reduce and TwoD the 2D one (every local rank carries a slice; on nodes of unequal size,
/// where slices cannot match, the leader-only one); on one node both are the segment's. TwoD also
/// forces the 2D all_gather and reduce_scatter across equal nodes (MPI elsewhere, and under Shm).
enum class HostAllReduce { Auto, Mpi, Shm, TwoD };

struct Settings {
  /// MPIDIST_VALIDATE=1: the cross-rank argument check before every collective.
  bool validate = false;
  /// MPIDIST_VALIDATE=auto (unset) where any rank of the job has a CUDA device: the check before
  /// every collective on device memory, where a mismatch would hang NCCL or corrupt memory. Host
  /// calls keep MPI's contract (the check would triple a small call's time on a GPU node).
  bool validate_device_calls = false;
  /// Whether a call on device memory (or host memory) is checked across the ranks first.
  bool validates(bool on_device) const noexcept { return validate || (validate_device_calls && on_device); }
  /// Whether any rank of the job has a CUDA device, so that device memory may take part in a call.
  bool any_device = false;
  /// MPIDIST_BACKEND for device memory: mpi or nccl; nullopt is auto.
  std::optional<Backend> backend;
  /// MPIDIST_TIMEOUT: how long a collective may wait for the other ranks before the watchdog ends
  /// the job (and a polled wait raises Error); 0 waits forever.
  double timeout_seconds = default_timeout_seconds;
  /// MPIDIST_STALL_WARN: after this many seconds a waiting collective logs who is missing, once;
  /// 60 when unset (default_stall_warn_seconds()), 0: off.
  double stall_warn_seconds = stall_warn_default_seconds;
  /// MPIDIST_TRACE_ENTRIES: calls the flight recorder keeps per process.
  std::uint32_t trace_entries = 2000;
  /// MPIDIST_TRACE_DIR: where dumps go; "" keeps them in memory only.
  std::string trace_dir;
  /// MPIDIST_HOST_ALLREDUCE=auto|mpi|shm|2d.
  HostAllReduce host_all_reduce = HostAllReduce::Auto;
  /// MPIDIST_FUSION_BYTES: the most bytes all_reduce_many packs into one collective.
  std::size_t fusion_bytes = default_fusion_bytes;
  /// Whether MPI may move a large message between two ranks of a node in one copy, on some rank
  /// of the job (mpi/copy_mechanism.hpp; not a variable of ours). The segment's uneven
  /// collectives hand blocks past 4 MiB to MPI only then (shm/exchange.cpp).
  bool mpi_single_copy = true;
};

/// Collective over `comm`: parses the variables on every rank, then checks that all ranks hold the
/// same values. A malformed value on any rank, or ranks that disagree, is the same Error on every
/// rank, naming each rank's value. `mpi_single_copy_here` is this rank's answer for
/// Settings::mpi_single_copy (mpi/copy_mechanism.hpp), agreed as any rank's yes.
Settings agree_on_settings(MPI_Comm comm, bool mpi_single_copy_here);

/// The settings of the running job (Error before initialization).
const Settings& settings(const char* operation);

}  // namespace mpidist::detail
