// A randomized differential soak of the tensor collectives. Every rank draws the same sequence of
// calls from one seed: which collective, on which of six communicators (the world, splits whose
// ranks run backwards or interleave the nodes, a group without rank 0, pairs, the node), element
// type, reduction, size (zero, a few elements, each side of the transports' crossovers, up to
// 8 MiB), root, in place or not, blocking or non-blocking (a batch issued, then waited in a drawn
// order). Each result is checked against the value computed locally, and an all-reduce's result
// must be the same bits on every rank. Whatever path `auto` or MPIDIST_HOST_ALLREDUCE takes on the
// run's layout, the answer may not change.
//   MPIDIST_TEST_SEED (default 1), MPIDIST_TEST_ROUNDS (default 80; 30 under ASan): a failure names
//   both, and the round, so that it can be run again alone; MPIDIST_TEST_VERBOSE=1 prints each call
//   as it starts.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <mpi.h>

#include "mpi_test.hpp"
#include "mpidist/mpidist.hpp"
#include "tensor_buffers.hpp"
#include "tensor_values.hpp"

namespace {

using namespace mpidist_test;
using mpidist::BufferView;
using mpidist::Communicator;
using mpidist::DataType;
using mpidist::ReduceOp;
using Differential = MpiTest;

std::uint64_t setting(const char* name, std::uint64_t fallback) {
  const char* text = std::getenv(name);
  return text != nullptr && *text != '\0' ? std::strtoull(text, nullptr, 10) : fallback;
}

// The shared draw: every rank holds the same generator and draws the same numbers in the same
// order, whichever communicators it belongs to.
class Draw {
 public:
  explicit Draw(std::uint64_t seed) : rng_(seed) {}
  std::uint64_t next() { return rng_(); }
  std::size_t below(std::size_t n) { return n == 0 ? 0 : static_cast<std::size_t>(rng_() % n); }
  bool chance(int percent) { return below(100) < static_cast<std::size_t>(percent); }

