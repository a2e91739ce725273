// Communicators: making groups (split, new_group, new_subgroups, local, attach), their topology,
// names and ranks in the world, tensor collectives and guards on them, groups used alternately and
// interleaved with the world, collectives inside a MainProcessContext, and misuse. At 1-4 ranks; with
// MPIDIST_TEST_DEVICE=1 the tensors are device memory (each group gets its own NCCL communicator).
#include <mpi.h>

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "mpi_test.hpp"
#include "mpidist/mpidist.hpp"
#include "tensor_buffers.hpp"

namespace {

using namespace mpidist_test;
using mpidist::Communicator;
using mpidist::ReduceOp;
using Groups = MpiTest;

int me() { return mpidist::rank(); }
int size() { return mpidist::world_size(); }

// Sum over the group of `value_of(world rank)`, computed from the member list.
template <class F>
double sum_over(const std::vector<int>& world_ranks, F value_of) {
  double total = 0;
  for (const int r : world_ranks) total += value_of(r);
  return total;
}

// All-reduces (sum) this rank's world rank + 1 on `comm` and checks the result against `members`.
void expect_group_sum(const Communicator& comm, const std::vector<int>& members, std::size_t count = 33) {
  TestBuffer<float> buffer(std::vector<float>(count, static_cast<float>(me() + 1)));
  mpidist::all_reduce(comm, buffer.view());
  const float want = static_cast<float>(sum_over(members, [](int r) { return r + 1; }));
  for (const float got : buffer.read()) ASSERT_EQ(got, want) << comm.name();
}

TEST_F(Groups, WorldIsTheWholeJob) {
  const Communicator world = mpidist::world();
  ASSERT_TRUE(world);
  EXPECT_EQ(world.rank(), me());
  EXPECT_EQ(world.size(), size());
  EXPECT_EQ(world.local_rank(), mpidist::local_rank());
  EXPECT_EQ(world.local_size(), mpidist::local_size());
  EXPECT_EQ(world.node_rank(), mpidist::node_rank());
  EXPECT_EQ(world.num_nodes(), mpidist::num_nodes());
  EXPECT_EQ(world.is_main_process(), mpidist::is_main_process());
  EXPECT_EQ(world.name(), "world");
  EXPECT_EQ(world.native(), mpidist::communicator());
  EXPECT_TRUE(world == mpidist::world());
  std::vector<int> everyone(static_cast<std::size_t>(size()));
  std::iota(everyone.begin(), everyone.end(), 0);
  expect_group_sum(world, everyone);
}

// The data-parallel x tensor-parallel grid: at 4 ranks, rows {0,1}, {2,3} and columns {0,2}, {1,3}.
TEST_F(Groups, DataTimesTensorParallelGrid) {
  const int width = size() >= 4 ? 2 : 1;
  const Communicator row = mpidist::world().split(me() / width, me());
  const Communicator column = mpidist::world().split(me() % width, me());
  std::vector<int> row_members, column_members;
  for (int r = 0; r < size(); ++r) {
    if (r / width == me() / width) row_members.push_back(r);
    if (r % width == me() % width) column_members.push_back(r);
  }
  EXPECT_EQ(row.size(), static_cast<int>(row_members.size()));
  EXPECT_EQ(column.size(), static_cast<int>(column_members.size()));
  EXPECT_EQ(row.rank(), static_cast<int>(std::find(row_members.begin(), row_members.end(), me()) - row_members.begin()));
  EXPECT_EQ(row.name(), "world/split(color " + std::to_string(me() / width) + ")");
  expect_group_sum(row, row_members);
  expect_group_sum(column, column_members);
  // Avg over the column of the row sums: every rank can check it.
  TestBuffer<double> value(std::vector<double>(5, static_cast<double>(me())));
  mpidist::all_reduce(row, value.view(), ReduceOp::Sum);
  mpidist::all_reduce(column, value.view(), ReduceOp::Avg);
  double want = 0;
  for (const int c : column_members)
    for (int r = 0; r < size(); ++r)
      if (r / width == c / width) want += r;
  want /= static_cast<double>(column_members.size());
  for (const double got : value.read()) EXPECT_DOUBLE_EQ(got, want);
}

TEST_F(Groups, NewGroupOfEvenRanksLeavesTheOthersNull) {
  std::vector<int> evens;
  for (int r = 0; r < size(); r += 2) evens.push_back(r);
  const Communicator group = mpidist::new_group(evens);
  EXPECT_EQ(static_cast<bool>(group), me() % 2 == 0);
  if (group) {
    EXPECT_EQ(group.size(), static_cast<int>(evens.size()));
    EXPECT_EQ(group.rank(), me() / 2);
    std::string listed = "group{";
    for (std::size_t i = 0; i < evens.size(); ++i) listed += (i ? "," : "") + std::to_string(evens[i]);
    EXPECT_EQ(group.name(), listed + "}");
    expect_group_sum(group, evens);
    mpidist::barrier(group);
    group.barrier();  // Boost.MPI's spelling
  }
  mpidist::world().barrier();
}

TEST_F(Groups, NewGroupFromAnInitializerListOrderedByWorldRank) {
  if (size() < 3) GTEST_SKIP() << "needs three ranks";
  const Communicator group = mpidist::new_group({2, 0});  // members are ordered by world rank
  ASSERT_EQ(static_cast<bool>(group), me() == 0 || me() == 2);
  if (group) {
    EXPECT_EQ(group.rank(), me() == 0 ? 0 : 1);
    EXPECT_EQ(group.name(), "group{0,2}");
    expect_group_sum(group, {0, 2});
  }
}

TEST_F(Groups, BadMemberListsFailOnEveryRank) {
  expect_error([] { (void)mpidist::new_group({0, 0}); }, {"new_group", "rank 0 is listed twice"});
  expect_error([] { (void)mpidist::new_group({size()}); },
               {"new_group", "rank " + std::to_string(size()) + " out of range for world size"});
  expect_error([] { (void)mpidist::new_group({-1}); }, {"new_group", "rank -1 out of range"});
  expect_error([] { (void)mpidist::new_group(std::vector<int>{}); }, {"new_group", "at least one rank"});
  if (size() > 1)  // ranks that pass different lists all fail instead of splitting inconsistently
    expect_error([] { (void)mpidist::new_group({me() == 0 ? 0 : 1}); }, {"new_group", "different member lists"});
  mpidist::barrier();  // still in step
}

TEST_F(Groups, NewSubgroupsOfConsecutiveRanks) {
  for (int n = 1; n <= size(); ++n) {
    if (size() % n != 0) {
      expect_error([&] { (void)mpidist::new_subgroups(n); }, {"new_subgroups", "must be positive and divide"});
      continue;
    }
    const Communicator group = mpidist::new_subgroups(n);
    ASSERT_TRUE(group);
    EXPECT_EQ(group.size(), n);
    EXPECT_EQ(group.rank(), me() % n);
    std::vector<int> members;
    for (int r = me() / n * n; r < me() / n * n + n; ++r) members.push_back(r);
    expect_group_sum(group, members);
  }
  expect_error([] { (void)mpidist::new_subgroups(0); }, {"new_subgroups", "group size 0"});
}

TEST_F(Groups, SplitWithUndefinedColorAndKeysThatReorder) {
  // Rank 0 stays out; the others form one group ordered by descending world rank.
  const Communicator rest = mpidist::world().split(me() == 0 ? Communicator::undefined : 7, -me());
  ASSERT_EQ(static_cast<bool>(rest), me() != 0);
  if (rest) {
    EXPECT_EQ(rest.size(), size() - 1);
    EXPECT_EQ(rest.rank(), size() - 1 - me());
    EXPECT_EQ(rest.name(), "world/split(color 7)");
    std::vector<int> members;
    for (int r = 1; r < size(); ++r) members.push_back(r);
    expect_group_sum(rest, members);
    // A split of a split names its whole path.
    const Communicator inner = rest.split(0);
    EXPECT_EQ(inner.name(), "world/split(color 7)/split(color 0)");
    expect_group_sum(inner, members);
  }
  expect_error([] { (void)mpidist::world().split(-5); }, {"split", "color -5"});
}

TEST_F(Groups, LocalIsThisNodesRanksInsideTheGroup) {
  const Communicator node = mpidist::world().local();
  EXPECT_EQ(node.size(), mpidist::local_size());
  EXPECT_EQ(node.rank(), mpidist::local_rank());
  EXPECT_EQ(node.num_nodes(), 1);
  EXPECT_EQ(node.name(), "world/local(node " + std::to_string(mpidist::node_rank()) + ")");
  std::vector<int> members;
  for (const auto& placement : mpidist::topology().ranks)
    if (placement.node_rank == mpidist::node_rank()) members.push_back(placement.rank);
  expect_group_sum(node, members);
}

// With MPIDIST_RANKS_PER_NODE=2 at 4 ranks the columns {0,2}, {1,3} span two nodes of one rank each.
TEST_F(Groups, TopologyIsComputedInsideTheGroup) {
  const Communicator parity = mpidist::world().split(me() % 2, me());
  std::vector<int> nodes;  // world node of every member, in group order
  for (int r = me() % 2; r < size(); r += 2) nodes.push_back(mpidist::topology().ranks[static_cast<std::size_t>(r)].node_rank);
  const int mine = mpidist::node_rank();
  EXPECT_EQ(parity.local_size(), static_cast<int>(std::count(nodes.begin(), nodes.end(), mine)));
  std::vector<int> distinct = nodes;
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  EXPECT_EQ(parity.num_nodes(), static_cast<int>(distinct.size()));
  EXPECT_EQ(parity.node_rank(), static_cast<int>(std::find(distinct.begin(), distinct.end(), mine) - distinct.begin()));
  int before = 0;  // members on my node ahead of me
  for (int r = me() % 2; r < me(); r += 2) before += mpidist::topology().ranks[static_cast<std::size_t>(r)].node_rank == mine;
  EXPECT_EQ(parity.local_rank(), before);
}

TEST_F(Groups, TwoGroupsAlternatelyAndInterleavedWithTheWorld) {
  const Communicator halves = mpidist::world().split(me() < (size() + 1) / 2 ? 0 : 1, me());
  const Communicator parity = mpidist::world().split(me() % 2, me());
  std::vector<int> half_members, parity_members, everyone;
  for (int r = 0; r < size(); ++r) {
    if ((r < (size() + 1) / 2) == (me() < (size() + 1) / 2)) half_members.push_back(r);
    if (r % 2 == me() % 2) parity_members.push_back(r);
    everyone.push_back(r);
  }
  for (int step = 0; step < 5; ++step) {
    expect_group_sum(halves, half_members, 7 + step);
    expect_group_sum(mpidist::world(), everyone, 3);
    expect_group_sum(parity, parity_members, 1000 + step);
    TestBuffer<int> root_value(std::vector<int>(4, me() * 10 + step));
    const int root = parity.size() - 1;  // not 0 when the group has two ranks
    mpidist::broadcast(parity, root_value.view(), root);
    for (const int got : root_value.read()) ASSERT_EQ(got, parity_members[static_cast<std::size_t>(root)] * 10 + step);
  }
}

TEST_F(Groups, EveryTensorCollectiveOnAGroupWithRootNotZero) {
  const Communicator group = mpidist::world().split(0, size() - 1 - me());  // reversed: world rank size-1 is group rank 0
  const int n = group.size(), r = group.rank();
  TestBuffer<double> in(std::vector<double>(3, static_cast<double>(r + 1)));
  TestBuffer<double> gathered(std::vector<double>(static_cast<std::size_t>(3 * n), -1.0));
  mpidist::all_gather(group, in.view(), gathered.view());
  const auto all = gathered.read();
  for (int k = 0; k < n; ++k) EXPECT_EQ(all[static_cast<std::size_t>(3 * k)], k + 1.0);
  TestBuffer<double> block(std::vector<double>(3, -1.0));
  mpidist::reduce_scatter(group, gathered.view(), block.view(), ReduceOp::Max);
  for (const double got : block.read()) EXPECT_EQ(got, r + 1.0);
  const int root = n - 1;
  TestBuffer<double> total(std::vector<double>(3, -1.0));
  mpidist::reduce(group, in.view(), total.view(), ReduceOp::Sum, root);
  if (r == root) {
    for (const double got : total.read()) EXPECT_EQ(got, n * (n + 1) / 2.0);
  }
  std::vector<float> host(4, static_cast<float>(r));
  TestBuffer<float> spanned(host);
  mpidist::average(group, spanned.view());
  for (const float got : spanned.read()) EXPECT_FLOAT_EQ(got, (n - 1) / 2.0f);
  expect_error([&] { mpidist::broadcast(group, in.view(), n); },
               {"broadcast on world/split(color 0)", "root " + std::to_string(n) + " out of range"});
}

TEST_F(Groups, AverageOfAMapOfSpansOnAGroup) {
  const Communicator group = mpidist::world().split(me() % 2, me());
  std::vector<float> loss(3, static_cast<float>(group.rank()));
  std::vector<double> accuracy(2, 1.0);
  std::map<std::string, std::span<float>> floats{{"loss", std::span(loss)}};
  mpidist::average(group, floats);
  for (const float got : loss) EXPECT_FLOAT_EQ(got, (group.size() - 1) / 2.0f);
  std::map<std::string, mpidist::BufferView> views{{"accuracy", std::span(accuracy)}};
  mpidist::average(group, views);
  EXPECT_DOUBLE_EQ(accuracy[0], 1.0);
  mpidist::average(floats);  // the world form takes a map of spans too
}

TEST_F(Groups, GuardsOnAGroupWhoseMainIsWorldRankTwo) {
  if (size() < 3) GTEST_SKIP() << "needs three ranks";
  // Keys rotate the world so that world rank 2 leads.
  const Communicator rotated = mpidist::world().split(0, (me() - 2 + size()) % size());
  EXPECT_EQ(rotated.is_main_process(), me() == 2);
  int ran = 0;
  mpidist::run_on_main(rotated, [&] { ran = me(); }, [&] { ran = -1; });
  EXPECT_EQ(ran, me() == 2 ? 2 : -1);
  std::vector<int> order;
  {
    auto first = mpidist::zero_first(rotated);
    order.push_back(me());
  }
  EXPECT_EQ(order.size(), 1u);
  const auto result = mpidist::zero_first(rotated, [] { return me() * 2; });
  EXPECT_EQ(result, me() * 2);
  const auto only = mpidist::main_process_only(rotated, [] { return 42; })();
  EXPECT_EQ(only.has_value(), me() == 2);
  const auto decorated = mpidist::one_rank_only(rotated, 1, true)([] { return me(); })();
  EXPECT_EQ(decorated.has_value(), me() == 3 % size());
  EXPECT_EQ(mpidist::one_rank_first(rotated, 1, false, [] { return 5; }), 5);
  // A failure on the group's main is an Error on every member.
  expect_error([&] { mpidist::run_on_main(rotated, [] { throw std::runtime_error("no disk on world rank 2"); }); },
               {"run_on_main", "rank 0 failed", "no disk on world rank 2"});
  expect_error([&] { mpidist::OneRankFirst bad(rotated, size()); },
               {"one_rank_first", "rank " + std::to_string(size()) + " out of range"});
  mpidist::barrier(rotated);
}

TEST_F(Groups, ShowConfigOnAGroupPrintsItsRanks) {
  const Communicator parity = mpidist::world().split(me() % 2, me());
  std::ostringstream out;
  mpidist::show_config(parity, out, mpidist::ConfigFormat::Json);
  const auto reports = mpidist::job_config(parity);
  EXPECT_EQ(static_cast<int>(reports.size()), parity.size());
  for (const auto& report : reports) EXPECT_EQ(report.rank % 2, me() % 2);
  EXPECT_EQ(out.str().empty(), !parity.is_main_process());
}

TEST_F(Groups, AttachedCommunicatorIsDuplicatedAndNeverFreed) {
  MPI_Comm mine = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, me() % 2, -me(), &mine);
  {
    const Communicator attached = Communicator::attach(mine);
    EXPECT_NE(attached.native(), mine);  // a duplicate: mpidist's traffic never meets the application's
    int rank_in_mine = 0;
    MPI_Comm_rank(mine, &rank_in_mine);
    EXPECT_EQ(attached.rank(), rank_in_mine);
    EXPECT_EQ(attached.name().rfind("attached{", 0), 0u) << attached.name();
    std::vector<int> members;
    for (int r = size() - 1; r >= 0; --r)
      if (r % 2 == me() % 2) members.push_back(r);
    expect_group_sum(attached, members);
  }
  // The handle is gone; the application's communicator still works.
  int value = 1, total = 0;
  ASSERT_EQ(MPI_Allreduce(&value, &total, 1, MPI_INT, MPI_SUM, mine), MPI_SUCCESS);
  MPI_Comm_free(&mine);
  expect_error([] { (void)Communicator::attach(MPI_COMM_NULL); }, {"attach", "MPI_COMM_NULL"});
}

