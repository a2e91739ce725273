// Payloads past INT_MAX bytes at 2 ranks: a > 2 GiB string broadcast (chunked MPI_Bcast), a
// gather whose total passes INT_MAX (MPI_Gatherv in rounds), and point-to-point past INT_MAX
// elements and bytes (a tensor send and an object send, both in pieces). Registered alone as
// objects-huge-np2: it needs ~8 GB of memory and tens of seconds.
#include <algorithm>
#include <boost/serialization/string.hpp>
#include <climits>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>

#include "mpi_test.hpp"
#include "mpidist/mpidist.hpp"

namespace {

using ObjectsHugeTest = mpidist_test::MpiTest;

// A 251-byte block (prime, so it never lines up with a chunk boundary) repeated; fast to write and
// to check with memcpy/memcmp.
std::string block(int seed) {
  std::string b(251, '\0');
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<char>((i * 131 + static_cast<std::size_t>(seed)) % 251);
  return b;
}

std::string make_text(std::size_t length, int seed) {
  const std::string b = block(seed);
  std::string text(length, '\0');
  for (std::size_t at = 0; at < length; at += b.size())
    std::memcpy(&text[at], b.data(), std::min(b.size(), length - at));
  return text;
}

// The start of the first block where `text` departs from make_text(text.size(), seed), or npos.
std::size_t first_difference(const std::string& text, int seed) {
  const std::string b = block(seed);
  for (std::size_t at = 0; at < text.size(); at += b.size())
    if (std::memcmp(&text[at], b.data(), std::min(b.size(), text.size() - at)) != 0) return at;
  return std::string::npos;
}

TEST_F(ObjectsHugeTest, BroadcastOfAStringPastTwoGiB) {
  const std::size_t length = static_cast<std::size_t>(INT_MAX) + 4099;  // not a multiple of anything
  const int root = mpidist::world_size() - 1;
  std::string result;
  {
    const std::string text = mpidist::rank() == root ? make_text(length, 7) : std::string();
    result = mpidist::broadcast(text, root);
  }
  ASSERT_EQ(result.size(), length);
  EXPECT_EQ(first_difference(result, 7), std::string::npos);
}

TEST_F(ObjectsHugeTest, GatherPastTwoGiBInTotal) {
  const std::size_t length = (std::size_t{1} << 30) + 100 + static_cast<std::size_t>(mpidist::rank());
  const int root = mpidist::world_size() - 1;
  const auto texts = mpidist::gather(make_text(length, mpidist::rank()), root);
  ASSERT_EQ(texts.has_value(), mpidist::rank() == root);
  if (texts) {
    for (int r = 0; r < mpidist::world_size(); ++r) {
      const auto& text = (*texts)[static_cast<std::size_t>(r)];
      EXPECT_EQ(text.size(), (std::size_t{1} << 30) + 100 + static_cast<std::size_t>(r));
      EXPECT_EQ(first_difference(text, r), std::string::npos) << "rank " << r;
    }
  }
}

// A tensor of INT_MAX + 4099 bytes, one byte an element: past INT_MAX in both, so a send must go
// in pieces, and the receiver's Status and every byte must come out whole. Root ≠ 0: the last
// rank sends to rank 0.
TEST_F(ObjectsHugeTest, TensorSendPastTwoGiB) {
  if (mpidist::world_size() < 2) GTEST_SKIP() << "needs two ranks";
  const std::size_t length = static_cast<std::size_t>(INT_MAX) + 4099;
  const int sender = mpidist::world_size() - 1;
  if (mpidist::rank() == sender) {
    std::string text = make_text(length, 3);
    mpidist::send(std::span(reinterpret_cast<std::uint8_t*>(text.data()), text.size()), 0, 5);
  } else if (mpidist::rank() == 0) {
    std::string text(length, '\0');
    const mpidist::Status status = mpidist::recv(std::span(reinterpret_cast<std::uint8_t*>(text.data()), text.size()),
                                                 sender, 5);
    EXPECT_EQ(status.source, sender);
    EXPECT_EQ(status.tag, 5);
    EXPECT_EQ(first_difference(text, 3), std::string::npos);
  }
}

// The same size as an object: a std::string sent with send and received with recv<T>.
TEST_F(ObjectsHugeTest, ObjectSendPastTwoGiB) {
  if (mpidist::world_size() < 2) GTEST_SKIP() << "needs two ranks";
  const std::size_t length = static_cast<std::size_t>(INT_MAX) + 4099;
  const int sender = mpidist::world_size() - 1;
  if (mpidist::rank() == sender) {
    mpidist::send(make_text(length, 9), 0, 6);
  } else if (mpidist::rank() == 0) {
    const auto text = mpidist::recv<std::string>(sender, 6);
    ASSERT_EQ(text.size(), length);
    EXPECT_EQ(first_difference(text, 9), std::string::npos);
  }
}

}  // namespace
