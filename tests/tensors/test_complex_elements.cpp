// Complex elements (std::complex<float> as complex64, std::complex<double> as complex128): every
// collective moves them, sums and averages reduce them on every transport (the node's shared
// memory, MPI's own call with MPI_C_*_COMPLEX, NCCL through its real parts in device runs), and
// the reductions complex numbers do not have are an Error on every rank, after which the ranks go
// on in step. The object forms reduce std::complex values and vectors of them (sum, prod, avg).
// Spans over TestBuffer memory, so device runs cover the NCCL path too.
#include <complex>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <mpi.h>

#include "mpi_test.hpp"
#include "mpidist/mpidist.hpp"
#include "tensor_buffers.hpp"

namespace {

using namespace mpidist_test;
using mpidist::DataType;
using mpidist::ReduceOp;
using ComplexElements = MpiTest;

static_assert(mpidist::dtype_v<std::complex<float>> == DataType::Complex64);
static_assert(mpidist::dtype_v<const std::complex<double>> == DataType::Complex128);
static_assert(!mpidist::Element<std::complex<long double>> && !mpidist::Element<std::complex<int>>);
static_assert(mpidist::detail::Reducible<std::complex<double>> &&
              mpidist::detail::Reducible<std::vector<std::complex<float>>>);

int me() { return mpidist::rank(); }
int size() { return mpidist::world_size(); }

// Sizes each side of the transports' crossovers: empty, in-line, 16 KiB, chunked; `pipelined`
// (2.4 or 4.8 MB) for the in-place all_reduce only, where the pipelines are (the movers' bytes
// grow with the world size, and CI runs these under ASan and the device emulation).
constexpr std::size_t counts[] = {0, 1, 67, 2047, 2049, 70001};
constexpr std::size_t pipelined = 300001;

/// Rank `rank`'s element i: small integers in both parts (sums exact in float at any rank
/// count here), the imaginary part negative and different from the real one, so that a swap or a
/// part reduced into the other shows.
template <class C>
C value_of(int rank, std::size_t i) {
  using R = typename C::value_type;
  return C(static_cast<R>((static_cast<std::size_t>(rank) * 7 + i) % 13 + 1),
           -static_cast<R>((static_cast<std::size_t>(rank) * 3 + i) % 11 + 2));
}

template <class C>
std::vector<C> values_of(int rank, std::size_t count, std::size_t first = 0) {
  std::vector<C> values(count);
  for (std::size_t i = 0; i < count; ++i) values[i] = value_of<C>(rank, first + i);
  return values;
}

/// The sum (or average) over all ranks at each index, as std::complex computes it.
template <class C>
std::vector<C> reduced(ReduceOp op, std::size_t count, std::size_t first = 0) {
  std::vector<C> want(count);
  for (std::size_t i = 0; i < count; ++i) {
    C acc = value_of<C>(0, first + i);
    for (int r = 1; r < size(); ++r) acc += value_of<C>(r, first + i);
    want[i] = op == ReduceOp::Avg ? acc / static_cast<typename C::value_type>(size()) : acc;
  }
  return want;
}

/// Equal in both parts; an average to within a rounding of each part (1/3 is not exact).
template <class C>
void expect_values(const std::vector<C>& got, const std::vector<C>& want, ReduceOp op, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  const double tolerance = op == ReduceOp::Avg ? 1e-5 : 0.0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::abs(got[i].real() - want[i].real()) > tolerance || std::abs(got[i].imag() - want[i].imag()) > tolerance) {
      ADD_FAILURE() << what << ": element " << i << " is " << got[i] << ", expected " << want[i];
      return;
    }
  }
}

template <class C>
std::span<C> span_of(TestBuffer<C>& buffer) { return {buffer.data(), buffer.size()}; }

template <class C>
std::string label(const char* what, std::size_t count) {
  return std::string(what) + " " + std::string(mpidist::to_string(mpidist::dtype_v<C>)) + " count " +
         std::to_string(count);
}

