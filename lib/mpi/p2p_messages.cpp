// Point-to-point messages: one MPI message of bytes, header first (p2p_messages.hpp).
#include "mpi/p2p_messages.hpp"

#include <algorithm>
#include <climits>
#include <cstring>
#include <memory>
#include <utility>

#include "core/mpi_check.hpp"
#include "mpi/host_collectives.hpp"
#include "mpidist/error.hpp"

namespace mpidist::detail::mpi {
namespace {

constexpr std::uint32_t magic = 0x32706d64;  // "dmp2"

// Header + payload as one datatype of bytes at absolute addresses (used with MPI_BOTTOM). The
// payload is described as pieces of `piece` bytes and a rest, so that no count passes INT_MAX.
MPI_Datatype header_and_payload(const MessageHeader* header, const void* payload, std::size_t bytes) {
  const std::size_t piece = std::min<std::size_t>(std::size_t{1} << 30, max_count());
  const std::size_t pieces = bytes / piece;
  const std::size_t rest = bytes % piece;
  MPI_Datatype piece_type = MPI_DATATYPE_NULL;
  MPIDIST_MPI_CHECK(MPI_Type_contiguous(static_cast<int>(piece), MPI_BYTE, &piece_type));
  int lengths[3] = {static_cast<int>(sizeof(MessageHeader)), static_cast<int>(pieces), static_cast<int>(rest)};
  MPI_Aint places[3];
  MPIDIST_MPI_CHECK(MPI_Get_address(header, &places[0]));
  MPIDIST_MPI_CHECK(MPI_Get_address(payload, &places[1]));
  MPIDIST_MPI_CHECK(MPI_Get_address(static_cast<const char*>(payload) + pieces * piece, &places[2]));
  MPI_Datatype types[3] = {MPI_BYTE, piece_type, MPI_BYTE};
  MPI_Datatype whole = MPI_DATATYPE_NULL;
  const int blocks = rest > 0 ? 3 : 2;
  MPIDIST_MPI_CHECK(MPI_Type_create_struct(blocks, lengths, places, types, &whole));
  MPIDIST_MPI_CHECK(MPI_Type_commit(&whole));
  MPI_Type_free(&piece_type);
  return whole;
}

std::string elements(std::uint64_t count, DataType dtype) {
  return std::to_string(count) + " " + std::string(to_string(dtype)) + (count == 1 ? " element" : " elements");
}

}  // namespace

std::vector<std::byte> receive_whole(MPI_Message& message, const MPI_Status& status) {
  MPI_Count bytes = 0;
  MPI_Get_elements_x(&status, MPI_BYTE, &bytes);
  const auto size = static_cast<std::size_t>(bytes < 0 ? 0 : bytes);
  std::vector<std::byte> whole(std::max<std::size_t>(size, 1));
  constexpr std::size_t piece = std::size_t{1} << 30;
  MPI_Datatype type = MPI_BYTE;
  int count = static_cast<int>(size);
  if (size > static_cast<std::size_t>(INT_MAX)) {  // pieces of 1 GiB and the rest, as one datatype
    MPI_Datatype block = MPI_DATATYPE_NULL;
    MPIDIST_MPI_CHECK(MPI_Type_contiguous(static_cast<int>(piece), MPI_BYTE, &block));
    int lengths[2] = {static_cast<int>(size / piece), static_cast<int>(size % piece)};
    MPI_Aint places[2] = {0, static_cast<MPI_Aint>(size / piece * piece)};
    MPI_Datatype types[2] = {block, MPI_BYTE};
    MPIDIST_MPI_CHECK(MPI_Type_create_struct(2, lengths, places, types, &type));
    MPIDIST_MPI_CHECK(MPI_Type_commit(&type));
    MPI_Type_free(&block);
    count = 1;
  }
  MPI_Status received;
  const int code = MPI_Mrecv(whole.data(), count, type, &message, &received);
  if (type != MPI_BYTE) MPI_Type_free(&type);
  MPIDIST_MPI_CHECK(code);
  whole.resize(size);
  return whole;
}

std::string describe_unreceived(MPI_Message& message, const MPI_Status& status) {
  const std::vector<std::byte> whole = receive_whole(message, status);
  std::string text = "a message from rank " + std::to_string(status.MPI_SOURCE) + " (tag " + std::to_string(status.MPI_TAG);
  MessageHeader header{};
  if (whole.size() >= sizeof header) std::memcpy(&header, whole.data(), sizeof header);
  if (header.magic == magic && whole.size() == sizeof header + header.count * size_of(static_cast<DataType>(header.dtype)))
    return text + ", " + elements(header.count, static_cast<DataType>(header.dtype)) + ")";
  return text + ", " + std::to_string(whole.size()) + " bytes)";
}

std::optional<Status> probe_once(MPI_Comm comm, int src, int tag) {
  int found = 0;
  MPI_Status status;
  MPIDIST_MPI_CHECK(MPI_Iprobe(src, tag, comm, &found, &status));
  if (!found) return std::nullopt;
  MPI_Count received = 0;
  MPIDIST_MPI_CHECK(MPI_Get_elements_x(&status, MPI_BYTE, &received));
  const auto header = static_cast<MPI_Count>(sizeof(MessageHeader));
  return Status{status.MPI_SOURCE, status.MPI_TAG, static_cast<std::size_t>(received > header ? received - header : 0)};
}

MessageTypes::~MessageTypes() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;  // MPI took them with it
  for (auto& e : entries_)
    if (e.type != MPI_DATATYPE_NULL) MPI_Type_free(&e.type);
}

