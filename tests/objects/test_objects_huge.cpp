// Payloads past INT_MAX bytes at 2 ranks: a > 2 GiB string broadcast (chunked MPI_Bcast), and a
// gather whose total passes INT_MAX (MPI_Gatherv in rounds). Registered alone as objects-huge-np2:
// it needs ~7 GB of memory and tens of seconds.
#include <algorithm>
#include <boost/serialization/string.hpp>
#include <climits>
#include <cstring>
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

}  // namespace