template <class C>
void every_collective() {
  const auto n = static_cast<std::size_t>(size());
  const int last = size() - 1;
  const C stale(99, 99);
  for (const ReduceOp op : {ReduceOp::Sum, ReduceOp::Avg}) {
    TestBuffer<C> buffer(values_of<C>(me(), pipelined));
    mpidist::all_reduce(span_of(buffer), op);
    expect_values(buffer.read(), reduced<C>(op, pipelined), op, label<C>("all_reduce in place", pipelined));
  }
  for (const std::size_t count : counts) {
    for (const ReduceOp op : {ReduceOp::Sum, ReduceOp::Avg}) {
      {
        TestBuffer<C> buffer(values_of<C>(me(), count));
        mpidist::all_reduce(span_of(buffer), op);
        expect_values(buffer.read(), reduced<C>(op, count), op, label<C>("all_reduce in place", count));
      }
      {
        const auto mine = values_of<C>(me(), count);
        TestBuffer<C> in(mine), out(std::vector<C>(count, stale));
        mpidist::all_reduce(std::span<const C>(in.data(), count), span_of(out), op);
        expect_values(out.read(), reduced<C>(op, count), op, label<C>("all_reduce", count));
        expect_values(in.read(), mine, ReduceOp::Sum, label<C>("all_reduce input", count));
      }
      {
        TestBuffer<C> buffer(values_of<C>(me(), count));
        mpidist::reduce(span_of(buffer), op, last);
        expect_values(buffer.read(), me() == last ? reduced<C>(op, count) : values_of<C>(me(), count), op,
                      label<C>("reduce in place at the last rank", count));
      }
    }
    {
      TestBuffer<C> in(values_of<C>(me(), count * n)), out(std::vector<C>(count, stale));
      mpidist::reduce_scatter(std::span<const C>(in.data(), count * n), span_of(out), ReduceOp::Sum);
      expect_values(out.read(), reduced<C>(ReduceOp::Sum, count, static_cast<std::size_t>(me()) * count),
                    ReduceOp::Sum, label<C>("reduce_scatter", count));
    }
    {
      TestBuffer<C> buffer(values_of<C>(me(), count));
      mpidist::broadcast(span_of(buffer), last);
      expect_values(buffer.read(), values_of<C>(last, count), ReduceOp::Sum, label<C>("broadcast from the last rank", count));
    }
    {
      TestBuffer<C> in(values_of<C>(me(), count)), out(std::vector<C>(count * n, stale));
      mpidist::all_gather(std::span<const C>(in.data(), count), span_of(out));
      std::vector<C> want;
      for (int r = 0; r < size(); ++r)
        for (const C& v : values_of<C>(r, count)) want.push_back(v);
      expect_values(out.read(), want, ReduceOp::Sum, label<C>("all_gather", count));
    }
    {
      // Block j of rank r's input: values_of(r, count, j * count); rank r receives block r of each.
      TestBuffer<C> in(values_of<C>(me(), count * n)), out(std::vector<C>(count * n, stale));
      mpidist::all_to_all(std::span<const C>(in.data(), count * n), span_of(out));
      std::vector<C> want;
      for (int r = 0; r < size(); ++r)
        for (const C& v : values_of<C>(r, count, static_cast<std::size_t>(me()) * count)) want.push_back(v);
      expect_values(out.read(), want, ReduceOp::Sum, label<C>("all_to_all", count));
    }
  }
}

