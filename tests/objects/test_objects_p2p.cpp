// Objects between two ranks: send, recv (both forms), any_source, on the world and on a split group
// whose main rank is not world rank 0; another type is an Error on the receiver (its payload is
// discarded), and the pair goes on afterwards.
#include <boost/serialization/map.hpp>
#include <boost/serialization/string.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "mpi_test.hpp"
#include "mpidist/mpidist.hpp"

namespace {

using namespace mpidist_test;
using mpidist::Communicator;
using ObjectP2P = MpiTest;

Communicator reversed_rest() {
  const int me = mpidist::rank();
  if (mpidist::world_size() == 1) return mpidist::world();
  return mpidist::world().split(me == 0 ? Communicator::undefined : 7, -me);
}

std::map<std::string, int> table(int from) {
  std::map<std::string, int> m;
  for (int i = 0; i < 100; ++i) m["key" + std::to_string(i)] = from * 1000 + i;
  return m;
}

void pairs(const Communicator& comm) {
  const int me = comm.rank(), peer = me ^ 1;
  if (peer >= comm.size()) return;
  if (me % 2 == 0) {
    mpidist::send(comm, table(me), peer, 1);
    mpidist::send(comm, std::vector<double>(50000, me), peer, 2);
    mpidist::send(comm, me * 7, peer);
    mpidist::send(comm, std::string(100000, 'x'), peer, 3);
    using Table = std::map<std::string, int>;
    EXPECT_EQ(mpidist::recv<Table>(comm, peer, 4), table(peer));
  } else {
    std::map<std::string, int> m;
    const auto status = mpidist::recv(comm, peer, 1, m);
    EXPECT_EQ(status.source, peer);
    EXPECT_EQ(status.tag, 1);
    EXPECT_EQ(m, table(peer));
    EXPECT_EQ(mpidist::recv<std::vector<double>>(comm, peer, 2), std::vector<double>(50000, peer));
    EXPECT_EQ(mpidist::recv<int>(comm, peer), peer * 7);
    std::string text;
    mpidist::recv(comm, mpidist::any_source, mpidist::any_tag, text);
    EXPECT_EQ(text, std::string(100000, 'x'));
    mpidist::send(comm, table(me), peer, 4);
  }
}

TEST_F(ObjectP2P, SendRecvInPairs) {
  pairs(mpidist::world());
  const auto rest = reversed_rest();
  if (rest) pairs(rest);
  // World forms.
  if (mpidist::world_size() > 1 && mpidist::rank() < 2) {
    if (mpidist::rank() == 0) mpidist::send(std::string("hello"), 1, 9);
    else EXPECT_EQ(mpidist::recv<std::string>(0, 9), "hello");
  }
}

// sendrecv: a ring of values of different sizes (past any eager limit too) on the world and on a
// group whose ranks run backwards, to this rank itself in a world of one; a type that differs is
// an Error on the receiving rank naming both types, and the ring then goes on.
TEST_F(ObjectP2P, SendrecvInARing) {
  for (const Communicator& comm : {mpidist::world(), reversed_rest()}) {
    if (!comm) continue;
    const int me = comm.rank(), size = comm.size();
    const int next = (me + 1) % size, prev = (me + size - 1) % size;
    for (const std::size_t length : {std::size_t{1}, std::size_t{300000}}) {
      const std::string mine(length + static_cast<std::size_t>(me), static_cast<char>('a' + me));
      const std::string got = mpidist::sendrecv(comm, mine, next, prev, 2);
      EXPECT_EQ(got, std::string(length + static_cast<std::size_t>(prev), static_cast<char>('a' + prev)));
    }
    EXPECT_EQ(mpidist::sendrecv(comm, table(me), prev, next), table(next));  // the other way round
  }
  if (mpidist::world_size() == 1) {
    EXPECT_EQ(mpidist::sendrecv(std::vector<int>{1, 2, 3}, 0, 0), (std::vector<int>{1, 2, 3}));
    return;
  }
  const int me = mpidist::rank(), size = mpidist::world_size();
  const int next = (me + 1) % size, prev = (me + size - 1) % size;
  // Rank 0 sends (and expects) an int; the others a string.
  if (me == 0) {
    expect_error([&] { (void)mpidist::sendrecv(42, next, prev, 5); },
                 {"sendrecv", "rank " + std::to_string(prev) + " sent std::string where this rank expects int"});
  } else if (me == 1) {
    expect_error([&] { (void)mpidist::sendrecv(std::string("x"), next, prev, 5); },
                 {"sendrecv", "rank 0 sent int where this rank expects std::string", "called sendrecv with different types"});
  } else {
    EXPECT_EQ(mpidist::sendrecv(std::string("x"), next, prev, 5), "x");
  }
  EXPECT_EQ(mpidist::sendrecv(me, next, prev, 6), prev);  // the ring goes on
  expect_error([&] { (void)mpidist::sendrecv(me, size, prev); }, {"sendrecv", std::to_string(size)});
}

// proc_null: a chain that does not wrap around. The first rank receives from no one (a T{} from
// sendrecv, its value kept by recv), the last sends to no one.
TEST_F(ObjectP2P, ProcNullIsAPeerThatIsNoRank) {
  using mpidist::proc_null;
  for (const Communicator& comm : {mpidist::world(), reversed_rest()}) {
    if (!comm) continue;
    const int me = comm.rank(), size = comm.size();
    const int next = me + 1 < size ? me + 1 : proc_null, prev = me > 0 ? me - 1 : proc_null;
    const std::string mine(300000 + static_cast<std::size_t>(me), static_cast<char>('a' + me));
    const std::string got = mpidist::sendrecv(comm, mine, next, prev, 3);
    EXPECT_EQ(got, prev == proc_null ? std::string() : std::string(300000 + static_cast<std::size_t>(prev), static_cast<char>('a' + prev)));
    using Table = std::map<std::string, int>;
    EXPECT_EQ(mpidist::sendrecv(comm, table(me), prev, next), next == proc_null ? Table() : table(next));
    // Blocking forms along the chain: each rank receives from prev, then sends to next.
    std::vector<double> value{-1.0};
    const auto status = mpidist::recv(comm, prev, 4, value);
    EXPECT_EQ(status.source, prev);
    EXPECT_EQ(value, prev == proc_null ? std::vector<double>{-1.0} : std::vector<double>(3, prev));
    mpidist::send(comm, std::vector<double>(3, me), next, 4);
    EXPECT_EQ(mpidist::recv<int>(comm, proc_null), 0);
  }
}

TEST_F(ObjectP2P, AnotherTypeIsAnErrorAndThePairGoesOn) {
  const auto comm = mpidist::world();
  const int me = comm.rank(), peer = me ^ 1;
  if (peer >= comm.size()) return;
  if (me % 2 == 0) {
    mpidist::send(comm, 42, peer, 5);
    mpidist::send(comm, std::vector<char>{'a', 'b', 'c'}, peer, 6);
  } else {
    expect_error([&] { (void)mpidist::recv<std::string>(comm, peer, 5); },
                 {"recv", "sent int where this rank expects std::string"});
    expect_error([&] { (void)mpidist::recv<std::vector<std::int32_t>>(comm, peer, 6); },
                 {"recv", "sent std::vector<char> where this rank expects std::vector<int>"});
  }
  pairs(comm);
}

TEST_F(ObjectP2P, BadArgumentsAreLocalErrors) {
  const auto comm = mpidist::world();
  expect_error([&] { mpidist::send(comm, 1, comm.size()); }, {"send", "out of range"});
  expect_error([&] { mpidist::send(comm, 1, comm.rank()); }, {"send", "blocking send to this rank itself"});
  expect_error([&] { (void)mpidist::recv<int>(comm, 0, -3); }, {"recv", "tag -3 out of range"});
  {
    mpidist::MainProcessContext main_only;
    expect_error([&] { (void)mpidist::recv<int>(comm, 0, 0); }, {"recv", "MainProcessContext"});
  }
  pairs(comm);
}

void exchange_all(const Communicator& comm) {
  const int me = comm.rank(), n = comm.size();
  std::vector<std::string> values;
  for (int j = 0; j < n; ++j) values.push_back(std::string(static_cast<std::size_t>(j + me) * 10, 'a') + std::to_string(me) + ">" + std::to_string(j));
  const auto got = mpidist::all_to_all(comm, values);
  ASSERT_EQ(got.size(), static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i)
    EXPECT_EQ(got[static_cast<std::size_t>(i)], std::string(static_cast<std::size_t>(i + me) * 10, 'a') + std::to_string(i) + ">" + std::to_string(me));
  std::vector<std::map<std::string, int>> tables;
  for (int j = 0; j < n; ++j) tables.push_back(table(me * 10 + j));
  const auto got_tables = mpidist::all_to_all(comm, tables);
  for (int i = 0; i < n; ++i) EXPECT_EQ(got_tables[static_cast<std::size_t>(i)], table(i * 10 + me));
}

TEST_F(ObjectP2P, AllToAll) {
  exchange_all(mpidist::world());
  const auto rest = reversed_rest();
  if (rest) exchange_all(rest);
  // World form, plain values.
  std::vector<int> mine(static_cast<std::size_t>(mpidist::world_size()), mpidist::rank());
  const auto got = mpidist::all_to_all(mine);
  for (int i = 0; i < mpidist::world_size(); ++i) EXPECT_EQ(got[static_cast<std::size_t>(i)], i);
}

TEST_F(ObjectP2P, AllToAllErrorsOnEveryRank) {
  const auto comm = mpidist::world();
  const auto n = static_cast<std::size_t>(comm.size());
  expect_error([&] { (void)mpidist::all_to_all(comm, std::vector<int>(n + 1, 1)); },
               {"all_to_all", "values has " + std::to_string(n + 1) + " entries but the group has " + std::to_string(n)});
  if (n > 1) {
    // One rank's list is short: every rank learns it.
    expect_error([&] { (void)mpidist::all_to_all(comm, std::vector<int>(comm.rank() == 0 ? n - 1 : n, 1)); },
                 {"all_to_all", "rank 0 failed", "values has " + std::to_string(n - 1)});
    // Another type on rank 0: every rank sees a part of another type (with MPIDIST_VALIDATE on,
    // the ranks' agreement names both calls first).
    expect_error([&] {
      if (comm.rank() == 0) (void)mpidist::all_to_all(comm, std::vector<int>(n, 1));
      else (void)mpidist::all_to_all(comm, std::vector<std::string>(n, "x"));
    }, {"all_to_all", "int", "std::string"});
  }
  exchange_all(comm);  // the communicator is still usable
}

}  // namespace