// Group ranks and world ranks, both ways (torch's get_global_rank, get_group_rank,
// get_process_group_ranks): the world, a split that reverses the order and leaves rank 0 out, a
// new_group of the odd ranks, this node's ranks; out of range and non-members are Errors naming them.
TEST_F(Groups, TranslatesRanksBetweenTheGroupAndTheWorld) {
  const Communicator world = mpidist::world();
  std::vector<int> everyone(static_cast<std::size_t>(size()));
  std::iota(everyone.begin(), everyone.end(), 0);
  EXPECT_EQ(world.world_ranks(), everyone);
  EXPECT_EQ(mpidist::get_process_group_ranks(world), everyone);
  for (int r = 0; r < size(); ++r) {
    EXPECT_EQ(world.world_rank(r), r);
    EXPECT_EQ(mpidist::get_group_rank(world, r), r);
  }
  const Communicator backwards = world.split(me() == 0 && size() > 1 ? Communicator::undefined : 0, -me());
  if (backwards) {
    std::vector<int> members;
    for (int r = size() - 1; r >= (size() > 1 ? 1 : 0); --r) members.push_back(r);
    EXPECT_EQ(backwards.world_ranks(), members);
    for (int g = 0; g < backwards.size(); ++g) {
      EXPECT_EQ(mpidist::get_global_rank(backwards, g), members[static_cast<std::size_t>(g)]);
      EXPECT_EQ(backwards.group_rank(backwards.world_rank(g)), g);
    }
    EXPECT_EQ(backwards.world_rank(backwards.rank()), me());
    EXPECT_EQ(backwards.group_rank(me()), backwards.rank());
    if (size() > 1)
      expect_error([&] { (void)backwards.group_rank(0); },
                   {"Communicator::group_rank", "world rank 0 is no member", "world/split(color 0)"});
  }
  std::vector<int> odd;
  for (int r = 1; r < size(); r += 2) odd.push_back(r);
  if (!odd.empty()) {
    const Communicator odds = mpidist::new_group(odd);
    if (odds) {
      EXPECT_EQ(odds.world_ranks(), odd);
      EXPECT_EQ(odds.world_rank(odds.size() - 1), odd.back());
      EXPECT_EQ(odds.group_rank(odd.front()), 0);
    }
  }
  const Communicator node = world.local();
  EXPECT_EQ(node.world_rank(node.rank()), me());
  EXPECT_EQ(static_cast<int>(node.world_ranks().size()), node.size());
  expect_error([&] { (void)world.world_rank(size()); },
               {"Communicator::world_rank", "rank " + std::to_string(size()) + " is out of range", "world"});
  expect_error([&] { (void)world.world_rank(-1); }, {"Communicator::world_rank", "rank -1"});
  expect_error([&] { (void)world.group_rank(size() + 3); }, {"Communicator::group_rank", std::to_string(size() + 3)});
  expect_error([] { (void)Communicator().world_ranks(); }, {"Communicator::world_ranks", "null Communicator"});
}

