// The MPI path. MPI counts are ints, so every collective is split into pieces of at most
// max_count() elements (INT_MAX unless MPIDIST_MPI_MAX_COUNT lowers it, which a test run does to
// reach the chunked code with small buffers).
#include "mpi/host_collectives.hpp"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/group.hpp"
#include "core/mpi_check.hpp"
#include "mpidist/error.hpp"

namespace mpidist::detail::mpi {
namespace {

const char* at(const void* base, std::size_t elements, std::size_t element_size) {
  return static_cast<const char*>(base) + elements * element_size;
}
char* at(void* base, std::size_t elements, std::size_t element_size) {
  return static_cast<char*>(base) + elements * element_size;
}

// Calls piece(offset, n) for consecutive pieces of [0, count) of at most `limit` elements.
template <class F>
void in_pieces(std::size_t count, std::size_t limit, F&& piece) {
  for (std::size_t offset = 0; offset < count; offset += limit) piece(offset, static_cast<int>(std::min(limit, count - offset)));
}

// all_gather's copy of a rank's own block, as a message to itself on the group's control channel
// (whose other tags are monitored_barrier's, 7299 and up).
constexpr int self_copy_tag = 7298;

struct Plan {
  MPI_Comm comm;
  MPI_Datatype type;
  MPI_Op op;
  std::size_t size;   // bytes per element
  std::size_t limit;  // elements per MPI call
};

void all_reduce(const Call& c, const Plan& p) {
  const bool in_place = c.in == c.out;
  in_pieces(c.count, p.limit, [&](std::size_t off, int n) {
    MPIDIST_MPI_CHECK(MPI_Allreduce(in_place ? MPI_IN_PLACE : at(c.in, off, p.size), at(c.out, off, p.size), n,
                                    p.type, p.op, p.comm));
  });
}

void broadcast(const Call& c, const Plan& p) {
  in_pieces(c.count, p.limit, [&](std::size_t off, int n) {
    MPIDIST_MPI_CHECK(MPI_Bcast(at(c.out, off, p.size), n, p.type, c.root, p.comm));
  });
}

// MPICH 4.0.2 (Debian bookworm's) crashes in MPI_Reduce with MPI_IN_PLACE at a root other than 0
// once a message passes a few KiB (its reduce-scatter-gather algorithm): there the root sends a
// copy of its data instead.
#ifdef MPICH_VERSION
constexpr bool in_place_reduce_needs_root_zero = true;
#else
constexpr bool in_place_reduce_needs_root_zero = false;
#endif

void reduce(const Call& c, const Plan& p) {
  const bool root = c.rank == c.root;
  const bool in_place = c.in == c.out && root;
  const bool copy = in_place && c.root != 0 && in_place_reduce_needs_root_zero;
  std::vector<char> scratch(copy ? std::min(c.count, p.limit) * p.size : 0);
  // The receive buffer means nothing off the root: none is passed there.
  in_pieces(c.count, p.limit, [&](std::size_t off, int n) {
    const void* send = in_place ? MPI_IN_PLACE : at(c.in, off, p.size);
    if (copy) send = std::memcpy(scratch.data(), at(c.in, off, p.size), static_cast<std::size_t>(n) * p.size);
    MPIDIST_MPI_CHECK(MPI_Reduce(send, root ? at(c.out, off, p.size) : nullptr, n, p.type, p.op, c.root, p.comm));
  });
}

void all_gather(const Call& c, const Plan& p) {
  if (c.count <= p.limit) {
    const int n = static_cast<int>(c.count);
    // nccl-tests' in-place layout (in is this rank's block of out) must reach MPI as MPI_IN_PLACE:
    // MPI forbids aliased send and receive buffers.
    const bool in_place = c.in == at(c.out, static_cast<std::size_t>(c.rank) * c.count, p.size);
    MPIDIST_MPI_CHECK(MPI_Allgather(in_place ? MPI_IN_PLACE : c.in, n, p.type, c.out, n, p.type, p.comm));
    return;
  }
  // Blocks too large for one int count: every rank broadcasts its block in pieces. Its own block
  // is copied with a message to itself, which works for device memory under CUDA-aware MPI too.
  const std::size_t block = c.count;
  for (int r = 0; r < c.size; ++r) {
    const std::size_t first = static_cast<std::size_t>(r) * block;
    in_pieces(block, p.limit, [&](std::size_t off, int n) {
      void* buffer = r == c.rank ? const_cast<char*>(at(c.in, off, p.size)) : at(c.out, first + off, p.size);
      MPIDIST_MPI_CHECK(MPI_Bcast(buffer, n, p.type, r, p.comm));
    });
  }
  // On the library's own channel: on the user's, a pending irecv(any_source, any_tag) would match it.
  in_pieces(block, p.limit, [&](std::size_t off, int n) {
    MPIDIST_MPI_CHECK(MPI_Sendrecv(at(c.in, off, p.size), n, p.type, c.rank, self_copy_tag,
                                   at(c.out, static_cast<std::size_t>(c.rank) * block + off, p.size), n, p.type,
                                   c.rank, self_copy_tag, c.group->control, MPI_STATUS_IGNORE));
  });
}

void reduce_scatter(const Call& c, const Plan& p) {
  if (c.count <= p.limit) {
    // In place (out is this rank's block of in): MPI_IN_PLACE leaves the result at the start of
    // in, from where it moves to this rank's block. MPI forbids aliased buffers otherwise.
    const bool in_place = c.out == at(c.in, static_cast<std::size_t>(c.rank) * c.count, p.size);
    void* full = const_cast<void*>(c.in);
    MPIDIST_MPI_CHECK(MPI_Reduce_scatter_block(in_place ? MPI_IN_PLACE : c.in, in_place ? full : c.out,
                                               static_cast<int>(c.count), p.type, p.op, p.comm));
    if (in_place && c.rank != 0) std::memmove(c.out, full, c.count * p.size);
    return;
  }
  // Blocks too large for one int count: block r is reduced onto rank r, in pieces.
  for (int r = 0; r < c.size; ++r) {
    const std::size_t first = static_cast<std::size_t>(r) * c.count;
    in_pieces(c.count, p.limit, [&](std::size_t off, int n) {
      MPIDIST_MPI_CHECK(MPI_Reduce(at(c.in, first + off, p.size), at(c.out, off, p.size), n, p.type, p.op, r, p.comm));
    });
  }
}

}  // namespace

// Read once: getenv scans the whole environment, which cost more than the rest of a small call.
std::size_t max_count() {
  static const std::size_t limit = [] {
    const char* text = std::getenv("MPIDIST_MPI_MAX_COUNT");
    if (text == nullptr || *text == '\0') return static_cast<std::size_t>(INT_MAX);
    const long long value = std::atoll(text);
    if (value < 1 || value > INT_MAX)
      throw Error("tensor collective", std::string("MPIDIST_MPI_MAX_COUNT must be in [1, INT_MAX], got '") + text + "'");
    return static_cast<std::size_t>(value);
  }();
  return limit;
}

bool needs_host_arithmetic(const Call& call) {
  if (!reduces(call)) return false;
  if (call.op == ReduceOp::Avg || call.dtype == DataType::Float16 || call.dtype == DataType::BFloat16) return true;
  // Unsigned min/max on an MPI that compares them as signed run mpidist's own op, on the host.
  const MPI_Op op = reduction(call.op, call.dtype);
  return op != MPI_SUM && op != MPI_PROD && op != MPI_MIN && op != MPI_MAX;
}

void run(const Call& call) {
  Plan plan{call.group->comm, datatype(call.dtype), MPI_OP_NULL, size_of(call.dtype), max_count()};
  if (reduces(call)) plan.op = reduction(call.op, call.dtype);
  switch (call.kind) {
    case CollectiveKind::AllReduce: all_reduce(call, plan); break;
    case CollectiveKind::Broadcast: broadcast(call, plan); break;
    case CollectiveKind::Reduce: reduce(call, plan); break;
    case CollectiveKind::AllGather: all_gather(call, plan); break;
    case CollectiveKind::ReduceScatter: reduce_scatter(call, plan); break;
  }
  // Avg is the sum divided by the world size, computed where the sum landed.
  if (call.op == ReduceOp::Avg && reduces(call) && writes_output(call))
    divide(call.out, call.count, call.dtype, call.size);
}

}  // namespace mpidist::detail::mpi