MPI_Datatype MessageTypes::get(const MessageHeader* header, const void* payload, std::size_t bytes) {
  std::lock_guard lock(mutex_);
  Entry* oldest = &entries_[0];
  for (auto& e : entries_) {
    if (e.type != MPI_DATATYPE_NULL && e.header == header && e.payload == payload && e.bytes == bytes) {
      e.used = ++clock_;
      return e.type;
    }
    if (e.used < oldest->used) oldest = &e;
  }
  const MPI_Datatype made = header_and_payload(header, payload, bytes);
  if (oldest->type != MPI_DATATYPE_NULL) MPI_Type_free(&oldest->type);
  *oldest = Entry{header, payload, bytes, made, ++clock_};
  return made;
}

Message::~Message() { release_type(); }

Message::Message(Message&& other) noexcept
    : request_(std::exchange(other.request_, MPI_REQUEST_NULL)),
      header_(other.header_),
      packed_(std::move(other.packed_)),
      type_(std::exchange(other.type_, MPI_DATATYPE_NULL)),
      type_kept_(other.type_kept_),
      data_(other.data_),
      count_(other.count_),
      dtype_(other.dtype_),
      receiving_(other.receiving_),
      source_(other.source_),
      tag_(other.tag_),
      mismatch_(std::move(other.mismatch_)) {
  // A pending request points into the header (or packed buffer) it was posted with: only moved
  // before anything was posted (a vector of Messages being filled).
}

void Message::free_type() noexcept {
  if (!type_kept_) MPI_Type_free(&type_);
  type_ = MPI_DATATYPE_NULL;
  type_kept_ = false;
}

MPI_Datatype Message::make_type(const void* payload, std::size_t bytes, MessageTypes* types) {
  type_kept_ = types != nullptr;
  return types != nullptr ? types->get(&header_, payload, bytes) : header_and_payload(&header_, payload, bytes);
}

void Message::start_send(MPI_Comm comm, const void* data, std::size_t count, DataType dtype, int dest, int tag,
                         MessageTypes* types) {
  receiving_ = false;
  source_ = dest;
  tag_ = tag;
  header_ = MessageHeader{magic, static_cast<std::int32_t>(dtype), count};
  const std::size_t bytes = count * size_of(dtype);
  if (bytes <= packing_limit) {
    packed_.resize(sizeof(MessageHeader) + bytes, boost::container::default_init);  // written next: no zeroing
    std::memcpy(packed_.data(), &header_, sizeof(MessageHeader));
    if (bytes > 0) std::memcpy(packed_.data() + sizeof(MessageHeader), data, bytes);
    MPIDIST_MPI_CHECK(MPI_Isend(packed_.data(), static_cast<int>(packed_.size()), MPI_BYTE, dest, tag, comm, &request_));
    return;
  }
  type_ = make_type(data, bytes, types);
  MPIDIST_MPI_CHECK(MPI_Isend(MPI_BOTTOM, 1, type_, dest, tag, comm, &request_));
}

void Message::start_recv(MPI_Comm comm, void* data, std::size_t count, DataType dtype, int src, int tag,
                         MessageTypes* types) {
  receiving_ = true;
  data_ = data;
  count_ = count;
  dtype_ = dtype;
  source_ = src;
  tag_ = tag;
  const std::size_t bytes = count * size_of(dtype);
  // No magic until a message writes one: a message too short for a header leaves none behind
  // (finish_receive trusts a matching header without asking MPI for the length).
  header_.magic = 0;
  if (bytes <= packing_limit) {
    packed_.resize(sizeof(MessageHeader) + bytes, boost::container::default_init);  // MPI writes it
    std::memcpy(packed_.data(), &header_.magic, sizeof header_.magic);
    MPIDIST_MPI_CHECK(MPI_Irecv(packed_.data(), static_cast<int>(packed_.size()), MPI_BYTE, src, tag, comm, &request_));
    return;
  }
  type_ = make_type(data, bytes, types);
  MPIDIST_MPI_CHECK(MPI_Irecv(MPI_BOTTOM, 1, type_, src, tag, comm, &request_));
}

