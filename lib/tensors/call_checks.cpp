// Every rank's own argument checks, and the ranks' agreement on a tensor call.
#include "tensors/call_checks.hpp"

#include <array>
#include <cstddef>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/complex_elements.hpp"
#include "core/context.hpp"
#include "core/device_backend.hpp"
#include "core/group.hpp"
#include "core/mpi_check.hpp"
#include "core/outcome.hpp"
#include "core/settings.hpp"
#include "watch/agreement.hpp"
#include "watch/flight_recorder.hpp"
#include "watch/timeout.hpp"
#include "mpidist/error.hpp"
#include "mpidist/guards.hpp"

namespace mpidist::detail {
namespace {

// The fields of a tensor call's record that the ranks must share, as the Error names them.
constexpr std::array<std::pair<CallRecord::Field, const char*>, 5> compared{{{CallRecord::Count, "element count"},
                                                                          {CallRecord::Dtype, "element type"},
                                                                          {CallRecord::Reduce, "reduction"},
                                                                          {CallRecord::Root, "root"},
                                                                          {CallRecord::Route, "backend"}}};

std::string describe(CallRecord::Field field, std::int64_t value) {
  switch (field) {
    case CallRecord::Dtype: return std::string(to_string(static_cast<DataType>(value)));
    case CallRecord::Reduce: return std::string(to_string(static_cast<ReduceOp>(value)));
    case CallRecord::Route: return std::string(transports()[static_cast<std::size_t>(value)].name);
    default: return std::to_string(value);
  }
}

// The slow path, taken only when the agreement found a difference: gather every rank's record and
// name who differs in the first field that differs. Every rank raises it, so they stay in step.
[[noreturn]] void report_mismatch(const Call& call, const CallRecord& mine) {
  const auto ranks = static_cast<std::size_t>(call.size);
  std::vector<CallRecord> all(ranks, mine);
  MPIDIST_MPI_CHECK(MPI_Allgather(mine.value.data(), CallRecord::field_count, MPI_INT64_T, all.data(),
                                  CallRecord::field_count, MPI_INT64_T, call.group->control));
  call.group->failed_in_step = true;
  for (const auto& [f, name] : compared) {
    bool differs = false;
    for (const CallRecord& other : all) differs |= other[f] != all[0][f];
    if (!differs) continue;
    std::string detail = std::string("ranks disagree on the ") + name + ":";
    for (std::size_t r = 0; r < ranks; ++r)
      detail += std::string(r ? "," : "") + " rank " + std::to_string(r) + " has " + describe(f, all[r][f]);
    throw Error(call.name, detail);
  }
  throw Error(call.name, "ranks disagree on the call");  // unreachable: the agreement saw a difference
}

// The element types whose bits the bitwise reductions combine.
bool is_integer(DataType dtype) noexcept {
  return dtype == DataType::Int8 || dtype == DataType::UInt8 || dtype == DataType::Int32 || dtype == DataType::Int64 ||
         dtype == DataType::UInt32 || dtype == DataType::UInt64;
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
                          "' applies to object reductions only; tensors take sum, prod, min, max or avg (on flags of 0 and "
                          "1, max is a logical or and min a logical and)");
  if (reduces(kind) && bitwise(op) && !is_integer(in.dtype()))
    throw Error(name, "reduction '" + std::string(to_string(op)) + "' combines the bits of integers (int8 to uint64), not of " +
                          std::string(to_string(in.dtype())) + " tensors");
  if (reduces(kind) && is_complex(in.dtype()) && op != ReduceOp::Sum && op != ReduceOp::Avg)
    throw Error(name, "reduction '" + std::string(to_string(op)) + "' is not defined on " +
                          std::string(to_string(in.dtype())) +
                          " tensors, which take sum or avg (min and max: complex numbers have no order; for a "
                          "product pass a function, all_reduce(v, std::multiplies<>{}))");
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

Fingerprint fingerprint_of(const Call& call) {
  const bool rooted = call.kind == CollectiveKind::Broadcast || call.kind == CollectiveKind::Reduce;
  return Fingerprint{call.name, call.count, 0, static_cast<int>(call.dtype), rooted ? call.root : -1,
                     reduces(call) ? static_cast<int>(call.op) : -1, nullptr, 0, false};
}

void agree_on_call(const Call& call, const Transport* transport, std::exception_ptr local) {
  if (call.size == 1) {
    if (local) std::rethrow_exception(local);
    return;
  }
  if (!settings(call.name).validates(call.device >= 0)) {
    // Nobody else checked this rank's arguments: whether the ranks are still in step is voted.
    if (local) vote_on_local_failure(*call.group, fingerprint_of(call), local);
    return;
  }
  CallRecord mine(call.name, call.group->sequence);
  mine[CallRecord::Failed] = local ? 1 : 0;
  if (!local) {
    mine[CallRecord::Count] = static_cast<std::int64_t>(call.count);
    mine[CallRecord::Dtype] = static_cast<std::int64_t>(call.dtype);
    mine[CallRecord::Reduce] = static_cast<std::int64_t>(call.op);
    mine[CallRecord::Root] = call.root;
    mine[CallRecord::Route] = static_cast<std::int64_t>(transport - transports().data());
  }
  const Verdict verdict = agree_on_record(*call.group, fingerprint_of(call), mine);
  if (verdict.any_failed()) throw_agreed_failure(*call.group, call.name, local);
  for (const auto& [f, name] : compared)
    if (!verdict.same(f)) report_mismatch(call, mine);
}

}  // namespace mpidist::detail