TEST_F(Groups, NullCommunicatorIsAnErrorEverywhere) {
  const Communicator none;
  EXPECT_FALSE(none);
  std::vector<float> values(2, 1.0f);
  expect_error([&] { mpidist::all_reduce(none, std::span(values)); }, {"all_reduce", "null Communicator"});
  expect_error([&] { mpidist::barrier(none); }, {"barrier", "null Communicator"});
  expect_error([&] { none.barrier(); }, {"barrier", "null Communicator"});
  expect_error([&] { (void)none.rank(); }, {"Communicator::rank", "null Communicator"});
  expect_error([&] { (void)none.split(0); }, {"Communicator::split", "null Communicator"});
  expect_error([&] { mpidist::run_on_main(none, [] {}); }, {"run_on_main", "null Communicator"});
  expect_error([&] { (void)mpidist::zero_first(none); }, {"one_rank_first", "null Communicator"});
  std::ostringstream out;
  expect_error([&] { mpidist::show_config(none, out); }, {"job_config", "null Communicator"});
}

// Inside a MainProcessContext only this rank runs: every collective acts as in a group of one.
TEST_F(Groups, TensorCollectivesInsideAMainProcessContextAreLocal) {
  if (!mpidist::is_main_process()) return;  // the others are not calling: that is the point
  mpidist::MainProcessContext main_only;
  TestBuffer<float> values(std::vector<float>{1.5f, -2.0f, 3.0f});
  mpidist::all_reduce(values.view(), ReduceOp::Sum);
  mpidist::average(values.view());
  mpidist::all_reduce(mpidist::world(), values.view(), ReduceOp::Product);
  EXPECT_EQ(values.read(), (std::vector<float>{1.5f, -2.0f, 3.0f}));
  mpidist::broadcast(values.view(), 0);
  TestBuffer<float> gathered(std::vector<float>(3, 0.0f));
  mpidist::all_gather(values.view(), gathered.view());  // one block
  EXPECT_EQ(gathered.read(), values.read());
  TestBuffer<float> scattered(std::vector<float>(3, 0.0f));
  mpidist::reduce_scatter(gathered.view(), scattered.view(), ReduceOp::Max);
  EXPECT_EQ(scattered.read(), values.read());
  TestBuffer<float> reduced(std::vector<float>(3, 0.0f));
  mpidist::reduce(values.view(), reduced.view(), ReduceOp::Min, 0);
  EXPECT_EQ(reduced.read(), values.read());
  expect_error([&] { mpidist::broadcast(values.view(), 1); }, {"broadcast", "root 1 out of range", "MainProcessContext"});
  TestBuffer<float> wide(std::vector<float>(6, 0.0f));
  expect_error([&] { mpidist::all_gather(values.view(), wide.view()); }, {"all_gather", "out has 6 elements but must have 3"});
}

