#include "call_checks.hpp"

#include <array>
#include <cstddef>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "context.hpp"
#include "group.hpp"
#include "outcome.hpp"
#include "settings.hpp"
#include "device_backend.hpp"
#include "mpi_check.hpp"
#include "mpidist/error.hpp"
#include "mpidist/guards.hpp"
#include "timeout.hpp"

namespace mpidist::detail {
namespace {

constexpr std::array<const char*, 5> kind_names{"all_reduce", "broadcast", "all_gather", "reduce_scatter", "reduce"};

// What every rank must agree on; field 0 says whether the rank's own arguments were bad.
enum Field { Failed, Kind, Count, Dtype, Op, Root, Route, field_count };
constexpr std::array<const char*, field_count> field_names{"", "collective", "element count", "element type",
                                                           "reduction", "root", "backend"};
using Shape = std::array<std::int64_t, field_count>;
static_assert(sizeof(Shape) == field_count * sizeof(std::int64_t), "gathered as one array of int64");

std::string describe(Field field, std::int64_t value) {
  switch (field) {
    case Kind: return kind_names[static_cast<std::size_t>(value)];
    case Dtype: return std::string(to_string(static_cast<DataType>(value)));
    case Op: return std::string(to_string(static_cast<ReduceOp>(value)));
    case Route: return std::string(transports()[static_cast<std::size_t>(value)].name);
    default: return std::to_string(value);
  }
}

// The slow path, taken only when the fast check found a difference: gather every rank's shape and
// name who differs in the first field that differs.
[[noreturn]] void report_mismatch(const Call& call, MPI_Comm comm, const Shape& mine) {
  const auto ranks = static_cast<std::size_t>(call.size);
  std::vector<Shape> all(ranks);
  MPIDIST_MPI_CHECK(MPI_Allgather(mine.data(), field_count, MPI_INT64_T, all.data(), field_count, MPI_INT64_T, comm));
  for (std::size_t f = Kind; f < field_count; ++f) {
    bool differs = false;
    for (const Shape& other : all) differs |= other[f] != all[0][f];
    if (!differs) continue;
    std::string detail = std::string("ranks disagree on the ") + field_names[f] + ":";
    for (std::size_t r = 0; r < ranks; ++r)
      detail += std::string(r ? "," : "") + " rank " + std::to_string(r) + " has " + describe(static_cast<Field>(f), all[r][f]);
    throw Error(call.name, detail);
  }
  throw Error(call.name, "ranks disagree on the call");  // unreachable: the fast check saw a difference
}

// NCCL (and MPI) support in place only in exact layouts; any other overlap races inside the
// kernels, or is undefined for MPI. Ranges in bytes, [begin, end).
void check_overlap(CollectiveKind kind, const char* name, const BufferView& in, const BufferView& out, int rank) {
  const auto* in_begin = static_cast<const std::byte*>(in.data());
  const auto* out_begin = static_cast<const std::byte*>(out.data());
  const std::size_t in_bytes = in.bytes(), out_bytes = out.bytes();
  if (in_begin == nullptr || out_begin == nullptr || in_bytes == 0 || out_bytes == 0) return;
  if (in_begin >= out_begin + out_bytes || out_begin >= in_begin + in_bytes) return;
  const auto offset = static_cast<std::size_t>(rank);
  const char* layout = "in == out";
  bool exact = in_begin == out_begin;
  if (kind == CollectiveKind::AllGather) {
    exact = in_begin == out_begin + offset * in_bytes;
    layout = "in == out + rank x in's size";
  } else if (kind == CollectiveKind::ReduceScatter) {
    exact = out_begin == in_begin + offset * out_bytes;
    layout = "out == in + rank x out's size";
  }
  if (exact) return;
  char text[160];
  std::snprintf(text, sizeof text, "in [%p, +%zu bytes) and out [%p, +%zu bytes) overlap", static_cast<const void*>(in_begin),
                in_bytes, static_cast<const void*>(out_begin), out_bytes);
  throw Error(name, std::string(text) + " but are not the in-place layout (" + layout + ", rank " +
                        std::to_string(rank) + "); any other overlap is a data race: use separate buffers");
}

}  // namespace

void check_local_arguments(CollectiveKind kind, const char* name, const BufferView& in, const BufferView& out,
                           ReduceOp op, int world_size, int rank, int root) {
  if (root < 0 || root >= world_size)
    throw Error(name, "root " + std::to_string(root) + " out of range for " +
                          (MainProcessContext::depth() > 0 ? "the one rank of a MainProcessContext" : "world size " + std::to_string(world_size)));
  if (op == ReduceOp::And || op == ReduceOp::Or)
    throw Error(name, "reduction '" + std::string(to_string(op)) +
                          "' applies to object reductions only; tensors take sum, prod, min, max or avg");
  if (in.dtype() != out.dtype())
    throw Error(name, "in has element type " + std::string(to_string(in.dtype())) + " but out has " +
                          std::string(to_string(out.dtype())));
  const auto n = static_cast<std::size_t>(world_size);
  std::size_t expected = in.count();
  const char* rule = "in's count";  // not a std::string: this runs on every call, allocation-free
  if (kind == CollectiveKind::AllGather) expected = in.count() * n, rule = "world size x in's count";
  if (kind == CollectiveKind::ReduceScatter) {
    if (in.count() % n != 0)
      throw Error(name, "in has " + std::to_string(in.count()) + " elements, not a multiple of the world size " +
                            std::to_string(world_size));
    expected = in.count() / n, rule = "in's count / world size";
  }
  const bool out_used = kind != CollectiveKind::Reduce || rank == root;
  if (out_used && out.count() != expected)
    throw Error(name, "out has " + std::to_string(out.count()) + " elements but must have " + std::to_string(expected) +
                          " (" + rule + ")");
  const bool out_empty = !out_used && out.data() == nullptr;
  if (!out_empty && (in.memory() != out.memory() || in.device() != out.device()) && in.count() > 0)
    throw Error(name, "in and out must live in the same memory (host, or the same CUDA device); in is on " +
                          std::string(in.device() < 0 ? "host" : "cuda:" + std::to_string(in.device())) +
                          ", out on " + (out.device() < 0 ? "host" : "cuda:" + std::to_string(out.device())));
  if (out_used) check_overlap(kind, name, in, out, rank);
}

void agree_on_call(const Call& call, const Transport* transport, std::exception_ptr local) {
  if (call.size == 1 || !settings(call.name).validate) {
    if (local) std::rethrow_exception(local);
    return;
  }
  Shape mine{};
  mine[Failed] = local ? 1 : 0;
  if (!local)
    mine = {0, static_cast<std::int64_t>(call.kind), static_cast<std::int64_t>(call.count),
            static_cast<std::int64_t>(call.dtype), static_cast<std::int64_t>(call.op), call.root,
            static_cast<std::int64_t>(transport - transports().data())};
  // One small reduction decides: max(x) == -max(-x) for every field means all ranks agree.
  std::array<std::int64_t, 2 * field_count> both{};
  for (std::size_t f = 0; f < field_count; ++f) {
    both[f] = mine[f];
    both[field_count + f] = -mine[f];
  }
  const MPI_Comm control = call.group->control;
  const Deadline deadline(call.name, call.group);
  MPI_Request request = MPI_REQUEST_NULL;
  MPIDIST_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, both.data(), 2 * field_count, MPI_INT64_T, MPI_MAX, control, &request));
  wait_or_time_out(call.name, deadline, request, "the other ranks to join the collective");
  if (both[Failed] != 0) {
    agree_on_outcome(control, call.name, local);  // throws on every rank
    throw Error(call.name, "another rank failed");  // not reached; keeps the contract visible
  }
  for (std::size_t f = Kind; f < field_count; ++f)
    if (both[f] != -both[field_count + f]) report_mismatch(call, control, mine);
}

}  // namespace mpidist::detail
