// The node's shared-memory segment of a group: made, synchronized, freed.
#include "shm/segment.hpp"

#include <sched.h>

#include <memory>
#include <optional>
#include <thread>

#include "core/context.hpp"
#include "core/cpu_share.hpp"
#include "core/group.hpp"
#include "core/mpi_check.hpp"
#include "watch/timeout.hpp"
#include "mpidist/error.hpp"

namespace mpidist::detail::shm {
namespace {

// Each rank's part: its control lines alone on a page (no false sharing with the data), then two
// halves.
constexpr std::size_t control_bytes = 4096;

// The flags are 64-bit atomics in memory other processes map: they must never fall back to a lock.
static_assert(std::atomic_ref<std::uint64_t>::is_always_lock_free, "the step flags need lock-free 64-bit atomics");

// A spin-wait hint: x86's pause, AArch64's yield (Grace and GH200 nodes), nothing elsewhere.
void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

// Polls between two calls of a wait's work while spinning: a poll is a few dozen cycles, the work
// (an MPI_Test, which polls the sockets) far more. Once yielding, every poll.
constexpr unsigned wait_work_every = 32;

// CPUs the node's ranks may run on together: the union of their affinity masks. Per rank the
// mask says nothing about sharing: mpiexec binds 2 ranks to a core each (one CPU apiece, no
// sharing) and leaves 4 ranks on 2 cores unbound (two CPUs apiece, shared). Collective.
int cpus_of_node_ranks(MPI_Comm local) {
  CpuMask mask = own_cpus();
  MPIDIST_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, mask.data(), static_cast<int>(mask.size()), MPI_UNSIGNED_LONG,
                                  MPI_BOR, local));
  return count_cpus(mask);
}

}  // namespace

Segment::Segment(Group& group, const char* operation) : group_(group) {
  const MPI_Comm local = group.local;
  MPIDIST_MPI_CHECK(MPI_Comm_rank(local, &rank_));
  MPIDIST_MPI_CHECK(MPI_Comm_size(local, &size_));
  // Making the segment takes blocking collectives over the node's ranks: they start once every
  // rank has come, which is waited for under the group's timeout.
  const Deadline deadline(operation, &group, Deadline::Watch::Refusals);
  MPI_Request everyone = MPI_REQUEST_NULL;
  MPIDIST_MPI_CHECK(MPI_Ibarrier(local, &everyone));
  wait_or_time_out(operation, deadline, everyone, "the other ranks of the node to make the shared-memory segment");
  MPI_Info info = MPI_INFO_NULL;
  MPIDIST_MPI_CHECK(MPI_Info_create(&info));
  // Each rank's part on its own pages, which the rank touches first (NUMA-local on big nodes).
  MPI_Info_set(info, "alloc_shared_noncontig", "true");
  void* base = nullptr;
  const int rc = MPI_Win_allocate_shared(static_cast<MPI_Aint>(control_bytes + 2 * half_bytes), 1, info, local, &base,
                                         &window_);
  MPI_Info_free(&info);
  if (rc != MPI_SUCCESS)
    throw Error(operation, "cannot allocate the shared-memory segment of the node's ranks (MPI_Win_allocate_shared "
                           "failed); set MPIDIST_HOST_ALLREDUCE=mpi to do without");
  try {
    MPIDIST_MPI_CHECK(MPI_Win_set_errhandler(window_, MPI_ERRORS_RETURN));
    for (int r = 0; r < size_; ++r) {
      MPI_Aint bytes = 0;
      int unit = 0;
      void* part = nullptr;
      MPIDIST_MPI_CHECK(MPI_Win_shared_query(window_, r, &bytes, &unit, &part));
      // atomic_ref needs its object aligned to required_alignment; MPI promises no alignment.
      if (reinterpret_cast<std::uintptr_t>(part) % std::atomic_ref<std::uint64_t>::required_alignment != 0)
        throw Error(operation, "the shared-memory segment of node rank " + std::to_string(r) +
                                   " is not aligned for 64-bit atomics; set MPIDIST_HOST_ALLREDUCE=mpi to do without");
      control_.push_back(static_cast<std::byte*>(part));
      data_.push_back(static_cast<std::byte*>(part) + control_bytes);
    }
    // A passive-target epoch for the whole life of the segment: loads and stores are then legal
    // MPI-3 shared-memory accesses; the atomics order them.
    MPIDIST_MPI_CHECK(MPI_Win_lock_all(MPI_MODE_NOCHECK, window_));
    flag(rank_, posted(0)).store(0, std::memory_order_release);
    flag(rank_, posted(1)).store(0, std::memory_order_release);
    // With a core each, a peer we wait for is running: spin (~150 µs) before giving the core
    // away. With more ranks than cores it is likely waiting for ours: every poll spent is a
    // delay (64 polls cost 2.6 µs of a 34 µs all-reduce at 4 ranks on 2 cores), so yield at once.
    // The machine's ranks count, not only this segment's: simulated nodes (MPIDIST_RANKS_PER_NODE),
    // other groups, and the ranks of other hosts on one kernel (network namespaces, containers)
    // share the cores too.
    const Context* ctx = context_if_initialized();
    const bool crowded_machine = ctx != nullptr && ctx->machine_ranks > ctx->machine_cpus;
    spins_ = crowded_machine || size_ > cpus_of_node_ranks(local) ? 1 : 4000;
    MPIDIST_MPI_CHECK(MPI_Barrier(local));  // every flag is 0 before anyone waits on it
  } catch (...) {
    MPI_Win_free(&window_);
    throw;
  }
}

