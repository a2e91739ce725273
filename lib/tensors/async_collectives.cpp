// The non-blocking tensor collectives. Each call is issued on the caller's thread: numbered,
// checked and agreed across the ranks exactly as the blocking call (so its Errors are the blocking
// call's, on the same ranks). Then its data step either goes to the communicator's lane
// (core/async_lane.hpp), whose thread runs the steps in issue order while the caller computes,
// or, where that thread may not call MPI (thread level below Multiple), runs at issue after the
// lane's queued steps. Device memory through NCCL is queued on the group's stream at issue, after
// the lane's queued steps (its Work waits on an event: nccl/event_work.hpp); through MPI it runs
// at issue. Either way every rank runs the steps of one communicator in the order it issued them.
#include "mpidist/async_collectives.hpp"

#include <memory>
#include <vector>

#include "core/async_lane.hpp"
#include "core/context.hpp"
#include "core/group.hpp"
#include "shm/segment.hpp"
#include "tensors/fusion.hpp"
#include "tensors/issue.hpp"
#include "watch/call_scope.hpp"
#include "mpidist/error.hpp"
#include "mpidist/guards.hpp"

namespace mpidist::detail {

bool lane_may_run(const Group& group, bool mpi_free, int device) {
  if (device >= 0) return false;
  if (mpi_free) return true;
  const Context* ctx = context_if_initialized();
  return ctx != nullptr && ctx->thread_level == MPI_THREAD_MULTIPLE && group.topology.size > 1;
}

AsyncLane& lane_of(Group& group) {
  if (!group.lane) group.lane = std::make_shared<AsyncLane>();
  return *group.lane;
}

void drain(Group& group) {
  if (group.lane) group.lane->drain();
}

Work run_at_issue(Group& group, const char* name, const std::function<void()>& fn) {
  drain(group);  // after the communicator's queued work, as the order rule wants
  return finished_work(group.name, name, capture(fn));
}

Work queue_step(Group& group, const char* name, const CallTicket& ticket, std::function<void()> step) {
  end_issue(ticket);
  AsyncLane& lane = lane_of(group);
  Group* g = &group;
  auto job = lane.push([g, ticket, step = std::move(step)] {
    const StepInFlight in_flight(*g, ticket.seq);  // its waits watch this call for a peer's refusal
    try {
      // After an earlier step broke the communicator the ranks are out of step: fail at once.
      if (g->is_broken())
        throw Error(g->name, ticket.op, "this communicator can no longer be used: " + g->broken);
      naming_errors(g->name, step);
    } catch (...) {
      finish_async_call(ticket, true);
      throw;
    }
    finish_async_call(ticket, false);
  });
  return Work(std::make_unique<LaneWork>(group.name, name, group.lane, std::move(job)));
}

Work start_step(Group& group, const CallTicket& ticket, const Transport& transport, std::span<const Call> calls) {
  drain(group);
  Work work(naming_errors(group.name, [&] { return transport.start(calls); }));
  finish_call(ticket, false);
  return work;
}

namespace {

Work issue(Group& group, CollectiveKind kind, const char* name, const BufferView& in, const BufferView& out,
           ReduceOp op, int root, Stream stream) {
  // A group of one: the blocking call at issue.
  if (MainProcessContext::depth() > 0)
    return run_at_issue(group, name, [&] { collective(group, kind, name, in, out, op, root, stream, true); });
  Call call = describe_call(group, kind, name, in, out, op, root, stream);
  const CallTicket ticket = start_call(group, recorded_fingerprint(call, in.bytes(), true));
  const Transport* transport = nullptr;
  try {
    transport = prepare_call(group, call, in, out);
    if (call.count > 0 && transport->start != nullptr) return start_step(group, ticket, *transport, std::span(&call, 1));
    if (call.count == 0 || !lane_may_run(group, transport->mpi_free, call.device)) {
      drain(group);
      if (call.count > 0) naming_errors(group.name, [&] { transport->run(call); });
      finish_call(ticket, false);
      return Work();
    }
    // The segment is made with MPI calls: here, on the caller's thread, before any step needs it.
    if (transport->mpi_free) shm::segment(group, name);
  } catch (...) {
    const auto error = std::current_exception();
    drain(group);  // the recorder hears of calls in the order they were issued
    finish_call(ticket, true);
    return finished_work(group.name, name, error);
  }
  return queue_step(group, name, ticket, [call, transport] { transport->run(call); });
}

Work issue(const Communicator& comm, CollectiveKind kind, const char* name, const BufferView& in,
           const BufferView& out, ReduceOp op, int root, Stream stream) {
  return issue(group_of(comm, name), kind, name, in, out, op, root, stream);
}
Work issue(CollectiveKind kind, const char* name, const BufferView& in, const BufferView& out, ReduceOp op, int root,
           Stream stream) {
  return issue(world_group(name), kind, name, in, out, op, root, stream);
}

// barrier_async on one node: an all-reduce of one byte through the segment (no rank's wait ends
// before every rank posted its byte); elsewhere MPI_Barrier at issue below Multiple.
Work barrier_async(Group& group, const std::function<void()>& blocking_barrier) {
  if (MainProcessContext::depth() > 0 || group.topology.size == 1) return run_at_issue(group, "barrier", [] {});
  auto byte = std::make_shared<std::int8_t>(0);
  const BufferView view(byte.get(), 1, DataType::Int8);
  Call call = describe_call(group, CollectiveKind::AllReduce, "barrier", view, view, ReduceOp::Sum, 0, nullptr);
  const Transport& transport = choose_transport(call);
  if (!transport.mpi_free)
    return run_at_issue(group, "barrier", blocking_barrier);
  Fingerprint fp{"barrier"};
  fp.async = true;
  const CallTicket ticket = start_call(group, fp);
  try {
    shm::segment(group, "barrier");
  } catch (...) {
    const auto error = std::current_exception();
    drain(group);
    finish_call(ticket, true);
    return finished_work(group.name, "barrier", error);
  }
  return queue_step(group, "barrier", ticket, [call, byte, run = transport.run] { run(call); });
}

}  // namespace
}  // namespace mpidist::detail

