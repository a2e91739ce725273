// Non-blocking tensor collectives: every tensor collective of collectives.hpp with an `_async` form
// that returns a Work (torch.distributed's async_op=True).
//
// - Order. On one communicator, collectives run in the order this rank issued them, blocking or
//   not: a blocking collective issued while async ones are pending takes its turn after them.
//   Different communicators progress independently.
// - Progress. Host-memory work whose steps need no MPI call (the node's shared-memory segment: a
//   communicator on one node, the default) runs on the communicator's own thread, so it completes
//   while the caller computes or sleeps, at every thread level. A step that needs MPI (across
//   nodes, MPIDIST_HOST_ALLREDUCE=mpi, all_to_all, all_gather_v) runs on that thread only at
//   ThreadLevel::Multiple; below it (and a barrier across nodes always), the call runs on the
//   caller's thread at issue, after the communicator's queued work, and returns a done Work.
// - Device memory (NCCL): the collective is queued at issue on the communicator's stream, after
//   the work queued so far on `stream` (without one, on the legacy default stream). test() says
//   whether an event recorded after it has completed. With a stream, wait() makes `stream` wait
//   for that event and returns without blocking the host: work queued on `stream` afterwards sees
//   the result. Without one, wait() blocks the host until the result is ready (under the
//   communicator's timeout). Through MPI (CUDA-aware or staged) the call runs at issue.
// - Buffers. A buffer handed to an async call must not be read or written until its Work is done.
// - Errors. wait() rethrows the Error of the operation, the same on every rank wherever the
//   blocking call would raise one alike (a bad root, a validation mismatch with MPIDIST_VALIDATE).
// - Watched. The flight recorder and the watchdog see async calls as "<op>_async"; one that is
//   never matched ends in the communicator's timeout. Inside a MainProcessContext the calls act
//   on a group of this one rank and return a done Work.
#pragma once

#include <initializer_list>
#include <span>

#include "mpidist/collectives.hpp"
#include "mpidist/communicator.hpp"
#include "mpidist/tensor.hpp"
#include "mpidist/work.hpp"

