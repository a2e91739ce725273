// The shared-memory segment of a group's ranks on one node (MPI_Win_allocate_shared on
// Group::local), made at the group's first shared-memory collective and kept until the group is
// released. Each rank owns two control lines and two data halves that every rank of the node can
// read.
//
// Protocol. Every collective on the segment is a series of steps, numbered alike on every rank
// (all ranks of the node run the same collectives in the same order). Step s uses half s % 2,
// control line s % 2 and two flag values, posted(s) = 2s+1 and finished(s) = 2s+2. A rank's flag
// for step s lives in its line s % 2 (its progress is the larger of its two lines; each only
// grows). Rules:
//   1. A rank posts posted(s) only after it finished everything of step s-1, reads included.
//   2. Before writing into its half or line at step s, a rank waits until every rank's progress
//      is >= posted(s-1), so no rank still reads them from step s-2.
// A flag value names exactly one step: a wait for step s accepts from a rank's line of s only
// posted(s) or finished(s), and from its other line only a value of step s+1 (the rank finished
// s and went on, which rule 2 allows it to, but no further). A value of a later step on the same
// line is never taken for step s's: after a failed call the ranks' step counts may differ, and
// then a wait gives up at the group's timeout instead of reading another call's data (the rank
// whose call failed breaks its group and never posts again).
// Stores go with release and waits load with acquire, so data written before a post is visible
// after the wait that sees it. A control line is one cache line: its flag, then `inline_bytes`
// of payload, so a small message and the flag that announces it travel as one cache-line
// transfer to each reader instead of two. Internal.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace mpidist::detail {
class Group;
}

namespace mpidist::detail::shm {

class Segment {
 public:
  /// Bytes of one data half per rank: the unit of the chunked path.
  static constexpr std::size_t half_bytes = std::size_t{256} << 10;
  /// Payload bytes in a control line, beside its flag.
  static constexpr std::size_t inline_bytes = 56;

  /// Collective over `group`'s ranks on this node (Group::local); its waits keep the group's
  /// timeout and break the group when it passes.
  Segment(Group& group, const char* operation);
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
  /// The `inline_bytes` payload of `rank`'s control line for `step` (8-byte aligned).
  std::byte* line_data(int rank, std::uint64_t step) const noexcept { return line(rank, step) + sizeof(std::uint64_t); }
  /// Where `rank`'s payload for `step` lies: its control line's when the step's bytes go in line
  /// (`in_line`: at most `inline_bytes`, decided alike on every rank), else its data half.
  std::byte* payload(int rank, std::uint64_t step, bool in_line) const noexcept {
    return in_line ? line_data(rank, step) : half(rank, step);
  }

  static constexpr std::uint64_t posted(std::uint64_t step) noexcept { return 2 * step + 1; }
  static constexpr std::uint64_t finished(std::uint64_t step) noexcept { return 2 * step + 2; }

  /// Publishes `value` on this rank's flag (release).
  void post(std::uint64_t value) noexcept { flag(rank_, value).store(value, std::memory_order_release); }
  /// Waits until every rank's flag (or only rank `only`'s, when >= 0) is >= value (acquire).
  /// Spins briefly, then yields, then sleeps; past the group's timeout (set_timeout, else
  /// MPIDIST_TIMEOUT) breaks the group and throws Error(operation).
  void wait(std::uint64_t value, const char* operation, int only = -1);
  /// Work a wait does every few polls while set (nullptr: none), e.g. the 2D all-reduce testing its
  /// requests across nodes, which Open MPI moves only inside MPI calls. Set for one call at a time
  /// (WhileWaiting); what it throws leaves the wait.
  void set_wait_work(const std::function<void()>* work) noexcept { work_ = work; }

 private:
  static std::uint64_t step_of(std::uint64_t value) noexcept { return (value - 1) / 2; }
  std::byte* line(int rank, std::uint64_t step) const noexcept {
    return control_[static_cast<std::size_t>(rank)] + (step % 2) * line_stride;
  }
  // The flag of `rank` that carries `value` (that of its step's line).
  std::atomic_ref<std::uint64_t> flag(int rank, std::uint64_t value) const noexcept {
    return std::atomic_ref<std::uint64_t>(*reinterpret_cast<std::uint64_t*>(line(rank, step_of(value))));
  }
  bool rank_reached(int rank, std::uint64_t value) const noexcept;
  bool reached(std::uint64_t value, int only) const noexcept;

  // The two lines 128 bytes apart: the adjacent-line prefetcher pulls lines in pairs.
  static constexpr std::size_t line_stride = 128;

  Group& group_;
  MPI_Win window_ = MPI_WIN_NULL;
  int rank_ = 0;
  int size_ = 1;
  std::vector<std::byte*> control_;   // each rank's control lines
  std::vector<std::byte*> data_;
  std::uint64_t next_step_ = 0;
  std::uint64_t everyone_reached_ = 0;  // a value every flag is known to have reached
  unsigned spins_ = 0;                  // polls before yielding: fewer when ranks outnumber cores
  const std::function<void()>* work_ = nullptr;  // set_wait_work
};

/// Sets a segment's wait work for one scope, and clears it on the way out, exceptions included.
class WhileWaiting {
 public:
  /// `work` outlives the guard.
  WhileWaiting(Segment& seg, const std::function<void()>& work) noexcept : seg_(seg) { seg.set_wait_work(&work); }
  ~WhileWaiting() { seg_.set_wait_work(nullptr); }
  WhileWaiting(const WhileWaiting&) = delete;
  WhileWaiting& operator=(const WhileWaiting&) = delete;

 private:
  Segment& seg_;
};

/// The segment of `group`'s ranks on this node, made on first use (collective over Group::local).
Segment& segment(Group& group, const char* operation);

}  // namespace mpidist::detail::shm
