// Point-to-point messages of tensors (host or device memory): send, recv, isend, irecv and
// batch_isend_irecv, as torch.distributed's. Peers are ranks within the communicator's group.
#pragma once

#include <initializer_list>
#include <optional>
#include <span>

#include "mpidist/collectives.hpp"
#include "mpidist/communicator.hpp"
#include "mpidist/tensor.hpp"
#include "mpidist/work.hpp"

namespace mpidist {

/// recv's `src` that takes a message from any rank of the group.
inline constexpr int any_source = -1;
/// recv's `tag` that takes a message of any tag.
inline constexpr int any_tag = -1;
/// A peer that is no rank (MPI_PROC_NULL, mpi4py's `MPI.PROC_NULL`): a send to it and a receive
/// from it do nothing and return at once, the receive's buffer (or value) left as it was and its
/// Status `{proc_null, any_tag}`. The edges of a halo exchange that does not wrap around:
/// `sendrecv(edge, me + 1 < size ? me + 1 : proc_null, halo, me > 0 ? me - 1 : proc_null)`.
inline constexpr int proc_null = -2;

/// The largest tag a user message may carry: MPI's tag upper bound (MPI_TAG_UB, at least 32767)
/// less the tags mpidist reserves for itself (none today: the library's own messages travel on a
/// channel of their own, so every tag MPI allows is the user's).
int max_tag();

// Rules, for every call below (each is an Error at once, on this rank only, before anything moves):
// a peer outside [0, size) other than proc_null, a negative tag or one above max_tag(), a blocking send to this rank
// (use isend or batch_isend_irecv), a device receive from any_source (NCCL names its peer), and,
// inside a MainProcessContext, any message at all. A message carries its element count and type: a
// receive whose buffer holds another count or type is an Error naming both, and the buffer's
// contents are then unspecified (nothing past it is written). Messages between two ranks on one
// tag arrive in the order sent. Payloads of any size (past INT_MAX elements or bytes too) go as
// one message. Device memory goes through NCCL (grouped ncclSend/ncclRecv; the stream as for the
// collectives), or staged through MPI. NCCL has no tags and no header: device messages between
// two ranks match in the order sent, whatever their tags, and a count or type that differs between
// sender and receiver ends in the timeout's Error, not in one naming both counts.

/// Sends `buffer` to rank `dest` with `tag`; returns when `buffer` may be reused.
void send(InputView buffer, int dest, int tag = 0, Stream stream = nullptr);
void send(const Communicator& comm, InputView buffer, int dest, int tag = 0, Stream stream = nullptr);
/// Receives a message from `src` (or any_source) with `tag` (or any_tag) into `buffer`.
Status recv(BufferView buffer, int src, int tag = 0, Stream stream = nullptr);
Status recv(const Communicator& comm, BufferView buffer, int src, int tag = 0, Stream stream = nullptr);
/// Starts a send; `buffer` must stay alive and unchanged until the Work is done.
[[nodiscard]] Work isend(InputView buffer, int dest, int tag = 0, Stream stream = nullptr);
[[nodiscard]] Work isend(const Communicator& comm, InputView buffer, int dest, int tag = 0, Stream stream = nullptr);
/// Starts a receive; `buffer` must stay alive and untouched until the Work is done.
[[nodiscard]] Work irecv(BufferView buffer, int src, int tag = 0, Stream stream = nullptr);
[[nodiscard]] Work irecv(const Communicator& comm, BufferView buffer, int src, int tag = 0, Stream stream = nullptr);

/// Waits until a message from `src` (or any_source) with `tag` (or any_tag) can be received and says
/// who sent it, with which tag and how large it is, leaving it to a receive (MPI_Probe, mpi4py's and
/// Boost.MPI's probe): a message of a size the receiver cannot know,
/// `auto s = probe(any_source, 7); std::vector<float> v(s.count<float>()); recv(std::span(v), s.source, s.tag);`.
/// Waits under the communicator's timeout (then an Error naming the peer and tag; nothing was
/// received and the communicator can still be used). From proc_null: `{proc_null, any_tag, 0}`.
/// It sees what goes through MPI: a device message through NCCL is never probed, and an object's
/// send (objects.hpp) shows as its frame, a few bytes, before the value itself.
Status probe(int src = any_source, int tag = any_tag);
Status probe(const Communicator& comm, int src = any_source, int tag = any_tag);
/// The same without waiting (MPI_Iprobe): the Status of a message that can be received now, or nothing.
std::optional<Status> iprobe(int src = any_source, int tag = any_tag);
std::optional<Status> iprobe(const Communicator& comm, int src = any_source, int tag = any_tag);

/// MPI_Sendrecv: sends `send_buffer` to `dest` and receives `recv_buffer` from `src` (a rank: not
/// any_source), both on `tag`, as one batch_isend_irecv, so a ring or a halo exchange of blocking
/// calls cannot deadlock; `dest` and `src` may be this rank. Returns when both are done (with a
/// stream, device work is queued on it as for the collectives).
void sendrecv(InputView send_buffer, int dest, BufferView recv_buffer, int src, int tag = 0, Stream stream = nullptr);
void sendrecv(const Communicator& comm, InputView send_buffer, int dest, BufferView recv_buffer, int src, int tag = 0,
              Stream stream = nullptr);

/// One operation of batch_isend_irecv.
class P2POp {
 public:
  enum class Kind { Send, Recv };
  /// Send `buffer` to `peer`.
  static P2POp send(InputView buffer, int peer, int tag = 0) { return P2POp(Kind::Send, buffer, peer, tag); }
  /// Receive into `buffer` from `peer` (a rank: not any_source).
  static P2POp recv(BufferView buffer, int peer, int tag = 0) { return P2POp(Kind::Recv, buffer, peer, tag); }

  Kind kind() const noexcept { return kind_; }
  const BufferView& buffer() const noexcept { return buffer_; }
  int peer() const noexcept { return peer_; }
  int tag() const noexcept { return tag_; }

 private:
  P2POp(Kind kind, BufferView buffer, int peer, int tag) : kind_(kind), buffer_(buffer), peer_(peer), tag_(tag) {}
  Kind kind_;
  BufferView buffer_;
  int peer_;
  int tag_;
};

/// Starts every op of `ops` as one unit and returns one Work for all of them: all are posted
/// before any is waited for, so a ring exchange (send to rank+1, receive from rank-1) never
/// deadlocks, whatever the order of the ops. Every op is checked before any starts.
[[nodiscard]] Work batch_isend_irecv(std::span<const P2POp> ops, Stream stream = nullptr);
[[nodiscard]] Work batch_isend_irecv(const Communicator& comm, std::span<const P2POp> ops, Stream stream = nullptr);
/// The ops as a braced list: batch_isend_irecv({P2POp::send(out, next), P2POp::recv(in, prev)}).
[[nodiscard]] inline Work batch_isend_irecv(std::initializer_list<P2POp> ops, Stream stream = nullptr) {
  return batch_isend_irecv(std::span(ops.begin(), ops.size()), stream);
}
[[nodiscard]] inline Work batch_isend_irecv(const Communicator& comm, std::initializer_list<P2POp> ops,
                                            Stream stream = nullptr) {
  return batch_isend_irecv(comm, std::span(ops.begin(), ops.size()), stream);
}

}  // namespace mpidist
