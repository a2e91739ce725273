// show_config / job_config: one report per rank, gathered to everyone, printed by rank 0 only.
#include <mpi.h>
#include <sched.h>
#include <unistd.h>

#include <array>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "mpi_test.hpp"
#include "mpidist/mpidist.hpp"

namespace {

using ConfigTest = mpidist_test::MpiTest;

TEST_F(ConfigTest, LocalReportDescribesThisProcess) {
  const auto report = mpidist::local_report();
  EXPECT_EQ(report.rank, mpidist::rank());
  EXPECT_EQ(report.local_rank, mpidist::local_rank());
  EXPECT_EQ(report.node_rank, mpidist::node_rank());
  EXPECT_EQ(report.hostname, mpidist::hostname());
  EXPECT_EQ(report.pid, static_cast<long>(getpid()));
  EXPECT_FALSE(report.cpu_affinity.empty());
  EXPECT_FALSE(report.mpi_library.empty());
  EXPECT_TRUE(report.cuda_aware_mpi == "yes" || report.cuda_aware_mpi == "no" || report.cuda_aware_mpi == "unknown");
  EXPECT_FALSE(report.cuda_device.empty());
  EXPECT_FALSE(report.nccl_version.empty());
}

TEST_F(ConfigTest, JobConfigHasEveryRankInOrder) {
  const auto reports = mpidist::job_config();
  ASSERT_EQ(static_cast<int>(reports.size()), mpidist::world_size());
  for (int r = 0; r < mpidist::world_size(); ++r) {
    const auto& report = reports[static_cast<std::size_t>(r)];
    EXPECT_EQ(report.rank, r);
    EXPECT_EQ(report.local_rank, mpidist::topology().ranks[static_cast<std::size_t>(r)].local_rank);
    EXPECT_GT(report.pid, 0);
  }
}

TEST_F(ConfigTest, ShowConfigPrintsATableOnRankZeroOnly) {
  std::ostringstream out;
  mpidist::show_config(out);
  std::istringstream in(out.str());
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  if (!mpidist::is_main_process()) {
    EXPECT_TRUE(lines.empty()) << out.str();
    return;
  }
  // The table, then what the non-blocking collectives progress on at this thread level, then
  // whether the ranks share cores.
  ASSERT_EQ(static_cast<int>(lines.size()), mpidist::world_size() + 3) << out.str();
  EXPECT_EQ(lines[lines.size() - 2].substr(0, 32), "async: ThreadLevel::Funneled: ho") << lines[lines.size() - 2];
  EXPECT_EQ(lines.back().substr(0, 7), "cores: ") << lines.back();
  EXPECT_EQ(lines[0].substr(0, 4), "rank");
  for (int r = 0; r < mpidist::world_size(); ++r) {
    std::istringstream row(lines[static_cast<std::size_t>(r) + 1]);
    int first = -1;
    row >> first;
    EXPECT_EQ(first, r) << lines[static_cast<std::size_t>(r) + 1];
  }
}

// The "cores:" line against the ranks' own affinity masks, worked out here with MPI, where every
// rank runs on one kernel (the namespaced hosts of tests/hosts share it too).
TEST_F(ConfigTest, ShowConfigSaysWhetherTheRanksShareCores) {
  cpu_set_t mine;
  CPU_ZERO(&mine);
  ASSERT_EQ(sched_getaffinity(0, sizeof mine, &mine), 0);
  cpu_set_t all;
  CPU_ZERO(&all);
  MPI_Allreduce(&mine, &all, static_cast<int>(sizeof(cpu_set_t) / sizeof(unsigned long)), MPI_UNSIGNED_LONG, MPI_BOR,
                MPI_COMM_WORLD);
  std::array<char, 64> boot{};
  std::ifstream("/proc/sys/kernel/random/boot_id").read(boot.data(), boot.size() - 1);
  std::vector<char> boots(boot.size() * static_cast<std::size_t>(mpidist::world_size()));
  MPI_Allgather(boot.data(), static_cast<int>(boot.size()), MPI_CHAR, boots.data(), static_cast<int>(boot.size()),
                MPI_CHAR, MPI_COMM_WORLD);
  bool one_kernel = boot[0] != '\0';
  for (std::size_t at = 0; at < boots.size(); at += boot.size())
    one_kernel = one_kernel && std::equal(boot.begin(), boot.end(), boots.begin() + static_cast<std::ptrdiff_t>(at));
  std::ostringstream out;
  mpidist::show_config(out);
  if (!mpidist::is_main_process()) return;
  if (!one_kernel) GTEST_SKIP() << "the ranks run on more than one kernel";
  const std::string text = out.str();
  const std::string last = text.substr(text.rfind('\n', text.size() - 2) + 1);
  const bool shared = mpidist::world_size() > CPU_COUNT(&all);
  EXPECT_EQ(last.rfind(shared ? "cores: shared (" : "cores: enough for every rank (", 0), 0u)
      << last << mpidist::world_size() << " ranks on " << CPU_COUNT(&all) << " CPUs";
  EXPECT_NE(last.find("runs " + std::to_string(mpidist::world_size()) + " of the job's ranks on " +
                      std::to_string(CPU_COUNT(&all)) + " CPUs"),
            std::string::npos)
      << last;
}

TEST_F(ConfigTest, ShowConfigWithoutAStreamWritesToStandardOutput) {
  std::ostringstream out;
  std::streambuf* const standard = std::cout.rdbuf(out.rdbuf());
  mpidist::show_config();
  mpidist::show_config(mpidist::world(), mpidist::ConfigFormat::Json);
  std::cout.rdbuf(standard);
  if (!mpidist::is_main_process()) {
    EXPECT_EQ(out.str(), "");
    return;
  }
  EXPECT_NE(out.str().find("cores: "), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("\n["), std::string::npos) << out.str();
}

TEST_F(ConfigTest, ShowConfigJsonHasOneObjectPerRank) {
  std::ostringstream out;
  mpidist::show_config(out, mpidist::ConfigFormat::Json);
  if (!mpidist::is_main_process()) {
    EXPECT_EQ(out.str(), "");
    return;
  }
  const std::string text = out.str();
  EXPECT_EQ(text.front(), '[');
  std::size_t objects = 0;
  for (std::size_t at = text.find("\"rank\": "); at != std::string::npos; at = text.find("\"rank\": ", at + 1)) ++objects;
  EXPECT_EQ(static_cast<int>(objects), mpidist::world_size()) << text;
}

}  // namespace
