// Who shares this machine's cores (cpu_share.hpp).
#include "core/cpu_share.hpp"

#include <cstring>
#include <fstream>
#include <map>
#include <thread>
#include <utility>

namespace mpidist::detail {

CpuMask own_cpus() noexcept {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0)
    for (unsigned c = 0; c < std::thread::hardware_concurrency() && c < CPU_SETSIZE; ++c) CPU_SET(c, &set);
  CpuMask mask;
  std::memcpy(mask.data(), &set, sizeof(mask));
  return mask;
}

int count_cpus(const CpuMask& mask) noexcept {
  int n = 0;
  for (const unsigned long word : mask) n += __builtin_popcountl(word);
  return n;
}

std::string machine_id(const std::string& hostname) {
  std::ifstream file("/proc/sys/kernel/random/boot_id");
  std::string id;
  if (file >> id && !id.empty()) return id;
  return "host " + hostname;
}

bool hosts_share_cores(std::span<const RankPlace> ranks) {
  std::map<std::pair<std::string, std::string>, CpuMask> hosts;  // (machine, host) -> its ranks' CPUs
  for (const auto& rank : ranks) {
    CpuMask& cpus = hosts[{rank.machine, rank.host}];
    for (std::size_t w = 0; w < cpus.size(); ++w) cpus[w] |= rank.cpus[w];
  }
  for (auto a = hosts.begin(); a != hosts.end(); ++a)
    for (auto b = std::next(a); b != hosts.end() && b->first.first == a->first.first; ++b)
      for (std::size_t w = 0; w < a->second.size(); ++w)
        if ((a->second[w] & b->second[w]) != 0) return true;
  return false;
}

}  // namespace mpidist::detail
