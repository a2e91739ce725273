// Jobs that go wrong on purpose, for tests/watch/test_faults.cpp: a rank that skips a collective, calls
// another one, passes other arguments, dies, or two threads that share a communicator. Each
// scenario prints "probe: ..." lines the test looks for; mpidist must never leave a rank hanging.
//   fault_probe SCENARIO [RANK [catch]]   (RANK: the rank that misbehaves, 1 by default)
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "mpidist/detail/stall_warning.hpp"
#include "mpidist/mpidist.hpp"

namespace {

using namespace std::chrono_literals;

void computing(std::chrono::seconds how_long) { std::this_thread::sleep_for(how_long); }

// FAULT_PROBE_COMPUTE_AFTER=S: every rank computes S seconds before its next call, so the
// watchdog's background check, not finalize(), must find a mismatch that "succeeded".
void compute_if_asked() {
  if (const char* after = std::getenv("FAULT_PROBE_COMPUTE_AFTER")) computing(std::chrono::seconds(std::atoi(after)));
}

void warm_up() {
  std::vector<float> data(16, 1.0f);
  for (int i = 0; i < 3; ++i) mpidist::all_reduce(std::span<float>(data));
}

int run(const std::string& scenario, int odd_rank) {
  const int me = mpidist::rank();
  const bool odd = me == odd_rank;
  std::vector<float> data(1024, 1.0f);
  std::vector<int> ints(1024, 1);
  warm_up();
  if (scenario == "skip-barrier") {
    if (odd) computing(60s); else mpidist::barrier();
  } else if (scenario == "skip-all-reduce") {
    if (odd) computing(60s); else mpidist::all_reduce(std::span<float>(data));
  } else if (scenario == "skip-large-all-reduce") {
    // 4 MiB: across even hosts the 2D path (the ranks of the other host's same local index wait
    // in its cross-node step, testing it from the segment's waits), the leader path elsewhere.
    std::vector<float> large(std::size_t{1} << 20, 1.0f);
    if (odd) computing(60s); else mpidist::all_reduce(std::span<float>(large));
  } else if (scenario == "skip-broadcast") {
    // From rank 1, which across the hosts of tests/hosts is not its host's leader: it sends the
    // other host's leader the message itself. Where the odd rank is that leader, its host's other
    // ranks wait for it in their segment; where it only reads, the others may finish and wait at
    // finalize. Either way the call is named.
    if (odd) computing(60s); else mpidist::broadcast(std::span<float>(data), 1);
  } else if (scenario == "skip-reduce-scatter") {
    // 1 KiB a block: across the hosts of tests/hosts at 3 + 1 through the hosts' leaders (host A's
    // leader waits in MPI_Reduce_scatter, its other ranks in the segment for their blocks), at
    // 2 + 2 the 2D path.
    std::vector<float> in(256 * static_cast<std::size_t>(mpidist::world_size()), 1.0f), block(256);
    if (odd) computing(60s); else mpidist::reduce_scatter(std::span<const float>(in), std::span<float>(block));
  } else if (scenario == "skip-all-reduce-async") {
    // The others' all_reduce_async is never matched: its step waits on the communicator's lane
    // while the caller waits in wait(); the watchdog (or the step's own timeout) names it.
    if (odd) {
      computing(60s);
    } else {
      mpidist::Work work = mpidist::all_reduce_async(std::span<float>(data));
      work.wait();
    }
  } else if (scenario == "skip-object-broadcast") {
    // Rank 0 sends and may return at once: the others wait, the skipped rank is named at finalize.
    if (!odd) {
      auto text = mpidist::broadcast(std::string(me == 0 ? "hello" : ""), 0);
      std::printf("probe: rank %d got '%s'\n", me, text.c_str());
    }
    if (odd) computing(60s);
  } else if (scenario == "broadcast-vs-all-reduce" || scenario == "dtype" || scenario == "count" ||
             scenario == "root") {
    // Mismatched calls; the Error (with validation) is caught and printed, and the job goes on.
    try {
      if (scenario == "broadcast-vs-all-reduce") {
        if (odd) mpidist::broadcast(std::span<float>(data), 0); else mpidist::all_reduce(std::span<float>(data));
      } else if (scenario == "dtype") {
        if (odd) mpidist::all_reduce(std::span<int>(ints)); else mpidist::all_reduce(std::span<float>(data));
      } else if (scenario == "count") {
        mpidist::all_reduce(std::span<float>(data.data(), odd ? 1000 : 1024));
      } else {
        mpidist::broadcast(std::span<float>(data), odd ? 1 : 0);
      }
      std::printf("probe: rank %d completed\n", me);
    } catch (const mpidist::Error& e) {
      std::printf("probe: rank %d error: %s\n", me, e.what());
    }
    std::fflush(stdout);
    compute_if_asked();
    mpidist::barrier();
  } else if (scenario == "refuse-large-all-reduce" || scenario == "refuse-all-reduce" ||
             scenario == "refuse-large-all-reduce-async") {
    // The odd rank's out is one element short (its own mistake, refused without validation); every
    // rank catches and says what it got, then lingers so that no finalize() ends the job before the
    // others have said theirs. Across the hosts the other host's ranks learn it from a message; in
    // the non-blocking form (-async) at Multiple, on the lane's thread that runs the call's step.
    const std::size_t n = scenario.starts_with("refuse-large-all-reduce") ? std::size_t{1} << 20 : 1024;
    std::vector<float> in(n, 1.0f), out(odd ? n - 1 : n);
    const auto start = std::chrono::steady_clock::now();
    try {
      if (scenario.ends_with("-async"))
        mpidist::all_reduce_async(std::span<const float>(in), std::span<float>(out)).wait();
      else
        mpidist::all_reduce(std::span<const float>(in), std::span<float>(out));
      std::printf("probe: rank %d completed\n", me);
    } catch (const mpidist::Error& e) {
      std::printf("probe: rank %d error after %.1f s: %s\n", me,
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), e.what());
    }
    std::fflush(stdout);
    computing(5s);
  } else if (scenario == "all-to-all-count") {
    // Equal blocks of 3 on the odd rank, 2 elsewhere, on a split of the world (which stays whole):
    // on MPI's own all_to_all (MPIDIST_HOST_ALLREDUCE=mpi) unchecked, the overrun ranks may get
    // MPI's error or stay inside MPI, the odd rank returns with short blocks.
    const mpidist::Communicator comm = mpidist::world().split(0, me);
    const auto n = static_cast<std::size_t>(comm.size()), k = std::size_t{odd ? 3u : 2u};
    std::vector<float> in(k * n, static_cast<float>(me)), out(k * n, -1.0f);
    try {
      mpidist::all_to_all(comm, std::span<const float>(in), std::span<float>(out));
      std::printf("probe: rank %d completed\n", me);
    } catch (const mpidist::Error& e) {
      std::printf("probe: rank %d error: %s\n", me, e.what());
    }
    std::fflush(stdout);
    compute_if_asked();
    mpidist::barrier();
  } else if (scenario == "kill") {
    for (int i = 0;; ++i) {
      if (odd && i == 50) ::raise(SIGKILL);
      mpidist::all_reduce(std::span<float>(data));
    }
  } else if (scenario == "caught-timeout") {
    try {
      if (odd) computing(40s); else mpidist::all_reduce(std::span<float>(data));
    } catch (const mpidist::Error& e) {
      std::printf("probe: rank %d caught: %s\n", me, e.what());
      std::fflush(stdout);
    }
    try {
      mpidist::barrier();
    } catch (const mpidist::Error& e) {
      std::printf("probe: rank %d then: %s\n", me, e.what());
      std::fflush(stdout);
    }
    std::printf("probe: rank %d finalizing\n", me);
    std::fflush(stdout);
  } else if (scenario == "shm-timeout") {
    // Run with MPIDIST_HOST_ALLREDUCE=shm: the wait inside the shared-memory all-reduce is bounded.
    std::vector<float> large(100000, 1.0f);
    mpidist::all_reduce(std::span<float>(large));  // the segment exists on every rank
    try {
      if (odd) computing(40s); else mpidist::all_reduce(std::span<float>(large));
    } catch (const mpidist::Error& e) {
      std::printf("probe: rank %d caught: %s\n", me, e.what());
      std::fflush(stdout);
    }
  } else if (scenario == "threads") {
    // ThreadLevel::Multiple: two threads in all_reduce on one communicator at once.
    std::vector<std::string> errors(2);
    auto work = [&](int t) {
      std::vector<float> mine(1 << 16, 1.0f);
      try {
        for (int i = 0; i < 2000 && errors[0].empty() && errors[1].empty(); ++i)
          mpidist::all_reduce(std::span<float>(mine));
      } catch (const mpidist::Error& e) {
        errors[static_cast<std::size_t>(t)] = e.what();
      }
    };
    std::thread a(work, 0), b(work, 1);
    a.join(), b.join();
    for (const auto& e : errors)
      if (!e.empty()) std::printf("probe: rank %d thread error: %s\n", me, e.c_str());
    std::fflush(stdout);
    return 0;  // the communicator's calls no longer match across ranks: end without finalize's check
  } else if (scenario == "funneled") {
    std::string error;
    std::thread other([&] {
      try {
        mpidist::barrier();
      } catch (const mpidist::Error& e) {
        error = e.what();
      }
    });
    other.join();
    std::printf("probe: rank %d other thread: %s\n", me, error.c_str());
  } else if (scenario == "monitored" || scenario == "monitored-default") {
    // monitored-default: under the communicator's own timeout (2 s on a split of the world).
    const bool by_default = scenario == "monitored-default";
    if (by_default) mpidist::monitored_barrier();  // every rank arrives: it passes
    const auto comm = by_default ? mpidist::world().split(0, me) : mpidist::world();
    if (by_default) comm.set_timeout(2s);
    if (odd) computing(4s);
    try {
      if (by_default) mpidist::monitored_barrier(comm);
      else mpidist::monitored_barrier(2s);
      std::printf("probe: rank %d passed\n", me);
    } catch (const mpidist::Error& e) {
      std::printf("probe: rank %d monitored: %s\n", me, e.what());
    }
    std::fflush(stdout);
    mpidist::barrier();  // the job goes on, the late rank included
    std::printf("probe: rank %d after\n", me);
  } else if (scenario == "stall" || scenario == "stall-default") {
    if (odd) computing(4s);
    mpidist::all_reduce(std::span<float>(data));
    std::printf("probe: rank %d done\n", me);
  } else if (scenario == "recv-never-sent") {
    // The odd rank waits (under a long timeout of its own) for a message rank 0 never sends, while
    // the others wait in a barrier: the watchdog ends the job and the dumps show the receive.
    auto patient = mpidist::world().split(0, me);
    patient.set_timeout(std::chrono::seconds(60));
    if (odd)
      mpidist::recv(patient, std::span<int>(ints).first(4), 0, 7);
    else
      mpidist::barrier();
    std::printf("probe: rank %d done\n", me);
  } else if (scenario == "sendrecv-unmatched") {
    // Rank 0 sendrecvs a value past any eager limit with the odd rank, which never calls: the
    // receive times out (cancelled), then the send, which breaks the world; the send's Error is
    // the one rank 0 catches.
    if (odd) {
      computing(40s);
    } else if (me == 0) {
      try {
        (void)mpidist::sendrecv(std::string(1 << 20, 'x'), odd_rank, odd_rank, 7);
      } catch (const mpidist::Error& e) {
        std::printf("probe: rank %d caught: %s\n", me, e.what());
        std::fflush(stdout);
      }
    }
    std::printf("probe: rank %d finalizing\n", me);
    std::fflush(stdout);
  } else if (scenario == "unreceived") {
    // A message nobody receives: finalize() names it.
    if (odd) mpidist::send(std::span<int>(ints).first(4), 0, 5);
    mpidist::barrier();
    std::printf("probe: rank %d done\n", me);
  } else if (scenario == "sigusr1") {
    mpidist::barrier();
    if (me == 0) ::raise(SIGUSR1);
    computing(1s);
    mpidist::barrier();
    std::printf("probe: rank %d done\n", me);
  } else {
    std::fprintf(stderr, "fault_probe: unknown scenario '%s'\n", scenario.c_str());
    return 2;
  }
  std::fflush(stdout);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: fault_probe SCENARIO [RANK]\n");
    return 2;
  }
  const std::string scenario = argv[1];
  const int odd_rank = argc > 2 ? std::atoi(argv[2]) : 1;
  // FAULT_PROBE_MULTIPLE=1: the job runs at MPI_THREAD_MULTIPLE, so watchdogs ask other hosts.
  const char* multiple = std::getenv("FAULT_PROBE_MULTIPLE");
  const auto level = scenario == "threads" || (multiple && std::strcmp(multiple, "1") == 0)
                         ? mpidist::ThreadLevel::Multiple
                         : mpidist::ThreadLevel::Funneled;
  // stall-default: the warning of an unset MPIDIST_STALL_WARN, its default shortened to 1 s.
  if (scenario == "stall-default") mpidist::detail::set_default_stall_warn_seconds_for_testing(1.0);
  mpidist::Environment env(argc, argv, level);
  const int status = run(scenario, odd_rank);
  if (scenario == "threads") std::_Exit(status);
  return status;
}
