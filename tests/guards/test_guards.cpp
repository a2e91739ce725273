// Main-process guards, ordering scopes and the logger, at 1-4 ranks.
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "mpi_test.hpp"
#include "mpidist/mpidist.hpp"

namespace {

using GuardsTest = mpidist_test::MpiTest;
using namespace std::chrono_literals;

// A file every rank can append to, named by rank 0 and removed by it at the end.
class SharedFile {
 public:
  SharedFile() {
    std::string name = "/tmp/mpidist-test-" + std::to_string(getpid()) + "-" + std::to_string(counter_++);
    int length = static_cast<int>(name.size());
    MPI_Bcast(&length, 1, MPI_INT, 0, mpidist::communicator());
    name.resize(static_cast<std::size_t>(length));
    MPI_Bcast(name.data(), length, MPI_CHAR, 0, mpidist::communicator());
    path_ = name;
    if (mpidist::is_main_process()) std::ofstream(path_, std::ios::trunc).flush();
    mpidist::barrier();
  }
  ~SharedFile() {
    mpidist::barrier();
    if (mpidist::is_main_process()) std::remove(path_.c_str());
  }
  void append(const std::string& line) const {
    std::ofstream(path_, std::ios::app) << line << '\n' << std::flush;
  }
  std::vector<std::string> lines() const {
    std::ifstream in(path_);
    std::vector<std::string> out;
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
  }
  bool exists() const { return access(path_.c_str(), F_OK) == 0; }

