// Who shares the machine's cores (lib/core/cpu_share.hpp): the affinity mask as MPI-ready words, and
// the machine's identity that namespaced hosts share, without MPI.
#include <gtest/gtest.h>
#include <sched.h>

#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "core/cpu_share.hpp"

using mpidist::detail::count_cpus;
using mpidist::detail::CpuMask;
using mpidist::detail::machine_id;
using mpidist::detail::own_cpus;

TEST(CpuShare, TheMaskHoldsTheAffinity) {
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  EXPECT_EQ(count_cpus(own_cpus()), CPU_COUNT(&set));
}

TEST(CpuShare, AThreadPinnedToOneCpuHasOne) {
  const CpuMask all = own_cpus();
  cpu_set_t set;
  std::memcpy(&set, all.data(), sizeof(set));
  int first = 0;
  while (first < CPU_SETSIZE && !CPU_ISSET(first, &set)) ++first;
  ASSERT_LT(first, CPU_SETSIZE);
  int pinned = -1;
  std::thread([&] {  // own_cpus reads the calling thread's mask
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(first, &one);
    if (sched_setaffinity(0, sizeof(one), &one) == 0) pinned = count_cpus(own_cpus());
  }).join();
  EXPECT_EQ(pinned, 1);
}

TEST(CpuShare, CountsEveryWord) {
  CpuMask mask{};
  EXPECT_EQ(count_cpus(mask), 0);
  mask.front() = 0b1011;
  mask.back() = ~0UL;
  EXPECT_EQ(count_cpus(mask), 3 + static_cast<int>(8 * sizeof(unsigned long)));
}

TEST(CpuShare, TheMachineIsTheKernelsBootIdNotTheHostName) {
  std::ifstream file("/proc/sys/kernel/random/boot_id");
  std::string boot_id;
  if (!(file >> boot_id)) {
    EXPECT_EQ(machine_id("node7"), "host node7");  // no boot id: the host name stands in
    return;
  }
  EXPECT_EQ(boot_id.size(), 36u);
  // Two hosts of one machine (network and UTS namespaces) have different names and one kernel.
  EXPECT_EQ(machine_id("mpidist-host-a"), boot_id);
  EXPECT_EQ(machine_id("mpidist-host-b"), boot_id);
}

// Hosts of one machine (namespaces, containers) whose ranks' CPU sets overlap compete for cores; a
// host on CPUs of its own, or hosts on different machines, do not.
TEST(CpuShare, HostsShareCoresOnlyOnOneMachineWithOverlappingCpus) {
  using mpidist::detail::hosts_share_cores;
  using mpidist::detail::RankPlace;
  const auto cpus = [](std::initializer_list<int> list) {
    CpuMask mask{};
    for (const int c : list) mask[static_cast<std::size_t>(c) / (8 * sizeof(unsigned long))] |= 1UL << (c % (8 * sizeof(unsigned long)));
    return mask;
  };
  // The 2-core harness unpinned: both hosts' ranks on CPUs 0 and 1.
  const std::vector<RankPlace> both{{"m", "a", cpus({0, 1})}, {"m", "a", cpus({0, 1})}, {"m", "b", cpus({0, 1})}};
  EXPECT_TRUE(hosts_share_cores(both));
  // A core a host: host a on CPU 0, host b on CPU 1 (its ranks share it, the hosts do not).
  const std::vector<RankPlace> own{{"m", "a", cpus({0})}, {"m", "a", cpus({0})}, {"m", "b", cpus({1})}, {"m", "b", cpus({1})}};
  EXPECT_FALSE(hosts_share_cores(own));
  // Two real machines with the same CPU numbers, and one host alone.
  EXPECT_FALSE(hosts_share_cores(std::vector<RankPlace>{{"m1", "a", cpus({0, 1})}, {"m2", "b", cpus({0, 1})}}));
  EXPECT_FALSE(hosts_share_cores(std::vector<RankPlace>{{"m", "a", cpus({0})}, {"m", "a", cpus({0})}}));
  EXPECT_FALSE(hosts_share_cores(std::vector<RankPlace>{}));
  // One rank of host b strays onto host a's CPU (a mask past the first word, too).
  EXPECT_TRUE(hosts_share_cores(std::vector<RankPlace>{{"m", "a", cpus({0, 70})}, {"m", "b", cpus({1})}, {"m", "b", cpus({70})}}));
  // Three hosts on a machine: the overlap is between the first and the last.
  EXPECT_TRUE(hosts_share_cores(std::vector<RankPlace>{{"m", "a", cpus({0})}, {"m", "b", cpus({1})}, {"m", "c", cpus({0})}}));
}
