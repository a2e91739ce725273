// Who shares this machine's cores: a rank's CPU mask, and the ranks of every host on one kernel.
#pragma once

#include <sched.h>

#include <array>
#include <span>
#include <string>

namespace mpidist::detail {

/// The CPUs a process may run on, as words MPI can OR across ranks (MPI_BOR of MPI_UNSIGNED_LONG).
using CpuMask = std::array<unsigned long, sizeof(cpu_set_t) / sizeof(unsigned long)>;

/// This process's affinity mask, or every CPU the machine has where it cannot be read.
CpuMask own_cpus() noexcept;
/// How many CPUs `mask` holds.
int count_cpus(const CpuMask& mask) noexcept;

/// What names the machine under the host name: the kernel's boot id, which network and UTS
/// namespaces (and containers) on one machine share although their host names differ; `hostname`
/// where the boot id cannot be read.
std::string machine_id(const std::string& hostname);

/// Where one rank runs: its machine (machine_id), its host name, the CPUs it may run on.
struct RankPlace {
  std::string machine;
  std::string host;
  CpuMask cpus;
};
/// Whether ranks of two hosts on one machine may run on the same CPUs: network namespaces or
/// containers on one box, whose hosts' ranks compete for cores as no two real machines' can.
bool hosts_share_cores(std::span<const RankPlace> ranks);

}  // namespace mpidist::detail