Segment::~Segment() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized || window_ == MPI_WIN_NULL) return;  // MPI took the window with it
  MPI_Win_unlock_all(window_);
  MPI_Win_free(&window_);
}

std::uint64_t Segment::begin_step(const char* operation) {
  const std::uint64_t step = next_step_++;
  if (step > 0) wait(posted(step - 1), operation);
  return step;
}

// The rank's line of `value`'s step holds posted(s) or finished(s) once it got that far; its other
// line holds a value of step s+1 once it finished s and went on. Only those values count (see the
// header): a later step's value is another call's, never this one's.
bool Segment::rank_reached(int rank, std::uint64_t value) const noexcept {
  const std::uint64_t step = step_of(value);
  const std::uint64_t here = flag(rank, value).load(std::memory_order_acquire);
  if (here >= value && step_of(here) == step) return true;
  const std::uint64_t next = flag(rank, value + 2).load(std::memory_order_acquire);
  return next != 0 && step_of(next) == step + 1;
}

bool Segment::reached(std::uint64_t value, int only) const noexcept {
  if (only >= 0) return rank_reached(only, value);
  for (int r = 0; r < size_; ++r)
    if (r != rank_ && !rank_reached(r, value)) return false;
  return true;
}

void Segment::wait(std::uint64_t value, const char* operation, int only) {
  if (only < 0 && everyone_reached_ >= value) return;
  // Spin while the peers are likely running, then give the core away: with more ranks than cores
  // the rank we wait for may need ours. The clock is read only once waiting has become slow.
  std::optional<Deadline> deadline;
  for (unsigned polls = 0; !reached(value, only); ++polls) {
    if (work_ != nullptr && (polls >= spins_ || polls % wait_work_every == 0)) (*work_)();
    if (polls < spins_) {
      cpu_relax();
      continue;
    }
    if (!deadline) deadline.emplace(operation, &group_, Deadline::Watch::Refusals);
    if (polls % 16 == 0 && deadline->passed())
      throw_timed_out(operation, *deadline, "the other ranks of the node in shared memory");
    if (polls < spins_ + 20000) sched_yield();
    else std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  if (only < 0) everyone_reached_ = value;
}

Segment& segment(Group& group, const char* operation) {
  if (!group.shm) group.shm = std::make_shared<Segment>(group, operation);
  return *static_cast<Segment*>(group.shm.get());
}

}  // namespace mpidist::detail::shm
