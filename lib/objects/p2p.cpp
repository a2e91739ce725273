// Objects between two ranks: send and recv of any value the object calls carry. A value travels
// as two point-to-point messages on the user's tag (mpi/p2p_messages): a 24-byte frame (its type's
// fingerprint and its size), then its bytes. The receiver checks the frame before it allocates
// anything: another type is an Error naming both types, a size no T can have is an Error, and in
// either case the payload is received into nothing (MPI's truncation), so no message is left over.
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>

#include "core/group.hpp"
#include "core/p2p_rules.hpp"
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
constexpr std::uint64_t frame_magic = 0x6d70646f626a6563;  // "mpdobjec"

std::string from(int peer, int tag) {
  return (peer < 0 ? std::string("any rank") : "rank " + std::to_string(peer)) + " (" +
         (tag < 0 ? std::string("any tag") : "tag " + std::to_string(tag)) + ")";
}

// Polls `m` under the group's deadline. A receive past it is cancelled (the communicator stays
// usable); a send past it breaks the communicator, as any timeout.
void wait(Group& group, const char* operation, mpi::Message& m, int peer, int tag) {
  const Deadline deadline(operation, &group);
  for (unsigned polls = 0;; ++polls) {
    if (m.test()) break;
    if (polls % 16 == 15 && deadline.passed()) {
      if (!m.receiving()) deadline.time_out(operation, ("a receive on " + from(peer, tag)).c_str());
      if (!m.cancel_receive()) break;  // it matched meanwhile
      char limit[32];
      std::snprintf(limit, sizeof limit, "%g", deadline.seconds());
      throw Error(group.name, operation,
                  std::string("timed out after ") + limit + " s waiting for a message from " + from(peer, tag) +
                      "; the peer never sent it, or sent it with another tag. The receive was cancelled: the "
                      "communicator can still be used");
    }
    std::this_thread::yield();
  }
  if (!m.mismatch().empty())
    throw Error(group.name, operation, m.mismatch() + " (an object's frame or bytes were expected: the ranks "
                                                      "called different point-to-point calls)");
}

// Receives the next message from `source` on `tag` into nothing: MPI reports the truncation.
void discard(Group& group, int source, int tag) {
  MPI_Message message = MPI_MESSAGE_NULL;
  MPI_Status status;
  if (MPI_Mprobe(source, tag, group.comm, &message, &status) != MPI_SUCCESS) return;
  char none = 0;
  MPI_Mrecv(&none, 0, MPI_BYTE, &message, &status);
}

Group& group_for(const Communicator* comm, const char* operation) {
  return comm != nullptr ? group_of(*comm, operation) : world_group(operation);
}

}  // namespace

void send_object_payload(const Communicator* comm, const void* data, std::size_t size, std::uint64_t type, int dest,
                         int tag) {
  Group& group = group_for(comm, "send");
  check_p2p(group, "send", dest, tag, false, true);
  const ObjectFrame frame{frame_magic, type, size};
  mpi::Message head, body;
  naming_errors(group.name, [&] {
    head.start_send(group.comm, &frame, sizeof frame, DataType::UInt8, dest, tag);
    body.start_send(group.comm, data, size, DataType::UInt8, dest, tag);
    wait(group, "send", head, dest, tag);
    wait(group, "send", body, dest, tag);
  });
}

Status recv_object_payload(const Communicator* comm, std::uint64_t type, PayloadSink& sink, int src, int tag) {
  Group& group = group_for(comm, "recv");
  check_p2p(group, "recv", src, tag, true);
  ObjectFrame frame;
  mpi::Message head;
  Status status;
  naming_errors(group.name, [&] {
    head.start_recv(group.comm, &frame, sizeof frame, DataType::UInt8, src < 0 ? MPI_ANY_SOURCE : src,
                    tag < 0 ? MPI_ANY_TAG : tag);
    wait(group, "recv", head, src, tag);
  });
  status = Status{head.source(), head.tag()};
  if (frame.magic != frame_magic)
    throw Error(group.name, "recv", "rank " + std::to_string(status.source) + " sent (tag " +
                                        std::to_string(status.tag) + ") a message that is not an object's frame");
  if (frame.type != type) {
    discard(group, status.source, status.tag);
    throw Error(group.name, "recv", "rank " + std::to_string(status.source) + " sent " + object_type_name(frame.type) +
                                        " where this rank expects " + object_type_name(type) +
                                        ": the ranks called send and recv with different types");
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
    wait(group, "recv", body, status.source, status.tag);
  });
  return status;
}

}  // namespace mpidist::detail
