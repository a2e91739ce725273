// Element types: integers map by size and signedness (so `long long`, `unsigned long` and the
// other spellings of the fixed-width types work), and uint32 / uint64 reduce as unsigned. Values
// are compared exactly in T: the uint64 values lie above 2^63 (above 2^31 for uint32) where a
// signed detour would change Min, Max and Avg, and the 64-bit ones above 2^32 where a 32-bit one
// would truncate. Spans over TestBuffer memory, so device runs cover the NCCL path too.
#include <concepts>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "mpi_test.hpp"
#include "mpidist/mpidist.hpp"
#include "tensor_buffers.hpp"

namespace {

using namespace mpidist_test;
using mpidist::DataType;
using mpidist::ReduceOp;
using ElementTypes = MpiTest;

// The mapping rule, at compile time: by size and signedness, whatever the type is called.
static_assert(mpidist::dtype_v<long long> == DataType::Int64);
static_assert(mpidist::dtype_v<long> == DataType::Int64);
static_assert(mpidist::dtype_v<unsigned long> == DataType::UInt64);
static_assert(mpidist::dtype_v<unsigned long long> == DataType::UInt64);
static_assert(mpidist::dtype_v<unsigned> == DataType::UInt32);
static_assert(mpidist::dtype_v<int> == DataType::Int32);
static_assert(mpidist::dtype_v<std::int8_t> == DataType::Int8);
static_assert(mpidist::dtype_v<signed char> == DataType::Int8);
static_assert(mpidist::dtype_v<unsigned char> == DataType::UInt8);
static_assert(mpidist::dtype_v<const long long> == DataType::Int64);
static_assert(mpidist::dtype_of<long long>::value == DataType::Int64);
static_assert(mpidist::dtype_of<unsigned long>::value == DataType::UInt64);
static_assert(mpidist::dtype_of<unsigned>::value == DataType::UInt32);
static_assert(mpidist::dtype_of<int>::value == DataType::Int32);
static_assert(mpidist::dtype_of<std::int8_t>::value == DataType::Int8);
static_assert(mpidist::dtype_of<std::uint64_t>::value == DataType::UInt64);
static_assert(mpidist::dtype_v<float> == DataType::Float32);
static_assert(mpidist::dtype_v<mpidist::bfloat16> == DataType::BFloat16);
// Not element types (tests/compile_fail checks the messages); still, no object template may take
// a span, and a map of spans must still convert for average().
static_assert(!mpidist::Element<bool> && !mpidist::Element<char> && !mpidist::Element<long double>);
static_assert(!mpidist::Element<short> && !mpidist::Element<unsigned short> && !mpidist::Element<char32_t>);
static_assert(!mpidist::detail::ObjectValue<std::span<bool>> && !mpidist::detail::ObjectValue<std::span<long long>>);
static_assert(!mpidist::detail::Reducible<std::span<long long>>);
static_assert(std::convertible_to<const std::span<float>&, mpidist::BufferView>);
static_assert(std::convertible_to<const std::span<const long long>&, mpidist::BufferView>);

constexpr ReduceOp tensor_ops[] = {ReduceOp::Sum, ReduceOp::Product, ReduceOp::Min, ReduceOp::Max, ReduceOp::Avg};
constexpr std::size_t counts[] = {0, 1, 67};

int me() { return mpidist::rank(); }
int size() { return mpidist::world_size(); }

/// Rank `rank`'s value at index i for `op`, chosen so the reduction over up to 4 ranks is exact.
template <class T>
T value_of(ReduceOp op, int rank, std::size_t i) {
  constexpr T top = std::numeric_limits<T>::max();
  const auto k = static_cast<T>((static_cast<std::size_t>(rank) * 7 + i) % 5);
  const bool odd = (static_cast<std::size_t>(rank) + i) % 2 == 1;
  if constexpr (std::is_unsigned_v<T>) {
    switch (op) {
      case ReduceOp::Product:  // one large factor times factors of 1..3: at most top
        return rank == 0 ? static_cast<T>(top / 81 - k) : static_cast<T>(1 + k % 3);
      case ReduceOp::Min:
      case ReduceOp::Max:  // above 2^63 (2^31) next to small values: signed order would swap them
        return odd ? static_cast<T>(top - k) : static_cast<T>(k + 1);
      default:  // Sum, Avg: the sum lies in (2^63, 2^64) at any rank count
        return static_cast<T>(top / static_cast<T>(size()) - k);
    }
  } else {
    constexpr int digits = std::numeric_limits<T>::digits;
    const T sign = odd ? T(-1) : T(1);
    switch (op) {
      case ReduceOp::Product:
        return rank == 0 ? static_cast<T>(sign * ((T(1) << (digits - 6)) + k))
                         : static_cast<T>(k % 3 == 0 ? 1 : k % 3 == 1 ? -1 : 2);
      case ReduceOp::Min:
      case ReduceOp::Max: return static_cast<T>(sign * ((T(1) << (digits - 2)) + k));
      default: return static_cast<T>(sign * ((T(1) << (digits - 3)) + k + static_cast<T>(rank)));
    }
  }
}

template <class T>
std::vector<T> values_of(ReduceOp op, int rank, std::size_t count, std::size_t first = 0) {
  std::vector<T> values(count);
  for (std::size_t i = 0; i < count; ++i) values[i] = value_of<T>(op, rank, first + i);
  return values;
}

/// The reduction over all ranks at index i, in T (integer Avg truncates toward zero).
template <class T>
T reduced(ReduceOp op, std::size_t i) {
  T acc = value_of<T>(op, 0, i);
  for (int r = 1; r < size(); ++r) {
    const T x = value_of<T>(op, r, i);
    switch (op) {
      case ReduceOp::Product: acc = static_cast<T>(acc * x); break;
      case ReduceOp::Min: acc = x < acc ? x : acc; break;
      case ReduceOp::Max: acc = x > acc ? x : acc; break;
      default: acc = static_cast<T>(acc + x); break;
    }
  }
  return op == ReduceOp::Avg ? static_cast<T>(acc / static_cast<T>(size())) : acc;
}

template <class T>
std::vector<T> reduced_range(ReduceOp op, std::size_t count, std::size_t first = 0) {
  std::vector<T> want(count);
  for (std::size_t i = 0; i < count; ++i) want[i] = reduced<T>(op, first + i);
  return want;
}

template <class T>
void expect_exact(const std::vector<T>& got, const std::vector<T>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (got[i] != want[i]) {
      ADD_FAILURE() << what << ": element " << i << " is " << got[i] << ", expected " << want[i];
      return;
    }
  }
}

