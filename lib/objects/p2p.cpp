// Objects between two ranks: send and recv of any value the object calls carry. A value travels
// as two point-to-point messages on the user's tag (mpi/p2p_messages): a 24-byte frame (its type's
// fingerprint and its size), then its bytes. The receiver checks the frame before it allocates
// anything: another type is an Error naming both types, a size no T can have is an Error, and in
// either case the payload is received into nothing (MPI's truncation), so no message is left over.
#include <mpi.h>

#include <algorithm>
#include <climits>
#include <vector>
#include <cstdint>
#include <string>
#include <thread>

#include "core/group.hpp"
#include "core/mpi_check.hpp"
#include "core/p2p_rules.hpp"
#include "core/seconds_text.hpp"
#include "mpi/p2p_messages.hpp"
#include "watch/timeout.hpp"
#include "mpidist/detail/type_names.hpp"
#include "mpidist/error.hpp"
#include "mpidist/objects.hpp"

namespace mpidist::detail {
namespace {

struct ObjectFrame {
  std::uint64_t magic = 0;
  std::uint64_t type = 0;
  std::uint64_t size = 0;
};
constexpr std::uint64_t frame_magic = mpi::object_frame_magic;
// all_to_all's pieces on the control channel (its other tags: 7297, 7298, 7299 and up).
constexpr int all_to_all_tag = 7296;

std::string from(int peer, int tag) { return describe_peer(peer) + " (" + describe_tag(tag) + ")"; }

// Polls `m` under the group's deadline. A receive past it is cancelled (the communicator stays
// usable); a send past it breaks the communicator, as any timeout.
void wait(Group& group, const char* operation, mpi::Message& m, int peer, int tag) {
  const Deadline deadline(operation, &group);
  for (unsigned polls = 0;; ++polls) {
    if (m.test()) break;
    if (polls % 16 == 15 && deadline.passed()) {
      if (!m.receiving()) deadline.time_out(operation, ("a receive on " + from(peer, tag)).c_str());
      if (!m.cancel_receive()) break;  // it matched meanwhile
      throw Error(group.name, operation,
                  "timed out after " + seconds_text(deadline.seconds()) + " waiting for a message from " + from(peer, tag) +
                      "; the peer never sent it, or sent it with another tag. The receive was cancelled: the "
                      "communicator can still be used");
    }
    std::this_thread::yield();
  }
  if (!m.mismatch().empty())
    throw Error(group.name, operation, m.mismatch() + " (an object's frame or bytes were expected: the ranks "
                                                      "called different point-to-point calls)");
}

// Receives the next message from `source` on `tag` (the payload of a value refused) and drops it,
// in a buffer of its own size: a truncated receive would abort the job under MPICH, which reports
// request errors to MPI_COMM_WORLD's handler.
void discard(Group& group, int source, int tag) {
  MPI_Message message = MPI_MESSAGE_NULL;
  MPI_Status status;
  if (MPI_Mprobe(source, tag, group.comm, &message, &status) != MPI_SUCCESS) return;
  (void)mpi::receive_whole(message, status);
}

Group& group_for(const Communicator* comm, const char* operation) {
  return comm != nullptr ? group_of(*comm, operation) : world_group(operation);
}

// Receives a value of fingerprint `type` from `src` on `tag` into sink, after checking its frame.
Status receive(Group& group, const char* operation, std::uint64_t type, PayloadSink& sink, int src, int tag) {
  ObjectFrame frame;
  mpi::Message head;
  Status status;
  naming_errors(group.name, [&] {
    head.start_recv(group.comm, &frame, sizeof frame, DataType::UInt8, src < 0 ? MPI_ANY_SOURCE : src,
                    tag < 0 ? MPI_ANY_TAG : tag);
    wait(group, operation, head, src, tag);
  });
  status = Status{head.source(), head.tag(), static_cast<std::size_t>(frame.size)};
  if (frame.magic != frame_magic)
    throw Error(group.name, operation, "rank " + std::to_string(status.source) + " sent (tag " +
                                        std::to_string(status.tag) + ") a message that is not an object's frame");
  if (frame.type != type) {
    discard(group, status.source, status.tag);
    throw Error(group.name, operation, "rank " + std::to_string(status.source) + " sent " + object_type_name(frame.type) +
                                        " where this rank expects " + object_type_name(type) +
                                        (std::string(operation) == "recv" ? ": the ranks called send and recv with different types"
                                                                          : ": the ranks called sendrecv with different types"));
  }
  std::byte* into = nullptr;
  try {
    into = sink.reserve(static_cast<std::size_t>(frame.size));
  } catch (...) {
    discard(group, status.source, status.tag);
    throw;
  }
  mpi::Message body;
  naming_errors(group.name, [&] {
    body.start_recv(group.comm, into, static_cast<std::size_t>(frame.size), DataType::UInt8, status.source, status.tag);
    wait(group, operation, body, status.source, status.tag);
  });
  return status;
}

}  // namespace

void send_object_payload(const Communicator* comm, const void* data, std::size_t size, std::uint64_t type, int dest,
                         int tag) {
  Group& group = group_for(comm, "send");
  check_p2p(group, "send", dest, tag, false, true);
  if (dest == no_peer) return;
  const ObjectFrame frame{frame_magic, type, size};
  mpi::Message head, body;
  naming_errors(group.name, [&] {
    head.start_send(group.comm, &frame, sizeof frame, DataType::UInt8, dest, tag);
    body.start_send(group.comm, data, size, DataType::UInt8, dest, tag);
    wait(group, "send", head, dest, tag);
    wait(group, "send", body, dest, tag);
  });
}

GatheredPayloads all_to_all_payload(const char* operation, const ObjectComm& c, const std::vector<Payload>& parts,
                                    std::uint64_t tag) {
  struct Frame {
    std::uint64_t size, tag, failed;
  };
  const auto n = static_cast<std::size_t>(c.size);
  const auto me = static_cast<std::size_t>(c.rank);
  std::vector<Frame> out(n), in(n);
  for (std::size_t j = 0; j < n; ++j) out[j] = Frame{parts[j].size, parts[j].tag, parts[j].failed ? 1u : 0u};
  MPIDIST_MPI_CHECK(MPI_Alltoall(out.data(), sizeof(Frame), MPI_BYTE, in.data(), sizeof(Frame), MPI_BYTE, c.comm));
  GatheredPayloads got;
  got.offsets.assign(n, 0);
  got.sizes.assign(n, 0);
  std::size_t total = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (i == me) continue;
    got.offsets[i] = total;
    got.sizes[i] = static_cast<std::size_t>(in[i].size);
    total += got.sizes[i];
  }
  got.bytes.reset(new std::byte[std::max<std::size_t>(total, 1)]);
  // The bytes, pairwise on the group's control channel (never matched by a user message), in
  // pieces of at most max_message_bytes().
  const MPI_Comm control = c.call.group()->control;
  const std::size_t limit = max_message_bytes();
  std::vector<MPI_Request> requests;
  const auto post = [&](bool sending, int peer, const std::byte* data, std::size_t size) {
    for (std::size_t off = 0; off < size; off += limit) {
      const int k = static_cast<int>(std::min(limit, size - off));
      requests.push_back(MPI_REQUEST_NULL);
      if (sending)
        MPIDIST_MPI_CHECK(MPI_Isend(data + off, k, MPI_BYTE, peer, all_to_all_tag, control, &requests.back()));
      else
        MPIDIST_MPI_CHECK(MPI_Irecv(const_cast<std::byte*>(data) + off, k, MPI_BYTE, peer, all_to_all_tag, control,
                                    &requests.back()));
    }
  };
  for (std::size_t j = 0; j < n; ++j) {
    if (j == me) continue;
    post(false, static_cast<int>(j), got.bytes.get() + got.offsets[j], got.sizes[j]);
    post(true, static_cast<int>(j), static_cast<const std::byte*>(parts[j].data), parts[j].size);
  }
  if (!requests.empty())
    MPIDIST_MPI_CHECK(MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE));
  // Every rank saw every sender's frames: a failure (lowest rank first) is the same Error everywhere.
  for (std::size_t i = 0; i < n; ++i) {
    const bool failed = i == me ? parts[me].failed : in[i].failed != 0;
    if (!failed) continue;
    fails_in_step(c);
    const std::string text = i == me ? std::string(static_cast<const char*>(parts[me].data), parts[me].size)
                                     : std::string(reinterpret_cast<const char*>(got.data(static_cast<int>(i))), got.sizes[i]);
    throw Error(operation, "rank " + std::to_string(i) + " failed: " + text);
  }
  // A rank of another type sends it to every rank and receives every other rank's: all see it.
  for (std::size_t i = 0; i < n; ++i)
    if (i != me && in[i].tag != tag) {
      fails_in_step(c);
      throw Error(operation, "rank " + std::to_string(i) + " sent " + object_type_name(in[i].tag) +
                                 " where this rank expects " + object_type_name(tag) +
                                 ": the ranks called all_to_all with different types");
    }
  return got;
}

