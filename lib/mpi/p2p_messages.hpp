// Point-to-point messages on a group's communicator: every message is one MPI message of bytes,
// a 16-byte header (element type and count) followed by the payload, so a receiver learns what
// was sent even when its buffer does not fit it. Internal.
#pragma once

#include <mpi.h>

#include <boost/container/small_vector.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "mpidist/tensor.hpp"
#include "mpidist/work.hpp"

namespace mpidist::detail::mpi {

/// Receives a probed message whole into a buffer of its own size (in pieces of 1 GiB past INT_MAX
/// bytes): for messages that are refused, so that nothing is left behind on the communicator.
std::vector<std::byte> receive_whole(MPI_Message& message, const MPI_Status& status);

/// Receives a probed message that no receive took and says what it was: "a message from rank 1
/// (tag 5, 4 int32 elements)", or its size in bytes when it is not an mpidist message.
std::string describe_unreceived(MPI_Message& message, const MPI_Status& status);

/// The message that waits first to be received from `src` with `tag` (MPI_ANY_SOURCE and
/// MPI_ANY_TAG allowed) on `comm`, left there (MPI_Iprobe): its sender, tag and payload bytes past
/// the header. Nothing while none matches.
std::optional<Status> probe_once(MPI_Comm comm, int src, int tag);

/// The first 8 bytes of an object's frame (objects/p2p.cpp: send of a value sends its frame as a
/// message of bytes first), so that a tensor receive that takes one can say what was sent.
constexpr std::uint64_t object_frame_magic = 0x6d70646f626a6563;  // "mpdobjec"

/// What precedes every payload.
struct MessageHeader {
  std::uint32_t magic = 0;
  std::int32_t dtype = -1;
  std::uint64_t count = 0;
};

/// Header + payload datatypes, kept for the addresses they were built for. A send or receive in a
/// loop posts the same header (on the caller's stack) and the same buffer every time, and building
/// the type cost about 0.8 us a message past packing_limit. A type is reused only for the very
/// same addresses and size, so it describes the very same bytes; one pushed out is freed (MPI keeps
/// it alive while a pending request uses it). One per group; thread-safe.
class MessageTypes {
 public:
  MessageTypes() = default;
  ~MessageTypes();
  MessageTypes(const MessageTypes&) = delete;
  MessageTypes& operator=(const MessageTypes&) = delete;

  /// The type of `header` followed by `bytes` at `payload` (kept here: not the caller's to free).
  MPI_Datatype get(const MessageHeader* header, const void* payload, std::size_t bytes);

 private:
  struct Entry {
    const MessageHeader* header = nullptr;
    const void* payload = nullptr;
    std::size_t bytes = 0;
    MPI_Datatype type = MPI_DATATYPE_NULL;
    std::uint64_t used = 0;  // the clock at its last use: the least recently used goes first
  };
  std::mutex mutex_;
  std::array<Entry, 8> entries_{};
  std::uint64_t clock_ = 0;
};

/// One message on its way: its MPI request and what must live until it completes. Small payloads
/// are packed with their header into one buffer (a copy of at most packing_limit bytes costs less
/// than building a datatype); larger ones go straight from and to the user's buffer through a
/// derived datatype (header + payload, in pieces of at most 1 GiB, so no count passes INT_MAX).
class Message {
 public:
  Message() = default;
  ~Message();
  Message(Message&& other) noexcept;
  Message& operator=(Message&&) = delete;
  Message(const Message&) = delete;
  Message& operator=(const Message&) = delete;

  /// Posts the send of `count` elements of `dtype` at `data` to `dest` with `tag` on `comm`. A
  /// payload past packing_limit takes its datatype from `types` when given (else its own).
  void start_send(MPI_Comm comm, const void* data, std::size_t count, DataType dtype, int dest, int tag,
                  MessageTypes* types = nullptr);
  /// Posts the receive into `count` elements of `dtype` at `data` (`src` may be MPI_ANY_SOURCE and
  /// `tag` MPI_ANY_TAG).
  void start_recv(MPI_Comm comm, void* data, std::size_t count, DataType dtype, int src, int tag,
                  MessageTypes* types = nullptr);

  /// MPI_Test; true once the message is done. A receive is then checked: `mismatch()` says what
  /// differed from the buffer, "" when nothing did. Other MPI failures throw Error.
  bool test();
  /// Cancels a pending receive; true when it was cancelled (false: it had completed: test() it).
  bool cancel_receive();

  bool receiving() const noexcept { return receiving_; }
  bool done() const noexcept { return request_ == MPI_REQUEST_NULL; }
  int source() const noexcept { return source_; }
  int tag() const noexcept { return tag_; }
  /// The payload's bytes (a receive's: what it received once it matched).
  std::size_t bytes() const noexcept { return count_ * size_of(dtype_); }
  const std::string& mismatch() const noexcept { return mismatch_; }

 private:
  void finish_receive(int code, const MPI_Status& status);
  void release_type() noexcept {
    if (type_ != MPI_DATATYPE_NULL) free_type();
  }
  void free_type() noexcept;
  MPI_Datatype make_type(const void* payload, std::size_t bytes, MessageTypes* types);

  MPI_Request request_ = MPI_REQUEST_NULL;
  MessageHeader header_{};
  // Header + payload, for small payloads; in the message itself up to 48 payload bytes, so a
  // latency-bound message allocates nothing.
  boost::container::small_vector<std::byte, 64> packed_;
  MPI_Datatype type_ = MPI_DATATYPE_NULL;
  bool type_kept_ = false;  // type_ belongs to a MessageTypes: not freed here
  void* data_ = nullptr;           // the receive's buffer
  std::size_t count_ = 0;
  DataType dtype_ = DataType::Float32;
  bool receiving_ = false;
  int source_ = -1;
  int tag_ = -1;
  std::string mismatch_;
};

/// Payloads up to this many bytes are packed with their header.
inline constexpr std::size_t packing_limit = 8192;

}  // namespace mpidist::detail::mpi