// The rooted and uneven movers: gather and scatter at the last rank, all_gather_v and all_to_all
// with split counts (rank r holds r + 1 elements of each block), on TestBuffer memory.
template <class C>
void rooted_and_uneven() {
  const auto n = static_cast<std::size_t>(size());
  const int last = size() - 1;
  const C stale(99, 99);
  for (const std::size_t count : {std::size_t{1}, std::size_t{3001}}) {
    TestBuffer<C> in(values_of<C>(me(), count)), at_root(std::vector<C>(me() == last ? count * n : 0, stale));
    mpidist::gather(std::span<const C>(in.data(), count), span_of(at_root), last);
    std::vector<C> all;
    for (int r = 0; r < size(); ++r)
      for (const C& v : values_of<C>(r, count)) all.push_back(v);
    if (me() == last) expect_values(at_root.read(), all, ReduceOp::Sum, label<C>("gather", count));
    TestBuffer<C> part(std::vector<C>(count, stale));
    mpidist::scatter(std::span<const C>(at_root.data(), at_root.size()), span_of(part), last);
    expect_values(part.read(), values_of<C>(me(), count), ReduceOp::Sum, label<C>("scatter", count));

    std::vector<std::size_t> counts(n);
    std::vector<C> gathered_want;
    for (int r = 0; r < size(); ++r) {
      counts[static_cast<std::size_t>(r)] = count + static_cast<std::size_t>(r);
      for (const C& v : values_of<C>(r, count + static_cast<std::size_t>(r))) gathered_want.push_back(v);
    }
    TestBuffer<C> mine(values_of<C>(me(), counts[static_cast<std::size_t>(me())]));
    TestBuffer<C> gathered(std::vector<C>(gathered_want.size(), stale));
    mpidist::all_gather_v(std::span<const C>(mine.data(), mine.size()), span_of(gathered), counts);
    expect_values(gathered.read(), gathered_want, ReduceOp::Sum, label<C>("all_gather_v", count));

    // Rank r sends me() + 1 ... : block j of rank r holds r + 1 elements, values_of(r, r + 1, j * 100).
    const std::size_t own = static_cast<std::size_t>(me()) + 1;
    std::vector<C> sending;
    for (std::size_t j = 0; j < n; ++j)
      for (const C& v : values_of<C>(me(), own, j * 100)) sending.push_back(v);
    std::vector<std::size_t> send_counts(n, own), recv_counts(n);
    std::vector<C> receiving_want;
    for (int r = 0; r < size(); ++r) {
      recv_counts[static_cast<std::size_t>(r)] = static_cast<std::size_t>(r) + 1;
      for (const C& v : values_of<C>(r, static_cast<std::size_t>(r) + 1, static_cast<std::size_t>(me()) * 100))
        receiving_want.push_back(v);
    }
    TestBuffer<C> send(sending), receive(std::vector<C>(receiving_want.size(), stale));
    mpidist::all_to_all(std::span<const C>(send.data(), send.size()), send_counts, span_of(receive), recv_counts);
    expect_values(receive.read(), receiving_want, ReduceOp::Sum, label<C>("all_to_all with splits", count));
  }
}

TEST_F(ComplexElements, RootedAndUnevenMovers) {
  rooted_and_uneven<std::complex<float>>();
  rooted_and_uneven<std::complex<double>>();
}

TEST_F(ComplexElements, EveryCollectiveOfComplex64) { every_collective<std::complex<float>>(); }
TEST_F(ComplexElements, EveryCollectiveOfComplex128) { every_collective<std::complex<double>>(); }