// speechbrain runs run_on_main's function alone on the main rank; collectives in it stay local and
// never meet the guard's own synchronization (a mismatch, a truncation or a hang before).
TEST_F(Groups, CollectivesInsideRunOnMainStayLocal) {
  std::vector<float> big(1 << 18, 1.0f);  // 1 MiB: large enough to have crashed MPI before
  std::vector<float> seen;
  mpidist::run_on_main([&] {
    mpidist::all_reduce(std::span(big), ReduceOp::Sum);
    mpidist::barrier();
    const int value = mpidist::broadcast(7, 0);
    seen.assign(big.begin(), big.begin() + 2);
    seen.push_back(static_cast<float>(value));
  });
  if (mpidist::is_main_process()) EXPECT_EQ(seen, (std::vector<float>{1.0f, 1.0f, 7.0f}));
  else EXPECT_TRUE(seen.empty());
  // And the ranks are still in step.
  mpidist::all_reduce(std::span(big).first(4), ReduceOp::Sum);
  EXPECT_EQ(big[0], static_cast<float>(size()));
}

TEST_F(Groups, ErrorsNameTheCommunicatorAndTheHost) {
  const Communicator parity = mpidist::world().split(me() % 2, me());
  std::vector<float> in(2), out(3);
  try {
    mpidist::all_reduce(parity, std::span(in), std::span(out));
    ADD_FAILURE() << "mismatched counts accepted";
  } catch (const mpidist::Error& e) {
    EXPECT_EQ(e.communicator(), parity.name());
    EXPECT_EQ(e.operation(), "all_reduce");
    const std::string prefix = "mpidist: [rank " + std::to_string(me()) + "/" + std::to_string(size()) + " on " +
                               mpidist::hostname() + "] all_reduce on " + parity.name() + ": ";
    EXPECT_EQ(std::string(e.what()).rfind(prefix, 0), 0u) << e.what();
  }
}

TEST_F(Groups, ManyGroupsComeAndGo) {
  // Groups are freed with their last handle; making and dropping many leaks no communicator.
  for (int i = 0; i < 200; ++i) {
    const Communicator group = mpidist::world().split(me() % 2, me());
    if (i % 50 == 0) expect_group_sum(group, [&] {
        std::vector<int> members;
        for (int r = me() % 2; r < size(); r += 2) members.push_back(r);
        return members;
      }());
  }
  mpidist::barrier();
}

}  // namespace