namespace mpidist {

using detail::CollectiveKind;

Work all_reduce_async(BufferView buffer, ReduceOp op, Stream stream) {
  return detail::issue(CollectiveKind::AllReduce, "all_reduce", buffer, buffer, op, 0, stream);
}
Work all_reduce_async(const Communicator& comm, BufferView buffer, ReduceOp op, Stream stream) {
  return detail::issue(comm, CollectiveKind::AllReduce, "all_reduce", buffer, buffer, op, 0, stream);
}
Work all_reduce_async(InputView in, BufferView out, ReduceOp op, Stream stream) {
  return detail::issue(CollectiveKind::AllReduce, "all_reduce", in, out, op, 0, stream);
}
Work all_reduce_async(const Communicator& comm, InputView in, BufferView out, ReduceOp op, Stream stream) {
  return detail::issue(comm, CollectiveKind::AllReduce, "all_reduce", in, out, op, 0, stream);
}

Work broadcast_async(BufferView buffer, int root, Stream stream) {
  return detail::issue(CollectiveKind::Broadcast, "broadcast", buffer, buffer, ReduceOp::Sum, root, stream);
}
Work broadcast_async(const Communicator& comm, BufferView buffer, int root, Stream stream) {
  return detail::issue(comm, CollectiveKind::Broadcast, "broadcast", buffer, buffer, ReduceOp::Sum, root, stream);
}

Work all_gather_async(InputView in, BufferView out, Stream stream) {
  return detail::issue(CollectiveKind::AllGather, "all_gather", in, out, ReduceOp::Sum, 0, stream);
}
Work all_gather_async(const Communicator& comm, InputView in, BufferView out, Stream stream) {
  return detail::issue(comm, CollectiveKind::AllGather, "all_gather", in, out, ReduceOp::Sum, 0, stream);
}

Work reduce_scatter_async(InputView in, BufferView out, ReduceOp op, Stream stream) {
  return detail::issue(CollectiveKind::ReduceScatter, "reduce_scatter", in, out, op, 0, stream);
}
Work reduce_scatter_async(const Communicator& comm, InputView in, BufferView out, ReduceOp op, Stream stream) {
  return detail::issue(comm, CollectiveKind::ReduceScatter, "reduce_scatter", in, out, op, 0, stream);
}

Work reduce_async(InputView in, BufferView out, ReduceOp op, int root, Stream stream) {
  return detail::issue(CollectiveKind::Reduce, "reduce", in, out, op, root, stream);
}
Work reduce_async(const Communicator& comm, InputView in, BufferView out, ReduceOp op, int root, Stream stream) {
  return detail::issue(comm, CollectiveKind::Reduce, "reduce", in, out, op, root, stream);
}

Work reduce_async(BufferView buffer, ReduceOp op, int root, Stream stream) {
  return detail::issue(CollectiveKind::Reduce, "reduce", buffer, buffer, op, root, stream);
}
Work reduce_async(const Communicator& comm, BufferView buffer, ReduceOp op, int root, Stream stream) {
  return detail::issue(comm, CollectiveKind::Reduce, "reduce", buffer, buffer, op, root, stream);
}

Work average_async(BufferView buffer, Stream stream) {
  return detail::issue(CollectiveKind::AllReduce, "average", buffer, buffer, ReduceOp::Avg, 0, stream);
}
Work average_async(const Communicator& comm, BufferView buffer, Stream stream) {
  return detail::issue(comm, CollectiveKind::AllReduce, "average", buffer, buffer, ReduceOp::Avg, 0, stream);
}

Work all_reduce_many_async(std::span<const BufferView> buffers, ReduceOp op, Stream stream) {
  return detail::all_reduce_many_async(detail::world_group("all_reduce_many"), "all_reduce_many", buffers, op, stream);
}
Work all_reduce_many_async(const Communicator& comm, std::span<const BufferView> buffers, ReduceOp op,
                           Stream stream) {
  return detail::all_reduce_many_async(detail::group_of(comm, "all_reduce_many"), "all_reduce_many", buffers, op,
                                       stream);
}

Work barrier_async() { return detail::barrier_async(detail::world_group("barrier"), [] { barrier(); }); }
Work barrier_async(const Communicator& comm) {
  return detail::barrier_async(detail::group_of(comm, "barrier"), [&] { barrier(comm); });
}

// all_to_all_async, all_gather_v_async, gather_async and scatter_async: in uneven.cpp, beside their
// blocking forms; the list forms in list_collectives.cpp.

}  // namespace mpidist