template <class T>
std::span<T> span_of(TestBuffer<T>& buffer) { return {buffer.data(), buffer.size()}; }
template <class T>
std::span<const T> const_span_of(TestBuffer<T>& buffer) { return {buffer.data(), buffer.size()}; }

std::string label(const char* type, const char* what, std::size_t count) {
  return std::string(what) + " " + type + " count " + std::to_string(count);
}
std::string label(const char* type, const char* what, ReduceOp op, std::size_t count) {
  return label(type, what, count) + " " + std::string(mpidist::to_string(op));
}

// Every collective through spans of T: in place on std::span<T>, out of place with a
// std::span<const T> input.
template <class T>
void every_collective(const char* type) {
  const auto n = static_cast<std::size_t>(size());
  const int last = size() - 1;
  for (const ReduceOp op : tensor_ops) {
    for (const std::size_t count : counts) {
      {
        TestBuffer<T> buffer(values_of<T>(op, me(), count));
        mpidist::all_reduce(span_of(buffer), op);
        expect_exact(buffer.read(), reduced_range<T>(op, count), label(type, "all_reduce in place", op, count));
      }
      {
        const auto mine = values_of<T>(op, me(), count);
        TestBuffer<T> in(mine), out(std::vector<T>(count, T(99)));
        mpidist::all_reduce(const_span_of(in), span_of(out), op);
        expect_exact(out.read(), reduced_range<T>(op, count), label(type, "all_reduce", op, count));
        expect_exact(in.read(), mine, label(type, "all_reduce input", op, count));
      }
      {
        TestBuffer<T> in(values_of<T>(op, me(), count)), out(std::vector<T>(count, T(99)));
        mpidist::reduce(const_span_of(in), span_of(out), op, last);
        expect_exact(out.read(), me() == last ? reduced_range<T>(op, count) : std::vector<T>(count, T(99)),
                     label(type, "reduce", op, count));
      }
      {
        TestBuffer<T> in(values_of<T>(op, me(), count * n)), out(std::vector<T>(count, T(99)));
        mpidist::reduce_scatter(const_span_of(in), span_of(out), op);
        expect_exact(out.read(), reduced_range<T>(op, count, static_cast<std::size_t>(me()) * count),
                     label(type, "reduce_scatter", op, count));
      }
    }
  }
  for (const std::size_t count : counts) {
    for (const int root : {0, last}) {
      TestBuffer<T> buffer(values_of<T>(ReduceOp::Max, me(), count));
      mpidist::broadcast(span_of(buffer), root);
      expect_exact(buffer.read(), values_of<T>(ReduceOp::Max, root, count),
                   label(type, "broadcast", count) + " root " + std::to_string(root));
    }
    TestBuffer<T> in(values_of<T>(ReduceOp::Max, me(), count)), out(std::vector<T>(count * n, T(99)));
    mpidist::all_gather(const_span_of(in), span_of(out));
    std::vector<T> want;
    for (int r = 0; r < size(); ++r)
      for (const T v : values_of<T>(ReduceOp::Max, r, count)) want.push_back(v);
    expect_exact(out.read(), want, label(type, "all_gather", count));
  }
}