 private:
  static inline int counter_ = 0;
  std::string path_;
};

std::string me() { return std::to_string(mpidist::rank()); }

// One local main process a node (simulated nodes of 3 in guards-np4-nodes-of-3, real hosts).
TEST_F(GuardsTest, OneLocalMainProcessANode) {
  EXPECT_EQ(mpidist::is_local_main_process(), mpidist::local_rank() == 0);
  if (mpidist::is_main_process()) {
    EXPECT_TRUE(mpidist::is_local_main_process());
  }
  const int local_mains = mpidist::all_reduce(mpidist::is_local_main_process() ? 1 : 0);
  EXPECT_EQ(local_mains, mpidist::num_nodes());
}

TEST_F(GuardsTest, RunOnMainRunsFuncOnMainOnlyThenPostFuncOnOthers) {
  SharedFile file;
  mpidist::run_on_main([&] {
    std::this_thread::sleep_for(50ms);
    file.append("main");
  }, [&] {
    // Main finished before anyone runs post_func.
    const auto lines = file.lines();
    EXPECT_FALSE(lines.empty());
    if (!lines.empty()) {
      EXPECT_EQ(lines.front(), "main");
    }
    file.append("post " + me());
  });
  mpidist::barrier();
  const auto lines = file.lines();
  ASSERT_EQ(static_cast<int>(lines.size()), mpidist::world_size());  // main + (size-1) posts
  EXPECT_EQ(lines.front(), "main");
  for (const auto& line : lines) EXPECT_NE(line, "post 0");
}

TEST_F(GuardsTest, RunOnMainWithPostOnMain) {
  SharedFile file;
  mpidist::run_on_main([&] { file.append("main"); }, [&] { file.append("post " + me()); }, true);
  mpidist::barrier();
  EXPECT_EQ(static_cast<int>(file.lines().size()), mpidist::world_size() + 1);
}

TEST_F(GuardsTest, RunOnMainWithoutPostFunc) {
  int calls = 0;
  mpidist::run_on_main([&] { ++calls; });
  EXPECT_EQ(calls, mpidist::is_main_process() ? 1 : 0);
}

TEST_F(GuardsTest, ExceptionOnMainBecomesErrorEverywhere) {
  bool post_ran = false;
  try {
    mpidist::run_on_main([] { throw std::runtime_error("download failed"); }, [&] { post_ran = true; });
    ADD_FAILURE() << "run_on_main returned normally";
  } catch (const mpidist::Error& e) {
    EXPECT_EQ(e.operation(), "run_on_main");
    EXPECT_NE(e.detail().find("rank 0 failed"), std::string::npos) << e.what();
    EXPECT_NE(e.detail().find("download failed"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(post_ran);
  // The ranks are still in step: a collective after the failure works.
  mpidist::barrier();
}

TEST_F(GuardsTest, ExceptionInPostFuncOnLastRankReachesEveryone) {
  const int last = mpidist::world_size() - 1;
  try {
    mpidist::run_on_main([] {}, [&] {
      if (mpidist::rank() == last) throw std::runtime_error("bad shard");
    }, true);
    ADD_FAILURE() << "no Error";
  } catch (const mpidist::Error& e) {
    EXPECT_NE(e.detail().find("rank " + std::to_string(last) + " failed: bad shard"), std::string::npos) << e.what();
  }
}

TEST_F(GuardsTest, MainProcessOnlyReturnsOptional) {
  auto square = mpidist::main_process_only([](int x) { return x * x; });
  const auto result = square(7);
  EXPECT_EQ(result.has_value(), mpidist::is_main_process());
  if (result) {
    EXPECT_EQ(*result, 49);
  }
  int calls = 0;
  auto count = mpidist::main_process_only([&] { ++calls; });
  count();
  EXPECT_EQ(calls, mpidist::is_main_process() ? 1 : 0);
}

TEST_F(GuardsTest, MainProcessContextNestsAndSkipsBarriers) {
  EXPECT_EQ(mpidist::MainProcessContext::depth(), 0);
  if (mpidist::is_main_process()) {
    mpidist::MainProcessContext outer;
    {
      mpidist::MainProcessContext inner;
      EXPECT_EQ(mpidist::MainProcessContext::depth(), 2);
      mpidist::barrier();  // would deadlock if it reached MPI: the other ranks are not here
      mpidist::run_on_main([] {});
    }
    EXPECT_EQ(mpidist::MainProcessContext::depth(), 1);
    try {
      mpidist::MainProcessContext thrown_through;
      throw std::runtime_error("x");
    } catch (const std::runtime_error&) {
    }
    EXPECT_EQ(mpidist::MainProcessContext::depth(), 1);
  }
  EXPECT_EQ(mpidist::MainProcessContext::depth(), 0);
  mpidist::barrier();
}

TEST_F(GuardsTest, ZeroFirstOrdersTheBlock) {
  SharedFile file;
  {
    auto first = mpidist::zero_first();
    file.append("begin " + me());
    if (mpidist::is_main_process()) std::this_thread::sleep_for(100ms);
    file.append("end " + me());
  }
  mpidist::barrier();
  const auto lines = file.lines();
  ASSERT_EQ(static_cast<int>(lines.size()), 2 * mpidist::world_size());
  EXPECT_EQ(lines[0], "begin 0");
  EXPECT_EQ(lines[1], "end 0");
}

TEST_F(GuardsTest, ZeroFirstCallableReturnsOnEveryRank) {
  const int value = mpidist::zero_first([] { return mpidist::rank() + 10; });
  EXPECT_EQ(value, mpidist::rank() + 10);
}

TEST_F(GuardsTest, OneRankFirstWithLastRankAndLocal) {
  SharedFile file;
  const int last = mpidist::world_size() - 1;
  mpidist::one_rank_first(last, false, [&] {
    file.append("begin " + me());
    if (mpidist::rank() == last) std::this_thread::sleep_for(50ms);
  });
  mpidist::barrier();
  EXPECT_EQ(file.lines().front(), "begin " + std::to_string(last));
  // local = true: local rank 0 of every node goes first; on one node that is rank 0.
  EXPECT_EQ(mpidist::one_rank_first(0, true, [] { return 5; }), 5);
}

// ignite's `with idist.one_rank_first(rank, local):` as a scope, and the call form's defaults.
TEST_F(GuardsTest, OneRankFirstAsAScope) {
  SharedFile file;
  const int last = mpidist::world_size() - 1;
  {
    auto first = mpidist::one_rank_first(last);
    file.append("begin " + me());
    if (mpidist::rank() == last) std::this_thread::sleep_for(50ms);
  }
  mpidist::barrier();
  EXPECT_EQ(file.lines().front(), "begin " + std::to_string(last));
  {
    auto first = mpidist::one_rank_first();  // rank 0 of the world
  }
  const auto backwards = mpidist::world().split(0, -mpidist::rank());
  {
    auto first = mpidist::one_rank_first(backwards, 0, true);  // local rank 0 of the group on every node
  }
  EXPECT_EQ(mpidist::one_rank_first([] { return mpidist::rank() + 7; }), mpidist::rank() + 7);
  EXPECT_THROW(auto first = mpidist::one_rank_first(last + 1), mpidist::Error);
}

// local = true on uneven nodes (3 + 1): a local rank some node lacks would leave that node's ranks
// waiting for nobody, so it is the same Error on every rank, and the ranks stay in step.
TEST_F(GuardsTest, OneRankFirstLocalRankMustExistOnEveryNode) {
  std::map<int, int> ranks_on_node;
  for (const auto& placement : mpidist::topology().ranks) ++ranks_on_node[placement.node_rank];
  int smallest = mpidist::world_size();
  for (const auto& [node, count] : ranks_on_node) smallest = std::min(smallest, count);
  mpidist_test::expect_error([&] { auto first = mpidist::one_rank_first(smallest, true); },
                             {"one_rank_first", "local rank " + std::to_string(smallest) + " is missing on node",
                              "must exist on every node"});
  {
    auto first = mpidist::one_rank_first(smallest - 1, true);  // on every node
  }
  EXPECT_EQ(mpidist::all_reduce(1), mpidist::world_size());  // still in step
}

TEST_F(GuardsTest, BadTimeoutsAreErrorsNamingTheValue) {
  using namespace std::chrono_literals;
  mpidist_test::expect_error([] { mpidist::world().set_timeout(-5s); },
                             {"set_timeout", "timeout must be >= 0 s (0: no limit), got -5 s"});
  mpidist_test::expect_error([] { mpidist::world().set_timeout(std::chrono::duration<double>(std::nan(""))); },
                             {"set_timeout", "got nan s"});
  mpidist_test::expect_error([] { mpidist::monitored_barrier(-1500ms); },
                             {"monitored_barrier", "timeout must be > 0 s, got -1.5 s"});
  mpidist::monitored_barrier(30s);  // the world is still usable
}

TEST_F(GuardsTest, ZeroFirstFailureStopsTheOthers) {
  bool others_ran_block = false;
  try {
    auto first = mpidist::zero_first();
    if (mpidist::is_main_process()) throw std::runtime_error("corrupt cache");
    others_ran_block = true;
  } catch (const mpidist::Error& e) {
    EXPECT_FALSE(mpidist::is_main_process());
    EXPECT_NE(e.detail().find("rank 0 failed inside the block"), std::string::npos) << e.what();
  } catch (const std::runtime_error& e) {
    EXPECT_TRUE(mpidist::is_main_process()) << e.what();
  }
  EXPECT_FALSE(others_ran_block);
  mpidist::barrier();
}

TEST_F(GuardsTest, InvalidRanksAreErrorsOnEveryRank) {
  const int size = mpidist::world_size();
  EXPECT_THROW(mpidist::one_rank_first(size, false, [] {}), mpidist::Error);
  EXPECT_THROW(mpidist::one_rank_first(-1, false, [] {}), mpidist::Error);
  EXPECT_THROW(mpidist::one_rank_only(size, true), mpidist::Error);
  try {
    mpidist::OneRankFirst bad(size + 3);
  } catch (const mpidist::Error& e) {
    EXPECT_NE(std::string(e.what()).find("rank " + std::to_string(size + 3) + " out of range for world size " +
                                         std::to_string(size)),
              std::string::npos)
        << e.what();
  }
  mpidist::barrier();
}

TEST_F(GuardsTest, ZeroOnlyRunsOnRankZero) {
  const auto result = mpidist::zero_only([] { return std::string("report"); });
  EXPECT_EQ(result.has_value(), mpidist::is_main_process());
}

TEST_F(GuardsTest, OneRankOnlyWithoutBarrierDoesNotWait) {
  const int last = mpidist::world_size() - 1;
  auto slow = mpidist::one_rank_only(last, false)([] {
    std::this_thread::sleep_for(800ms);
    return 1;
  });
  const auto start = std::chrono::steady_clock::now();
  const auto result = slow();
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(result.has_value(), mpidist::rank() == last);
  if (mpidist::rank() != last) {
    EXPECT_LT(elapsed, 400ms);  // generous: 4 ranks may share 2 busy cores
  }
  mpidist::barrier();
}

TEST_F(GuardsTest, OneRankOnlyWithBarrierWaitsAndSharesFailure) {
  SharedFile file;
  const int last = mpidist::world_size() - 1;
  mpidist::one_rank_only(last, true)([&] {
    std::this_thread::sleep_for(50ms);
    file.append("done");
  })();
  EXPECT_EQ(file.lines().size(), 1u);  // every rank sees the work finished
  auto failing = mpidist::one_rank_only(last, true)([] { throw std::runtime_error("disk full"); });
  try {
    failing();
    ADD_FAILURE() << "no Error";
  } catch (const mpidist::Error& e) {
    EXPECT_NE(e.detail().find("disk full"), std::string::npos) << e.what();
  }
}

TEST_F(GuardsTest, LoggerIsRankPrefixedAndMainOnlyByDefault) {
  std::ostringstream main_only, everyone;
  const mpidist::Logger quiet("train", false, mpidist::LogLevel::Info, main_only);
  quiet.info("step ", 3, " loss ", 0.5);
  quiet.debug("dropped");
  const mpidist::Logger loud("train", true, mpidist::LogLevel::Warning, everyone);
  loud.info("dropped");
  loud.warning("slow rank");
  const std::string prefix = mpidist::rank_prefixed_message("");
  EXPECT_EQ(main_only.str(), mpidist::is_main_process() ? prefix + "INFO train: step 3 loss 0.5\n" : "");
  EXPECT_EQ(everyone.str(), prefix + "WARNING train: slow rank\n");
}

TEST_F(GuardsTest, LogLevelsFromTheEnvironmentAndAtRunTime) {
  const char* saved = std::getenv("MPIDIST_LOG_LEVEL");
  const std::string previous = saved ? saved : "";
  const std::pair<const char*, mpidist::LogLevel> cases[] = {
      {"debug", mpidist::LogLevel::Debug}, {"warning", mpidist::LogLevel::Warning},
      {"error", mpidist::LogLevel::Error}, {"off", mpidist::LogLevel::Off}, {"", mpidist::LogLevel::Info}};
  for (const auto& [name, level] : cases) {
    ::setenv("MPIDIST_LOG_LEVEL", name, 1);
    EXPECT_EQ(mpidist::log_level_from_env(), level) << name;
  }
  if (saved) ::setenv("MPIDIST_LOG_LEVEL", previous.c_str(), 1);
  else ::unsetenv("MPIDIST_LOG_LEVEL");

  std::ostringstream out;
  mpidist::Logger log("lv", true, mpidist::LogLevel::Error, out);
  EXPECT_FALSE(log.enabled(mpidist::LogLevel::Warning));
  log.set_level(mpidist::LogLevel::Debug);
  EXPECT_EQ(log.level(), mpidist::LogLevel::Debug);
  EXPECT_TRUE(log.enabled(mpidist::LogLevel::Debug));
  EXPECT_FALSE(log.enabled(mpidist::LogLevel::Off));  // Off is a threshold, never a message level
  log.debug("now visible");
  EXPECT_EQ(out.str(), mpidist::rank_prefixed_message("DEBUG lv: now visible\n"));
}

TEST_F(GuardsTest, ReduceOpNamesRoundTrip) {
  using mpidist::ReduceOp;
  for (auto op : {ReduceOp::Sum, ReduceOp::Product, ReduceOp::Min, ReduceOp::Max, ReduceOp::Avg, ReduceOp::And,
                  ReduceOp::Or})
    EXPECT_EQ(mpidist::reduce_op_from_string(mpidist::to_string(op)), op);
  EXPECT_EQ(mpidist::to_string(ReduceOp::Product), "prod");
  try {
    (void)mpidist::reduce_op_from_string("median");
    ADD_FAILURE() << "no Error for an unknown reduction";
  } catch (const mpidist::Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown reduction 'median'"), std::string::npos) << e.what();
  }
}

}  // namespace