// What users write: a std::vector of complex amplitudes, in place and non-blocking; a ring of
// isend/irecv; a fused list mixing complex and real buffers.
TEST_F(ComplexElements, AsUsersHoldThem) {
  std::vector<std::complex<double>> field = values_of<std::complex<double>>(me(), 1000);
  mpidist::all_reduce(std::span(field), ReduceOp::Sum);
  expect_values(field, reduced<std::complex<double>>(ReduceOp::Sum, 1000), ReduceOp::Sum, "all_reduce of a vector");

  std::vector<std::complex<float>> amplitudes = values_of<std::complex<float>>(me(), 5000);
  mpidist::Work work = mpidist::all_reduce_async(std::span(amplitudes), ReduceOp::Avg);
  work.wait();
  expect_values(amplitudes, reduced<std::complex<float>>(ReduceOp::Avg, 5000), ReduceOp::Avg, "all_reduce_async");

  const int next = (me() + 1) % size(), previous = (me() + size() - 1) % size();
  const std::vector<std::complex<double>> sent = values_of<std::complex<double>>(me(), 300);
  std::vector<std::complex<double>> received(300);
  mpidist::Work receiving = mpidist::irecv(received, previous);
  mpidist::Work sending = mpidist::isend(sent, next);
  sending.wait();
  receiving.wait();
  expect_values(received, values_of<std::complex<double>>(previous, 300), ReduceOp::Sum, "a ring of isend/irecv");

  std::vector<std::complex<float>> z = values_of<std::complex<float>>(me(), 33);
  std::vector<float> loss(7, static_cast<float>(me() + 1));
  mpidist::all_reduce_many({mpidist::BufferView(std::span(z)), mpidist::BufferView(std::span(loss))}, ReduceOp::Sum);
  expect_values(z, reduced<std::complex<float>>(ReduceOp::Sum, 33), ReduceOp::Sum, "all_reduce_many");
  EXPECT_EQ(loss[6], static_cast<float>(size() * (size() + 1) / 2));
}

// The same sums as MPI_Allreduce with MPI_C_DOUBLE_COMPLEX on the same data, fractions included
// (so the order of the sum matters): the same bits on every rank, and MPI's value to a rounding.
TEST_F(ComplexElements, AgainstMpiAllreduceAndTheSameBitsOnEveryRank) {
  for (const std::size_t count : {std::size_t{3}, std::size_t{4099}, std::size_t{200003}}) {
    std::vector<std::complex<double>> mine(count);
    for (std::size_t i = 0; i < count; ++i)
      mine[i] = {1.0 / static_cast<double>(i % 7 + 3 + static_cast<std::size_t>(me())),
                 -static_cast<double>(me()) / static_cast<double>(i % 5 + 3)};
    std::vector<std::complex<double>> ours = mine, theirs(count);
    mpidist::all_reduce(std::span(ours), ReduceOp::Sum);
    MPI_Allreduce(mine.data(), theirs.data(), static_cast<int>(count), MPI_C_DOUBLE_COMPLEX, MPI_SUM, MPI_COMM_WORLD);
    for (std::size_t i = 0; i < count; ++i) {
      ASSERT_NEAR(ours[i].real(), theirs[i].real(), 1e-12) << "count " << count << " element " << i;
      ASSERT_NEAR(ours[i].imag(), theirs[i].imag(), 1e-12) << "count " << count << " element " << i;
    }
    std::vector<std::complex<double>> rank0 = ours;
    MPI_Bcast(rank0.data(), static_cast<int>(count), MPI_C_DOUBLE_COMPLEX, 0, MPI_COMM_WORLD);
    EXPECT_EQ(std::memcmp(rank0.data(), ours.data(), count * sizeof ours[0]), 0) << "count " << count;
  }
}

// Min and max (no order) and prod (not computed on the parts) are an Error on every rank, naming
// the reduction and the element type; the ranks then go on in step.
TEST_F(ComplexElements, ReductionsComplexNumbersLackAreErrorsEverywhere) {
  std::vector<std::complex<float>> z = values_of<std::complex<float>>(me(), 10);
  std::vector<std::complex<float>> out(10);
  expect_error([&] { mpidist::all_reduce(std::span(z), ReduceOp::Max); }, {"all_reduce", "'max'", "complex64", "sum or avg"});
  expect_error([&] { mpidist::all_reduce(std::span(z), ReduceOp::Min); }, {"'min'", "no order"});
  expect_error([&] { mpidist::reduce(std::span(z), std::span(out), ReduceOp::Product, size() - 1); },
               {"reduce", "'prod'", "complex64", "std::multiplies"});
  std::vector<std::complex<double>> block(4 * static_cast<std::size_t>(size())), mine(4);
  expect_error([&] { mpidist::reduce_scatter(std::span(block), std::span(mine), ReduceOp::Max); },
               {"reduce_scatter", "complex128"});
  // The world is in step: a sum after the catch is right everywhere.
  mpidist::all_reduce(std::span(z), ReduceOp::Sum);
  expect_values(z, reduced<std::complex<float>>(ReduceOp::Sum, 10), ReduceOp::Sum, "all_reduce after the Errors");
}

