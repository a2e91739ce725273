// Jobs that go wrong on purpose (probes/fault_probe.cpp), started by this test outside mpiexec:
// every fault ends in a report that names the rank and the call, within MPIDIST_TIMEOUT + 5 s,
// and never in a silent hang. Each job is bounded by run_command's own timeout.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "mpi_test.hpp"
#include "mpidist/detail/stall_warning.hpp"

namespace {

using mpidist_test::has;
using mpidist_test::run_command;

using Job = mpidist_test::CommandResult;

// Runs `scenario` at `ranks` with extra environment `env` ("A=1 B=2"), bounded by `limit` seconds.
Job run_probe(int ranks, const std::string& scenario, const std::string& env, int limit = 60) {
  return mpidist_test::run_probe("FAULT_PROBE", ranks, scenario, env, limit);
}

std::string temp_dir(const std::string& name) {
  const auto path = std::filesystem::temp_directory_path() / ("mpidist-faults-" + std::to_string(getpid()) + "-" + name);
  std::filesystem::remove_all(path);
  return path.string();
}

// The watchdog acts at the timeout plus a second's grace; mpiexec's start and teardown add a few,
// more under ASan on a loaded machine. The probes' lost ranks compute 40-60 s: a hang is far above.
constexpr double launch_slack = 10.0;

void expect_reported_in_time(const Job& job, double timeout) {
  EXPECT_NE(job.exit_code, 0) << job.output;
  EXPECT_NE(job.exit_code, 124) << "the job hung:\n" << job.output;
  EXPECT_LT(job.seconds, timeout + 5.0 + launch_slack) << job.output;
}

TEST(FaultTest, RankSkippingABarrierIsNamedByTheWatchdog) {
  const auto job = run_probe(3, "skip-barrier", "MPIDIST_TIMEOUT=3");
  expect_reported_in_time(job, 3);
  EXPECT_TRUE(has(job, "watchdog: barrier #4 on world has waited")) << job.output;
  EXPECT_TRUE(has(job, "ranks that have not reached it:\n  rank 1, pid")) << job.output;
  EXPECT_TRUE(has(job, "last finished all_reduce #3 on world (16 float32 sum)")) << job.output;
  EXPECT_TRUE(has(job, "now in no collective")) << job.output;
  EXPECT_TRUE(has(job, "ending the job (MPI_Abort)")) << job.output;
}

TEST(FaultTest, MessageNobodyReceivedIsNamedAtFinalize) {
  const auto job = run_probe(2, "unreceived", "MPIDIST_TIMEOUT=10");
  EXPECT_EQ(job.exit_code, 0) << job.output;
  EXPECT_TRUE(has(job, "probe: rank 0 done")) << job.output;
  EXPECT_TRUE(has(job, "finalize: a message from rank 1 (tag 5, 4 int32 elements) on 'world' was never received"))
      << job.output;
}

TEST(FaultTest, RankSkippingAnAllReduceIsNamedByTheWatchdog) {
  const auto job = run_probe(4, "skip-all-reduce 2", "MPIDIST_TIMEOUT=3");
  expect_reported_in_time(job, 3);
  // The watchdog's report, or the same account in the Error of a wait in shared memory, which
  // gives up at the timeout itself.
  EXPECT_TRUE(has(job, "all_reduce #4 on world (1024 float32 sum) has waited")) << job.output;
  EXPECT_TRUE(has(job, "  rank 2, pid")) << job.output;
}

TEST(FaultTest, ANeverMatchedAsyncAllReduceIsNamedAsAsync) {
  const auto job = run_probe(3, "skip-all-reduce-async 2", "MPIDIST_TIMEOUT=3");
  expect_reported_in_time(job, 3);
  // The watchdog's report, or the same account in the Error that wait() rethrows from the step.
  EXPECT_TRUE(has(job, "all_reduce_async #4 on world (1024 float32 sum) has waited") ||
              has(job, "all_reduce on world: timed out after 3 s"))
      << job.output;
  EXPECT_TRUE(has(job, "  rank 2, pid")) << job.output;
}

TEST(FaultTest, RankSkippingAnObjectBroadcastIsNamed) {
  const auto job = run_probe(3, "skip-object-broadcast", "MPIDIST_TIMEOUT=3");
  expect_reported_in_time(job, 3);
  // Either the receivers wait in the broadcast, or they finish it and wait at finalize: both name it.
  EXPECT_TRUE(has(job, "broadcast #4 on world")) << job.output;
  EXPECT_TRUE(has(job, "  rank 1, pid")) << job.output;
}

TEST(FaultTest, StallWarningNamesTheLateRankAndKeepsWaiting) {
  const auto job = run_probe(3, "stall", "MPIDIST_STALL_WARN=1");
  EXPECT_EQ(job.exit_code, 0) << job.output;
  EXPECT_TRUE(has(job, "stall: all_reduce #4 on world (1024 float32 sum) has waited")) << job.output;
  EXPECT_TRUE(has(job, "still waiting")) << job.output;
  EXPECT_TRUE(has(job, "  rank 1, pid")) << job.output;
  EXPECT_TRUE(has(job, "probe: rank 0 done")) << job.output;
}

// With no variable set, a wait speaks within a minute: the default is 60 s (Horovod's), and the
// probe shortens that default (not the variable) to 1 s to see the same warning in seconds.
TEST(FaultTest, StallWarningIsOnByDefault) {
  EXPECT_EQ(mpidist::detail::stall_warn_default_seconds, 60.0);
  const auto job = run_probe(3, "stall-default", "env -u MPIDIST_STALL_WARN");
  EXPECT_EQ(job.exit_code, 0) << job.output;
  EXPECT_TRUE(has(job, "stall: all_reduce #4 on world (1024 float32 sum) has waited")) << job.output;
  EXPECT_TRUE(has(job, "warned after 1 s: MPIDIST_STALL_WARN, 0 turns this off")) << job.output;
  EXPECT_TRUE(has(job, "  rank 1, pid")) << job.output;
  EXPECT_TRUE(has(job, "probe: rank 0 done")) << job.output;
}

// MPIDIST_STALL_WARN=0 turns the default warning off.
TEST(FaultTest, StallWarningOffWithZero) {
  const auto job = run_probe(3, "stall-default", "env MPIDIST_STALL_WARN=0");
  EXPECT_EQ(job.exit_code, 0) << job.output;
  EXPECT_FALSE(has(job, "stall:")) << job.output;
  EXPECT_TRUE(has(job, "probe: rank 0 done")) << job.output;
}

TEST(FaultTest, KilledRankEndsTheJobAndNothingIsLeftRunning) {
  const auto dir = temp_dir("kill");
  // The marker (an argument the probe ignores) finds this job's processes, and no other test's.
  const std::string marker = "job-" + std::to_string(getpid());
  const auto job = run_probe(4, "kill 1 " + marker, "MPIDIST_TIMEOUT=5 MPIDIST_TRACE_DIR=" + dir);
  expect_reported_in_time(job, 5);
  EXPECT_FALSE(std::filesystem::exists(dir + "/mpidist-trace-rank1.json")) << "the killed rank cannot dump";
  int dumps = 0;
  for (int r : {0, 2, 3}) dumps += std::filesystem::exists(dir + "/mpidist-trace-rank" + std::to_string(r) + ".json");
  if (mpidist_test::under_mpich()) {
    // Hydra sends every survivor SIGTERM and SIGKILL at once: it names the killed rank, and no
    // survivor lives long enough to say anything or dump.
    EXPECT_TRUE(has(job, "BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES")) << job.output;
    EXPECT_TRUE(has(job, "Killed (signal 9)")) << job.output;
  } else {
    // Open MPI's runtime ends the survivors with SIGTERM; each says what it was doing and dumps.
    EXPECT_TRUE(has(job, "SIGTERM: in flight: all_reduce #") || has(job, "watchdog: all_reduce #")) << job.output;
    EXPECT_GE(dumps, 1) << job.output;
  }
  const auto left = run_command("pgrep -f '[f]ault_probe kill 1 " + marker + "'", 10);  // [f]: not pgrep's own shell
  EXPECT_NE(left.exit_code, 0) << "still running after the job ended:\n" << left.output;
  std::filesystem::remove_all(dir);
}

TEST(FaultTest, MismatchesAreErrorsOnEveryRankWithValidation) {
  const struct {
    const char* scenario;
    const char* shown;
  } cases[] = {{"dtype", "rank 0 has float32, rank 1 has int32, rank 2 has float32"},
               {"count", "rank 0 has 1024, rank 1 has 1000, rank 2 has 1024"},
               {"root", "rank 0 has 0, rank 1 has 1, rank 2 has 0"},
               {"broadcast-vs-all-reduce", "rank 0 has all_reduce, rank 1 has broadcast, rank 2 has all_reduce"}};
  for (const auto& c : cases) {
    const auto job = run_probe(3, std::string(c.scenario) + " 1 catch", "MPIDIST_VALIDATE=1 MPIDIST_TIMEOUT=10");
    EXPECT_EQ(job.exit_code, 0) << c.scenario << "\n" << job.output;
    for (int r = 0; r < 3; ++r)
      EXPECT_TRUE(has(job, "probe: rank " + std::to_string(r) + " error: ")) << c.scenario << "\n" << job.output;
    EXPECT_TRUE(has(job, c.shown)) << c.scenario << "\n" << job.output;
  }
}

TEST(FaultTest, MismatchesWithoutValidationEndTheJobNamingBothSides) {
  const struct {
    const char* scenario;
    const char* mine;
    const char* theirs;
  } cases[] = {{"dtype", "all_reduce 1024 float32 sum", "all_reduce 1024 int32 sum"},
               {"root", "broadcast 1024 float32 root 0", "broadcast 1024 float32 root 1"},
               {"broadcast-vs-all-reduce", "all_reduce 1024 float32 sum", "broadcast 1024 float32 root 0"}};
  for (const auto& c : cases) {
    const auto job = run_probe(3, std::string(c.scenario) + " 1 catch", "MPIDIST_VALIDATE=0 MPIDIST_TIMEOUT=4");
    expect_reported_in_time(job, 4);
    EXPECT_TRUE(has(job, c.mine)) << c.scenario << "\n" << job.output;
    EXPECT_TRUE(has(job, c.theirs)) << c.scenario << "\n" << job.output;
  }
}

// Without validation, counts that differ by rank on MPI's own all_to_all can hold the overrun
// ranks inside MPI (Open MPI 4.1.4: 6 jobs of 10) while rank 2 returns. The watchdog compares the
// call in flight with its host peers' and ends the job within seconds, naming both calls, not at
// the timeout (30 s). Where MPI raised its error on those ranks instead, rank 2 returned with short
// blocks and no Error: the job ends too (the next test).
// Open MPI only: MPICH ends the job itself on an overrun (README, "MPICH").
TEST(FaultTest, ACallInFlightThatAPeerMadeDifferentlyEndsTheJobWithinSeconds) {
  if (mpidist_test::under_mpich()) GTEST_SKIP() << "MPICH aborts the job on the overrun";
  for (int attempt = 0; attempt < 3; ++attempt) {
    const auto job = run_probe(3, "all-to-all-count 2", "MPIDIST_VALIDATE=0 MPIDIST_TIMEOUT=30 MPIDIST_HOST_ALLREDUCE=mpi");
    EXPECT_NE(job.exit_code, 0) << "rank 2's wrong result passed:\n" << job.output;
    EXPECT_NE(job.exit_code, 124) << "the job hung:\n" << job.output;
    EXPECT_LT(job.seconds, 5.0 + launch_slack) << job.output;
    EXPECT_FALSE(has(job, "past its timeout")) << job.output;
    EXPECT_TRUE(has(job, "called different collectives") || has(job, "made differently, and failed")) << job.output;
    if (has(job, "(still in it)")) {
      EXPECT_TRUE(has(job, "called all_to_all 2 float32 (still in it)")) << job.output;
      EXPECT_TRUE(has(job, "world rank 2 called all_to_all 3 float32")) << job.output;
    } else {
      EXPECT_TRUE(has(job, "world rank 2 called all_to_all 3 float32 and returned, so its result is wrong")) << job.output;
    }
  }
}

// At two ranks Open MPI's all_to_all always raises its error on rank 0 (blocks of 2, rank 1's are
// 3: an overrun) and returns on rank 1 with short blocks and no Error. Rank 0's Error breaks the
// communicator there; rank 1 has a wrong result it cannot know of. The job ends naming both calls:
// at finalize() where the ranks go on at once, by rank 0's watchdog within seconds where they
// compute first, as a training loop would, before anything reaches finalize().
TEST(FaultTest, ARankThatReturnedFromACallThatFailedElsewhereWithOtherArgumentsEndsTheJob) {
  if (mpidist_test::under_mpich()) GTEST_SKIP() << "MPICH aborts the job on the overrun";
  const std::string env = "MPIDIST_VALIDATE=0 MPIDIST_TIMEOUT=30 MPIDIST_HOST_ALLREDUCE=mpi";
  const std::string both = "#1 on world/split(color 0): world rank 1 called all_to_all 3 float32 and returned, so its "
                           "result is wrong; world rank 0 called all_to_all 2 float32, which failed there";
  const auto at_once = run_probe(2, "all-to-all-count 1", env);
  EXPECT_NE(at_once.exit_code, 0) << at_once.output;
  EXPECT_NE(at_once.exit_code, 124) << "the job hung:\n" << at_once.output;
  EXPECT_TRUE(has(at_once, "probe: rank 0 error: ")) << at_once.output;
  EXPECT_TRUE(has(at_once, "probe: rank 1 completed")) << at_once.output;
  EXPECT_TRUE(has(at_once, both)) << at_once.output;
  const auto computing = run_probe(2, "all-to-all-count 1", env + " FAULT_PROBE_COMPUTE_AFTER=30");
  EXPECT_NE(computing.exit_code, 0) << computing.output;
  EXPECT_LT(computing.seconds, 5.0 + launch_slack) << "the ranks computed on with the wrong result:\n"
                                                   << computing.output;
  EXPECT_TRUE(has(computing, "consistency: ranks called different collectives on the same communicator, so results "
                             "are wrong: " + both))
      << computing.output;
  EXPECT_FALSE(has(computing, "at finalize")) << computing.output;
}

TEST(FaultTest, AfterACaughtTimeoutTheCommunicatorIsBrokenAndFinalizeDoesNotWait) {
  const auto job = run_probe(3, "caught-timeout", "MPIDIST_VALIDATE=1 MPIDIST_TIMEOUT=3");
  EXPECT_NE(job.exit_code, 0) << job.output;
  EXPECT_LT(job.seconds, 3 + 5 + launch_slack) << "finalize waited for the lost rank (it computes for 40 s):\n"
                                                << job.output;
  // Ranks 0 and 2 wait; the first to reach finalize() ends the job, possibly before the other has
  // printed what its next call said: one of them is enough.
  const auto either = [&](const std::string& what) {
    return has(job, "probe: rank 0 " + what) || has(job, "probe: rank 2 " + what);
  };
  EXPECT_TRUE(either("caught: ")) << job.output;
  EXPECT_TRUE(has(job, "timed out after 3 s")) << job.output;
  EXPECT_TRUE(either("then: ")) << job.output;
  EXPECT_TRUE(has(job, "barrier on world: this communicator can no longer be used: all_reduce timed out")) << job.output;
  EXPECT_TRUE(has(job, "finalize: a collective was left unfinished earlier")) << job.output;
}

// An object sendrecv whose peer never calls: the receive times out and is cancelled, then the
// send (1 MiB: no eager delivery) times out too and breaks the communicator. That is the Error
// the caller gets, not the receive's "can still be used".
TEST(FaultTest, AnObjectSendrecvWhosePeerNeverCallsReportsTheBrokenSend) {
  const auto job = run_probe(2, "sendrecv-unmatched", "MPIDIST_TIMEOUT=2");
  expect_reported_in_time(job, 2 * 2);
  EXPECT_TRUE(has(job, "probe: rank 0 caught: ")) << job.output;
  EXPECT_TRUE(has(job, "sendrecv")) << job.output;
  EXPECT_TRUE(has(job, "timed out after 2 s waiting for a receive on rank 1 (tag 7)")) << job.output;
  EXPECT_TRUE(has(job, "can no longer be used")) << job.output;
  EXPECT_FALSE(has(job, "can still be used")) << job.output;
}

TEST(FaultTest, AMissingRankTimesOutOfTheSharedMemoryAllReduce) {
  const auto job = run_probe(3, "shm-timeout", "MPIDIST_HOST_ALLREDUCE=shm MPIDIST_TIMEOUT=3");
  expect_reported_in_time(job, 3);
  for (const char* rank : {"probe: rank 0 caught: ", "probe: rank 2 caught: "})
    EXPECT_TRUE(has(job, rank)) << job.output;
  EXPECT_TRUE(has(job, "all_reduce")) << job.output;
  EXPECT_TRUE(has(job, "timed out after 3 s")) << job.output;
  EXPECT_TRUE(has(job, "shared memory")) << job.output;
  EXPECT_TRUE(has(job, "finalize: a collective was left unfinished earlier")) << job.output;
}

// The 2D all-reduce on nodes of 2 (ranks 0-1, 2-3): rank 3 never comes, so rank 1, which carries
// its slice across the nodes with rank 3, waits in the cross-node step (and so does rank 0, whose
// peer rank 2 waits for rank 3 in the segment). Their Errors, caught, carry the watchdog's account.
TEST(FaultTest, ARankMissingFromTheTwoLevelCrossNodeStepIsNamed) {
  const auto job =
      run_probe(4, "caught-timeout 3", "MPIDIST_HOST_ALLREDUCE=2d MPIDIST_RANKS_PER_NODE=2 MPIDIST_TIMEOUT=3");
  expect_reported_in_time(job, 3);
  // The first rank to reach finalize() ends the job: one of the two is enough.
  EXPECT_TRUE(has(job, "probe: rank 0 caught: ") || has(job, "probe: rank 1 caught: ")) << job.output;
  EXPECT_TRUE(has(job, "timed out after 3 s waiting for the ranks of the same local rank on the other nodes "
                       "(the 2D all-reduce's cross-node step)")) << job.output;
  EXPECT_TRUE(has(job, "all_reduce #4 on world (1024 float32 sum) has waited")) << job.output;
  EXPECT_TRUE(has(job, "ranks that have not reached it:\n  rank 3, pid")) << job.output;
  EXPECT_FALSE(has(job, "  rank 1, pid")) << job.output;
}

TEST(FaultTest, TwoThreadsInOneCommunicatorIsAnError) {
  const auto job = run_probe(2, "threads", "MPIDIST_TIMEOUT=20");
  EXPECT_NE(job.exit_code, 124) << job.output;
  EXPECT_TRUE(has(job, "thread error: ")) << job.output;
  EXPECT_TRUE(has(job, "another thread of this rank is inside a collective on this communicator")) << job.output;
}

TEST(FaultTest, ACallFromAnotherThreadUnderFunneledIsAnError) {
  const auto job = run_probe(2, "funneled", "MPIDIST_TIMEOUT=20");
  EXPECT_EQ(job.exit_code, 0) << job.output;
  EXPECT_TRUE(has(job, "probe: rank 0 other thread: mpidist: [rank 0/2")) << job.output;
  EXPECT_TRUE(has(job, "called from a thread other than the one that initialized mpidist")) << job.output;
}

// A monitored barrier that rank 2 of 3 reaches 4 s late, under a timeout of 2 s on `communicator`:
// ranks 0 and 1 raise the Error naming rank 2, and every rank goes on.
Job late_rank_2_at_monitored_barrier(const std::string& scenario, const std::string& communicator) {
  auto job = run_probe(3, scenario + " 2", "MPIDIST_TIMEOUT=30");
  EXPECT_EQ(job.exit_code, 0) << job.output;
  for (int r : {0, 1})
    EXPECT_TRUE(has(job, "probe: rank " + std::to_string(r) + " monitored: ")) << job.output;
  EXPECT_TRUE(has(job, "monitored_barrier on " + communicator + ": timed out after 2 s: rank 2 (on ")) << job.output;
  for (int r : {0, 1, 2}) EXPECT_TRUE(has(job, "probe: rank " + std::to_string(r) + " after")) << job.output;
  return job;
}

TEST(FaultTest, MonitoredBarrierListsTheAbsentRankAndTheJobGoesOn) {
  const auto job = late_rank_2_at_monitored_barrier("monitored", "world");
  EXPECT_TRUE(has(job, "probe: rank 2 monitored: ")) << job.output;  // the late rank learns it too
}

// Without a timeout argument: the communicator's (set_timeout), as torch's default is its group's.
TEST(FaultTest, MonitoredBarrierTakesTheCommunicatorsTimeout) {
  late_rank_2_at_monitored_barrier("monitored-default", "world/split(color 0)");
}

TEST(FaultTest, Sigusr1DumpsTheFlightRecorderAndTheJobGoesOn) {
  const auto dir = temp_dir("usr1");
  const auto job = run_probe(2, "sigusr1", "MPIDIST_TRACE_DIR=" + dir);
  EXPECT_EQ(job.exit_code, 0) << job.output;
  EXPECT_TRUE(has(job, "flight recorder dumped to " + dir + "/mpidist-trace-rank0.json")) << job.output;
  const auto path = dir + "/mpidist-trace-rank0.json";
  struct stat info {};
  ASSERT_EQ(stat(path.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("\"format\": \"mpidist-trace\""), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("\"op\":\"barrier\""), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("\"reason\":\"signal SIGUSR1\""), std::string::npos) << text.str();
  std::filesystem::remove_all(dir);
}

TEST(FaultTest, WatchdogExpiryDumpsEveryLiveRank) {
  const auto dir = temp_dir("expiry");
  const auto job = run_probe(3, "skip-barrier", "MPIDIST_TIMEOUT=2 MPIDIST_TRACE_DIR=" + dir);
  expect_reported_in_time(job, 2);
  EXPECT_TRUE(has(job, "flight recorder: " + dir + "/mpidist-trace-rank")) << job.output;
  // The waiting ranks dump with their reports; the computing one on the SIGTERM that the first to
  // end the job sends the host's silent ranks (Open MPI's runtime would; Hydra would not).
  for (int r : {0, 1, 2})
    EXPECT_TRUE(std::filesystem::exists(dir + "/mpidist-trace-rank" + std::to_string(r) + ".json")) << r << job.output;
  std::filesystem::remove_all(dir);
}

}  // namespace
