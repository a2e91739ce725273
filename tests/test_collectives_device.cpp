// Device-path failures that need a whole job of their own, run against the device emulation:
// a rank that never joins (MPIDIST_TIMEOUT) and two ranks on one GPU.
#include <gtest/gtest.h>

#include <cstdlib>
#include <regex>
#include <string>

#include "mpi_test.hpp"

namespace {

using mpidist_test::mpiexec_env;
using mpidist_test::mpiexec_prefix;
using mpidist_test::run_command;

std::string probe() {
  const char* path = std::getenv("TENSOR_PROBE");
  return path ? path : "missing-TENSOR_PROBE";
}

int count_of(const std::string& text, const std::regex& pattern) {
  return static_cast<int>(std::distance(std::sregex_iterator(text.begin(), text.end(), pattern), std::sregex_iterator()));
}

// Every waiting rank gets an Error naming the operation within MPIDIST_TIMEOUT plus a little,
// instead of hanging. With validation the wait ends in the pre-call agreement; without it, in the
// NCCL wait, which aborts the NCCL communicator.
void expect_timeout(const std::string& extra_env, const std::string& expected) {
  const auto result = run_command("MPIDIST_TIMEOUT=2 MPIDIST_TEST_DEVICE=1 " + extra_env + " " + mpiexec_prefix(3) +
                                      probe() + " timeout", 90);
  EXPECT_NE(result.exit_code, 124) << "the job hung:\n" << result.output;
  const std::regex caught(R"(PROBE rank [01]: caught after ([0-9]+) s: mpidist: \[rank [01]/3 on [^\]]+\] all_reduce on world: timed out after 2 s)");
  EXPECT_EQ(count_of(result.output, caught), 2) << result.output;
  EXPECT_NE(result.output.find(expected), std::string::npos) << result.output;
  std::smatch first;
  if (std::regex_search(result.output, first, caught)) {
    EXPECT_LE(std::stoi(first[1]), 6) << result.output;
  }
}

TEST(DeviceJobs, RankThatNeverJoinsTimesOutInTheAgreement) {
  expect_timeout("", "waiting for the other ranks to join the collective");
}

TEST(DeviceJobs, RankThatNeverJoinsTimesOutInTheNcclWaitAndAborts) {
  expect_timeout("MPIDIST_VALIDATE=0", "The NCCL communicator was aborted");
}

TEST(DeviceJobs, TwoRanksOnOneGpuIsAnErrorNamingBoth) {
  const auto result = run_command("MPIDIST_EMU_DEVICE_COUNT=1 MPIDIST_TEST_DEVICE=1 " + mpiexec_prefix(3) + probe() +
                                      " duplicate", 90);
  EXPECT_EQ(result.exit_code, 0) << result.output;
  const std::regex caught(R"(PROBE rank [012]: caught: .*ranks 0 and 1 both use GPU-[0-9a-f-]+ \(cuda:0\) on host)");
  EXPECT_EQ(count_of(result.output, caught), 3) << result.output;
}

// Job-wide settings are agreed at initialization: whether the cross-rank check runs no longer
// depends on each rank's own GPU count, so a job mixing ranks with and without a GPU completes
// (before, the ranks with a GPU posted the check and the others did not: a hang).
TEST(DeviceJobs, MixedJobWithAndWithoutGpusAgreesToCheck) {
  const auto result = run_command("MPIDIST_TIMEOUT=20 " + mpiexec_prefix(1) + mpiexec_env("MPIDIST_EMU_DEVICE_COUNT", "0") +
                                      probe() + " mixed : -n 2 " + probe() + " mixed", 90);
  EXPECT_NE(result.exit_code, 124) << "the job hung:\n" << result.output;
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_EQ(count_of(result.output, std::regex(R"(PROBE rank 0: device cpu)")), 1) << result.output;
  EXPECT_EQ(count_of(result.output, std::regex(R"(PROBE rank [12]: device cuda:[0-9])")), 2) << result.output;
  const std::regex caught(R"(PROBE rank [012]: caught: .*all_reduce on world: ranks disagree on the element count)");
  EXPECT_EQ(count_of(result.output, caught), 3) << result.output;
  EXPECT_EQ(count_of(result.output, std::regex(R"(PROBE rank [012]: all_reduce gave 3)")), 3) << result.output;
}

}  // namespace
