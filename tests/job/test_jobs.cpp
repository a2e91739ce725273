// Whole jobs started from a test process that is not itself under mpiexec: abort on failure,
// launch() from a single process, and mpidist-info's output.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "mpi_test.hpp"

namespace {

using mpidist_test::mpiexec_env;
using mpidist_test::mpiexec_prefix;
using mpidist_test::run_command;

std::string program(const char* variable) {
  const char* path = std::getenv(variable);
  return path ? path : std::string("missing-") + variable;
}

std::string temp_file(const std::string& name) {
  const std::string path = "/tmp/mpidist-jobs-" + std::to_string(getpid()) + "-" + name;
  std::remove(path.c_str());
  return path;
}

// The distinct lines the ranks wrote to `path`; removes the file.
std::set<std::string> lines_written(const std::string& path) {
  std::ifstream in(path);
  std::set<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.insert(line);
  std::remove(path.c_str());
  return lines;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(JobTest, ExceptionEscapingMainAbortsTheJobNamingTheRank) {
  const auto result = run_command(mpiexec_prefix(3) + program("ABORT_PROBE") + " uncaught", 60);
  EXPECT_NE(result.exit_code, 0) << result.output;
  EXPECT_NE(result.exit_code, 124) << "the job hung until the timeout:\n" << result.output;
  EXPECT_NE(result.output.find("[rank 1/3] uncaught exception: probe failure on purpose"), std::string::npos)
      << result.output;
}

TEST(JobTest, ExceptionLeavingTheEnvironmentScopeAbortsTheJob) {
  const auto result = run_command(mpiexec_prefix(3) + program("ABORT_PROBE") + " scope", 60);
  EXPECT_NE(result.exit_code, 0) << result.output;
  EXPECT_NE(result.exit_code, 124) << "the job hung until the timeout:\n" << result.output;
  EXPECT_NE(result.output.find("[rank 1/3] an exception is leaving the scope of mpidist::Environment"),
            std::string::npos)
      << result.output;
}

TEST(JobTest, LaunchStartsTheRanksFromASingleProcess) {
  const std::string out = temp_file("launch");
  // No mpiexec here: launch() must start it, and only once.
  const auto result = run_command("OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 " +
                                      program("LAUNCH_PROBE") + " 3 " + out, 60);
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_EQ(lines_written(out), (std::set<std::string>{"0 3", "1 3", "2 3"}));
}

TEST(JobTest, LaunchAfterInitializingAloneStillStartsTheRanks) {
  // MPI_Init without a launcher (a singleton) must not make launch() believe it was launched.
  const std::string out = temp_file("launch-init-first");
  const auto result = run_command("OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 " +
                                      program("LAUNCH_PROBE") + " 2 " + out + " init-first", 60);
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_EQ(lines_written(out), (std::set<std::string>{"0 2", "1 2"})) << result.output;
}

TEST(JobTest, LaunchUnderMpiexecJustRunsOnEachRank) {
  const std::string out = temp_file("launch-nested");
  const auto result = run_command(mpiexec_prefix(2) + program("LAUNCH_PROBE") + " 4 " + out, 60);
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_EQ(lines_written(out), (std::set<std::string>{"0 2", "1 2"})) << "launch() must not start a second job";
}

TEST(JobTest, LaunchPropagatesFailure) {
  const std::string out = temp_file("launch-fail");
  const auto result = run_command("OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 " +
                                      program("LAUNCH_PROBE") + " 2 " + out + " fail", 60);
  EXPECT_NE(result.exit_code, 0) << result.output;
  EXPECT_NE(result.exit_code, 124) << result.output;
  EXPECT_NE(result.output.find("launched rank fails on purpose"), std::string::npos) << result.output;
  std::remove(out.c_str());
}

TEST(JobTest, MpidistInfoPrintsOneAlignedRowPerRank) {
  const auto result = run_command(mpiexec_prefix(4) + program("MPIDIST_INFO"), 60);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const auto lines = lines_of(result.output);
  // header + 4 ranks + what async calls progress on + whether the ranks share cores
  ASSERT_EQ(lines.size(), 7u) << result.output;
  EXPECT_EQ(lines[0].rfind("rank", 0), 0u) << lines[0];
  EXPECT_EQ(lines[5].rfind("async: ThreadLevel::Funneled: host collectives within a node progress", 0), 0u)
      << lines[5];
  EXPECT_EQ(lines[6].rfind("cores: ", 0), 0u) << lines[6];
  const std::size_t host_column = lines[0].find("host");
  for (int r = 0; r < 4; ++r) {
    const auto& row = lines[static_cast<std::size_t>(r) + 1];
    EXPECT_TRUE(std::regex_search(row, std::regex("^ *" + std::to_string(r) + " "))) << row;
    // Aligned: every row's host column starts where the header's does.
    EXPECT_NE(row[host_column], ' ') << row;
    EXPECT_EQ(row[host_column - 1], ' ') << row;
  }
}

// Simulated nodes share one host: the table says so instead of showing node 1 on host vm.
TEST(JobTest, MpidistInfoMarksSimulatedNodes) {
  const auto result = run_command("env MPIDIST_RANKS_PER_NODE=2 " + mpiexec_prefix(4) + program("MPIDIST_INFO"), 60);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const auto lines = lines_of(result.output);
  ASSERT_EQ(lines.size(), 8u) << result.output;  // header + 4 ranks + the note + the async and cores lines
  EXPECT_NE(lines[4].find(" 1 (sim)"), std::string::npos) << lines[4];
  EXPECT_EQ(lines[5], "(sim): nodes simulated on one host by MPIDIST_RANKS_PER_NODE=2, for testing multi-node logic");
  EXPECT_NE(lines[6].find("across its 2 nodes) run at issue"), std::string::npos) << lines[6];
  EXPECT_EQ(lines[7].rfind("cores: ", 0), 0u) << lines[7];
}

TEST(JobTest, MpidistInfoJsonIsValid) {
  const std::string out = temp_file("info.json");
  const auto result = run_command(mpiexec_prefix(3) + program("MPIDIST_INFO") + " --json > " + out, 60);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const auto check = run_command(
      "python3 -c \"import json,sys; d=json.load(open(\\\"" + out +
          "\\\")); assert [r[\\\"rank\\\"] for r in d]==[0,1,2], d; assert all(\\\"nccl_version\\\" in r for r in d)\"",
      30);
  EXPECT_EQ(check.exit_code, 0) << check.output;
  std::remove(out.c_str());
}

TEST(JobTest, MpidistInfoRejectsUnknownArguments) {
  const auto result = run_command(mpiexec_prefix(2) + program("MPIDIST_INFO") + " --bogus", 60);
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.output.find("unknown argument '--bogus'"), std::string::npos) << result.output;
}

// MPIDIST_VALIDATE, MPIDIST_BACKEND and MPIDIST_TIMEOUT are read once, at initialization, and
// agreed by all ranks: a disagreement, or a malformed value on one rank, fails every rank there
// with a message naming each rank's value, instead of a hang later.
TEST(JobTest, RanksThatDisagreeOnSettingsFailAtInitialization) {
  const std::string info = program("MPIDIST_INFO");
  // Rank 2 must have no MPIDIST_TIMEOUT, even when the suite runs under one (tests/sanitize.sh).
  const auto result = run_command("env -u MPIDIST_TIMEOUT " + mpiexec_prefix(1) + mpiexec_env("MPIDIST_TIMEOUT", "5") + info + " : -n 1 " +
                                      mpiexec_env("MPIDIST_TIMEOUT", "9") + info + " : -n 1 " + info, 60);
  EXPECT_NE(result.exit_code, 0) << result.output;
  EXPECT_NE(result.exit_code, 124) << "the job hung:\n" << result.output;
  EXPECT_NE(result.output.find("ranks disagree on job-wide settings"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("MPIDIST_TIMEOUT: rank 0 has '5', rank 1 has '9', rank 2 has (unset)"),
            std::string::npos)
      << result.output;
}

TEST(JobTest, MalformedSettingOnOneRankFailsEveryRank) {
  const std::string info = program("MPIDIST_INFO");
  for (const std::string setting : {"MPIDIST_BACKEND=gloo", "MPIDIST_TIMEOUT=soon", "MPIDIST_VALIDATE=maybe"}) {
    const std::string name = setting.substr(0, setting.find('='));
    const auto result = run_command(
        mpiexec_prefix(1) + info + " : -n 1 " + mpiexec_env(name, setting.substr(name.size() + 1)) + info, 60);
    EXPECT_NE(result.exit_code, 0) << result.output;
    EXPECT_NE(result.exit_code, 124) << "the job hung:\n" << result.output;
    EXPECT_NE(result.output.find("initialize: rank 1 failed: "), std::string::npos) << result.output;
    EXPECT_NE(result.output.find(name), std::string::npos) << result.output;
  }
}

}  // namespace