TEST_F(ElementTypes, LongLong) { every_collective<long long>("long long"); }
TEST_F(ElementTypes, Long) { every_collective<long>("long"); }
TEST_F(ElementTypes, UnsignedLong) { every_collective<unsigned long>("unsigned long"); }
TEST_F(ElementTypes, UnsignedLongLong) { every_collective<unsigned long long>("unsigned long long"); }
TEST_F(ElementTypes, UInt32) { every_collective<std::uint32_t>("uint32"); }
TEST_F(ElementTypes, UInt64) { every_collective<std::uint64_t>("uint64"); }

// The user's spelling: a container of long long straight into the span overloads.
TEST_F(ElementTypes, ContainersOfLongLongAndUnsignedLong) {
  std::vector<long long> steps(3, (1LL << 40) + me());
  mpidist::all_reduce(std::span(steps), ReduceOp::Max);
  EXPECT_EQ(steps[2], (1LL << 40) + size() - 1);
  constexpr unsigned long top = std::numeric_limits<unsigned long>::max();
  const std::vector<unsigned long> mine(2, top - static_cast<unsigned long>(me()));
  std::vector<unsigned long> smallest(2);
  mpidist::all_reduce(std::span(mine), std::span(smallest), ReduceOp::Min);
  EXPECT_EQ(smallest[1], top - static_cast<unsigned long>(size() - 1));
  std::vector<float> loss(2, static_cast<float>(me()));
  const std::map<std::string, std::span<float>> named{{"loss", std::span(loss)}};
  mpidist::average(named);
  EXPECT_FLOAT_EQ(loss[0], static_cast<float>(size() - 1) / 2.0f);
}

TEST_F(ElementTypes, NamesAndSizes) {
  EXPECT_EQ(mpidist::to_string(DataType::UInt32), "uint32");
  EXPECT_EQ(mpidist::to_string(DataType::UInt64), "uint64");
  EXPECT_EQ(mpidist::dtype_from_string("uint32"), DataType::UInt32);
  EXPECT_EQ(mpidist::dtype_from_string("uint64"), DataType::UInt64);
  EXPECT_EQ(mpidist::size_of(DataType::UInt32), 4u);
  EXPECT_EQ(mpidist::size_of(DataType::UInt64), 8u);
  // Appended: the earlier values keep their numbers.
  EXPECT_EQ(static_cast<int>(DataType::Int64), 7);
  EXPECT_EQ(static_cast<int>(DataType::UInt32), 8);
  EXPECT_EQ(static_cast<int>(DataType::UInt64), 9);
}

}  // namespace
