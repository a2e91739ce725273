// Byte transport under the object collectives (objects.hpp): fixed-size messages, and framed
// variable-size payloads that are chunked past INT_MAX bytes. Internal; implemented in
// lib/objects/transport.cpp.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "mpidist/communicator.hpp"
#include "mpidist/detail/call_ticket.hpp"

namespace mpidist::detail {

/// The communicator an object collective talks over, or none (solo): in a group of one and inside
/// a MainProcessContext every object collective is local and sends no message. rank and size are
/// the group's either way.
/// An object call in flight: numbered, fingerprinted and watched (lib/watch/call_scope.hpp) from
/// object_comm() until the ObjectComm holding it goes, at the end of the public call.
class ObjectCall {
 public:
  ObjectCall() = default;
  explicit ObjectCall(const CallTicket& ticket) noexcept : ticket_(ticket), uncaught_(std::uncaught_exceptions()) {}
  ObjectCall(ObjectCall&& other) noexcept : ticket_(std::exchange(other.ticket_, CallTicket{})), uncaught_(other.uncaught_) {}
  ObjectCall& operator=(ObjectCall&&) = delete;
  ~ObjectCall() {
    if (ticket_.group != nullptr) finish_call(ticket_, std::uncaught_exceptions() > uncaught_);
  }
  /// The group of the call, null outside the sequence (solo calls).
  Group* group() const noexcept { return ticket_.group; }

 private:
  CallTicket ticket_;
  int uncaught_ = 0;
};

/// What an object call carries, for its fingerprint: the same on every rank of one program.
struct ObjectType {
  std::uint64_t tag = 0;
  const char* name = nullptr;
};

struct ObjectComm {
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0;
  int size = 1;
  const std::string* name = nullptr;  // the communicator's name, for errors
  ObjectCall call;                    // ends when the public call returns or throws
  bool solo() const noexcept { return comm == MPI_COMM_NULL; }
};

/// Marks the Error about to be thrown by an object call as one that every rank of the call raises
/// alike after the messages were exchanged: the ranks stay in step (finish_call keeps the group).
void fails_in_step(const ObjectComm& c) noexcept;

/// Says whether and over what `operation` (carrying `type`) communicates: on `comm`, or on the world.
ObjectComm object_comm(ObjectType type, const Communicator& comm, const char* operation);
ObjectComm object_comm(ObjectType type, const char* operation);
/// The same, after validating `root`: a bad root throws the same Error on every rank before any
/// message is sent.
ObjectComm object_comm(ObjectType type, const Communicator& comm, const char* operation, int root);
ObjectComm object_comm(ObjectType type, const char* operation, int root);

/// What one rank contributes: its encoded value, or (failed) the text of the exception that
/// prevented encoding it, which every receiver turns into an Error naming this rank.
struct Payload {
  const void* data = nullptr;
  std::size_t size = 0;
  std::uint64_t tag = 0;  // type fingerprint; receivers reject a payload of another type
  bool failed = false;
};

/// Hands out the memory a payload of `size` bytes is received into. May throw (a size that
/// cannot be a T): the transport then finishes the collective into scratch memory and rethrows,
/// so no rank is left waiting.
class PayloadSink {
 public:
  virtual std::byte* reserve(std::size_t size) = 0;

 protected:
  ~PayloadSink() = default;
};

/// Every rank's payload, back to back in one buffer (rank r's at offsets[r], sizes[r] bytes).
struct GatheredPayloads {
  std::unique_ptr<std::byte[]> bytes;
  std::vector<std::size_t> offsets;
  std::vector<std::size_t> sizes;
  const std::byte* data(int rank) const { return bytes.get() + offsets[static_cast<std::size_t>(rank)]; }
  std::size_t size(int rank) const { return sizes[static_cast<std::size_t>(rank)]; }
};

// Every payload, whatever its type: a fixed 256-byte frame per rank (size, type tag, status, and
// the payload itself when it fits in the 232 bytes left), then the payloads that did not fit,
// straight from and into the callers' memory, chunked past the message limit. A small payload
// costs one message. A frame of one size for every type lets a rank that expects another type
// name both, instead of failing inside MPI. Each throws Error on every rank that learns that a
// sender failed, and on a receiver that expected another type.
/// Root sends `mine`; the other ranks receive it into sink.reserve(size).
void broadcast_payload(const char* operation, const ObjectComm& c, const Payload& mine, PayloadSink& sink, int root);
/// Every rank receives every rank's payload (its own included), counts first, then
/// MPI_Allgatherv.
GatheredPayloads all_gather_payload(const char* operation, const ObjectComm& c, const Payload& mine);
/// Root receives every rank's payload (MPI_Gatherv); the result is empty on the other ranks.
GatheredPayloads gather_payload(const char* operation, const ObjectComm& c, const Payload& mine, int root);
/// Root sends parts[r] to rank r (MPI_Scatterv). On root the parts lie back to back, in rank
/// order, in one buffer starting at `base`; every rank receives its own part into
/// sink.reserve(size) and rejects a part whose type tag is not `tag`.
void scatter_payload(const char* operation, const ObjectComm& c, const std::byte* base,
                     const std::vector<Payload>& parts, std::uint64_t tag, PayloadSink& sink, int root);

/// Size of the frame every variable-size payload starts with.
inline constexpr std::size_t payload_frame_bytes = 256;
/// Checks a received frame (`payload_frame_bytes` bytes from `rank`) as the receive path does
/// before allocating anything: Error for a status no sender writes or a size no host can hold.
/// Returns the payload size it announces. (Also what the fuzz target feeds.)
std::size_t check_received_frame(const char* operation, int rank, const std::byte* frame);

/// The largest single message (bytes) the transport sends before chunking: INT_MAX normally.
std::size_t max_message_bytes() noexcept;
/// Lowers the message limit so tests can exercise chunking with small payloads; 0 restores it.
void set_max_message_bytes_for_testing(std::size_t bytes) noexcept;

}  // namespace mpidist::detail