 private:
  std::mt19937_64 rng_;
};

// Bytes around the crossovers of the transports (in-line, chunked, leaders, 2D pieces, pipelines).
std::size_t draw_bytes(Draw& draw) {
  static constexpr std::size_t edges[] = {1 << 10,   4 << 10,   16 << 10,  32 << 10, 64 << 10, 128 << 10,
                                          256 << 10, 512 << 10, 1 << 20,   2 << 20,  4 << 20,  8 << 20};
  const auto kind = draw.below(100);
  if (kind < 5) return 0;
  if (kind < 40) return 1 + draw.below(512);
  if (kind < 85) {
    const std::size_t edge = edges[draw.below(std::size(edges))];
    return edge - std::min<std::size_t>(edge, 24) + draw.below(49);  // a few elements either side
  }
  return 1 + draw.below(8 << 20);
}

// Values that move unchanged (broadcast, gathers, all_to_all): distinct per rank, place and
// round, exact in every type (int8 included).
template <class T>
double moved(int rank, std::size_t i, std::uint64_t salt) {
  const auto v = static_cast<double>((static_cast<std::uint64_t>(rank) * 31 + i * 17 + salt) % 97);
  return std::is_unsigned_v<T> ? v : v - 48;
}

// Values that are reduced: tensor_values.hpp's, shifted by the round's salt; float sums also carry
// a fraction (not exact, so the ranks must agree on the order of the sum).
template <class T>
double reduced(ReduceOp op, int rank, std::size_t i, std::uint64_t salt, bool fractions) {
  double v = value_at<T>(op, rank, i + salt % 1024);
  if (fractions && (op == ReduceOp::Sum || op == ReduceOp::Avg)) v += static_cast<double>((i + rank * 5) % 7) / 7.0;
  return v;
}

template <class T>
double reduced_expected(ReduceOp op, int size, std::size_t i, std::uint64_t salt, bool fractions) {
  double acc = reduced<T>(op, 0, i, salt, fractions);
  for (int r = 1; r < size; ++r) {
    const double x = reduced<T>(op, r, i, salt, fractions);
    switch (op) {
      case ReduceOp::Product: acc *= x; break;
      case ReduceOp::Min: acc = std::min(acc, x); break;
      case ReduceOp::Max: acc = std::max(acc, x); break;
      default: acc += x; break;
    }
  }
  if (op == ReduceOp::Avg) {
    acc /= size;
    if constexpr (std::is_integral_v<T>) acc = std::trunc(acc);
  }
  return acc;
}

// Fractions are for float32 and float64 only: half types round every partial sum.
template <class T>
constexpr bool takes_fractions = std::is_same_v<T, float> || std::is_same_v<T, double>;

template <class T>
double tolerance_of(double want, bool fractions) {
  return fractions ? std::max(tolerance<T>(want), 1e-4 * std::max(1.0, std::abs(want))) : tolerance<T>(want);
}

// The first wrong element of `got` against want(i), as one failure.
template <class T, class Want>
void check_values(const std::vector<T>& got, std::size_t first, std::size_t count, Want want, bool fractions,
                  const std::string& what) {
  for (std::size_t i = 0; i < count; ++i) {
    const double w = want(i);
    if (std::abs(as_double(got[first + i]) - w) > tolerance_of<T>(w, fractions)) {
      ADD_FAILURE() << what << ": element " << first + i << " is " << as_double(got[first + i]) << ", expected " << w;
      return;
    }
  }
}

// An output's filling before the call: a value no result here holds.
template <class T>
std::vector<T> stale(std::size_t count) {
  return std::vector<T>(count, make<T>(std::is_unsigned_v<T> ? 99 : -99));
}

// The bits of an all-reduce's result are the same on every rank of its communicator.
template <class T>
void expect_same_bits(const Communicator& comm, const std::vector<T>& result, const std::string& what) {
  std::uint64_t hash = 1469598103934665603ull;
  const auto* bytes = reinterpret_cast<const unsigned char*>(result.data());
  for (std::size_t i = 0; i < result.size() * sizeof(T); ++i) hash = (hash ^ bytes[i]) * 1099511628211ull;
  std::vector<std::uint64_t> hashes(comm.size());
  MPI_Allgather(&hash, 1, MPI_UINT64_T, hashes.data(), 1, MPI_UINT64_T, comm.native());
  for (int r = 1; r < comm.size(); ++r)
    EXPECT_EQ(hashes[r], hashes[0]) << what << ": rank " << r << " of the communicator holds other bits than rank 0";
}

// One drawn call. run() makes it blocking, start() non-blocking; check() after either.
class Call {
 public:
  virtual ~Call() = default;
  virtual void run() = 0;
  virtual mpidist::Work start() = 0;
  virtual void check() = 0;
  std::string what;
};

// A drawn call as its ranks know it: the communicator, this rank's place, and the arguments.
struct Shape {
  const Communicator* comm;
  int rank, size;
  std::size_t count;  // per rank, or per block where the call has blocks
  ReduceOp op;
  int root;
  bool in_place, fractions;
  std::uint64_t salt;
  std::vector<std::size_t> counts;  // the uneven calls': all_gather_v per rank, all_to_all row-major
};

// This rank's input to a reduction of `count` elements.
template <class T>
std::vector<T> reduced_values(const Shape& s, std::size_t count) {
  std::vector<T> v(count);
  for (std::size_t i = 0; i < count; ++i) v[i] = make<T>(reduced<T>(s.op, s.rank, i, s.salt, s.fractions));
  return v;
}

// The reduced result of elements [first, first + s.count), as `got` must hold it.
template <class T>
void check_reduced(const std::vector<T>& got, const Shape& s, std::size_t first, const std::string& what) {
  const auto want = [&](std::size_t i) { return reduced_expected<T>(s.op, s.size, first + i, s.salt, s.fractions); };
  check_values(got, 0, s.count, want, s.fractions, what);
}

// Rank `rank`'s values to move, elements [first, first + count).
template <class T>
std::vector<T> moved_values(int rank, std::size_t count, std::uint64_t salt, std::size_t first = 0) {
  std::vector<T> v(count);
  for (std::size_t i = 0; i < count; ++i) v[i] = make<T>(moved<T>(rank, first + i, salt));
  return v;
}

template <class T>
class AllReduce : public Call {
 public:
  explicit AllReduce(Shape s)
      : s_(std::move(s)), in_(reduced_values<T>(s_, s_.count)), out_(stale<T>(s_.in_place ? 0 : s_.count)) {}
  void run() override {
    if (s_.in_place) mpidist::all_reduce(*s_.comm, in_.view(), s_.op);
    else mpidist::all_reduce(*s_.comm, in_.view(), out_.view(), s_.op);
  }
  mpidist::Work start() override {
    return s_.in_place ? mpidist::all_reduce_async(*s_.comm, in_.view(), s_.op)
                       : mpidist::all_reduce_async(*s_.comm, in_.view(), out_.view(), s_.op);
  }
  void check() override {
    const auto got = s_.in_place ? in_.read() : out_.read();
    check_reduced(got, s_, 0, what);
    expect_same_bits(*s_.comm, got, what);
  }

