// Jobs that catch an mpidist::Error and carry on, for tests/watch/test_after_error.cpp: whatever happens
// after the catch, no rank may get a wrong value, pass alone, crash in MPI or wait unwatched. Every
// checked result prints "probe: rank R <case> step K ok" or "... WRONG got X want Y"; every caught
// Error "probe: rank R <case> step K error: <text>".
//   after_error_probe SCENARIO [ARGS]
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "mpidist/mpidist.hpp"

namespace {

using namespace std::chrono_literals;
using mpidist::Communicator;

int me() { return mpidist::rank(); }

void say(const std::string& text) {
  std::printf("probe: rank %d %s\n", me(), text.c_str());
  std::fflush(stdout);
}

// Rank r's value at step k: every step's values differ from every other step's.
float value(int r, int k) { return static_cast<float>(1 + r + 100 * k); }

// The host collectives of case 1 and 2, each checking its result; "ok", or what is wrong.
std::string run_collective(const Communicator& g, const std::string& name, std::size_t n, int k) {
  const int size = g.size(), r = g.rank();
  float sum = 0;
  for (int q = 0; q < size; ++q) sum += value(q, k);
  const auto check = [&](const std::vector<float>& got, const std::function<float(std::size_t)>& want) {
    for (std::size_t i = 0; i < got.size(); ++i)
      if (got[i] != want(i))
        return "WRONG at " + std::to_string(i) + ": got " + std::to_string(got[i]) + " want " + std::to_string(want(i));
    return std::string("ok");
  };
  std::vector<float> mine(n, value(r, k));
  if (name == "all_reduce") {
    mpidist::all_reduce(g, std::span(mine));
    return check(mine, [&](std::size_t) { return sum; });
  }
  if (name == "broadcast") {
    mpidist::broadcast(g, std::span(mine), 0);
    return check(mine, [&](std::size_t) { return value(0, k); });
  }
  if (name == "all_gather") {
    std::vector<float> out(n * static_cast<std::size_t>(size));
    mpidist::all_gather(g, std::span<const float>(mine), std::span(out));
    return check(out, [&](std::size_t i) { return value(static_cast<int>(i / n), k); });
  }
  if (name == "reduce_scatter") {
    std::vector<float> in(n * static_cast<std::size_t>(size), value(r, k)), out(n);
    mpidist::reduce_scatter(g, std::span<const float>(in), std::span(out));
    return check(out, [&](std::size_t) { return sum; });
  }
  if (name == "reduce") {
    std::vector<float> out(n, -1.0f);
    mpidist::reduce(g, std::span<const float>(mine), std::span(out), mpidist::ReduceOp::Sum, 0);
    return check(out, [&](std::size_t) { return r == 0 ? sum : -1.0f; });
  }
  if (name == "all_to_all") {  // not in host_collectives: a case of its own (the leaders' path)
    std::vector<float> in(n * static_cast<std::size_t>(size), value(r, k)), out(n * static_cast<std::size_t>(size));
    mpidist::all_to_all(g, std::span<const float>(in), std::span(out));
    return check(out, [&](std::size_t i) { return value(static_cast<int>(i / n), k); });
  }
  if (name == "all_reduce_many") {
    std::vector<float> other(n / 2 + 1, value(r, k));
    std::vector<mpidist::BufferView> views{mpidist::BufferView(std::span(mine)), mpidist::BufferView(std::span(other))};
    mpidist::all_reduce_many(g, views);
    const std::string first = check(mine, [&](std::size_t) { return sum; });
    return first != "ok" ? first : check(other, [&](std::size_t) { return sum; });
  }
  throw std::invalid_argument("unknown collective " + name);
}

const std::vector<std::string> host_collectives{"all_reduce", "broadcast", "all_gather", "reduce_scatter", "reduce",
                                                "all_reduce_many"};

// One checked step: its result, or the Error it raised.
void step(const std::string& label, int k, const std::function<std::string()>& run) {
  try {
    say(label + " step " + std::to_string(k) + " " + run());
  } catch (const mpidist::Error& e) {
    say(label + " step " + std::to_string(k) + " error: " + e.what());
  } catch (const std::exception& e) {
    say(label + " step " + std::to_string(k) + " own exception: " + e.what());
  }
}

// Case 1: one call; the last rank is late; a small broadcast; a call the others time out of and
// catch; one more call. On a fresh group per collective and size, so each case starts in step.
void late_rank(double late_seconds, const std::string& only, std::size_t only_elements) {
  for (const std::size_t n : {std::size_t{4}, std::size_t{2} << 20}) {  // in-line, and 8 MiB (chunked)
    if (only_elements != 0 && n != only_elements) continue;
    for (const auto& name : only == "all" ? host_collectives : std::vector<std::string>{only}) {
      const Communicator g = mpidist::world().split(0, me());
      const std::string label = name + "/" + std::to_string(n);
      // The first call, with every rank present, is not what this case tests: under ASan on a
      // loaded machine an 8 MiB one can take longer than the short timeout the rest runs under.
      const auto timeout = g.timeout();
      g.set_timeout(std::chrono::seconds(60));
      step(label, 1, [&] { return run_collective(g, name, n, 1); });
      g.set_timeout(timeout);
      if (g.rank() == g.size() - 1) std::this_thread::sleep_for(std::chrono::duration<double>(late_seconds));
      step(label, 2, [&] {
        std::vector<float> small(1, value(g.rank(), 2));
        mpidist::broadcast(g, std::span(small), 0);
        return small[0] == value(0, 2) ? std::string("ok") : "WRONG got " + std::to_string(small[0]);
      });
      step(label, 3, [&] { return run_collective(g, name, n, 3); });
      step(label, 4, [&] { return run_collective(g, name, n, 4); });
    }
  }
}

// Case 2: set_timeout on `g` decides every wait; `late` seconds late on the last rank.
void timed_case(const Communicator& g, const std::string& label, double timeout, double late,
                const std::vector<std::string>& names) {
  g.set_timeout(std::chrono::duration<double>(timeout));
  int k = 10;
  const bool shorter = label.find("shorter") != std::string::npos;  // one call: it breaks the group
  for (const auto& name : names) {
    for (const std::size_t n : shorter ? std::vector<std::size_t>{4} : std::vector<std::size_t>{4, std::size_t{1} << 18}) {
      ++k;
      if (g.rank() == g.size() - 1) std::this_thread::sleep_for(std::chrono::duration<double>(late));
      const auto start = std::chrono::steady_clock::now();
      step(label + " " + name + "/" + std::to_string(n), k, [&] { return run_collective(g, name, n, k); });
      std::printf("probe: rank %d %s %s/%zu took %.1f s\n", me(), label.c_str(), name.c_str(), n,
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
  }
}

// Case 3: one rank's (or every rank's) own bad argument, caught; then the steps go on.
void local_error(bool everyone) {
  std::vector<float> in(2, 1.0f), out(everyone || me() == 1 ? 3 : 2);
  step("local", 1, [&] {
    mpidist::all_reduce(std::span<const float>(in), std::span(out));
    return std::string("ok");
  });
  // Every rank refusing call after call: a rank whose vote ends first goes on to refuse the next
  // while the others still wait in the last one's vote, which must not take it for a rank that
  // went on without them.
  if (everyone)
    for (int k = 1; k <= 3; ++k)
      step("again", k, [&] {
        mpidist::all_reduce(std::span<const float>(in), std::span(out));
        return std::string("ok");
      });
  for (int k = 2; k <= 5; ++k) step("local", k, [&] { return run_collective(mpidist::world(), "all_reduce", 4, k); });
}

// Case 4: one rank passes root 7 to one object broadcast and catches; then the steps go on.
void object_root() {
  for (int k = 1; k <= 4; ++k)
    step("object", k, [&] {
      const int root = k == 1 && me() == 1 ? 7 : 0;
      const std::string want = "step" + std::to_string(k) + "-rank0";
      const std::string got = mpidist::broadcast("step" + std::to_string(k) + "-rank" + std::to_string(me()), root);
      return got == want ? std::string("ok") : "WRONG got " + got + " want " + want;
    });
}

// Case 4b: the last rank passes root 7 to an object broadcast whose root finishes without it, then
// every rank all-reduces: the others' next call must not wait for the rank whose communicator broke.
void object_root_then_all_reduce() {
  const int bad = mpidist::world_size() - 1;
  step("object", 1, [&] {
    const std::string got = mpidist::broadcast(std::string("from-0"), me() == bad ? 7 : 0);
    return got == "from-0" ? std::string("ok") : "WRONG got " + got;
  });
  for (int k = 2; k <= 3; ++k) step("next", k, [&] { return run_collective(mpidist::world(), "all_reduce", 4, k); });
}

// Case 5: a caught Error every rank raised alike, then a call whose element types differ: the
// consistency checks must still report it.
void mismatch_after_error() {
  step("mismatch", 1, [&] {
    (void)mpidist::all_reduce(std::vector<int>(static_cast<std::size_t>(1 + me()), 1));  // lengths differ
    return std::string("no error");
  });
  step("mismatch", 2, [&] {
    if (me() == 0) {
      std::vector<float> f(4, 1.0f);
      mpidist::all_reduce(std::span(f));
      return "got " + std::to_string(f[0]);
    }
    std::vector<int> i(4, 1);
    mpidist::all_reduce(std::span(i));
    return "got " + std::to_string(i[0]);
  });
  mpidist::barrier();
}

// Case 6: rank 1 calls another family than the others, under MPIDIST_VALIDATE=1.
void families(const std::string& other) {
  step("families", 1, [&] {
    std::vector<float> data(4, 1.0f);
    if (me() != 1) {
      mpidist::all_reduce(std::span(data));
    } else if (other == "barrier") {
      mpidist::barrier();
    } else if (other == "object-broadcast") {
      (void)mpidist::broadcast(std::string("text"), 0);
    } else if (other == "all_reduce_many") {
      std::vector<mpidist::BufferView> views{mpidist::BufferView(std::span(data))};
      mpidist::all_reduce_many(views);
    } else if (other == "average") {
      std::map<std::string, mpidist::BufferView> named{{"w", mpidist::BufferView(std::span(data))}};
      mpidist::average(named);
    }
    return std::string("passed");
  });
  step("families", 2, [&] { return run_collective(mpidist::world(), "all_reduce", 4, 2); });
}

// Case 7: rank 0, which coordinates monitored_barrier, arrives late.
void monitored_late_coordinator(double late) {
  if (me() == 0) std::this_thread::sleep_for(std::chrono::duration<double>(late));
  step("monitored", 1, [&] {
    mpidist::monitored_barrier(2s);
    return std::string("passed");
  });
  mpidist::world().set_timeout(30s);
  mpidist::barrier();
  step("monitored", 2, [&] {
    mpidist::monitored_barrier(5s);
    return std::string("passed");
  });
}

// Case 8: rank 0 spends `inside` seconds in zero_first's block, or throws there.
void zero_first(const std::string& how, double inside) {
  step("zero_first", 1, [&] {
    mpidist::zero_first([&] {
      if (me() != 0) return;
      if (how == "throws") throw std::runtime_error("no dataset in /data/shards");
      std::this_thread::sleep_for(std::chrono::duration<double>(inside));
    });
    return std::string("passed");
  });
}

}  // namespace

int main(int argc, char** argv) {
  mpidist::Environment env(argc, argv);
  const std::string scenario = argc > 1 ? argv[1] : "";
  const double arg = argc > 2 ? std::atof(argv[2]) : 0.0;
  // The world keeps a long timeout: it only brackets the cases, which run on their own groups.
  if (scenario == "late" || scenario == "set-timeout") mpidist::world().set_timeout(60s);
  if (scenario == "late") {
    // ARGS: LATE [COLLECTIVE|all [ELEMENTS]]
    late_rank(arg, argc > 3 ? argv[3] : "all", argc > 4 ? std::strtoull(argv[4], nullptr, 10) : 0);
  } else if (scenario == "set-timeout") {
    // MPIDIST_TIMEOUT is short; set_timeout longer, zero and shorter decide instead. Each setting
    // on the world and on a split group; the shorter one breaks its group, so a fresh one each.
    // ARGS: LATE [COLLECTIVE|all [longer|shorter]]: one collective or all; only the settings that
    // let the late rank arrive, or only the shorter one (both by default).
    const bool all = argc <= 3 || std::string(argv[3]) == "all";
    const std::vector<std::string> names = all ? host_collectives : std::vector<std::string>{argv[3]};
    const std::string parts = argc > 4 ? argv[4] : "";
    const std::vector<std::string> first{names.front()};
    const double late = arg;
    if (parts != "shorter") {
      const Communicator g = mpidist::world().split(me() % 2 == 0 || mpidist::world_size() < 3 ? 0 : 1, me());
      timed_case(mpidist::world(), "world-longer", 4 * late, late, names);
      timed_case(mpidist::world(), "world-forever", 0, late, first);
      timed_case(g, "split-longer", 4 * late, late, first);
      timed_case(g, "split-forever", 0, late, names);
    }
    for (const auto& name : parts == "longer" ? std::vector<std::string>{} : names) {
      const Communicator fresh = mpidist::world().split(0, me());
      step("warm-up " + name, 10, [&] { return run_collective(fresh, name, 4, 10); });  // its segment is made
      timed_case(fresh, "split-shorter", late / 4, late, {name});
    }
  } else if (scenario == "local-error" || scenario == "local-error-everyone") {
    local_error(scenario == "local-error-everyone");
    // The ranks' Errors come at about the same time: Hydra ends every rank the moment the first
    // one's finalize() ends the job, so each lingers until the others have said theirs.
    std::this_thread::sleep_for(1.5s);
  } else if (scenario == "object-root") {
    object_root();
  } else if (scenario == "object-root-then-all-reduce") {
    // ARGS: [LINGER]: as local-error's, each says its Errors before one's finalize() ends the job
    object_root_then_all_reduce();
    std::this_thread::sleep_for(std::chrono::duration<double>(arg > 0 ? arg : 1.5));
  } else if (scenario == "mismatch-after-error") {
    mismatch_after_error();
  } else if (scenario == "families") {
    families(argc > 2 ? argv[2] : "");
  } else if (scenario == "monitored-late-coordinator") {
    monitored_late_coordinator(arg);
  } else if (scenario == "zero-first") {
    zero_first(argc > 3 ? argv[3] : "slow", arg);
  } else {
    std::fprintf(stderr, "after_error_probe: unknown scenario '%s'\n", scenario.c_str());
    return 2;
  }
  step("end", 0, [] {
    mpidist::world().set_timeout(60s);
    mpidist::barrier();
    return std::string("barrier");
  });
  say("done");
  return 0;
}
