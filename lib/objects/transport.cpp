// The byte transport of the object collectives: frames, tails, chunking past the message limit.
#include <algorithm>
#include <climits>
#include <cstring>
#include <new>
#include <string>
#include <unistd.h>

#include "core/context.hpp"
#include "core/group.hpp"
#include "core/mpi_check.hpp"
#include "watch/agreement.hpp"
#include "watch/call_scope.hpp"
#include "mpidist/detail/object_transport.hpp"
#include "mpidist/detail/type_names.hpp"
#include "mpidist/error.hpp"
#include "mpidist/guards.hpp"

namespace mpidist::detail {
namespace {

// The first message of every variable-size payload. 256 bytes cost the same as 20 on every
// interconnect we care about, and let small objects (a struct, a metrics map) travel in one message.
struct FrameHeader {
  std::uint64_t size;
  std::uint64_t tag;
  std::uint32_t failed;
  std::uint32_t reserved;
};
constexpr std::size_t frame_bytes = 256;
constexpr std::size_t inline_capacity = frame_bytes - sizeof(FrameHeader);
// A payload travels inside its frame when it fits, else entirely in the tail: then the tail starts
// at the payload's first byte, as aligned as the caller's memory, and the frame copies nothing.
struct Frame {
  FrameHeader header;
  std::byte inline_bytes[inline_capacity];
  std::size_t inline_size() const noexcept { return header.size <= inline_capacity ? header.size : 0; }
  std::size_t tail_size() const noexcept { return header.size - inline_size(); }
};
static_assert(sizeof(Frame) == frame_bytes);

// Staging memory for gathers past the message limit, per round and in all.
constexpr std::size_t max_staging_bytes = std::size_t{64} << 20;

std::size_t g_message_limit = 0;  // 0: INT_MAX

// A failed sender's text is cut to what fits in its frame, so every rank holding the frames can
// name the failure without waiting for a tail.
Frame make_frame(const Payload& p) {
  Frame f{};
  const std::size_t size = p.failed ? std::min(p.size, inline_capacity) : p.size;
  f.header = FrameHeader{size, p.tag, p.failed ? 1u : 0u, 0u};
  if (size > 0) std::memcpy(f.inline_bytes, p.data, f.inline_size());
  return f;
}

int as_count(std::size_t n) { return static_cast<int>(n); }

void bcast_chunked(std::byte* data, std::size_t n, int root, MPI_Comm comm) {
  const std::size_t limit = max_message_bytes();
  while (n > 0) {
    const std::size_t k = std::min(n, limit);
    MPIDIST_MPI_CHECK(MPI_Bcast(data, as_count(k), MPI_BYTE, root, comm));
    data += k;
    n -= k;
  }
}

// The most a payload can be: what this host's memory holds. A frame announcing more (a size
// field of 2^62) did not come from a sender holding the value: refused before any allocation, and
// before any tail is awaited, since none will come.
std::size_t largest_receivable() {
  static const std::size_t bytes = [] {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    return pages > 0 && page > 0 ? static_cast<std::size_t>(pages) * static_cast<std::size_t>(page)
                                 : std::size_t{1} << 40;
  }();
  return bytes;
}

// A frame that this library cannot have written becomes an Error naming the sender and the field.
void check_frame(const char* operation, int rank, const Frame& f) {
  auto refuse = [&](const std::string& what) {
    throw Error(operation, "the frame from rank " + std::to_string(rank) + " is corrupt: " + what);
  };
  if (f.header.failed > 1) refuse("status " + std::to_string(f.header.failed) + " (expected 0 or 1)");
  if (f.header.failed == 1 && f.header.size > inline_capacity)
    refuse("a failure text of " + std::to_string(f.header.size) + " bytes (at most " +
           std::to_string(inline_capacity) + ")");
  if (f.header.size > largest_receivable())
    refuse("it announces " + std::to_string(f.header.size) + " bytes, more than this host's memory (" +
           std::to_string(largest_receivable()) + " bytes)");
}

void check_frames_before_receiving(const char* operation, const std::vector<Frame>& frames) {
  for (std::size_t r = 0; r < frames.size(); ++r) check_frame(operation, static_cast<int>(r), frames[r]);
}

// new std::byte[size] that raises Error instead of std::bad_alloc.
std::unique_ptr<std::byte[]> allocate_payload(const char* operation, const std::string& what, std::size_t size) {
  try {
    return std::unique_ptr<std::byte[]>(new std::byte[std::max<std::size_t>(size, 1)]);
  } catch (const std::bad_alloc&) {
    throw Error(operation, "cannot allocate " + std::to_string(size) + " bytes for " + what);
  }
}

// Throws the Error every rank raises when a sender reported a failure instead of a value.
void throw_if_failed(const char* operation, int rank, const Frame& f) {
  if (f.header.failed == 0) return;
  throw Error(operation, "rank " + std::to_string(rank) +
                             " failed: " + std::string(reinterpret_cast<const char*>(f.inline_bytes), f.inline_size()));
}

// A receiver that refuses the root's type raises alone (the root never sees the receivers' types),
// after the call's messages were all exchanged: the ranks stay in step, and its hash becomes the
// root's, so the consistency checks go on comparing this communicator.
void refuse_roots_type(const char* operation, const ObjectComm& c, int root, const Frame& f, std::uint64_t expected) {
  if (f.header.tag == expected) return;
  if (Group* group = c.call.group()) {
    group->failed_in_step = true;
    group->hash_after_failure =
        fold_fingerprint(group->hash, Fingerprint{operation, 1, 0, -1, root, -1, nullptr, f.header.tag});
  }
}

// The frame's tag is the sender's type fingerprint (type_tag<T>). Checked before anything of the
// payload is decoded; both types are named from the registry every rank of the program shares.
void check_tag(const char* operation, int rank, const Frame& f, std::uint64_t expected) {
  if (f.header.tag != expected)
    throw Error(operation, "rank " + std::to_string(rank) + " sent " + object_type_name(f.header.tag) +
                               " where this rank expects " + object_type_name(expected) + ": the ranks called " +
                               operation + " with different types");
}

// The lowest failed sender, then a sender of another type, become an Error on every rank: all of
// them hold all frames, and every message of the call was exchanged, so the ranks stay in step.
void check_frames(const char* operation, const ObjectComm& c, const std::vector<Frame>& frames, std::uint64_t expected) {
  fails_in_step(c);
  for (std::size_t r = 0; r < frames.size(); ++r) throw_if_failed(operation, static_cast<int>(r), frames[r]);
  for (std::size_t r = 0; r < frames.size(); ++r) check_tag(operation, static_cast<int>(r), frames[r], expected);
}

// Every rank's payload back to back, in rank order; where each tail lies; and whether one
// v-collective can address all tails (else rounds through a staging buffer). Every rank computes
// the same plan from the same frames.
struct Plan {
  std::vector<std::size_t> offset, size, tail, at;
  std::size_t total = 0, largest_tail = 0;
  bool direct = true;
};
Plan plan_of(const std::vector<Frame>& frames) {
  Plan p;
  const std::size_t limit = max_message_bytes();
  for (const auto& f : frames) {
    p.offset.push_back(p.total);
    p.size.push_back(f.header.size);
    p.tail.push_back(f.tail_size());
    p.at.push_back(p.total + f.inline_size());
    p.total += f.header.size;
    p.largest_tail = std::max(p.largest_tail, f.tail_size());
    if (p.at.back() + p.tail.back() > limit) p.direct = false;
  }
  return p;
}

// The receive buffer, with the inline bytes of every frame already in place. No value-
// initialization: every byte is overwritten by the frames and the tails.
GatheredPayloads receive_buffer(const char* operation, const std::vector<Frame>& frames, const Plan& p) {
  GatheredPayloads g{allocate_payload(operation, "the payloads of all ranks", p.total), p.offset, p.size};
  for (std::size_t r = 0; r < frames.size(); ++r)
    std::memcpy(g.bytes.get() + p.offset[r], frames[r].inline_bytes, frames[r].inline_size());
  return g;
}

std::vector<int> to_ints(const std::vector<std::size_t>& v) {
  std::vector<int> out;
  for (auto x : v) out.push_back(as_count(x));
  return out;
}

// Per-rank chunk for rounds past the message limit: all ranks' chunks together stay under the
// limit and under max_staging_bytes.
std::size_t round_chunk(int size) {
  return std::max<std::size_t>(1, std::min(max_message_bytes(), max_staging_bytes) / static_cast<std::size_t>(size));
}

// Rank r's part of round k: bytes [k·chunk, (k+1)·chunk) of its tail.
std::vector<int> round_counts(const Plan& p, std::size_t k, std::size_t chunk) {
  std::vector<int> counts;
  for (auto n : p.tail) counts.push_back(as_count(n > k * chunk ? std::min(chunk, n - k * chunk) : 0));
  return counts;
}

std::vector<int> round_displs(int size, std::size_t chunk) {
  std::vector<int> displs;
  for (int r = 0; r < size; ++r) displs.push_back(as_count(static_cast<std::size_t>(r) * chunk));
  return displs;
}

// MPI_Allgatherv (root < 0) or MPI_Gatherv of every tail into `out` (receivers only).
void gather_tails(const ObjectComm& c, const std::byte* my_tail, std::byte* out, const Plan& p, int root) {
  const bool receiving = root < 0 || c.rank == root;
  const auto me = static_cast<std::size_t>(c.rank);
  auto collective = [&](const std::byte* send, const std::vector<int>& counts, std::byte* recv,
                        const std::vector<int>& displs) {
    if (root < 0)
      MPIDIST_MPI_CHECK(
          MPI_Allgatherv(send, counts[me], MPI_BYTE, recv, counts.data(), displs.data(), MPI_BYTE, c.comm));
    else
      MPIDIST_MPI_CHECK(
          MPI_Gatherv(send, counts[me], MPI_BYTE, recv, counts.data(), displs.data(), MPI_BYTE, root, c.comm));
  };
  if (p.direct) {
    collective(my_tail, to_ints(p.tail), out, to_ints(p.at));
    return;
  }
  const std::size_t chunk = round_chunk(c.size);
  const auto displs = round_displs(c.size, chunk);
  std::unique_ptr<std::byte[]> staging(receiving ? new std::byte[chunk * static_cast<std::size_t>(c.size)] : nullptr);
  for (std::size_t k = 0; k * chunk < p.largest_tail; ++k) {
    const auto counts = round_counts(p, k, chunk);
    collective(counts[me] > 0 ? my_tail + k * chunk : my_tail, counts, staging.get(), displs);
    if (!receiving) continue;
    for (std::size_t r = 0; r < counts.size(); ++r)
      std::memcpy(out + p.at[r] + k * chunk, staging.get() + r * chunk, static_cast<std::size_t>(counts[r]));
  }
}

// MPI_Scatterv of the tails laid out at root's `base` by plan p; rank r's lands at `my_tail`.
void scatter_tails(const ObjectComm& c, const std::byte* base, std::byte* my_tail, const Plan& p, int root) {
  const auto me = static_cast<std::size_t>(c.rank);
  if (p.direct) {
    const auto counts = to_ints(p.tail), displs = to_ints(p.at);
    MPIDIST_MPI_CHECK(
        MPI_Scatterv(base, counts.data(), displs.data(), MPI_BYTE, my_tail, counts[me], MPI_BYTE, root, c.comm));
    return;
  }
  const std::size_t chunk = round_chunk(c.size);
  const auto displs = round_displs(c.size, chunk);
  std::unique_ptr<std::byte[]> staging(c.rank == root ? new std::byte[chunk * static_cast<std::size_t>(c.size)]
                                                      : nullptr);
  for (std::size_t k = 0; k * chunk < p.largest_tail; ++k) {
    const auto counts = round_counts(p, k, chunk);
    if (c.rank == root)
      for (std::size_t r = 0; r < counts.size(); ++r)
        std::memcpy(staging.get() + r * chunk, base + p.at[r] + k * chunk, static_cast<std::size_t>(counts[r]));
    MPIDIST_MPI_CHECK(MPI_Scatterv(staging.get(), counts.data(), displs.data(), MPI_BYTE,
                                   counts[me] > 0 ? my_tail + k * chunk : my_tail, counts[me], MPI_BYTE, root, c.comm));
  }
}

// all_gather (root < 0) and gather: every rank learns every frame (MPI_Allgather: the counts
// come first, and all ranks plan the same tail rounds), then the tails follow.
GatheredPayloads gather_any(const char* operation, const ObjectComm& c, const Payload& mine, int root) {
  const Frame my_frame = make_frame(mine);
  std::vector<Frame> frames(static_cast<std::size_t>(c.size));
  MPIDIST_MPI_CHECK(MPI_Allgather(&my_frame, as_count(frame_bytes), MPI_BYTE, frames.data(), as_count(frame_bytes),
                                  MPI_BYTE, c.comm));
  check_frames_before_receiving(operation, frames);
  const bool receiving = root < 0 || c.rank == root;
  const Plan p = plan_of(frames);
  GatheredPayloads g = receiving ? receive_buffer(operation, frames, p) : GatheredPayloads{};
  const std::byte* my_tail = static_cast<const std::byte*>(mine.data) + my_frame.inline_size();
  if (p.largest_tail > 0) gather_tails(c, my_tail, g.bytes.get(), p, root);
  check_frames(operation, c, frames, mine.tag);
  return g;
}

// Receives a payload described by `f` into the sink's memory; when the sink refuses the size, or
// the sender failed or sent another type, into scratch memory, so the collective completes on
// every rank before anyone throws.
class Landing {
 public:
  Landing(const char* operation, int from, PayloadSink& sink, const Frame& f, std::uint64_t expected) {
    if (f.header.failed == 0 && f.header.tag == expected) {
      try {
        dest_ = sink.reserve(f.header.size);
      } catch (...) {
        refused_ = std::current_exception();
      }
    }
    if (dest_ == nullptr) {
      scratch_ = allocate_payload(operation, "the payload from rank " + std::to_string(from), f.header.size);
      dest_ = scratch_.get();
    }
    std::memcpy(dest_, f.inline_bytes, f.inline_size());
  }
  std::byte* tail(const Frame& f) const { return dest_ + f.inline_size(); }
  void finish() const {
    if (refused_) std::rethrow_exception(refused_);
  }

