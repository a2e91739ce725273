// all_reduce_many: many buffers in as few collectives as possible. The steps:
//   1. Every rank checks its list (each buffer as an in-place all_reduce would, and all buffers in
//      one memory) and, with validation on, the ranks agree on the list's shape (number of buffers,
//      every count and type, reduction, memory and route) before any data moves, so a bad list on
//      one rank is an Error on every rank.
//   2. Host memory: buffers are grouped by type (in order of first appearance) and cut into
//      batches of at most MPIDIST_FUSION_BYTES. A batch that the shared-memory path takes is copied
//      straight into the node's segment; any other is packed into the group's fusion buffer, run
//      through the transport table as one all_reduce, and unpacked.
//   3. Device memory over NCCL: one ncclGroupStart/End around one call per buffer.
// Every rank derives the same batches from the same agreed list, so the collectives pair up.
#include "tensors/fusion.hpp"

#include <algorithm>
#include <array>
#include <optional>
#include <cstring>
#include <string>
#include <vector>

#include "core/async_lane.hpp"
#include "core/context.hpp"
#include "core/device_backend.hpp"
#include "core/group.hpp"
#include "core/mpi_check.hpp"
#include "core/outcome.hpp"
#include "core/settings.hpp"
#include "shm/collectives.hpp"
#include "shm/segment.hpp"
#include "tensors/call_checks.hpp"
#include "tensors/issue.hpp"
#include "tensors/transports.hpp"
#include "watch/agreement.hpp"
#include "watch/call_scope.hpp"
#include "watch/timeout.hpp"
#include "mpidist/error.hpp"
#include "mpidist/guards.hpp"