 private:
  Shape s_;
  TestBuffer<T> in_, out_;
};

template <class T>
class Broadcast : public Call {
 public:
  explicit Broadcast(Shape s)
      : s_(std::move(s)),
        buffer_(s_.rank == s_.root ? moved_values<T>(s_.rank, s_.count, s_.salt) : stale<T>(s_.count)) {}
  void run() override { mpidist::broadcast(*s_.comm, buffer_.view(), s_.root); }
  mpidist::Work start() override { return mpidist::broadcast_async(*s_.comm, buffer_.view(), s_.root); }
  void check() override {
    const auto want = [&](std::size_t i) { return moved<T>(s_.root, i, s_.salt); };
    check_values(buffer_.read(), 0, s_.count, want, false, what);
  }

 private:
  Shape s_;
  TestBuffer<T> buffer_;
};

template <class T>
class AllGather : public Call {
 public:
  explicit AllGather(Shape s)
      : s_(std::move(s)), in_(moved_values<T>(s_.rank, s_.count, s_.salt)), out_(stale<T>(s_.count * s_.size)) {}
  void run() override { mpidist::all_gather(*s_.comm, in_.view(), out_.view()); }
  mpidist::Work start() override { return mpidist::all_gather_async(*s_.comm, in_.view(), out_.view()); }
  void check() override {
    const auto got = out_.read();
    for (int r = 0; r < s_.size; ++r)
      check_values(got, r * s_.count, s_.count, [&](std::size_t i) { return moved<T>(r, i, s_.salt); }, false, what);
  }

 private:
  Shape s_;
  TestBuffer<T> in_, out_;
};

template <class T>
class ReduceScatter : public Call {
 public:
  explicit ReduceScatter(Shape s)
      : s_(std::move(s)), in_(reduced_values<T>(s_, s_.count * s_.size)), out_(stale<T>(s_.count)) {}
  void run() override { mpidist::reduce_scatter(*s_.comm, in_.view(), out_.view(), s_.op); }
  mpidist::Work start() override { return mpidist::reduce_scatter_async(*s_.comm, in_.view(), out_.view(), s_.op); }
  void check() override {
    check_reduced(out_.read(), s_, static_cast<std::size_t>(s_.rank) * s_.count, what);
  }

 private:
  Shape s_;
  TestBuffer<T> in_, out_;
};

template <class T>
class Reduce : public Call {
 public:
  explicit Reduce(Shape s) : s_(std::move(s)), in_(reduced_values<T>(s_, s_.count)), out_(stale<T>(s_.count)) {}
  void run() override { mpidist::reduce(*s_.comm, in_.view(), out_.view(), s_.op, s_.root); }
  mpidist::Work start() override { return mpidist::reduce_async(*s_.comm, in_.view(), out_.view(), s_.op, s_.root); }
  void check() override {
    if (s_.rank == s_.root) check_reduced(out_.read(), s_, 0, what);
  }