 private:
  std::byte* dest_ = nullptr;
  std::unique_ptr<std::byte[]> scratch_;
  std::exception_ptr refused_;
};

}  // namespace

namespace {
ObjectComm object_comm(Group& group, ObjectType type, const char* operation, int root) {
  const bool local = MainProcessContext::depth() > 0;
  const bool solo = group.topology.size == 1 || local;
  // Numbered and watched like every collective; local calls inside a MainProcessContext are none.
  return ObjectComm{solo ? MPI_COMM_NULL : group.comm, group.topology.rank, group.topology.size, &group.name,
                    local ? ObjectCall{}
                          : ObjectCall(start_call(group, Fingerprint{operation, 1, 0, -1, root, -1, type.name, type.tag}))};
}

}  // namespace

ObjectComm object_comm(ObjectType type, const Communicator& comm, const char* operation) {
  return object_comm(group_of(comm, operation), type, operation, -1);
}

ObjectComm object_comm(ObjectType type, const char* operation) {
  return object_comm(world_group(operation), type, operation, -1);
}

// A bad root is this rank's own mistake, found once the call is numbered: the ranks vote on
// whether all of them made it (then they stay in step), or the others went on (the group breaks).
void check_root(Group& group, ObjectType type, const char* operation, int root) {
  const auto bad = capture([&] { check_rank(group, operation, root, false, "root rank"); });
  if (!bad) return;
  if (MainProcessContext::depth() > 0 || group.topology.size == 1) std::rethrow_exception(bad);
  vote_on_local_failure(group, Fingerprint{operation, 1, 0, -1, root, -1, type.name, type.tag}, bad);
}

ObjectComm object_comm(ObjectType type, const Communicator& comm, const char* operation, int root) {
  auto& group = group_of(comm, operation);
  ObjectComm c = object_comm(group, type, operation, root);
  check_root(group, type, operation, root);
  return c;
}

ObjectComm object_comm(ObjectType type, const char* operation, int root) {
  auto& group = world_group(operation);
  ObjectComm c = object_comm(group, type, operation, root);
  check_root(group, type, operation, root);
  return c;
}

void fails_in_step(const ObjectComm& c) noexcept {
  if (Group* group = c.call.group()) group->failed_in_step = true;
}

std::size_t check_received_frame(const char* operation, int rank, const std::byte* frame) {
  static_assert(payload_frame_bytes == frame_bytes);
  Frame f;
  std::memcpy(&f, frame, sizeof f);
  check_frame(operation, rank, f);
  return f.header.size;
}

std::size_t max_message_bytes() noexcept {
  return g_message_limit == 0 ? static_cast<std::size_t>(INT_MAX) : g_message_limit;
}

void set_max_message_bytes_for_testing(std::size_t bytes) noexcept {
  g_message_limit = std::min<std::size_t>(bytes, INT_MAX);
}

GatheredPayloads all_gather_payload(const char* operation, const ObjectComm& c, const Payload& mine) {
  return gather_any(operation, c, mine, -1);
}

GatheredPayloads gather_payload(const char* operation, const ObjectComm& c, const Payload& mine, int root) {
  return gather_any(operation, c, mine, root);
}

void broadcast_payload(const char* operation, const ObjectComm& c, const Payload& mine, PayloadSink& sink, int root) {
  Frame f = c.rank == root ? make_frame(mine) : Frame{};
  MPIDIST_MPI_CHECK(MPI_Bcast(&f, as_count(frame_bytes), MPI_BYTE, root, c.comm));
  if (c.rank == root) {
    // MPI_Bcast only reads the root's buffer.
    auto* tail = const_cast<std::byte*>(static_cast<const std::byte*>(mine.data)) + f.inline_size();
    bcast_chunked(tail, f.tail_size(), root, c.comm);
    fails_in_step(c);
    throw_if_failed(operation, root, f);
    return;
  }
  check_frame(operation, root, f);
  Landing landing(operation, root, sink, f, mine.tag);
  bcast_chunked(landing.tail(f), f.tail_size(), root, c.comm);
  fails_in_step(c);
  throw_if_failed(operation, root, f);
  refuse_roots_type(operation, c, root, f, mine.tag);
  check_tag(operation, root, f, mine.tag);
  landing.finish();
}

void scatter_payload(const char* operation, const ObjectComm& c, const std::byte* base,
                     const std::vector<Payload>& parts, std::uint64_t tag, PayloadSink& sink, int root) {
  // Root sends every rank's frame to all, so all ranks plan the same tail rounds.
  std::vector<Frame> frames(static_cast<std::size_t>(c.size));
  if (c.rank == root)
    for (std::size_t r = 0; r < frames.size(); ++r) frames[r] = make_frame(parts[r]);
  MPIDIST_MPI_CHECK(MPI_Bcast(frames.data(), as_count(frame_bytes * frames.size()), MPI_BYTE, root, c.comm));
  for (const auto& f : frames) check_frame(operation, root, f);
  const Plan p = plan_of(frames);
  const Frame& mine = frames[static_cast<std::size_t>(c.rank)];
  Landing landing(operation, root, sink, mine, tag);
  if (p.largest_tail > 0) scatter_tails(c, base, landing.tail(mine), p, root);
  fails_in_step(c);
  throw_if_failed(operation, root, mine);
  refuse_roots_type(operation, c, root, mine, tag);
  check_tag(operation, root, mine, tag);
  landing.finish();
}

}  // namespace mpidist::detail
