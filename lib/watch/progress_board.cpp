// Every rank's progress record in one shared-memory window per host.
#include "watch/progress_board.hpp"

#include <unistd.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <cstring>
#include <new>

#include "core/mpi_check.hpp"

namespace mpidist::detail {
namespace {

RankRecord* construct(void* memory, int world_rank, std::uint32_t capacity, const char* host) {
  auto* record = new (memory) RankRecord{};
  for (std::uint32_t i = 0; i < capacity; ++i) new (record->ring() + i) TraceEntry{};
  auto& h = record->header;
  h.world_rank = world_rank;
  h.capacity = capacity;
  h.pid.store(static_cast<std::uint64_t>(::getpid()), std::memory_order_relaxed);
  std::strncpy(h.host, host, host_name_size - 1);
  return record;
}

}  // namespace

void write_tag_text(char (&out)[type_name_size], std::int32_t tag) noexcept {
  if (tag < 0) {
    std::memcpy(out, "any tag", sizeof "any tag");
    return;
  }
  std::memcpy(out, "tag ", 4);
  *std::to_chars(out + 4, out + type_name_size - 1, tag).ptr = '\0';
}

EntrySnapshot read_entry(const RankRecord& record, std::uint64_t id) noexcept {
  EntrySnapshot s;
  const auto capacity = record.header.capacity;
  if (id == 0 || capacity == 0) return s;
  const TraceEntry& e = record.ring()[ring_index(id, capacity)];
  if (e.id.load(std::memory_order_acquire) != id) return s;
  s.comm_key = e.comm_key, s.seq = e.seq, s.count = e.count, s.bytes = e.bytes, s.hash = e.hash;
  s.start_ns = e.start_ns;
  s.end_ns = e.end_ns.load(std::memory_order_acquire);
  s.state = e.state.load(std::memory_order_acquire);
  s.dtype = e.dtype, s.root = e.root, s.reduce = e.reduce, s.timeout_seconds = e.timeout_seconds;
  std::memcpy(s.op, e.op, op_name_size);
  std::memcpy(s.type, e.type, type_name_size);
  s.op[op_name_size - 1] = s.type[type_name_size - 1] = '\0';
  if (const std::int32_t tag = e.tag; tag != no_tag) write_tag_text(s.type, tag);
  std::atomic_thread_fence(std::memory_order_acquire);
  s.id = id;
  s.valid = e.id.load(std::memory_order_relaxed) == id;
  return s;
}

bool read_progress(const CommProgress& slot, std::uint64_t& done, std::uint64_t& hash) noexcept {
  const auto before = slot.version.load(std::memory_order_acquire);
  if (before & 1u) return false;
  done = slot.done.load(std::memory_order_acquire);
  hash = slot.hash.load(std::memory_order_acquire);
  std::atomic_thread_fence(std::memory_order_acquire);
  return slot.version.load(std::memory_order_relaxed) == before;
}

std::vector<std::pair<std::uint64_t, std::uint64_t>> broken_calls(const RankRecord& record) {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> calls;
  for (const auto& slot : record.header.comms) {
    const auto key = slot.key.load(std::memory_order_acquire), seq = slot.failed_at.load(std::memory_order_acquire);
    if (key != 0 && seq != 0) calls.emplace_back(key, seq);
  }
  const auto last = read_entry(record, record.header.last_break.load(std::memory_order_acquire));
  if (last.valid && std::find(calls.begin(), calls.end(), std::pair{last.comm_key, last.seq}) == calls.end())
    calls.emplace_back(last.comm_key, last.seq);
  return calls;
}

bool comparable_progress(const CommProgress* slot, std::uint64_t& done, std::uint64_t& hash) noexcept {
  return slot != nullptr && slot->key.load(std::memory_order_acquire) != 0 && read_progress(*slot, done, hash) &&
         done != 0 && slot->failed_at.load() == 0;
}

ProgressBoard::ProgressBoard(MPI_Comm world, int world_rank, std::uint32_t capacity, const char* host) {
  capacity = std::bit_ceil(std::max<std::uint32_t>(capacity, 1));  // ring_index masks
  const auto bytes = static_cast<MPI_Aint>(RankRecord::bytes(capacity));
  void* base = nullptr;
  // The real host, not the simulated nodes of MPIDIST_RANKS_PER_NODE: memory is shared by host.
  bool shared = MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, world_rank, MPI_INFO_NULL, &host_) == MPI_SUCCESS;
  if (shared) {
    MPI_Comm_set_errhandler(host_, MPI_ERRORS_RETURN);
    shared = MPI_Win_allocate_shared(bytes, 1, MPI_INFO_NULL, host_, &base, &window_) == MPI_SUCCESS;
  }
  int ok = shared ? 1 : 0;  // every rank of the host must take the same branch
  if (host_ != MPI_COMM_NULL) MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, host_);
  if (!ok) {
    if (window_ != MPI_WIN_NULL) MPI_Win_free(&window_);
    private_ = std::make_unique<std::byte[]>(static_cast<std::size_t>(bytes));
    mine_ = construct(private_.get(), world_rank, capacity, host);
    host_world_ranks_ = {world_rank};
    host_records_ = {mine_};
    return;
  }
  std::memset(base, 0, static_cast<std::size_t>(bytes));
  mine_ = construct(base, world_rank, capacity, host);
  int host_size = 1;
  MPIDIST_MPI_CHECK(MPI_Comm_size(host_, &host_size));
  host_world_ranks_.resize(static_cast<std::size_t>(host_size));
  MPIDIST_MPI_CHECK(MPI_Allgather(&world_rank, 1, MPI_INT, host_world_ranks_.data(), 1, MPI_INT, host_));
  // Peers' records exist once every rank has constructed its own.
  MPIDIST_MPI_CHECK(MPI_Barrier(host_));
  for (int r = 0; r < host_size; ++r) {
    MPI_Aint size = 0;
    int unit = 1;
    void* peer_base = nullptr;
    MPIDIST_MPI_CHECK(MPI_Win_shared_query(window_, r, &size, &unit, &peer_base));
    host_records_.push_back(static_cast<const RankRecord*>(peer_base));
  }
}

ProgressBoard::~ProgressBoard() { release(); }

void ProgressBoard::release() noexcept {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (window_ != MPI_WIN_NULL) {
    // Keep a private copy of this rank's record: dumps after finalize still read it.
    const auto bytes = RankRecord::bytes(mine_->header.capacity);
    private_ = std::make_unique<std::byte[]>(bytes);
    std::memcpy(private_.get(), static_cast<void*>(mine_), bytes);
    mine_ = reinterpret_cast<RankRecord*>(private_.get());
    host_records_.clear();
    host_world_ranks_.clear();
    if (!finalized) MPI_Win_free(&window_);
    window_ = MPI_WIN_NULL;
  }
  if (host_ != MPI_COMM_NULL && !finalized) MPI_Comm_free(&host_);
  host_ = MPI_COMM_NULL;
}

const RankRecord* ProgressBoard::peer(int world_rank) const noexcept {
  const auto at = std::find(host_world_ranks_.begin(), host_world_ranks_.end(), world_rank);
  return at == host_world_ranks_.end() ? nullptr : host_records_[static_cast<std::size_t>(at - host_world_ranks_.begin())];
}

}  // namespace mpidist::detail