 private:
  Shape s_;
  TestBuffer<T> in_, out_;
};

// all_to_all of equal blocks (counts empty) or of the drawn counts; rank i's block to j holds
// moved(i, j * 100003 + x).
template <class T>
class AllToAll : public Call {
 public:
  explicit AllToAll(Shape s) : s_(std::move(s)) {
    const auto n = static_cast<std::size_t>(s_.size);
    for (std::size_t j = 0; j < n; ++j) {
      send_.push_back(count(static_cast<std::size_t>(s_.rank), j));
      recv_.push_back(count(j, static_cast<std::size_t>(s_.rank)));
    }
    std::vector<T> values;
    for (std::size_t j = 0; j < n; ++j) {
      const auto block = moved_values<T>(s_.rank, send_[j], s_.salt, j * 100003);
      values.insert(values.end(), block.begin(), block.end());
    }
    in_ = std::make_unique<TestBuffer<T>>(values);
    out_ = std::make_unique<TestBuffer<T>>(stale<T>(std::accumulate(recv_.begin(), recv_.end(), std::size_t{0})));
  }
  void run() override {
    if (s_.counts.empty()) mpidist::all_to_all(*s_.comm, in_->view(), out_->view());
    else mpidist::all_to_all(*s_.comm, in_->view(), send_, out_->view(), recv_);
  }
  mpidist::Work start() override {
    return s_.counts.empty() ? mpidist::all_to_all_async(*s_.comm, in_->view(), out_->view())
                             : mpidist::all_to_all_async(*s_.comm, in_->view(), send_, out_->view(), recv_);
  }
  void check() override {
    const auto got = out_->read();
    std::size_t first = 0;
    for (int from = 0; from < s_.size; ++from) {
      const std::size_t at = static_cast<std::size_t>(s_.rank) * 100003;
      const auto want = [&](std::size_t x) { return moved<T>(from, at + x, s_.salt); };
      check_values(got, first, recv_[from], want, false, what);
      first += recv_[from];
    }
  }

 private:
  std::size_t count(std::size_t from, std::size_t to) const {
    return s_.counts.empty() ? s_.count : s_.counts[from * static_cast<std::size_t>(s_.size) + to];
  }
  Shape s_;
  std::vector<std::size_t> send_, recv_;
  std::unique_ptr<TestBuffer<T>> in_, out_;
};

template <class T>
class AllGatherV : public Call {
 public:
  explicit AllGatherV(Shape s)
      : s_(std::move(s)),
        in_(moved_values<T>(s_.rank, s_.counts[s_.rank], s_.salt)),
        out_(stale<T>(std::accumulate(s_.counts.begin(), s_.counts.end(), std::size_t{0}))) {}
  void run() override { mpidist::all_gather_v(*s_.comm, in_.view(), out_.view(), s_.counts); }
  mpidist::Work start() override { return mpidist::all_gather_v_async(*s_.comm, in_.view(), out_.view(), s_.counts); }
  void check() override {
    const auto got = out_.read();
    std::size_t first = 0;
    for (int r = 0; r < s_.size; ++r) {
      check_values(got, first, s_.counts[r], [&](std::size_t i) { return moved<T>(r, i, s_.salt); }, false, what);
      first += s_.counts[r];
    }
  }

 private:
  Shape s_;
  TestBuffer<T> in_, out_;
};

// gather and scatter (blocking only: they have no non-blocking form).
template <class T>
class GatherScatter : public Call {
 public:
  GatherScatter(Shape s, bool gather) : s_(std::move(s)), gather_(gather) {
    const std::size_t all = s_.count * s_.size;
    if (gather_) {
      in_ = std::make_unique<TestBuffer<T>>(moved_values<T>(s_.rank, s_.count, s_.salt));
      out_ = std::make_unique<TestBuffer<T>>(stale<T>(s_.rank == s_.root ? all : 0));
    } else {
      const bool root = s_.rank == s_.root;
      in_ = std::make_unique<TestBuffer<T>>(root ? moved_values<T>(s_.root, all, s_.salt) : std::vector<T>());
      out_ = std::make_unique<TestBuffer<T>>(stale<T>(s_.count));
    }
  }
  void run() override {
    if (gather_) mpidist::gather(*s_.comm, in_->view(), out_->view(), s_.root);
    else mpidist::scatter(*s_.comm, in_->view(), out_->view(), s_.root);
  }
  mpidist::Work start() override {
    run();
    return {};
  }
  void check() override {
    const auto got = out_->read();
    if (!gather_) {
      const std::size_t first = static_cast<std::size_t>(s_.rank) * s_.count;
      check_values(got, 0, s_.count, [&](std::size_t i) { return moved<T>(s_.root, first + i, s_.salt); }, false, what);
    } else if (s_.rank == s_.root) {
      for (int r = 0; r < s_.size; ++r)
        check_values(got, r * s_.count, s_.count, [&](std::size_t i) { return moved<T>(r, i, s_.salt); }, false, what);
    }
  }

