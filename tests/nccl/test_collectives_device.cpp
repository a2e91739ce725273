// Device-path failures that need a whole job of their own, run against the device emulation:
// a rank that never joins a collective or the NCCL communicator's creation (MPIDIST_TIMEOUT),
// and two ranks on one GPU.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
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
  // Each waiting rank times out, or learns first that the other one aborted the NCCL communicator.
  const std::regex caught(R"(PROBE rank [01]: caught after ([0-9]+) s: mpidist: \[rank [01]/3 on [^\]]+\] all_reduce on world: (timed out after 2 s|NCCL failed: [^\n]*aborted the communicator))");
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
  expect_timeout("MPIDIST_VALIDATE=0", "waiting for the NCCL collective to finish (MPIDIST_TIMEOUT); a rank may have "
                                       "stopped calling collectives or died; the NCCL communicator was aborted");
}

// The NCCL communicator is created by the first device collective: MPI steps, then a non-blocking
// ncclCommInitRankConfig, all bounded by the timeout. A rank that never comes leaves the others
// in the MPI steps; a rank whose NCCL never reaches the others (emulated: MPIDIST_EMU_NCCL_INIT_STALL)
// leaves every rank in NCCL's initialization, which is then aborted. Either way every waiting rank
// gets the Error within MPIDIST_TIMEOUT + 5 s, the job ends non-zero at finalize, and no process
// of it is left (the rank computing for 40 s included).
TEST(DeviceJobs, RankThatNeverCreatesTheNcclCommunicatorTimesOut) {
  const struct {
    const char* env;
    const char* waiting_for;
    int waiting_ranks;
  } cases[] = {
      {"", "waiting for every rank to start the NCCL communicator (MPIDIST_TIMEOUT)", 2},
      {"MPIDIST_EMU_NCCL_INIT_STALL=2",
       "waiting for every rank to join NCCL's initialization (ncclCommInitRankConfig) (MPIDIST_TIMEOUT); a rank may "
       "have stopped calling collectives or died; the NCCL communicator was aborted. The communicator can no longer "
       "be used", 3},
  };
  constexpr int timeout = 3;
  for (const auto& c : cases) {
    const auto start = std::chrono::steady_clock::now();
    const auto result = run_command("MPIDIST_TIMEOUT=" + std::to_string(timeout) + " MPIDIST_VALIDATE=0 MPIDIST_TEST_DEVICE=1 " +
                                        c.env + " " + mpiexec_prefix(3) + probe() + " first-call", 90);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_NE(result.exit_code, 124) << "the job hung:\n" << result.output;
    EXPECT_NE(result.exit_code, 0) << c.env << "\n" << result.output;
    const std::regex caught(R"(PROBE rank [012]: caught after ([0-9.]+) s: mpidist: \[rank [012]/3 on [^\]]+\] all_reduce on world: timed out after 3 s )");
    EXPECT_EQ(count_of(result.output, caught), c.waiting_ranks) << c.env << "\n" << result.output;
    EXPECT_NE(result.output.find(c.waiting_for), std::string::npos) << c.env << "\n" << result.output;
    for (auto it = std::sregex_iterator(result.output.begin(), result.output.end(), caught); it != std::sregex_iterator(); ++it)
      EXPECT_LE(std::stod((*it)[1]), timeout + 5.0) << c.env << "\n" << result.output;
    EXPECT_LT(seconds, 40) << "the job waited for the computing rank:\n" << result.output;
    // The bracket keeps pgrep from finding the shell that runs it.
    const std::string pattern = probe().substr(0, probe().size() - 1) + "[" + probe().back() + "] first-call";
    const std::string find = "pgrep -f '" + pattern + "'";
    const auto left = run_command("for i in 1 2 3 4 5 6 7 8 9 10; do " + find + " >/dev/null || exit 0; sleep 0.5; done; " + find, 10);
    EXPECT_EQ(left.output.find_first_of("0123456789"), std::string::npos) << "processes of the job still run 5 s later:\n"
                                                                           << left.output;
    std::printf("[ measured ] %s: errors after", *c.env ? c.env : "rank computes instead");
    for (auto it = std::sregex_iterator(result.output.begin(), result.output.end(), caught); it != std::sregex_iterator(); ++it)
      std::printf(" %s s", (*it)[1].str().c_str());
    std::printf(", job ended after %.1f s\n", seconds);
  }
}