namespace mpidist::detail {
namespace {

// The device of a list's first non-empty buffer (-1: host memory, or no elements at all).
int device_of_list(std::span<const BufferView> buffers) {
  const auto non_empty = std::find_if(buffers.begin(), buffers.end(), [](const BufferView& b) { return b.count() > 0; });
  return non_empty == buffers.end() ? -1 : non_empty->device();
}

// What the ranks agree on, as the fields of the list's CallRecord.
constexpr std::array<std::pair<CallRecord::Field, const char*>, 5> compared{
    {{CallRecord::Count, "number of buffers"},
     {CallRecord::Detail, "buffer counts and types"},
     {CallRecord::Reduce, "reduction"},
     {CallRecord::Dtype, "memory"},
     {CallRecord::Route, "backend"}}};

struct List {
  std::span<const BufferView> buffers;
  int device = -1;                      // of every non-empty buffer; -1 for host memory
  const Transport* transport = nullptr;  // device lists: the route of every buffer
};

Call call_for(Group& group, const char* name, const BufferView& b, ReduceOp op, Stream stream, int size, int rank) {
  return Call{CollectiveKind::AllReduce, name, b.data(), b.data(), b.count(), b.dtype(), op, 0, stream, &group,
              size, rank, b.device()};
}

void check_list(Group& group, const char* name, List& list, ReduceOp op, Stream stream, int size, int rank) {
  const BufferView* first = nullptr;
  for (std::size_t i = 0; i < list.buffers.size(); ++i) {
    const BufferView& b = list.buffers[i];
    check_local_arguments(CollectiveKind::AllReduce, name, b, b, op, size, rank, 0);
    if (b.count() == 0) continue;
    if (first == nullptr) first = &b, list.device = b.device();
    if (b.device() != list.device) {
      const auto where = [](int device) { return device < 0 ? std::string("host") : "cuda:" + std::to_string(device); };
      throw Error(name, "all buffers must live in one memory: buffer 0 of the non-empty ones is on " +
                            where(list.device) + " but buffer " + std::to_string(i) + " on " + where(b.device()));
    }
  }
  if (list.device >= 0) {
    const Call call = call_for(group, name, *first, op, stream, size, rank);
    list.transport = &choose_transport(call);
    if (list.transport->check != nullptr) list.transport->check(call);
  }
}

Fingerprint fingerprint_of(const char* name, std::span<const BufferView> buffers, ReduceOp op) {
  return Fingerprint{name, buffers.size(), 0, -1, -1, static_cast<int>(op), nullptr, 0, false};
}

CallRecord record_of(const Group& group, const char* name, const List& list, ReduceOp op) {
  std::string layout;
  layout.reserve(list.buffers.size() * 9);
  for (const auto& b : list.buffers) {
    const std::uint64_t count = b.count();
    layout.push_back(static_cast<char>(b.dtype()));
    layout.append(reinterpret_cast<const char*>(&count), sizeof count);
  }
  CallRecord r(name, group.sequence);
  r[CallRecord::Count] = static_cast<std::int64_t>(list.buffers.size());
  r[CallRecord::Detail] = static_cast<std::int64_t>(fnv1a(layout) >> 1);
  r[CallRecord::Reduce] = static_cast<std::int64_t>(op);
  r[CallRecord::Dtype] = list.device >= 0 ? 1 : 0;
  r[CallRecord::Route] = list.transport ? static_cast<std::int64_t>(list.transport - transports().data()) : -1;
  return r;
}

// The ranks agree on the list (the record every agreement sends); the slow path names the ranks'
// values. A failure or a difference is an Error on every rank: they stay in step.
void agree_on_list(Group& group, const char* name, std::span<const BufferView> buffers, const List& list,
                   ReduceOp op, std::exception_ptr local) {
  const Fingerprint call = fingerprint_of(name, buffers, op);
  CallRecord mine = local ? CallRecord(name, group.sequence) : record_of(group, name, list, op);
  mine[CallRecord::Failed] = local ? 1 : 0;
  const Verdict verdict = agree_on_record(group, call, mine);
  if (verdict.any_failed()) throw_agreed_failure(group, name, local);
  for (const auto& [f, field_name] : compared) {
    if (verdict.same(f)) continue;
    std::vector<CallRecord> all(static_cast<std::size_t>(group.topology.size), mine);
    MPIDIST_MPI_CHECK(MPI_Allgather(mine.value.data(), CallRecord::field_count, MPI_INT64_T, all.data(),
                                    CallRecord::field_count, MPI_INT64_T, group.control));
    std::string detail = std::string("ranks disagree on the ") + field_name + ":";
    for (std::size_t r = 0; r < all.size(); ++r) {
      std::string value = std::to_string(all[r][f]);
      if (f == CallRecord::Detail) value = "list " + std::to_string(static_cast<std::uint64_t>(all[r][f]) % 100000);
      if (f == CallRecord::Reduce) value = std::string(to_string(static_cast<ReduceOp>(all[r][f])));
      if (f == CallRecord::Dtype) value = all[r][f] ? "device" : "host";
      detail += std::string(r ? "," : "") + " rank " + std::to_string(r) + " has " + value;
    }
    group.failed_in_step = true;
    throw Error(name, detail);
  }
}

// One batch of same-typed host buffers as one all_reduce; `index[i]` is piece i's place in the
// list, for the gate. Through the segment the gate is asked chunk by chunk (for the piece that
// holds the chunk's end), elsewhere once for the whole batch.
void run_batch(Group& group, const char* name, const std::vector<shm::Piece>& pieces,
               const std::vector<std::size_t>& index, DataType dtype, ReduceOp op, int size, int rank,
               const ListGate* gate) {
  std::size_t bytes = 0;
  for (const auto& p : pieces) bytes += p.bytes;
  Call call{CollectiveKind::AllReduce, name, pieces[0].in, pieces[0].out, bytes / size_of(dtype), dtype, op, 0,
            nullptr, &group, size, rank, -1};
  if (gate && (pieces.size() == 1 || !shm::accepts(call, true))) (*gate)(index.back());
  // first_accepting: this may run on the lane while the caller issues more on the group.
  if (pieces.size() == 1) return first_accepting(call).run(call);
  if (shm::accepts(call, true)) {
    if (!gate) return shm::all_reduce_pieces(group, name, pieces, dtype, op);
    std::size_t piece = 0, end_of_piece = pieces[0].bytes;
    const shm::InputGate chunk_gate = [&](std::size_t end) {
      while (end_of_piece < end) end_of_piece += pieces[++piece].bytes;
      (*gate)(index[piece]);
    };
    return shm::all_reduce_pieces(group, name, pieces, dtype, op, &chunk_gate);
  }
  if (!group.fusion) group.fusion = std::make_shared<std::vector<std::byte>>();
  auto& buffer = *static_cast<std::vector<std::byte>*>(group.fusion.get());
  if (buffer.size() < bytes) buffer.resize(bytes);
  std::size_t at = 0;
  for (const auto& p : pieces) std::memcpy(buffer.data() + at, p.in, p.bytes), at += p.bytes;
  call.in = call.out = buffer.data();
  first_accepting(call).run(call);
  at = 0;
  for (const auto& p : pieces) std::memcpy(p.out, buffer.data() + at, p.bytes), at += p.bytes;
}

void run_host(Group& group, const char* name, std::span<const BufferView> buffers, ReduceOp op, int size, int rank,
              const ListGate* gate = nullptr) {
  const std::size_t limit = settings(name).fusion_bytes;
  std::vector<DataType> types;
  for (const auto& b : buffers)
    if (b.count() > 0 && std::find(types.begin(), types.end(), b.dtype()) == types.end()) types.push_back(b.dtype());
  std::vector<shm::Piece> pieces;
  std::vector<std::size_t> index;
  for (const DataType dtype : types) {
    std::size_t bytes = 0;
    for (std::size_t i = 0; i < buffers.size(); ++i) {
      const BufferView& b = buffers[i];
      if (b.count() == 0 || b.dtype() != dtype) continue;
      if (!pieces.empty() && bytes + b.bytes() > limit) {
        run_batch(group, name, pieces, index, dtype, op, size, rank, gate);
        pieces.clear(), index.clear(), bytes = 0;
      }
      pieces.push_back({b.data(), b.data(), b.bytes()});
      index.push_back(i);
      bytes += b.bytes();
    }
    run_batch(group, name, pieces, index, dtype, op, size, rank, gate);
    pieces.clear(), index.clear();
  }
}

// A device list's non-empty buffers, one call each.
std::vector<Call> device_calls(Group& group, const char* name, const List& list, ReduceOp op, Stream stream, int size,
                               int rank) {
  std::vector<Call> calls;
  for (const auto& b : list.buffers)
    if (b.count() > 0) calls.push_back(call_for(group, name, b, op, stream, size, rank));
  return calls;
}

void run_device(Group& group, const char* name, const List& list, ReduceOp op, Stream stream, int size, int rank) {
  const std::vector<Call> calls = device_calls(group, name, list, op, stream, size, rank);
  if (list.transport->run == &run_nccl) return run_nccl_many(calls);
  for (const Call& call : calls) list.transport->run(call);
}

// Step 1: every rank's checks and the ranks' agreement on the list; throws the call's Error.
void prepare_list(Group& group, const char* name, List& list, ReduceOp op, Stream stream, int size, int rank) {
  const auto local = capture([&] { check_list(group, name, list, op, stream, size, rank); });
  // Whether to agree first depends on the memory of the first non-empty buffer, known whether or
  // not this rank's checks failed, so every rank with the same list decides alike.
  const int device = device_of_list(list.buffers);
  naming_errors(group.name, [&] {
    if (size > 1 && settings(name).validates(device >= 0)) agree_on_list(group, name, list.buffers, list, op, local);
    else if (size > 1 && local) vote_on_local_failure(group, fingerprint_of(name, list.buffers, op), local);
    else if (local) std::rethrow_exception(local);
  });
}

// Steps 2 and 3.
void run_list(Group& group, const char* name, const List& list, ReduceOp op, Stream stream, int size, int rank) {
  naming_errors(group.name, [&] {
    if (list.device >= 0) return run_device(group, name, list, op, stream, size, rank);
    if (size > 1) run_host(group, name, list.buffers, op, size, rank);  // a group of one: in place, nothing to do
  });
}

// Whether every batch of a host list goes through the node's segment, with no MPI call: then the
// lane's thread may run it at any thread level.
bool host_list_in_segment(Group& group, const char* name, int size, int rank) {
  if (group.topology.num_nodes != 1 || size < 2) return false;
  const Call probe{CollectiveKind::AllReduce, name, nullptr, nullptr, 1, DataType::Float32, ReduceOp::Sum, 0,
                   nullptr, &group, size, rank, -1};
  return shm::accepts(probe, true);
}

}  // namespace

bool all_reduce_many_on_lane(Group& group, std::span<const BufferView> buffers) {
  if (MainProcessContext::depth() > 0) return false;
  const int device = device_of_list(buffers);
  const int size = group.topology.size, rank = group.topology.rank;
  return lane_may_run(group, device < 0 && host_list_in_segment(group, "all_reduce_many", size, rank), device);
}

void all_reduce_many(Group& group, const char* name, std::span<const BufferView> buffers, ReduceOp op, Stream stream) {
  const bool alone = MainProcessContext::depth() > 0;
  const int size = alone ? 1 : group.topology.size;
  const int rank = alone ? 0 : group.topology.rank;
  // Numbered, fingerprinted and watched as one collective (call_scope.hpp); its own check agrees.
  std::optional<CallScope> scope;
  if (!alone) scope.emplace(group, fingerprint_of(name, buffers, op));
  List list{buffers};
  prepare_list(group, name, list, op, stream, size, rank);
  run_list(group, name, list, op, stream, size, rank);
}

Work all_reduce_many_async(Group& group, const char* name, std::span<const BufferView> buffers, ReduceOp op,
                           Stream stream, StepClock clock, ListGate gate) {
  const auto timed = [clock](auto&& step) {
    if (clock.started) *clock.started = std::chrono::steady_clock::now();
    step();
    if (clock.finished) *clock.finished = std::chrono::steady_clock::now();
  };
  if (MainProcessContext::depth() > 0)
    return run_at_issue(group, name, [&] { all_reduce_many(group, name, buffers, op, stream); });
  const int size = group.topology.size;
  const int rank = group.topology.rank;
  Fingerprint call = fingerprint_of(name, buffers, op);
  call.async = true;
  const CallTicket ticket = start_call(group, call);
  List list{buffers};
  try {
    prepare_list(group, name, list, op, stream, size, rank);
    if (list.device >= 0 && list.transport->start != nullptr) {
      const std::vector<Call> calls = device_calls(group, name, list, op, stream, size, rank);
      if (!calls.empty()) return start_step(group, ticket, *list.transport, calls);
    }
    const bool in_segment = list.device < 0 && host_list_in_segment(group, name, size, rank);
    if (!lane_may_run(group, in_segment, list.device)) {
      drain(group);
      if (gate && !list.buffers.empty()) gate(list.buffers.size() - 1);  // GradientBuckets never gets here unfilled
      timed([&] { run_list(group, name, list, op, stream, size, rank); });
      finish_call(ticket, false);
      return Work();
    }
    if (in_segment) shm::segment(group, name);  // made with MPI calls: here, not on the lane
  } catch (...) {
    const auto error = std::current_exception();
    drain(group);
    finish_call(ticket, true);
    return finished_work(group.name, name, error);
  }
  Group* g = &group;
  return queue_step(group, name, ticket,
                    [g, name, views = std::vector<BufferView>(buffers.begin(), buffers.end()), op, size, rank, timed,
                     gate = std::move(gate)] {
                      timed([&] { run_host(*g, name, views, op, size, rank, gate ? &gate : nullptr); });
                    });
}

}  // namespace mpidist::detail

namespace mpidist {

void all_reduce_many(std::span<const BufferView> buffers, ReduceOp op, Stream stream) {
  detail::all_reduce_many(detail::world_group("all_reduce_many"), "all_reduce_many", buffers, op, stream);
}
void all_reduce_many(const Communicator& comm, std::span<const BufferView> buffers, ReduceOp op, Stream stream) {
  detail::all_reduce_many(detail::group_of(comm, "all_reduce_many"), "all_reduce_many", buffers, op, stream);
}

}  // namespace mpidist