 private:
  Shape s_;
  bool gather_;
  std::unique_ptr<TestBuffer<T>> in_, out_;
};

// all_reduce_many of buffers of several types and sizes, in place: each checked as an all_reduce.
class AllReduceMany : public Call {
 public:
  void add(std::unique_ptr<Call> part, BufferView view) {
    parts_.push_back(std::move(part));
    views_.push_back(view);
  }
  const Communicator* comm = nullptr;
  ReduceOp op = ReduceOp::Sum;
  bool average = false;  // average() of one buffer instead
  void run() override {
    if (average) mpidist::average(*comm, views_.front());
    else mpidist::all_reduce_many(*comm, views_, op);
  }
  mpidist::Work start() override {
    return average ? mpidist::average_async(*comm, views_.front()) : mpidist::all_reduce_many_async(*comm, views_, op);
  }
  void check() override {
    for (auto& part : parts_) part->check();
  }

 private:
  std::vector<std::unique_ptr<Call>> parts_;
  std::vector<BufferView> views_;
};

// An all_reduce part of all_reduce_many: its buffer is the call's, in place.
template <class T>
class ReducedPart : public Call {
 public:
  ReducedPart(Shape s, std::string label)
      : s_(std::move(s)), buffer_(std::make_unique<TestBuffer<T>>(reduced_values<T>(s_, s_.count))) {
    what = std::move(label);
  }
  BufferView view() { return buffer_->view(); }
  void run() override {}
  mpidist::Work start() override { return {}; }
  void check() override { check_reduced(buffer_->read(), s_, 0, what); }

