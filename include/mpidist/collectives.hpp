// Tensor collectives on host or CUDA device memory: MPI for host buffers, NCCL (or CUDA-aware MPI,
// or staging through pinned host memory) for device buffers.
#pragma once

#include <concepts>
#include <initializer_list>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mpidist/communicator.hpp"
#include "mpidist/counts.hpp"
#include "mpidist/reduce_op.hpp"
#include "mpidist/tensor.hpp"

// cudaStream_t without the CUDA headers (driver_types.h declares it the same way).
struct CUstream_st;

namespace mpidist {

/// A CUDA stream (cudaStream_t). With a stream, a device-memory collective is queued on it and
/// returns at once; without one, the call returns when the result is ready. Ignored for host memory.
using Stream = CUstream_st*;

// Every collective has a world form and a form taking a Communicator first (Boost.MPI's order);
// roots and ranks are then ranks within that group, and "world size" below is the group's size.
// Inside a MainProcessContext every collective acts as in a group of this one rank (guards.hpp).

/// In place: every rank's `buffer` becomes the element-wise reduction over all ranks.
void all_reduce(BufferView buffer, ReduceOp op = ReduceOp::Sum, Stream stream = nullptr);
void all_reduce(const Communicator& comm, BufferView buffer, ReduceOp op = ReduceOp::Sum, Stream stream = nullptr);
/// Out of place: `out` (same count and dtype as `in`) receives the reduction.
void all_reduce(InputView in, BufferView out, ReduceOp op = ReduceOp::Sum, Stream stream = nullptr);
void all_reduce(const Communicator& comm, InputView in, BufferView out, ReduceOp op = ReduceOp::Sum,
                Stream stream = nullptr);
/// Root's `buffer` is copied to every rank's `buffer` (same count everywhere).
void broadcast(BufferView buffer, int root = 0, Stream stream = nullptr);
void broadcast(const Communicator& comm, BufferView buffer, int root = 0, Stream stream = nullptr);
/// `out` (world_size × in.count()) receives every rank's `in`, in rank order.
void all_gather(InputView in, BufferView out, Stream stream = nullptr);
void all_gather(const Communicator& comm, InputView in, BufferView out, Stream stream = nullptr);
/// `in` (world_size × out.count()) is reduced; rank r receives block r in `out`.
void reduce_scatter(InputView in, BufferView out, ReduceOp op = ReduceOp::Sum, Stream stream = nullptr);
void reduce_scatter(const Communicator& comm, InputView in, BufferView out, ReduceOp op = ReduceOp::Sum,
                    Stream stream = nullptr);
/// The reduction lands in root's `out`; `out` is not written on other ranks.
void reduce(InputView in, BufferView out, ReduceOp op = ReduceOp::Sum, int root = 0, Stream stream = nullptr);
void reduce(const Communicator& comm, InputView in, BufferView out, ReduceOp op = ReduceOp::Sum, int root = 0,
            Stream stream = nullptr);
/// In place (torch.distributed.reduce): root's `buffer` becomes the reduction; the other ranks'
/// `buffer` is read and left as it is.
void reduce(BufferView buffer, ReduceOp op, int root = 0, Stream stream = nullptr);
void reduce(const Communicator& comm, BufferView buffer, ReduceOp op, int root = 0, Stream stream = nullptr);

// Collectives where every pair of ranks moves a block of its own size (host or device memory).
// Counts are element counts, in any integer type (counts.hpp): std::vector<int> as MPI's,
// std::vector<std::size_t>, a braced list. Separate buffers only (no in place).
// Counts that do not add up to the buffers are a local Error at once; with MPIDIST_VALIDATE=1,
// ranks whose counts, types or roots do not match are the same Error on every rank, naming each
// rank's value. Counts past INT_MAX go as pairwise messages in pieces (never truncated).

/// Equal blocks: `in` and `out` hold world size x k elements; block j of `in` goes to rank j, and
/// block i of `out` came from rank i (MPI_Alltoall; torch's all_to_all_single without splits).
void all_to_all(InputView in, BufferView out, Stream stream = nullptr);
void all_to_all(const Communicator& comm, InputView in, BufferView out, Stream stream = nullptr);
/// Uneven blocks (torch's all_to_all_single with split sizes): `in` holds send_counts[j] elements
/// for rank j, then rank j+1's, in rank order; `out` receives recv_counts[i] elements from rank i
/// likewise. Zero counts are allowed; recv_counts[i] must equal rank i's send_counts[this rank].
void all_to_all(InputView in, Counts send_counts, BufferView out,
                Counts recv_counts, Stream stream = nullptr);
void all_to_all(const Communicator& comm, InputView in, Counts send_counts, BufferView out,
                Counts recv_counts, Stream stream = nullptr);
/// `counts[r]` is rank r's in.count(), the same list on every rank; `out` holds their sum, every
/// rank's `in` in rank order (MPI_Allgatherv).
void all_gather_v(InputView in, BufferView out, Counts counts, Stream stream = nullptr);
void all_gather_v(const Communicator& comm, InputView in, BufferView out, Counts counts,
                  Stream stream = nullptr);
/// Root's `out` (world size x in.count()) receives every rank's `in` in rank order; other ranks'
/// `out` is not used (pass an empty one).
void gather(InputView in, BufferView out, int root = 0, Stream stream = nullptr);
void gather(const Communicator& comm, InputView in, BufferView out, int root = 0, Stream stream = nullptr);
/// Root's `in` (world size x out.count()) is cut into blocks; rank r receives block r in `out`.
/// Other ranks' `in` is not used (pass an empty one).
void scatter(InputView in, BufferView out, int root = 0, Stream stream = nullptr);
void scatter(const Communicator& comm, InputView in, BufferView out, int root = 0, Stream stream = nullptr);

/// all_reduce on a span (`all_reduce(std::span(gradients), ReduceOp::Avg)`).
template <Element T, std::size_t Extent>
void all_reduce(std::span<T, Extent> buffer, ReduceOp op = ReduceOp::Sum, Stream stream = nullptr) {
  all_reduce(detail::written(buffer), op, stream);
}
template <Element T, std::size_t Extent>
void all_reduce(const Communicator& comm, std::span<T, Extent> buffer, ReduceOp op = ReduceOp::Sum,
                Stream stream = nullptr) {
  all_reduce(comm, detail::written(buffer), op, stream);
}
/// broadcast on a span.
template <Element T, std::size_t Extent>
void broadcast(std::span<T, Extent> buffer, int root = 0, Stream stream = nullptr) {
  broadcast(detail::written(buffer), root, stream);
}
template <Element T, std::size_t Extent>
void broadcast(const Communicator& comm, std::span<T, Extent> buffer, int root = 0, Stream stream = nullptr) {
  broadcast(comm, detail::written(buffer), root, stream);
}

/// Tensor fusion (Horovod's fusion buffer, DDP's buckets): every buffer is all-reduced in place,
/// exactly as separate all_reduce calls would leave it, in as few collectives as possible. Buffers
/// are grouped by element type (first appearance order) and packed: on one node straight into the
/// shared-memory segment, otherwise into a fusion buffer of at most MPIDIST_FUSION_BYTES (default
/// 64 MiB; a larger buffer goes alone). Zero-length buffers are allowed. All buffers must be host
/// memory, or all on this rank's CUDA device (there: one ncclGroupStart/End around the calls).
/// Every rank passes the same list of counts and types; with MPIDIST_VALIDATE on, a mismatch or
/// a bad argument on any rank is the same Error on every rank before any data moves.
void all_reduce_many(std::span<const BufferView> buffers, ReduceOp op = ReduceOp::Sum, Stream stream = nullptr);
void all_reduce_many(const Communicator& comm, std::span<const BufferView> buffers, ReduceOp op = ReduceOp::Sum,
                     Stream stream = nullptr);
/// The tensors as they are held: a braced list of spans ({std::span(w), std::span(b)}), a
/// std::vector<std::vector<float>>, a vector of spans, any range of containers of elements.
inline void all_reduce_many(std::initializer_list<BufferView> buffers, ReduceOp op = ReduceOp::Sum,
                            Stream stream = nullptr) {
  all_reduce_many(std::span(buffers.begin(), buffers.size()), op, stream);
}
inline void all_reduce_many(const Communicator& comm, std::initializer_list<BufferView> buffers,
                            ReduceOp op = ReduceOp::Sum, Stream stream = nullptr) {
  all_reduce_many(comm, std::span(buffers.begin(), buffers.size()), op, stream);
}
template <detail::TensorList R>
void all_reduce_many(R&& buffers, ReduceOp op = ReduceOp::Sum, Stream stream = nullptr) {
  all_reduce_many(std::span<const BufferView>(detail::as_buffers(buffers)), op, stream);
}
template <detail::TensorList R>
void all_reduce_many(const Communicator& comm, R&& buffers, ReduceOp op = ReduceOp::Sum, Stream stream = nullptr) {
  all_reduce_many(comm, std::span<const BufferView>(detail::as_buffers(buffers)), op, stream);
}

/// all_gather into a list of tensors, one per rank (torch's `all_gather(tensor_list, tensor)`, the
/// input first as in every call here): `outs[r]` receives rank r's `in`, each of in's count and
/// type (an Error naming the first that is not, and a list of another length). Straight into the
/// list when its tensors lie one after the other; otherwise through one contiguous host buffer
/// (host memory) or a broadcast from each rank (device memory, where the ranks first agree on the
/// layout: one small reduction). `in` may be `outs[rank]`.
void all_gather(InputView in, std::span<const BufferView> outs, Stream stream = nullptr);
void all_gather(const Communicator& comm, InputView in, std::span<const BufferView> outs, Stream stream = nullptr);
/// The list as it is held: a std::vector<std::vector<float>>, a vector of spans.
template <detail::TensorList R>
void all_gather(InputView in, R&& outs, Stream stream = nullptr) {
  all_gather(in, std::span<const BufferView>(detail::as_buffers(outs)), stream);
}
template <detail::TensorList R>
void all_gather(const Communicator& comm, InputView in, R&& outs, Stream stream = nullptr) {
  all_gather(comm, in, std::span<const BufferView>(detail::as_buffers(outs)), stream);
}

/// reduce_scatter from a list of tensors, one per rank (torch's `reduce_scatter(output, input_list)`,
/// the input first as in every call here): `out` receives the reduction over the ranks of their
/// `ins[rank]`, each of out's count and type (an Error naming the first that is not, and a list of
/// another length). Straight from the list when its tensors lie one after the other; otherwise
/// through one contiguous host buffer (host memory) or a reduce to each rank (device memory, where
/// the ranks first agree on the layout: one small reduction).
/// `out` may be `ins[rank]`.
void reduce_scatter(std::span<const InputView> ins, BufferView out, ReduceOp op = ReduceOp::Sum,
                    Stream stream = nullptr);
void reduce_scatter(const Communicator& comm, std::span<const InputView> ins, BufferView out,
                    ReduceOp op = ReduceOp::Sum, Stream stream = nullptr);
/// The list as it is held: a (const) std::vector<std::vector<float>>, a vector of spans.
template <detail::InputList R>
void reduce_scatter(const R& ins, BufferView out, ReduceOp op = ReduceOp::Sum, Stream stream = nullptr) {
  reduce_scatter(std::span<const InputView>(detail::as_inputs(ins)), out, op, stream);
}
template <detail::InputList R>
void reduce_scatter(const Communicator& comm, const R& ins, BufferView out, ReduceOp op = ReduceOp::Sum,
                    Stream stream = nullptr) {
  reduce_scatter(comm, std::span<const InputView>(detail::as_inputs(ins)), out, op, stream);
}

/// all_to_all between lists of tensors, one per rank (torch's `all_to_all(output_tensor_list,
/// input_tensor_list)`, the input first as in every call here): `ins[j]` goes to rank j, and
/// `outs[i]` receives rank i's `ins[this rank]`, which it must match in count (sizes may differ by
/// rank, as the uneven all_to_all's counts). One element type and one memory for every tensor of both
/// lists (an Error naming the first that differs, and a list of another length). Straight from and
/// into the lists when each lies one after the other on every rank (agreed first: one small
/// reduction); otherwise through one host buffer each way (device memory staged through it).
void all_to_all(std::span<const InputView> ins, std::span<const BufferView> outs, Stream stream = nullptr);
void all_to_all(const Communicator& comm, std::span<const InputView> ins, std::span<const BufferView> outs,
                Stream stream = nullptr);
/// The lists as they are held: std::vector<std::vector<float>>, vectors of spans or of views.
template <detail::AnyInputList In, detail::AnyTensorList Out>
void all_to_all(const In& ins, Out&& outs, Stream stream = nullptr) {
  all_to_all(std::span<const InputView>(detail::as_inputs(ins)), std::span<const BufferView>(detail::as_buffers(outs)),
             stream);
}
template <detail::AnyInputList In, detail::AnyTensorList Out>
void all_to_all(const Communicator& comm, const In& ins, Out&& outs, Stream stream = nullptr) {
  all_to_all(comm, std::span<const InputView>(detail::as_inputs(ins)),
             std::span<const BufferView>(detail::as_buffers(outs)), stream);
}

/// gather into a list of tensors on root (torch's `gather(tensor, gather_list, dst)`): root's
/// `outs[r]` receives rank r's `in`, each of in's count, type and memory (an Error naming the first
/// that is not); the other ranks' `outs` is not used (pass an empty list, `{}`). Root's list lying
/// one after the other takes the direct path, else one host buffer; device memory goes through host
/// memory on every rank (the others cannot know root's layout).
void gather(InputView in, std::span<const BufferView> outs, int root = 0, Stream stream = nullptr);
void gather(const Communicator& comm, InputView in, std::span<const BufferView> outs, int root = 0,
            Stream stream = nullptr);
template <detail::TensorList R>
void gather(InputView in, R&& outs, int root = 0, Stream stream = nullptr) {
  gather(in, std::span<const BufferView>(detail::as_buffers(outs)), root, stream);
}
template <detail::TensorList R>
void gather(const Communicator& comm, InputView in, R&& outs, int root = 0, Stream stream = nullptr) {
  gather(comm, in, std::span<const BufferView>(detail::as_buffers(outs)), root, stream);
}
/// scatter from a list of tensors on root (torch's `scatter(tensor, scatter_list, src)`): rank r's
/// `out` receives root's `ins[r]`, each of out's count, type and memory; the other ranks' `ins` is
/// not used (pass an empty list). Paths as gather's.
void scatter(std::span<const InputView> ins, BufferView out, int root = 0, Stream stream = nullptr);
void scatter(const Communicator& comm, std::span<const InputView> ins, BufferView out, int root = 0,
             Stream stream = nullptr);
template <detail::InputList R>
void scatter(const R& ins, BufferView out, int root = 0, Stream stream = nullptr) {
  scatter(std::span<const InputView>(detail::as_inputs(ins)), out, root, stream);
}
template <detail::InputList R>
void scatter(const Communicator& comm, const R& ins, BufferView out, int root = 0, Stream stream = nullptr) {
  scatter(comm, std::span<const InputView>(detail::as_inputs(ins)), out, root, stream);
}

/// virtex `average_across_processes`: in-place mean over all ranks.
void average(BufferView buffer, Stream stream = nullptr);
void average(const Communicator& comm, BufferView buffer, Stream stream = nullptr);

namespace detail {
struct NamedBuffer {
  std::string_view key;
  BufferView buffer;
};
/// average() of a dictionary, after the views were made: keys in order, the same on every rank.
void average_named(const Communicator* comm, std::span<const NamedBuffer> buffers, Stream stream);
template <class Map>
std::vector<NamedBuffer> named_buffers(Map& buffers) {
  std::vector<NamedBuffer> named;
  named.reserve(buffers.size());
  for (auto& [key, value] : buffers) named.push_back({key, detail::written(value)});
  return named;
}
}  // namespace detail

/// The same for a dictionary of tensors (virtex's dict of tensors): any std::map from names to
/// something that converts to a BufferView (`std::map<std::string, std::span<float>>`,
/// `std::map<std::string, BufferView>`). Fused as all_reduce_many in key order; the ranks must hold
/// the same keys (else Error on every rank, listing each rank's keys).
void average(const std::map<std::string, BufferView>& buffers, Stream stream = nullptr);
void average(const Communicator& comm, const std::map<std::string, BufferView>& buffers, Stream stream = nullptr);
template <class V>
requires std::convertible_to<const V&, BufferView>
void average(const std::map<std::string, V>& buffers, Stream stream = nullptr) {
  detail::average_named(nullptr, detail::named_buffers(buffers), stream);
}
template <class V>
requires std::convertible_to<const V&, BufferView>
void average(const Communicator& comm, const std::map<std::string, V>& buffers, Stream stream = nullptr) {
  detail::average_named(&comm, detail::named_buffers(buffers), stream);
}
/// A dictionary of containers (`std::map<std::string, std::vector<float>>`), averaged in place.
template <class V>
requires(std::convertible_to<V&, BufferView> && !std::convertible_to<const V&, BufferView>)
void average(std::map<std::string, V>& buffers, Stream stream = nullptr) {
  detail::average_named(nullptr, detail::named_buffers(buffers), stream);
}
template <class V>
requires(std::convertible_to<V&, BufferView> && !std::convertible_to<const V&, BufferView>)
void average(const Communicator& comm, std::map<std::string, V>& buffers, Stream stream = nullptr) {
  detail::average_named(&comm, detail::named_buffers(buffers), stream);
}

/// Collective: creates this job's NCCL communicator now (device selection, the duplicate-GPU
/// check, ncclCommInitRank) instead of at the first device collective, so start-up failures and
/// start-up time show before training. Returns false, doing nothing, when NCCL is not built, no
/// device is visible or MPIDIST_BACKEND=mpi.
bool init_nccl();

/// Which transport a buffer's collectives take.
enum class Backend { Mpi, CudaAwareMpi, Nccl };
/// "mpi", "cuda-aware-mpi", "nccl".
std::string_view to_string(Backend backend) noexcept;

/// ignite `backend()`: the backend used for device memory when one is usable ("nccl" if built and a
/// device is present, else "cuda-aware-mpi" if MPI supports it), else "mpi"; MPIDIST_BACKEND
/// (mpi|nccl|auto) overrides.
std::string backend();
/// ignite `available_backends()`: always "mpi", plus "nccl" and "cuda-aware-mpi" where usable.
std::vector<std::string> available_backends();

}  // namespace mpidist
