// show_config / job_config: one report per rank, gathered to everyone, printed by rank 0 only.
#include <unistd.h>

#include <sstream>

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
  // The table, then what the non-blocking collectives progress on at this thread level.
  ASSERT_EQ(static_cast<int>(lines.size()), mpidist::world_size() + 2) << out.str();
  EXPECT_EQ(lines.back().substr(0, 32), "async: ThreadLevel::Funneled: ho") << lines.back();
  EXPECT_EQ(lines[0].substr(0, 4), "rank");
  for (int r = 0; r < mpidist::world_size(); ++r) {
    std::istringstream row(lines[static_cast<std::size_t>(r) + 1]);
    int first = -1;
    row >> first;
    EXPECT_EQ(first, r) << lines[static_cast<std::size_t>(r) + 1];
  }
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