TEST(DeviceJobs, TwoRanksOnOneGpuIsAnErrorNamingBoth) {
  const auto result = run_command("MPIDIST_EMU_DEVICE_COUNT=1 MPIDIST_TEST_DEVICE=1 " + mpiexec_prefix(3) + probe() +
                                      " duplicate", 90);
  EXPECT_EQ(result.exit_code, 0) << result.output;
  const std::regex caught(R"(PROBE rank [012]: caught: .*ranks 0 and 1 both use GPU-[0-9a-f-]+ \(cuda:0\) on host)");
  EXPECT_EQ(count_of(result.output, caught), 3) << result.output;
}

// Job-wide settings are agreed at initialization: whether a call is checked across the ranks no
// longer depends on each rank's own GPU count (before, the ranks with a GPU posted the check and
// the others did not: a hang). Under auto, a job with GPUs checks its calls on device memory only,
// so host calls here go unchecked on every rank alike and complete.
TEST(DeviceJobs, MixedJobWithAndWithoutGpusAgreesOnChecking) {
  const auto result = run_command("MPIDIST_TIMEOUT=20 " + mpiexec_prefix(1) + mpiexec_env("MPIDIST_EMU_DEVICE_COUNT", "0") +
                                      probe() + " mixed : -n 2 " + probe() + " mixed", 90);
  EXPECT_NE(result.exit_code, 124) << "the job hung:\n" << result.output;
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_EQ(count_of(result.output, std::regex(R"(PROBE rank 0: device cpu)")), 1) << result.output;
  EXPECT_EQ(count_of(result.output, std::regex(R"(PROBE rank [12]: device cuda:[0-9])")), 2) << result.output;
  EXPECT_EQ(count_of(result.output, std::regex(R"(PROBE rank [012]: all_reduce gave 3)")), 3) << result.output;
}

// Issue 22: a CUDA error in the pointer check is an Error, never "host memory" (the device is
// unavailable: exclusive-process mode, held by another process).
TEST(DeviceJobs, APointerCheckThatCannotRunIsAnError) {
  const char* exe = std::getenv("DEVICE_CONTRACT");
  ASSERT_NE(exe, nullptr);
  const auto result = run_command("MPIDIST_TEST_DEVICE=1 MPIDIST_EMU_UNAVAILABLE_DEVICE=0 " + mpiexec_prefix(1) + exe +
                                      " --gtest_also_run_disabled_tests --gtest_filter=*APointerCheckThatCannotRun*", 90);
  EXPECT_EQ(result.exit_code, 0) << result.output;
  // The test ran (not filtered out) and passed: gtest's OK line names it (the emulation's message on
  // stderr may land inside that line, before its timing; colored or not).
  EXPECT_EQ(result.output.find("FAILED"), std::string::npos) << result.output;
  EXPECT_EQ(count_of(result.output, std::regex(R"(OK \] ?\S*DeviceContract\.DISABLED_APointerCheckThatCannotRunIsAnError)")), 1)
      << result.output;
}

// Issue 22: work of two communicators issued in different orders on different ranks deadlocks
// in the emulation as it may on a GPU, and the emulation says which launch holds the others back.
TEST(DeviceJobs, TwoCommunicatorsInDifferentOrdersDeadlockWithADiagnostic) {
  const char* exe = std::getenv("EMU_TEST");
  if (exe == nullptr) GTEST_SKIP() << "built without NCCL";
  const auto result = run_command("MPIDIST_EMU_HANG_SECONDS=3 " + mpiexec_prefix(2) + exe +
                                      " --gtest_also_run_disabled_tests --gtest_filter=*DifferentOrdersDeadlock*", 90);
  EXPECT_NE(result.exit_code, 124) << "the job hung past the emulation's own report:\n" << result.output;
  EXPECT_NE(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("runs NCCL launches one at a time in launch order"), std::string::npos) << result.output;
}

}  // namespace
