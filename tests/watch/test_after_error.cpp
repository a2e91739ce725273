// After a caught mpidist::Error (probes/after_error_probe.cpp, started outside mpiexec): no rank
// ever gets a wrong value, passes alone, crashes in MPI or waits without being told. A failed call
// breaks its communicator unless every rank raised the Error alike; every wait keeps the
// communicator's set_timeout; mismatch detection never switches off. Under Open MPI and MPICH.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <future>
#include <regex>
#include <string>
#include <vector>

#include "mpi_test.hpp"

namespace {

using mpidist_test::has;

using Job = mpidist_test::CommandResult;

// `env` ("A=1 B=2") before the job; validation off unless it says otherwise.
Job run_probe(int ranks, const std::string& args, const std::string& env, int limit = 240) {
  return mpidist_test::run_probe("AFTER_ERROR_PROBE", ranks, args, "MPIDIST_STALL_WARN=0 " + env, limit);
}

int count(const Job& job, const std::string& pattern) {
  const std::regex re(pattern);
  return static_cast<int>(std::distance(std::sregex_iterator(job.output.begin(), job.output.end(), re),
                                        std::sregex_iterator()));
}

// No wrong value anywhere, no crash inside MPI, no hang.
void expect_no_wrong_answer(const Job& job) {
  EXPECT_FALSE(has(job, "WRONG")) << job.output;
  EXPECT_FALSE(has(job, "MPI_ERR_")) << job.output;
  EXPECT_NE(job.exit_code, 124) << "the job hung:\n" << job.output;
}

// Every rank reached the end of the probe (a job that finalize() ends after a timeout may lose
// the last lines of the ranks it ends: those check their last step instead).
void expect_all_done(const Job& job, int ranks) { EXPECT_EQ(count(job, "probe: rank [0-9]+ done"), ranks) << job.output; }

// Case 1: a rank late to a call the others time out of and catch; then one more call. Every
// host collective, in-line (4 floats) and chunked (8 MiB), each on a fresh group.
//
// Whatever the path, a late call either completes with the right values or ends in an Error or
// the watchdog's report. On one node the in-line calls wait in shared memory, polled under the
// timeout: one job runs them all, and every wait there ends in an Error. A chunked call may take
// MPI's blocking path (4 ranks on 2 cores), and across simulated nodes every leaders' step is a
// blocking MPI call: there the watchdog's report under the same timeout ends the job, so those
// cases run one job each, late by more than the timeout and the watchdog's second of grace.
struct LateCase {
  std::string which, env;
  double late;
};

Job run_late(int ranks, const LateCase& c) {
  return run_probe(ranks, "late " + std::to_string(c.late) + " " + c.which, "MPIDIST_TIMEOUT=1 " + c.env, 120);
}

void check_late(int ranks, const LateCase& c, const Job& job) {
  const std::string name = c.which.substr(0, c.which.find(' '));
  expect_no_wrong_answer(job);
  EXPECT_EQ(count(job, "step 1 ok"), ranks) << c.which << "\n" << job.output;
  EXPECT_TRUE(count(job, "step 4 (ok|error)") == ranks || has(job, "watchdog: " + name + " #3 on world/split"))
      << c.which << "\n" << job.output;
  EXPECT_LT(job.seconds, c.late + 1 + 1 + 20) << c.which << "\n" << job.output;
}

// The cases' jobs two at a time: each mostly waits (the late rank's sleep, the timeout, the job's
// end), so two side by side take little longer than one.
void late_cases(int ranks, const std::vector<LateCase>& cases) {
  for (std::size_t i = 0; i < cases.size(); i += 2) {
    std::future<Job> second;
    if (i + 1 < cases.size()) second = std::async(std::launch::async, run_late, ranks, cases[i + 1]);
    check_late(ranks, cases[i], run_late(ranks, cases[i]));
    if (second.valid()) check_late(ranks, cases[i + 1], second.get());
  }
}

const std::vector<std::string> collectives{"all_reduce", "broadcast", "all_gather", "reduce_scatter", "reduce",
                                           "all_reduce_many"};

void late_rank(int ranks) {
  const auto in_line = run_probe(ranks, "late 1.4 all 4", "MPIDIST_TIMEOUT=1");
  expect_no_wrong_answer(in_line);
  EXPECT_EQ(count(in_line, "step 1 ok"), 6 * ranks) << in_line.output;
  EXPECT_EQ(count(in_line, "step 4 (ok|error)"), 6 * ranks) << in_line.output;
  EXPECT_GE(count(in_line, "step 3 error: [^\n]*timed out after 1 s"), 5) << in_line.output;  // broadcast's root may pass
  EXPECT_GE(count(in_line, "step 4 error: [^\n]*this communicator can no longer be used"), 5) << in_line.output;
  // finalize() ends a job whose waits gave up, naming the first communicator that broke.
  EXPECT_TRUE(has(in_line, "finalize: a collective was left unfinished earlier in this job; communicator world/split(color 0) broke: ")) << in_line.output;
  EXPECT_NE(in_line.exit_code, 0) << in_line.output;
  std::vector<LateCase> cases;
  for (const auto& name : collectives) cases.push_back({name + " 2097152", "", 1.4});
  late_cases(ranks, cases);
}

TEST(AfterErrorLate, EveryHostCollectiveAtTwoRanks) { late_rank(2); }
TEST(AfterErrorLate, EveryHostCollectiveAtThreeRanks) { late_rank(3); }
TEST(AfterErrorLate, EveryHostCollectiveAtFourRanks) { late_rank(4); }
TEST(AfterErrorLate, EveryHostCollectiveOnSimulatedNodes) {
  std::vector<LateCase> cases;
  for (const auto& name : collectives)
    for (const char* elements : {" 4", " 2097152"}) cases.push_back({name + elements, "MPIDIST_RANKS_PER_NODE=2", 2.5});
  // The 2D all-reduce: its ranks wait in the cross-node step or in the segment, whose waits test
  // that step's requests.
  const std::string two_d = "MPIDIST_RANKS_PER_NODE=2 MPIDIST_HOST_ALLREDUCE=2d";
  cases.push_back({"all_reduce 2097152", two_d, 2.5});
  // The 2D all-gather and reduce-scatter: in the segment (testing their cross-node requests) or in
  // those requests' waits.
  for (const char* name : {"all_gather", "reduce_scatter"})
    for (const char* elements : {" 4", " 2097152"}) cases.push_back({name + std::string(elements), two_d, 2.5});
  // The paths through the nodes' leaders on the uneven 3 + 1 (forced): the leaders' MPI step is a
  // blocking call, the node's other ranks wait in its segment.
  const std::string leaders = "MPIDIST_RANKS_PER_NODE=3 MPIDIST_HOST_ALLREDUCE=shm";
  for (const char* name : {"broadcast", "all_gather", "reduce_scatter"})
    for (const char* elements : {" 4", " 2097152"}) cases.push_back({name + std::string(elements), leaders, 2.5});
  cases.push_back({"all_to_all 4", leaders, 2.5});
  late_cases(4, cases);
}

// Case 2: set_timeout decides every wait, MPIDIST_TIMEOUT being only the default: longer and
// zero ("forever") let a late rank arrive; shorter gives up sooner. On the world and a split group.
void set_timeout_decides(int ranks, const std::string& args, const std::string& env, int collectives) {
  const auto job = run_probe(ranks, "set-timeout 0.8 " + args, "MPIDIST_TIMEOUT=0.4 " + env);
  expect_no_wrong_answer(job);
  if (args.find("longer") != std::string::npos) expect_all_done(job, ranks);
  else EXPECT_EQ(count(job, "split-shorter [^\n]* took"), collectives * ranks) << job.output;
  for (const std::string setting : {"world-longer", "world-forever", "split-longer", "split-forever"})
    EXPECT_FALSE(std::regex_search(job.output, std::regex("rank [0-9]+ " + setting + " [^\n]* error"))) << setting << "\n"
                                                                                                       << job.output;
  // Each setting's calls all completed: two sizes of every collective (world-longer, split-forever)
  // or of the first (world-forever, split-longer).
  EXPECT_EQ(count(job, "world-longer [^\n]* ok"), 2 * collectives * ranks) << job.output;
  EXPECT_EQ(count(job, "split-forever [^\n]* ok"), 2 * collectives * ranks) << job.output;
  EXPECT_EQ(count(job, "world-forever [^\n]* ok"), 2 * ranks) << job.output;
  EXPECT_EQ(count(job, "split-longer [^\n]* ok"), 2 * ranks) << job.output;
  if (args.find("longer") != std::string::npos) return;
  // Shorter: rank 0 gives up after 0.2 s, saying whose timeout it was.
  EXPECT_EQ(count(job, "rank 0 split-shorter [^\n]* error: [^\n]*timed out after 0.2 s [^\n]*set_timeout"),
            collectives - (collectives > 1 ? 1 : 0))  // broadcast's root does not wait
      << job.output;
}

TEST(AfterErrorTimeouts, SetTimeoutDecidesEveryHostCollective) { set_timeout_decides(2, "all", "", 6); }
TEST(AfterErrorTimeouts, SetTimeoutDecidesAllReduceManysAgreement) {
  set_timeout_decides(3, "all_reduce_many", "MPIDIST_VALIDATE=1", 1);
}
// Across simulated nodes the leaders' step is a blocking MPI call, which the watchdog watches
// under the same timeout: a shorter one ends the job there with its report.
TEST(AfterErrorTimeouts, SetTimeoutDecidesOnSimulatedNodes) {
  set_timeout_decides(4, "all longer", "MPIDIST_RANKS_PER_NODE=2", 6);
  // Late by more than the shorter timeout and the watchdog's second of grace.
  const auto job = run_probe(4, "set-timeout 2 all_reduce shorter", "MPIDIST_TIMEOUT=5 MPIDIST_RANKS_PER_NODE=2");
  expect_no_wrong_answer(job);
  EXPECT_TRUE(std::regex_search(job.output, std::regex("timed out after 0.5 s [^\\n]*set_timeout|past its timeout of 0.5 s")))
      << job.output;
  EXPECT_LT(job.seconds, 2 + 1 + 15) << job.output;
}

// Ending a job after MPI_Abort: 3-5 s in plain builds; under AddressSanitizer, on the CI's loaded
// sanitizer stage, one such job took 29 s. A job that hangs still meets the probe's 60 s limit.
#if defined(__SANITIZE_ADDRESS__)
constexpr double job_end_slack = 30;
#else
constexpr double job_end_slack = 10;
#endif

// Case 3: rank 1's own bad argument, caught: the others never pair their next calls with its.
// Nobody waits for the timeout (60 s here): rank 1 says on its host's progress board that it
// refused the call; rank 0, waiting for it in shared memory, leaves the call at once with an Error
// naming the refusal, and rank 1's vote learns at once that rank 0 went on without it. Inside
// MPI's own blocking collective, which nothing can leave, rank 0's watchdog ends the job within
// two of its checks, naming the refusal.
constexpr int refusal_timeout = 60;

Job one_rank_argument_error(const std::string& env) {
  const auto job = run_probe(2, "local-error", "MPIDIST_TIMEOUT=" + std::to_string(refusal_timeout) + " " + env, 90);
  expect_no_wrong_answer(job);
  EXPECT_LT(job.seconds, 4 + job_end_slack) << "waited for the timeout:\n" << job.output;
  return job;
}

TEST(AfterError, OneRanksArgumentErrorBreaksTheCommunicatorOverSharedMemory) {
  const auto job = one_rank_argument_error("");
  EXPECT_TRUE(has(job, "rank 1 local step 1 error: ")) << job.output;
  EXPECT_TRUE(has(job, "out has 3 elements but must have 2 (in's count). The other ranks did not raise the same "
                       "Error: rank 0 went on into the call without this rank and left it, so the ranks are out of step"))
      << job.output;
  EXPECT_EQ(count(job, "rank 1 local step [2-5] error: [^\n]*this communicator can no longer be used: all_reduce: out has 3"), 4)
      << job.output;
  EXPECT_TRUE(has(job, "rank 0 local step 1 error: mpidist: [rank 0/2 on ")) << job.output;
  EXPECT_TRUE(has(job, "all_reduce on world: rank 1 refused this call (#1) on its own arguments and will not join it "
                       "(out has 3 elements but must have 2 (in's count)); this rank had gone on into it"))
      << job.output;
  EXPECT_EQ(count(job, "rank 0 local step [2-5] error: [^\n]*this communicator can no longer be used: all_reduce: rank 1 "
                       "refused this call"),
            4)
      << job.output;
  expect_all_done(job, 2);
}

// Two ranks wait for the one that refused: each leaves with the Error that names it.
TEST(AfterError, OneRanksArgumentErrorReachesEveryWaitingRank) {
  const auto job = run_probe(3, "local-error", "MPIDIST_TIMEOUT=" + std::to_string(refusal_timeout), 90);
  expect_no_wrong_answer(job);
  EXPECT_LT(job.seconds, 4 + job_end_slack) << "waited for the timeout:\n" << job.output;
  EXPECT_EQ(count(job, "rank [02] local step 1 error: [^\n]*rank 1 refused this call \\(#1\\) on its own arguments"), 2)
      << job.output;
  EXPECT_TRUE(has(job, "rank 1 local step 1 error: ")) << job.output;
  EXPECT_TRUE(std::regex_search(job.output, std::regex("The other ranks did not raise the same Error: rank [02] went on "
                                                       "into the call without this rank and left it")))
      << job.output;
  expect_all_done(job, 3);
}

TEST(AfterError, OneRanksArgumentErrorBreaksTheCommunicatorOverMpi) {
  const auto job = one_rank_argument_error("MPIDIST_HOST_ALLREDUCE=mpi");
  EXPECT_TRUE(has(job, "watchdog: all_reduce #1 on world (2 float32 sum) cannot complete: rank 1 of world refused it on "
                       "its own arguments (out has 3 elements but must have 2 (in's count)) and will not join it"))
      << job.output;
  EXPECT_NE(job.exit_code, 0) << job.output;
}

TEST(AfterError, AnArgumentErrorOfEveryRankLeavesTheCommunicatorUsable) {
  const auto job = run_probe(3, "local-error-everyone", "MPIDIST_TIMEOUT=5");
  expect_no_wrong_answer(job);
  expect_all_done(job, 3);
  EXPECT_EQ(count(job, "local step 1 error: [^\n]*out has 3 elements but must have 2"), 3) << job.output;
  EXPECT_EQ(count(job, "again step [1-3] error: [^\n]*all_reduce on world: out has 3 elements but must have 2 \\(in's "
                       "count\\)\n"),
            9)
      << job.output;
  EXPECT_EQ(count(job, "local step [2-5] ok"), 12) << job.output;
  EXPECT_EQ(job.exit_code, 0) << job.output;
}

// Case 4: rank 1 passes root 7 to one object broadcast and catches; it never gets another step's
// string. Without validation the ranks vote; with it, the Error is on every rank and all go on.
// The root returned from the broadcast rank 1 refused: rank 1's vote learns it at once.
TEST(AfterError, ABadRootOnOneRankNeverShiftsLaterObjectCalls) {
  const auto job = run_probe(2, "object-root", "MPIDIST_TIMEOUT=" + std::to_string(refusal_timeout), 90);
  expect_no_wrong_answer(job);
  EXPECT_LT(job.seconds, 4 + job_end_slack) << "waited for the timeout:\n" << job.output;
  EXPECT_TRUE(has(job, "rank 1 object step 1 error: ")) << job.output;
  EXPECT_TRUE(has(job, "root rank 7 out of range for world size 2. The other ranks did not raise the same Error: rank 0 "
                       "went on into the call without this rank and finished it"))
      << job.output;
  EXPECT_EQ(count(job, "rank 1 object step [2-4] error: [^\n]*can no longer be used"), 3) << job.output;
}

// The root and rank 1 returned from the broadcast the last rank refused, so they wait for it in
// the next call: they learn at once that its communicator broke (its progress record), instead of
// at the timeout. Through the segment, an Error that names it; inside MPI, the watchdog's report.
TEST(AfterError, ARankBrokenInAnEarlierCallIsNotWaitedFor) {
  const auto job = run_probe(3, "object-root-then-all-reduce", "MPIDIST_TIMEOUT=" + std::to_string(refusal_timeout), 90);
  expect_no_wrong_answer(job);
  EXPECT_LT(job.seconds, 4 + job_end_slack) << "waited for the timeout:\n" << job.output;
  EXPECT_EQ(count(job, "rank [01] object step 1 ok"), 2) << job.output;
  EXPECT_EQ(count(job, "rank [01] next step 2 error: [^\n]*all_reduce on world: rank 2 can no longer use this "
                       "communicator, which broke there in call #1 \\(root rank 7 out of range for world size 3\\), "
                       "and will not join this call \\(#2\\); this rank had gone on into it"),
            2)
      << job.output;
  EXPECT_EQ(count(job, "rank 2 next step [23] error: [^\n]*can no longer be used"), 2) << job.output;
  expect_all_done(job, 3);
}

TEST(AfterError, ARankBrokenInAnEarlierCallEndsTheJobWhereMpiHoldsTheOthers) {
  // The broken rank lingers 5 s: its finalize() would otherwise end the job before the report.
  const auto job = run_probe(3, "object-root-then-all-reduce 5",
                             "MPIDIST_HOST_ALLREDUCE=mpi MPIDIST_TIMEOUT=" + std::to_string(refusal_timeout), 90);
  EXPECT_LT(job.seconds, 4 + job_end_slack) << "waited for the timeout:\n" << job.output;
  EXPECT_TRUE(has(job, "watchdog: all_reduce #2 on world (4 float32 sum) cannot complete: rank 2 can no longer use "
                       "world, which broke there in call #1 (root rank 7 out of range for world size 3), and will not "
                       "join it"))
      << job.output;
  EXPECT_NE(job.exit_code, 0) << job.output;
}

TEST(AfterError, ABadRootOnOneRankWithValidationIsAnErrorOnEveryRank) {
  const auto job = run_probe(3, "object-root", "MPIDIST_TIMEOUT=10 MPIDIST_VALIDATE=1", 60);
  expect_no_wrong_answer(job);
  expect_all_done(job, 3);
  EXPECT_EQ(count(job, "object step 1 error: [^\n]*ranks called different collectives"), 3) << job.output;
  EXPECT_EQ(count(job, "object step [2-4] ok"), 9) << job.output;
  EXPECT_EQ(job.exit_code, 0) << job.output;
}

// Case 5: a caught Error every rank raised alike does not switch the consistency checks off.
TEST(AfterError, MismatchDetectionGoesOnAfterACaughtError) {
  const auto job = run_probe(2, "mismatch-after-error", "MPIDIST_TIMEOUT=10", 60);
  EXPECT_EQ(count(job, "mismatch step 1 error: [^\n]*lengths differ"), 2) << job.output;
  EXPECT_TRUE(has(job, "all_reduce 4 float32 sum; rank 1 all_reduce 4 int32 sum") ||
              has(job, "consistency: ranks called different collectives"))
      << job.output;
  EXPECT_NE(job.exit_code, 0) << "the mismatch went unreported:\n" << job.output;
}

// Case 6: with validation, different families of calls meet in one agreement: an Error on every
// rank naming both calls, never an MPI error; the communicator stays usable.
TEST(AfterError, DifferentFamiliesAreAnErrorNamingBothCalls) {
  for (const std::string other : {"barrier", "object-broadcast", "all_reduce_many", "average"}) {
    const auto job = run_probe(2, "families " + other, "MPIDIST_VALIDATE=1 MPIDIST_TIMEOUT=10", 60);
    expect_no_wrong_answer(job);
    expect_all_done(job, 2);
    const std::string name = other == "object-broadcast" ? "broadcast" : other;
    EXPECT_EQ(count(job, "families step 1 error: [^\n]*ranks called different collectives: rank 0 has all_reduce, "
                         "rank 1 has " + name),
              2)
        << other << "\n" << job.output;
    EXPECT_EQ(count(job, "families step 2 ok"), 2) << other << "\n" << job.output;
    EXPECT_EQ(job.exit_code, 0) << other << "\n" << job.output;
  }
}

// Case 7: a coordinator that comes after the others gave up does not pass on their old arrivals.
TEST(AfterError, MonitoredBarrierWithALateCoordinatorFailsOnEveryRank) {
  const auto job = run_probe(3, "monitored-late-coordinator 4", "MPIDIST_TIMEOUT=30", 60);
  expect_all_done(job, 3);
  EXPECT_EQ(count(job, "rank [12] monitored step 1 error: [^\n]*rank 0 \\(on [^)]*\\), which coordinates the barrier, "
                       "did not answer"),
            2)
      << job.output;
  EXPECT_TRUE(has(job, "rank 0 monitored step 1 error: ")) << job.output;
  EXPECT_TRUE(has(job, "gave up waiting for this barrier before this rank, which coordinates it, answered")) << job.output;
  EXPECT_FALSE(has(job, "monitored step 1 passed")) << job.output;
  EXPECT_EQ(count(job, "monitored step 2 passed"), 3) << job.output;  // the next barrier is itself again
  EXPECT_EQ(job.exit_code, 0) << job.output;
}

// Case 8: zero_first is watched like any call, and the others learn the first rank's exception.
TEST(AfterError, ZeroFirstIsWatched) {
  const auto job = run_probe(2, "zero-first 6 slow", "MPIDIST_TIMEOUT=1", 60);
  EXPECT_TRUE(has(job, "rank 1 zero_first step 1 error: ") || has(job, "watchdog: one_rank_first #1")) << job.output;
  EXPECT_TRUE(has(job, "waiting for rank 0 to finish the block that runs there first") ||
              has(job, "watchdog: one_rank_first #1"))
      << job.output;
  EXPECT_LT(job.seconds, 1 + 10 + 6) << job.output;
}

TEST(AfterError, ZeroFirstCarriesTheFirstRanksException) {
  const auto job = run_probe(3, "zero-first 0 throws", "MPIDIST_TIMEOUT=10", 60);
  expect_all_done(job, 3);
  EXPECT_TRUE(has(job, "rank 0 zero_first step 1 own exception: no dataset in /data/shards")) << job.output;
  EXPECT_EQ(count(job, "rank [12] zero_first step 1 error: [^\n]*rank 0 failed inside the block that runs there first: "
                       "no dataset in /data/shards"),
            2)
      << job.output;
  EXPECT_EQ(job.exit_code, 0) << job.output;
}

}  // namespace
