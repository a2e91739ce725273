// The shared-memory segment of a group's ranks on one node (MPI_Win_allocate_shared on
// Group::local), made at the group's first shared-memory collective and kept until the group is
// released. Each rank owns a flag and two data halves that every rank of the node can read.
//
// Protocol. Every collective on the segment is a series of steps, numbered alike on every rank
// (all ranks of the node run the same collectives in the same order). Step s uses half s % 2 and
// two flag values, posted(s) = 2s+1 and finished(s) = 2s+2; a rank's flag only grows. Rules:
//   1. A rank posts posted(s) only after it finished everything of step s-1, reads included.
//   2. Before writing into its half at step s, a rank waits until every flag is >= posted(s-1),
//      so no rank still reads that half from step s-2.
// Stores go with release and waits load with acquire, so data written before a post is visible
// after the wait that sees it. Internal.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace mpidist::detail {
class Group;
}

namespace mpidist::detail::shm {

class Segment {
 public:
  /// Bytes of one data half per rank: the unit of the chunked path.
  static constexpr std::size_t half_bytes = std::size_t{256} << 10;

  /// Collective over `local`.
  Segment(MPI_Comm local, const char* operation);
  ~Segment();
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;

  int rank() const noexcept { return rank_; }
  int size() const noexcept { return size_; }

  /// Starts the next step: waits (rule 2) until rank `rank`'s half of it may be written, and
  /// returns the step number.
  std::uint64_t begin_step(const char* operation);
  /// Data half of `rank` for `step`.
  std::byte* half(int rank, std::uint64_t step) const noexcept {
    return data_[static_cast<std::size_t>(rank)] + (step % 2) * half_bytes;
  }

  static constexpr std::uint64_t posted(std::uint64_t step) noexcept { return 2 * step + 1; }
  static constexpr std::uint64_t finished(std::uint64_t step) noexcept { return 2 * step + 2; }

  /// Publishes `value` on this rank's flag (release).
  void post(std::uint64_t value) noexcept { flag(rank_).store(value, std::memory_order_release); }
  /// Waits until every rank's flag (or only rank `only`'s, when >= 0) is >= value (acquire).
  /// Spins briefly, then yields, then sleeps; past MPIDIST_TIMEOUT throws Error(operation).
  void wait(std::uint64_t value, const char* operation, int only = -1);

 private:
  std::atomic_ref<std::uint64_t> flag(int rank) const noexcept { return std::atomic_ref<std::uint64_t>(*flags_[static_cast<std::size_t>(rank)]); }
  bool reached(std::uint64_t value, int only) const noexcept;

  MPI_Win window_ = MPI_WIN_NULL;
  int rank_ = 0;
  int size_ = 1;
  std::vector<std::uint64_t*> flags_;
  std::vector<std::byte*> data_;
  std::uint64_t next_step_ = 0;
  std::uint64_t everyone_reached_ = 0;  // a value every flag is known to have reached
  unsigned spins_ = 0;                  // polls before yielding: fewer when ranks outnumber cores
};

/// The segment of `group`'s ranks on this node, made on first use (collective over Group::local).
Segment& segment(Group& group, const char* operation);

}  // namespace mpidist::detail::shm
