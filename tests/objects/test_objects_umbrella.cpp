// Object collectives (objects.hpp) and tensor collectives (collectives.hpp) side by side through
// the umbrella header: same names, no ambiguity, each call reaching its own family.
#include <boost/serialization/string.hpp>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "mpi_test.hpp"
#include "mpidist/mpidist.hpp"

namespace {

using ObjectsUmbrellaTest = mpidist_test::MpiTest;

// The object templates refuse tensor views, so overload resolution never weighs them there.
static_assert(!mpidist::detail::ObjectValue<mpidist::BufferView>);
static_assert(!mpidist::detail::ObjectValue<std::span<float>>);
static_assert(!mpidist::detail::ObjectValue<std::span<const double, 4>>);
static_assert(mpidist::detail::ObjectValue<std::vector<float>>);
static_assert(!mpidist::detail::Reducible<std::span<float>>);
static_assert(!mpidist::detail::Reducible<mpidist::BufferView>);
// Objects come back by value; tensors are reduced in place.
static_assert(std::is_same_v<decltype(mpidist::all_reduce(std::vector<float>{})), std::vector<float>>);
static_assert(std::is_void_v<decltype(mpidist::all_reduce(std::declval<std::span<float>>()))>);
static_assert(std::is_void_v<decltype(mpidist::broadcast(std::declval<std::span<float>>(), 0))>);
static_assert(std::is_void_v<decltype(mpidist::all_reduce(std::declval<mpidist::BufferView>()))>);
static_assert(std::is_same_v<decltype(mpidist::broadcast(std::string{}, 0)), std::string>);

TEST_F(ObjectsUmbrellaTest, BothFamiliesCallable) {
  const int size = mpidist::world_size();
  std::vector<float> tensor(4, 1.0f);
  mpidist::all_reduce(std::span<float>(tensor));  // tensor: in place
  EXPECT_EQ(tensor, std::vector<float>(4, static_cast<float>(size)));
  mpidist::broadcast(std::span<float>(tensor), size - 1);
  EXPECT_EQ(mpidist::all_reduce(std::vector<float>(4, 1.0f)), tensor);  // object: by value
  EXPECT_EQ(mpidist::broadcast(std::string("hello"), size - 1), "hello");
  std::vector<float> gathered(4 * static_cast<std::size_t>(size));
  mpidist::all_gather(mpidist::BufferView(std::span<float>(tensor)), mpidist::BufferView(std::span<float>(gathered)));
  EXPECT_EQ(mpidist::all_gather(1.0f), std::vector<float>(static_cast<std::size_t>(size), 1.0f));
}

}  // namespace