bool Message::test() {
  if (request_ == MPI_REQUEST_NULL) return true;
  int done = 0;
  MPI_Status status;
  status.MPI_ERROR = MPI_SUCCESS;
  const int code = MPI_Test(&request_, &done, &status);
  if (code != MPI_SUCCESS) {
    // A receive that ran past its buffer completes with MPI_ERR_TRUNCATE: checked below.
    int error_class = MPI_SUCCESS;
    MPI_Error_class(code, &error_class);
    if (!receiving_ || error_class != MPI_ERR_TRUNCATE)
      throw_mpi_error(receiving_ ? "MPI_Irecv" : "MPI_Isend", code, __FILE__, __LINE__);
    done = 1;
  }
  if (!done) return false;
  request_ = MPI_REQUEST_NULL;
  release_type();
  if (receiving_) finish_receive(code, status);
  return true;
}

void Message::finish_receive(int code, const MPI_Status& status) {
  source_ = status.MPI_SOURCE;
  tag_ = status.MPI_TAG;
  int error_class = MPI_SUCCESS;
  if (code != MPI_SUCCESS) MPI_Error_class(code, &error_class);
  const bool truncated = error_class == MPI_ERR_TRUNCATE;
  const std::size_t bytes = count_ * size_of(dtype_);
  if (!packed_.empty()) std::memcpy(&header_, packed_.data(), sizeof(MessageHeader));
  // The common case: a header that matches the buffer. An mpidist sender sends exactly what its
  // header says, so the length needs no MPI_Get_elements_x (a tenth of a small message's cost).
  if (!truncated && header_.magic == magic && header_.dtype == static_cast<std::int32_t>(dtype_) &&
      header_.count == count_) {
    if (!packed_.empty() && bytes > 0) std::memcpy(data_, packed_.data() + sizeof(MessageHeader), bytes);
    return;
  }
  MPI_Count received = 0;
  if (!truncated) MPI_Get_elements_x(&status, MPI_BYTE, &received);
  if ((!truncated && received < static_cast<MPI_Count>(sizeof(MessageHeader))) || header_.magic != magic) {
    mismatch_ = "rank " + std::to_string(source_) + " sent a message with tag " + std::to_string(tag_) +
                " that is not an mpidist point-to-point message (raw MPI on the library's communicator?)";
    return;
  }
  const auto sent_dtype = static_cast<DataType>(header_.dtype);
  if (truncated || header_.dtype != static_cast<std::int32_t>(dtype_) || header_.count != count_ ||
      static_cast<std::size_t>(received) != sizeof(MessageHeader) + bytes) {
    mismatch_ = "rank " + std::to_string(source_) + " sent " + elements(header_.count, sent_dtype) + " (tag " +
                std::to_string(tag_) + ") where this rank's buffer holds " + elements(count_, dtype_) +
                ": the message and the buffer must have the same element count and type";
    // A value's frame where a buffer was expected: objects/p2p.cpp sends one before the value.
    std::uint64_t first = 0;
    if (!truncated && sent_dtype == DataType::UInt8 &&
        static_cast<std::size_t>(received) >= sizeof(MessageHeader) + sizeof first) {
      std::memcpy(&first, packed_.empty() ? data_ : packed_.data() + sizeof(MessageHeader), sizeof first);
      if (first == object_frame_magic)
        mismatch_ += " (it is the frame of an object: the sender called send(value), which pairs with recv<T>(src) "
                     "or recv(src, tag, value); a buffer pairs with send(std::span(v)))";
    }
  }
}

bool Message::cancel_receive() {
  if (request_ == MPI_REQUEST_NULL) return false;
  MPI_Cancel(&request_);
  MPI_Status status;
  // A cancelled receive completes at once; one that matched meanwhile completes with its data.
  MPI_Request copy = request_;
  int done = 0;
  while (!done) {
    if (MPI_Test(&copy, &done, &status) != MPI_SUCCESS) done = 1;
  }
  request_ = MPI_REQUEST_NULL;
  release_type();
  int cancelled = 0;
  MPI_Test_cancelled(&status, &cancelled);
  if (!cancelled) finish_receive(status.MPI_ERROR == MPI_SUCCESS ? MPI_SUCCESS : status.MPI_ERROR, status);
  return cancelled != 0;
}

}  // namespace mpidist::detail::mpi
