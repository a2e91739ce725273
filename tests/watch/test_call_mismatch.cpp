// Which rank that returned from a call that broke on another rank has a wrong result
// (lib/watch/call_mismatch.hpp), on records made up here, without MPI.
#include <gtest/gtest.h>

#include <cstring>

#include "mpidist/tensor.hpp"
#include "watch/call_mismatch.hpp"

namespace {

using mpidist::detail::CallState;
using mpidist::detail::completed_wrongly;
using mpidist::detail::EntrySnapshot;
using mpidist::detail::receives_from;

EntrySnapshot call(const char* op, std::uint64_t count, int root = -1, CallState state = CallState::Completed,
                   std::uint64_t hash = 1) {
  EntrySnapshot e;
  e.valid = true;
  e.comm_key = 42;
  e.seq = 7;
  e.count = count;
  e.hash = hash;
  e.state = state;
  e.dtype = static_cast<int>(mpidist::DataType::Float32);
  e.root = root;
  std::strncpy(e.op, op, sizeof e.op - 1);
  return e;
}

EntrySnapshot failed(const char* op, std::uint64_t count, int root = -1, std::uint64_t hash = 2) {
  return call(op, count, root, CallState::Failed, hash);
}

TEST(ReceivesFrom, EveryMemberOfAnAllCallHearsFromEveryOther) {
  for (const char* op : {"all_reduce", "all_gather", "all_gather_v", "all_to_all", "reduce_scatter",
                         "reduce_and_broadcast", "all_reduce_async"})
    EXPECT_TRUE(receives_from(call(op, 4), 0, 2)) << op;
}

TEST(ReceivesFrom, ARootedCallFlowsFromOrToItsRoot) {
  for (const char* op : {"broadcast", "broadcast_object", "scatter", "broadcast_async"}) {
    EXPECT_TRUE(receives_from(call(op, 4, 1), 0, 1)) << op;   // a receiver, from the root
    EXPECT_FALSE(receives_from(call(op, 4, 1), 0, 2)) << op;  // not from another receiver
    EXPECT_FALSE(receives_from(call(op, 4, 1), 1, 0)) << op;  // the root receives nothing
  }
  for (const char* op : {"gather", "reduce"}) {
    EXPECT_TRUE(receives_from(call(op, 4, 2), 2, 0)) << op;   // the root, from a contributor
    EXPECT_FALSE(receives_from(call(op, 4, 2), 0, 2)) << op;  // a contributor receives nothing
    EXPECT_FALSE(receives_from(call(op, 4, 2), 0, 1)) << op;
  }
}

TEST(ReceivesFrom, CallsWithoutCollectiveDataCarryNone) {
  for (const char* op : {"barrier", "send", "recv", "finalize"}) EXPECT_FALSE(receives_from(call(op, 0), 0, 1)) << op;
}

TEST(CompletedWrongly, AReceiverOfDataFromACallMadeWithOtherCountsIsWrong) {
  EXPECT_TRUE(completed_wrongly(call("all_to_all", 3), 1, failed("all_to_all", 2), 0));
  EXPECT_TRUE(completed_wrongly(call("broadcast", 3, 0), 1, failed("broadcast", 2, 0), 0));  // its root's
}

TEST(CompletedWrongly, TheSameCallOrNoDataFromTheFailedRankIsRight) {
  // Made alike: the failure was elsewhere (a timeout, a lost peer), not a mismatch.
  EXPECT_FALSE(completed_wrongly(call("all_to_all", 2, -1, CallState::Completed, 2), 1, failed("all_to_all", 2), 0));
  // Hashes alike, descriptions not: the non-blocking form of the same call.
  EXPECT_FALSE(completed_wrongly(call("all_reduce_async", 4, -1, CallState::Completed, 2), 1, failed("all_reduce", 4), 0));
  // A broadcast root whose receiver refused: the root returned rightly.
  EXPECT_FALSE(completed_wrongly(call("broadcast", 3, 0), 0, failed("broadcast", 2, 0), 1));
  // A receiver whose root made the call as it did, beside another receiver that did not.
  EXPECT_FALSE(completed_wrongly(call("broadcast", 3, 0), 1, failed("broadcast", 2, 0), 2));
}

TEST(CompletedWrongly, OnlyACompletedCallAgainstAFailedOneOfTheSameNumber) {
  EXPECT_FALSE(completed_wrongly(call("all_to_all", 3), 1, call("all_to_all", 2, -1, CallState::Completed, 2), 0));
  EXPECT_FALSE(completed_wrongly(call("all_to_all", 3, -1, CallState::Started), 1, failed("all_to_all", 2), 0));
  auto later = failed("all_to_all", 2);
  later.seq = 8;
  EXPECT_FALSE(completed_wrongly(call("all_to_all", 3), 1, later, 0));
  auto gone = failed("all_to_all", 2);
  gone.valid = false;  // left the flight recorder
  EXPECT_FALSE(completed_wrongly(call("all_to_all", 3), 1, gone, 0));
}

}  // namespace