// The object forms: a std::complex value and vectors of them under sum, prod and avg (MPI's
// complex datatypes), a product through a function element by element, the orderless reductions
// an Error on every rank; on a group too.
TEST_F(ComplexElements, ObjectForms) {
  const std::complex<double> mine(me() + 1.0, -1.0);
  std::complex<double> sum(0, 0), product(1, 0);
  for (int r = 0; r < size(); ++r) sum += std::complex<double>(r + 1.0, -1.0), product *= std::complex<double>(r + 1.0, -1.0);
  EXPECT_EQ(mpidist::all_reduce(mine, ReduceOp::Sum), sum);
  const auto multiplied = mpidist::all_reduce(mine, ReduceOp::Product);
  EXPECT_NEAR(std::abs(multiplied - product), 0.0, 1e-9 * std::abs(product)) << multiplied << " against " << product;
  EXPECT_EQ(mpidist::all_reduce(mine, ReduceOp::Avg), sum / static_cast<double>(size()));

  std::vector<std::complex<float>> v = values_of<std::complex<float>>(me(), 6);
  mpidist::all_reduce(v, ReduceOp::Sum);  // in place, the object form's length check
  expect_values(v, reduced<std::complex<float>>(ReduceOp::Sum, 6), ReduceOp::Sum, "object all_reduce in place");
  std::vector<std::complex<double>> factors(3, std::complex<double>(0.0, 1.0));  // i to the world size
  mpidist::all_reduce(factors, std::multiplies<>{});
  std::complex<double> power(1, 0);
  for (int r = 0; r < size(); ++r) power *= std::complex<double>(0.0, 1.0);
  EXPECT_NEAR(std::abs(factors[2] - power), 0.0, 1e-12) << factors[2];

  expect_error([&] { (void)mpidist::all_reduce(mine, ReduceOp::Max); }, {"all_reduce", "'max'", "complex numbers"});
  expect_error([&] { mpidist::all_reduce(v, ReduceOp::Or); }, {"'or'", "pass a function"});

  const auto backwards = mpidist::world().split(0, size() - me());  // ranks in reverse order
  const auto at_root = mpidist::reduce(backwards, mine, ReduceOp::Sum, backwards.size() - 1);
  if (backwards.rank() == backwards.size() - 1) {
    EXPECT_EQ(at_root.value_or(0.0), sum);
  } else {
    EXPECT_FALSE(at_root.has_value());
  }
  EXPECT_EQ(mpidist::all_reduce(mine, ReduceOp::Sum), sum);  // in step after the Errors
}

TEST_F(ComplexElements, NamesAndSizes) {
  EXPECT_EQ(mpidist::to_string(DataType::Complex64), "complex64");
  EXPECT_EQ(mpidist::to_string(DataType::Complex128), "complex128");
  EXPECT_EQ(mpidist::dtype_from_string("complex64"), DataType::Complex64);
  EXPECT_EQ(mpidist::dtype_from_string("cdouble"), DataType::Complex128);
  EXPECT_EQ(mpidist::size_of(DataType::Complex64), 8u);
  EXPECT_EQ(mpidist::size_of(DataType::Complex128), 16u);
  // Appended: the earlier values keep their numbers.
  EXPECT_EQ(static_cast<int>(DataType::UInt64), 9);
  EXPECT_EQ(static_cast<int>(DataType::Complex64), 10);
  std::vector<std::complex<float>> z(3);
  EXPECT_EQ(mpidist::BufferView(std::span(z)).bytes(), 24u);
  EXPECT_EQ(mpidist::BufferView(z.data(), 3).dtype(), DataType::Complex64);
}

}  // namespace