namespace mpidist {

/// all_reduce, in place and out of place.
[[nodiscard]] Work all_reduce_async(BufferView buffer, ReduceOp op = ReduceOp::Sum, Stream stream = nullptr);
[[nodiscard]] Work all_reduce_async(const Communicator& comm, BufferView buffer, ReduceOp op = ReduceOp::Sum,
                                    Stream stream = nullptr);
[[nodiscard]] Work all_reduce_async(InputView in, BufferView out, ReduceOp op = ReduceOp::Sum, Stream stream = nullptr);
[[nodiscard]] Work all_reduce_async(const Communicator& comm, InputView in, BufferView out,
                                    ReduceOp op = ReduceOp::Sum, Stream stream = nullptr);
/// broadcast from `root`.
[[nodiscard]] Work broadcast_async(BufferView buffer, int root = 0, Stream stream = nullptr);
[[nodiscard]] Work broadcast_async(const Communicator& comm, BufferView buffer, int root = 0, Stream stream = nullptr);
/// all_gather: `out` holds size x in.count().
[[nodiscard]] Work all_gather_async(InputView in, BufferView out, Stream stream = nullptr);
[[nodiscard]] Work all_gather_async(const Communicator& comm, InputView in, BufferView out, Stream stream = nullptr);
/// reduce_scatter: rank r gets block r.
[[nodiscard]] Work reduce_scatter_async(InputView in, BufferView out, ReduceOp op = ReduceOp::Sum,
                                        Stream stream = nullptr);
[[nodiscard]] Work reduce_scatter_async(const Communicator& comm, InputView in, BufferView out,
                                        ReduceOp op = ReduceOp::Sum, Stream stream = nullptr);
/// reduce to `root`'s `out`.
[[nodiscard]] Work reduce_async(InputView in, BufferView out, ReduceOp op = ReduceOp::Sum, int root = 0,
                                Stream stream = nullptr);
[[nodiscard]] Work reduce_async(const Communicator& comm, InputView in, BufferView out, ReduceOp op = ReduceOp::Sum,
                                int root = 0, Stream stream = nullptr);
/// reduce in place: root's `buffer` becomes the reduction.
[[nodiscard]] Work reduce_async(BufferView buffer, ReduceOp op, int root = 0, Stream stream = nullptr);
[[nodiscard]] Work reduce_async(const Communicator& comm, BufferView buffer, ReduceOp op, int root = 0,
                                Stream stream = nullptr);
/// all_reduce_many: the list of views is copied; the buffers must stay untouched until done.
[[nodiscard]] Work all_reduce_many_async(std::span<const BufferView> buffers, ReduceOp op = ReduceOp::Sum,
                                         Stream stream = nullptr);
[[nodiscard]] Work all_reduce_many_async(const Communicator& comm, std::span<const BufferView> buffers,
                                         ReduceOp op = ReduceOp::Sum, Stream stream = nullptr);
/// The tensors as they are held (all_reduce_many's forms); containers only as lvalues, which
/// must outlive the Work.
[[nodiscard]] inline Work all_reduce_many_async(std::initializer_list<BufferView> buffers, ReduceOp op = ReduceOp::Sum,
                                                Stream stream = nullptr) {
  return all_reduce_many_async(std::span(buffers.begin(), buffers.size()), op, stream);
}
[[nodiscard]] inline Work all_reduce_many_async(const Communicator& comm, std::initializer_list<BufferView> buffers,
                                                ReduceOp op = ReduceOp::Sum, Stream stream = nullptr) {
  return all_reduce_many_async(comm, std::span(buffers.begin(), buffers.size()), op, stream);
}
template <class R>
requires detail::TensorList<R&>
[[nodiscard]] Work all_reduce_many_async(R& buffers, ReduceOp op = ReduceOp::Sum, Stream stream = nullptr) {
  return all_reduce_many_async(std::span<const BufferView>(detail::as_buffers(buffers)), op, stream);
}
template <class R>
requires detail::TensorList<R&>
[[nodiscard]] Work all_reduce_many_async(const Communicator& comm, R& buffers, ReduceOp op = ReduceOp::Sum,
                                         Stream stream = nullptr) {
  return all_reduce_many_async(comm, std::span<const BufferView>(detail::as_buffers(buffers)), op, stream);
}
/// average: in-place mean.
[[nodiscard]] Work average_async(BufferView buffer, Stream stream = nullptr);
[[nodiscard]] Work average_async(const Communicator& comm, BufferView buffer, Stream stream = nullptr);
/// barrier: done once every rank of the communicator has issued it. On one node it is a one-byte
/// all-reduce in the node's segment, so every rank must call barrier_async (not barrier) there.
[[nodiscard]] Work barrier_async();
[[nodiscard]] Work barrier_async(const Communicator& comm);
/// all_to_all, equal blocks and uneven blocks (the counts are copied).
[[nodiscard]] Work all_to_all_async(InputView in, BufferView out, Stream stream = nullptr);
[[nodiscard]] Work all_to_all_async(const Communicator& comm, InputView in, BufferView out, Stream stream = nullptr);
[[nodiscard]] Work all_to_all_async(InputView in, Counts send_counts, BufferView out,
                                    Counts recv_counts, Stream stream = nullptr);
[[nodiscard]] Work all_to_all_async(const Communicator& comm, InputView in, Counts send_counts,
                                    BufferView out, Counts recv_counts, Stream stream = nullptr);
/// all_gather_v: `counts[r]` is rank r's in.count() (copied).
[[nodiscard]] Work all_gather_v_async(InputView in, BufferView out, Counts counts,
                                      Stream stream = nullptr);
[[nodiscard]] Work all_gather_v_async(const Communicator& comm, InputView in, BufferView out,
                                      Counts counts, Stream stream = nullptr);

/// gather and scatter (collectives.hpp): root's `out` (gather) or `in` (scatter) holds size blocks.
[[nodiscard]] Work gather_async(InputView in, BufferView out, int root = 0, Stream stream = nullptr);
[[nodiscard]] Work gather_async(const Communicator& comm, InputView in, BufferView out, int root = 0,
                                Stream stream = nullptr);
[[nodiscard]] Work scatter_async(InputView in, BufferView out, int root = 0, Stream stream = nullptr);
[[nodiscard]] Work scatter_async(const Communicator& comm, InputView in, BufferView out, int root = 0,
                                 Stream stream = nullptr);

/// The list forms (collectives.hpp: torch's `all_gather(tensor_list, tensor, async_op=True)` and the
/// others'): started as the blocking form runs, with the same checks at issue (an Error in the
/// Work). Where the list goes through a host buffer, `wait()` (or a `test()` that returns true)
/// copies the results into the list's tensors: read them after it. The lists' tensors must stay
/// alive until then; the lists themselves (the vectors of views) may go at once.
[[nodiscard]] Work all_gather_async(InputView in, std::span<const BufferView> outs, Stream stream = nullptr);
[[nodiscard]] Work all_gather_async(const Communicator& comm, InputView in, std::span<const BufferView> outs,
                                    Stream stream = nullptr);
[[nodiscard]] Work reduce_scatter_async(std::span<const InputView> ins, BufferView out, ReduceOp op = ReduceOp::Sum,
                                        Stream stream = nullptr);
[[nodiscard]] Work reduce_scatter_async(const Communicator& comm, std::span<const InputView> ins, BufferView out,
                                        ReduceOp op = ReduceOp::Sum, Stream stream = nullptr);
[[nodiscard]] Work all_to_all_async(std::span<const InputView> ins, std::span<const BufferView> outs,
                                    Stream stream = nullptr);
[[nodiscard]] Work all_to_all_async(const Communicator& comm, std::span<const InputView> ins,
                                    std::span<const BufferView> outs, Stream stream = nullptr);
[[nodiscard]] Work gather_async(InputView in, std::span<const BufferView> outs, int root = 0, Stream stream = nullptr);
[[nodiscard]] Work gather_async(const Communicator& comm, InputView in, std::span<const BufferView> outs, int root = 0,
                                Stream stream = nullptr);
[[nodiscard]] Work scatter_async(std::span<const InputView> ins, BufferView out, int root = 0, Stream stream = nullptr);
[[nodiscard]] Work scatter_async(const Communicator& comm, std::span<const InputView> ins, BufferView out, int root = 0,
                                 Stream stream = nullptr);
/// The lists as they are held: std::vector<std::vector<float>>, vectors of spans or of views. A
/// list of containers is taken as an lvalue only: its tensors must outlive the Work.
template <detail::TensorList R>
  requires detail::KeptList<R>
[[nodiscard]] Work all_gather_async(InputView in, R&& outs, Stream stream = nullptr) {
  return all_gather_async(in, std::span<const BufferView>(detail::as_buffers(outs)), stream);
}
template <detail::TensorList R>
  requires detail::KeptList<R>
[[nodiscard]] Work all_gather_async(const Communicator& comm, InputView in, R&& outs, Stream stream = nullptr) {
  return all_gather_async(comm, in, std::span<const BufferView>(detail::as_buffers(outs)), stream);
}
template <class R>
  requires detail::InputList<std::remove_cvref_t<R>> && detail::KeptList<R>
[[nodiscard]] Work reduce_scatter_async(R&& ins, BufferView out, ReduceOp op = ReduceOp::Sum, Stream stream = nullptr) {
  return reduce_scatter_async(std::span<const InputView>(detail::as_inputs(ins)), out, op, stream);
}
template <class R>
  requires detail::InputList<std::remove_cvref_t<R>> && detail::KeptList<R>
[[nodiscard]] Work reduce_scatter_async(const Communicator& comm, R&& ins, BufferView out,
                                        ReduceOp op = ReduceOp::Sum, Stream stream = nullptr) {
  return reduce_scatter_async(comm, std::span<const InputView>(detail::as_inputs(ins)), out, op, stream);
}
template <class In, class Out>
  requires detail::AnyInputList<std::remove_cvref_t<In>> && detail::AnyTensorList<Out> && detail::KeptList<In> &&
           detail::KeptList<Out>
[[nodiscard]] Work all_to_all_async(In&& ins, Out&& outs, Stream stream = nullptr) {
  return all_to_all_async(std::span<const InputView>(detail::as_inputs(ins)),
                          std::span<const BufferView>(detail::as_buffers(outs)), stream);
}
template <class In, class Out>
  requires detail::AnyInputList<std::remove_cvref_t<In>> && detail::AnyTensorList<Out> && detail::KeptList<In> &&
           detail::KeptList<Out>
[[nodiscard]] Work all_to_all_async(const Communicator& comm, In&& ins, Out&& outs, Stream stream = nullptr) {
  return all_to_all_async(comm, std::span<const InputView>(detail::as_inputs(ins)),
                          std::span<const BufferView>(detail::as_buffers(outs)), stream);
}
template <detail::TensorList R>
  requires detail::KeptList<R>
[[nodiscard]] Work gather_async(InputView in, R&& outs, int root = 0, Stream stream = nullptr) {
  return gather_async(in, std::span<const BufferView>(detail::as_buffers(outs)), root, stream);
}
template <detail::TensorList R>
  requires detail::KeptList<R>
[[nodiscard]] Work gather_async(const Communicator& comm, InputView in, R&& outs, int root = 0, Stream stream = nullptr) {
  return gather_async(comm, in, std::span<const BufferView>(detail::as_buffers(outs)), root, stream);
}
template <class R>
  requires detail::InputList<std::remove_cvref_t<R>> && detail::KeptList<R>
[[nodiscard]] Work scatter_async(R&& ins, BufferView out, int root = 0, Stream stream = nullptr) {
  return scatter_async(std::span<const InputView>(detail::as_inputs(ins)), out, root, stream);
}
template <class R>
  requires detail::InputList<std::remove_cvref_t<R>> && detail::KeptList<R>
[[nodiscard]] Work scatter_async(const Communicator& comm, R&& ins, BufferView out, int root = 0,
                                 Stream stream = nullptr) {
  return scatter_async(comm, std::span<const InputView>(detail::as_inputs(ins)), out, root, stream);
}

/// all_reduce_async on a span.
template <Element T, std::size_t Extent>
[[nodiscard]] Work all_reduce_async(std::span<T, Extent> buffer, ReduceOp op = ReduceOp::Sum, Stream stream = nullptr) {
  return all_reduce_async(detail::written(buffer), op, stream);
}
template <Element T, std::size_t Extent>
[[nodiscard]] Work all_reduce_async(const Communicator& comm, std::span<T, Extent> buffer, ReduceOp op = ReduceOp::Sum,
                                    Stream stream = nullptr) {
  return all_reduce_async(comm, detail::written(buffer), op, stream);
}

}  // namespace mpidist