 private:
  Shape s_;
  std::unique_ptr<TestBuffer<T>> buffer_;
};

template <class F>
void with_type(DataType type, F&& f) {
  switch (type) {
    case DataType::Float16: return f.template operator()<mpidist::float16>();
    case DataType::BFloat16: return f.template operator()<mpidist::bfloat16>();
    case DataType::Float32: return f.template operator()<float>();
    case DataType::Float64: return f.template operator()<double>();
    case DataType::Int8: return f.template operator()<std::int8_t>();
    case DataType::UInt8: return f.template operator()<std::uint8_t>();
    case DataType::Int32: return f.template operator()<std::int32_t>();
    case DataType::Int64: return f.template operator()<std::int64_t>();
    case DataType::UInt32: return f.template operator()<std::uint32_t>();
    case DataType::UInt64: return f.template operator()<std::uint64_t>();
    case DataType::Complex64:
    case DataType::Complex128: return;  // not drawn: complex elements have tests of their own (test_complex_elements.cpp)
  }
}

constexpr DataType all_types[] = {DataType::Float16, DataType::BFloat16, DataType::Float32, DataType::Float64,
                                  DataType::Int8,    DataType::UInt8,    DataType::Int32,   DataType::Int64,
                                  DataType::UInt32,  DataType::UInt64};
constexpr ReduceOp all_ops[] = {ReduceOp::Sum, ReduceOp::Product, ReduceOp::Min, ReduceOp::Max, ReduceOp::Avg};
constexpr const char* kinds[] = {"all_reduce",   "broadcast",  "all_gather", "reduce_scatter", "reduce",
                                 "all_to_all",   "all_to_all_v", "all_gather_v", "gather",       "scatter",
                                 "all_reduce_many", "average"};

// The six communicators, made alike on every rank (a null one where this rank is not a member).
std::vector<std::pair<std::string, Communicator>> communicators() {
  const int me = mpidist::rank(), n = mpidist::world_size();
  std::vector<int> without_zero;
  for (int r = 1; r < n; ++r) without_zero.push_back(r);
  std::vector<std::pair<std::string, Communicator>> all;
  all.emplace_back("world", mpidist::world());
  all.emplace_back("halves backwards", mpidist::world().split(me % 2, -me));
  all.emplace_back("ranks 1..", n > 1 ? mpidist::new_group(without_zero) : mpidist::world().split(0));
  all.emplace_back("interleaved", mpidist::world().split((me / 2) % 2, (me * 7) % 5));
  all.emplace_back("pairs", n % 2 == 0 ? mpidist::new_subgroups(2) : mpidist::world().split(me / 2));
  all.emplace_back("node", mpidist::world().local());
  return all;
}

// Rounds a run draws unless MPIDIST_TEST_ROUNDS says: 2-10 s a run, 3-4 times that under ASan,
// where fewer rounds keep the sanitizer stage's runs short.
#if defined(__SANITIZE_ADDRESS__)
constexpr std::uint64_t default_rounds = 30;
#else
constexpr std::uint64_t default_rounds = 80;
#endif

// The uneven calls' counts are drawn for up to this many ranks.
constexpr std::size_t max_ranks = 8;

// Draws one call (every rank draws alike), and builds it where this rank is a member.
std::unique_ptr<Call> draw_call(Draw& draw, const std::vector<std::pair<std::string, Communicator>>& comms,
                                const std::string& where, std::size_t& comm_index) {
  comm_index = draw.below(comms.size());
  const auto& entry = comms[comm_index];
  const std::string& comm_name = entry.first;
  const Communicator& comm = entry.second;
  const std::string kind = kinds[draw.below(std::size(kinds))];
  DataType type = all_types[draw.below(std::size(all_types))];
  ReduceOp op = all_ops[draw.below(std::size(all_ops))];
  const std::size_t bytes = draw_bytes(draw);
  const std::uint64_t root_draw = draw.next(), salt = draw.next() % 100000;
  const bool in_place = draw.chance(50), fractions_drawn = draw.chance(50);
  std::vector<std::uint64_t> uneven(max_ranks * max_ranks);  // counts, drawn alike everywhere
  const bool sparse = draw.chance(30);
  for (auto& c : uneven) c = sparse && draw.chance(50) ? 0 : draw.next();
  const std::size_t parts = 1 + draw.below(5);
  std::vector<std::uint64_t> part_draws(parts * 2);
  for (auto& d : part_draws) d = draw.next();
  if (!comm) return nullptr;

  if (kind == "average" && type != DataType::Float32 && type != DataType::Float64) type = DataType::Float32;
  const int size = comm.size(), rank = comm.rank();
  const std::size_t elem = mpidist::size_of(type);
  const bool blocks = kind == "reduce_scatter" || kind == "all_to_all" || kind == "all_to_all_v";
  std::size_t count = bytes / elem / (blocks ? static_cast<std::size_t>(size) : 1);
  if (kind == "all_to_all_v" || kind == "all_gather_v") count = std::max<std::size_t>(count, 1);
  Shape s{&comm, rank, size, count, op, static_cast<int>(root_draw % static_cast<std::size_t>(size)), in_place,
          false, salt, {}};
  const auto cap = [&](std::uint64_t d) { return static_cast<std::size_t>(d % (2 * count + 1)); };
  if (kind == "all_to_all_v")
    for (int i = 0; i < size * size; ++i) s.counts.push_back(cap(uneven[i]));
  if (kind == "all_gather_v")
    for (int i = 0; i < size; ++i) s.counts.push_back(cap(uneven[i]));

  std::string what = where + ": " + kind + " on " + comm_name + " (" + comm.name() + ", " + std::to_string(size) +
                     " ranks), " + std::string(mpidist::to_string(type)) + " count " + std::to_string(count);
  std::unique_ptr<Call> call;
  if (kind == "all_reduce_many" || kind == "average") {
    auto many = std::make_unique<AllReduceMany>();
    many->comm = &comm;
    many->average = kind == "average";
    many->op = many->average ? ReduceOp::Avg : op;
    const std::size_t n_parts = many->average ? 1 : parts;
    for (std::size_t p = 0; p < n_parts; ++p) {
      const DataType part_type = many->average ? type : all_types[part_draws[2 * p] % std::size(all_types)];
      Shape part = s;
      part.op = many->op;
      part.count = part_draws[2 * p + 1] % (bytes / mpidist::size_of(part_type) + 1);
      part.salt = salt + p;
      with_type(part_type, [&]<class T>() {
        part.fractions = takes_fractions<T> && fractions_drawn;
        auto reduced_part = std::make_unique<ReducedPart<T>>(
            part, what + ", part " + std::to_string(p) + " " + std::string(mpidist::to_string(part_type)) + " count " +
                      std::to_string(part.count) + " " + std::string(mpidist::to_string(part.op)));
        const BufferView view = reduced_part->view();
        many->add(std::move(reduced_part), view);
      });
    }
    call = std::move(many);
  } else {
    with_type(type, [&]<class T>() {
      s.fractions = takes_fractions<T> && fractions_drawn;
      if (kind == "all_reduce") call = std::make_unique<AllReduce<T>>(s);
      else if (kind == "broadcast") call = std::make_unique<Broadcast<T>>(s);
      else if (kind == "all_gather") call = std::make_unique<AllGather<T>>(s);
      else if (kind == "reduce_scatter") call = std::make_unique<ReduceScatter<T>>(s);
      else if (kind == "reduce") call = std::make_unique<Reduce<T>>(s);
      else if (kind == "all_to_all" || kind == "all_to_all_v") call = std::make_unique<AllToAll<T>>(s);
      else if (kind == "all_gather_v") call = std::make_unique<AllGatherV<T>>(s);
      else call = std::make_unique<GatherScatter<T>>(s, kind == "gather");
    });
    const bool reduces = kind == "all_reduce" || kind == "reduce_scatter" || kind == "reduce";
    if (reduces) what += " " + std::string(mpidist::to_string(op)) + (s.fractions ? " with fractions" : "");
    if (kind == "broadcast" || kind == "reduce" || kind == "gather" || kind == "scatter")
      what += ", root " + std::to_string(s.root);
    if (kind == "all_reduce") what += in_place ? ", in place" : ", out of place";
  }
  call->what = what;
  return call;
}

TEST_F(Differential, EveryDrawnCallGivesTheComputedResult) {
  const std::uint64_t seed = setting("MPIDIST_TEST_SEED", 1), rounds = setting("MPIDIST_TEST_ROUNDS", default_rounds);
  const bool verbose = setting("MPIDIST_TEST_VERBOSE", 0) != 0;  // each call on each rank, before it starts
  ASSERT_LE(static_cast<std::size_t>(mpidist::world_size()), max_ranks) << "the draws are made for up to 8 ranks";
  const auto comms = communicators();
  Draw draw(seed);
  for (std::uint64_t round = 0; round < rounds; ++round) {
    const std::string where = "seed " + std::to_string(seed) + " round " + std::to_string(round);
    // A batch of 1-4 calls, each blocking or started; the started ones waited in a drawn order.
    const std::size_t batch = draw.chance(60) ? 1 : 2 + draw.below(3);
    std::vector<std::unique_ptr<Call>> calls;
    std::vector<mpidist::Work> works;
    bool failed = false;
    const auto wait_for = [&](std::vector<std::size_t> order) {
      for (const auto w : order) {
        try {
          works[w].wait();
        } catch (const mpidist::Error& e) {
          ADD_FAILURE() << where << ": wait: " << e.what();
          failed = true;
        }
      }
    };
    std::size_t started_on = comms.size();  // the communicator of the calls started and not waited for
    for (std::size_t b = 0; b < batch; ++b) {
      const bool async = draw.chance(50);
      std::size_t comm_index = 0;
      auto call = draw_call(draw, comms, where + " call " + std::to_string(b) + (async ? " (async)" : ""), comm_index);
      // Device memory runs on the emulation, which moves a rank's queued device work only while
      // that rank waits for it (no GPU runs it in the background): a rank that went on into a call
      // on another communicator would leave its peers waiting for that work. So there the calls
      // started so far are waited for first (every rank alike, whichever communicators it is in).
      if (on_device() && started_on != comms.size() && started_on != comm_index) {
        std::vector<std::size_t> in_order(works.size());
        std::iota(in_order.begin(), in_order.end(), std::size_t{0});
        wait_for(in_order);
      }
      if (async) started_on = comm_index;
      if (!call || failed) continue;
      if (verbose) std::fprintf(stderr, "[rank %d] %s\n", mpidist::rank(), call->what.c_str());
      try {
        if (async) works.push_back(call->start());
        else call->run();
        calls.push_back(std::move(call));
      } catch (const mpidist::Error& e) {
        ADD_FAILURE() << call->what << ": " << e.what();
        failed = true;
      }
    }
    std::vector<std::size_t> order(works.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    // The waiting order, drawn alike everywhere from a number every rank draws.
    std::shuffle(order.begin(), order.end(), std::mt19937_64(draw.next()));
    wait_for(order);
    // Every rank stops at the first round that failed anywhere (its checks' exchanges included).
    const auto anywhere = [&](bool mine) {
      int any = mine ? 1 : 0;
      MPI_Allreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_MAX, comms[0].second.native());
      return any != 0;
    };
    if (anywhere(failed)) break;
    for (auto& call : calls) call->check();
    if (anywhere(HasFailure())) break;
  }
}

}  // namespace