Status recv_object_payload(const Communicator* comm, std::uint64_t type, PayloadSink& sink, int src, int tag) {
  Group& group = group_for(comm, "recv");
  check_p2p(group, "recv", src, tag, true);
  if (src == no_peer) return Status{no_peer, any_tag};  // the caller keeps its value
  return receive(group, "recv", type, sink, src, tag);
}

Status sendrecv_object_payload(const Communicator* comm, const void* data, std::size_t size, std::uint64_t type,
                               int dest, PayloadSink& sink, int src, int tag) {
  const char* operation = "sendrecv";
  Group& group = group_for(comm, operation);
  check_p2p(group, operation, dest, tag, false);  // to this rank too: the send is started first
  check_p2p(group, operation, src, tag, true);
  const ObjectFrame frame{frame_magic, type, size};
  mpi::Message head, body;
  const bool sending = dest != no_peer;
  if (sending)
    naming_errors(group.name, [&] {
      head.start_send(group.comm, &frame, sizeof frame, DataType::UInt8, dest, tag);
      body.start_send(group.comm, data, size, DataType::UInt8, dest, tag);
    });
  const auto finish_sends = [&] {
    if (sending)
      naming_errors(group.name, [&] {
        wait(group, operation, head, dest, tag);
        wait(group, operation, body, dest, tag);
      });
  };
  Status status{no_peer, any_tag};  // from proc_null: nothing received, the caller's T{}
  try {
    if (src != no_peer) status = receive(group, operation, type, sink, src, tag);
  } catch (...) {
    // The value still goes to dest, which may be receiving it: the receive's Error is the one
    // reported once the sends ended. A send that fails too throws its own Error instead: it broke
    // the communicator, which the receive's ("can still be used") would hide.
    finish_sends();
    throw;
  }
  finish_sends();
  return status;
}

}  // namespace mpidist::detail
