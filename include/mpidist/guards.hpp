// Main-process guards and ordering scopes: run_on_main, main_process_only, zero_first, barrier.
#pragma once

#include <chrono>
#include <concepts>
#include <exception>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "mpidist/communicator.hpp"

// Every guard has a world form and a form taking a Communicator first; ranks are then ranks within
// that group and its rank 0 is the main process.
namespace mpidist {

/// World rank 0 is the main process (speechbrain `if_main_process`); Communicator::is_main_process
/// for a group.
bool is_main_process();
/// Local rank 0, the first rank of each node (axolotl's and Accelerate's `is_local_main_process`):
/// for work done once a machine, as a download to its local disk.
bool is_local_main_process();

/// Blocks until every rank (of the group) arrived (ignite `barrier`, speechbrain `ddp_barrier`). A
/// no-op inside a MainProcessContext, where only the main process runs and a barrier would deadlock.
void barrier();
void barrier(const Communicator& comm);

/// A barrier that names who did not come (torch.distributed `monitored_barrier`, on any MPI).
/// Waits at most `timeout` for every rank of the group; on timeout each rank that arrived raises
/// Error listing the ranks that did not, with their hosts: all of them with `wait_all_ranks`,
/// else the first. The job goes on: absent ranks may still arrive (they then raise Error, "the
/// barrier had timed out") or end. Its messages travel on mpidist's own channel.
void monitored_barrier(std::chrono::duration<double> timeout, bool wait_all_ranks = true);
void monitored_barrier(const Communicator& comm, std::chrono::duration<double> timeout, bool wait_all_ranks = true);
/// The same under the communicator's timeout (Communicator::set_timeout, else MPIDIST_TIMEOUT), as
/// torch's default is its process group's; a timeout of zero (wait forever) waits as long as needed.
void monitored_barrier();
void monitored_barrier(const Communicator& comm);

/// Marks code that only the main process runs (speechbrain's MAIN_PROC_ONLY counter). While one
/// is alive on a thread, every collective that thread calls, on any communicator, acts as in a
/// group of this one rank: barriers and the guards' synchronization are skipped, object and tensor
/// collectives complete locally (all_reduce and average leave the values as they are, broadcast
/// and reduce take root 0, all_gather and reduce_scatter one block). Nests; exception-safe.
class MainProcessContext {
 public:
  MainProcessContext() noexcept;
  ~MainProcessContext();
  MainProcessContext(const MainProcessContext&) = delete;
  MainProcessContext& operator=(const MainProcessContext&) = delete;
  /// How many MainProcessContext scopes are open on this thread.
  static int depth() noexcept;
};

namespace detail {
/// Collective over the group: every rank passes its own outcome (null when it succeeded). If any
/// rank failed, every rank throws an Error naming the lowest failing rank and its message.
/// Synchronizes like a barrier, on the library's own channel (a user's collective never matches
/// it). Inside a MainProcessContext it only rethrows `local`.
void agree_on_outcome(const Communicator& comm, const char* operation, std::exception_ptr local);
void agree_on_outcome(const char* operation, std::exception_ptr local);

/// A callable that is not a Communicator: keeps the world forms of the guards from matching a call
/// that passes a communicator first.
template <class F>
concept Callable = std::invocable<F&> && !std::same_as<std::remove_cvref_t<F>, Communicator>;

/// Runs `fn` and returns its exception instead of throwing it.
template <class F>
std::exception_ptr capture(F&& fn) noexcept {
  try {
    std::forward<F>(fn)();
  } catch (...) {
    return std::current_exception();
  }
  return nullptr;
}

/// The text a failure travels as between ranks: the exception's what() (an mpidist::Error's
/// without its rank prefix, which the receiver's "rank N failed: " gives; "exception of unknown
/// type" for one that is no std::exception), cut to a few KiB so one message carries it.
std::string describe_exception(const std::exception_ptr& error);

/// This rank in `comm`; Error naming `operation` for a null or finalized communicator.
int rank_in(const Communicator& comm, const char* operation);

/// Throws Error when `rank` is not in [0, size) of the group (or of its ranks on this node).
void check_rank(const Communicator& comm, const char* operation, int rank, bool local = false);

template <class R>
using Optional = std::conditional_t<std::is_void_v<R>, void, std::optional<R>>;

/// Calls fn on `rank` only; other ranks get std::nullopt (or nothing, for void).
template <class F, class... Args>
auto call_on_rank(bool here, F& fn, Args&&... args) -> Optional<std::invoke_result_t<F&, Args...>> {
  using R = std::invoke_result_t<F&, Args...>;
  if constexpr (std::is_void_v<R>) {
    if (here) fn(std::forward<Args>(args)...);
  } else {
    if (here) return std::optional<R>(fn(std::forward<Args>(args)...));
    return std::nullopt;
  }
}
}  // namespace detail

struct NoPostFunction {
  void operator()() const noexcept {}
};

/// speechbrain `run_on_main`: `func` runs on the main process (inside a MainProcessContext) while
/// the others wait; then `post_func` runs on the other ranks (and on main too if
/// `run_post_on_main`), followed by a barrier. An exception thrown by `func` on main (or by
/// `post_func` anywhere) is rethrown as mpidist::Error on every rank, so nobody is left waiting.
template <detail::Callable F, class P = NoPostFunction>
void run_on_main(const Communicator& comm, F&& func, P&& post_func = {}, bool run_post_on_main = false) {
  const bool main = detail::rank_in(comm, "run_on_main") == 0;
  std::exception_ptr failure;
  if (main) {
    MainProcessContext main_only;
    failure = detail::capture(func);
  }
  detail::agree_on_outcome(comm, "run_on_main", failure);
  if constexpr (!std::is_same_v<std::decay_t<P>, NoPostFunction>) {
    failure = (run_post_on_main || !main) ? detail::capture(post_func) : nullptr;
    detail::agree_on_outcome(comm, "run_on_main (post_func)", failure);
  }
}
template <detail::Callable F, class P = NoPostFunction>
void run_on_main(F&& func, P&& post_func = {}, bool run_post_on_main = false) {
  run_on_main(world(), std::forward<F>(func), std::forward<P>(post_func), run_post_on_main);
}

/// speechbrain `main_process_only`: wraps `f` into a callable that runs it on the main process
/// (of `comm`, or of the world) only, inside a MainProcessContext. Returns std::optional of f's
/// result (empty elsewhere).
template <class F>
[[nodiscard("main_process_only(f) returns a callable and runs nothing yet: call it, main_process_only(f)(), or "
            "run f now on the main process with zero_only(f) or run_on_main(f)")]] auto
main_process_only(Communicator comm, F f) {
  return [comm = std::move(comm), f = std::move(f)](auto&&... args) mutable {
    MainProcessContext main_only;
    return detail::call_on_rank(detail::rank_in(comm, "main_process_only") == 0, f,
                                std::forward<decltype(args)>(args)...);
  };
}
template <class F>
requires(!std::same_as<std::remove_cvref_t<F>, Communicator>)
[[nodiscard("main_process_only(f) returns a callable and runs nothing yet: call it, main_process_only(f)(), or "
            "run f now on the main process with zero_only(f) or run_on_main(f)")]] auto
main_process_only(F f) {
  return [f = std::move(f)](auto&&... args) mutable {
    MainProcessContext main_only;
    return detail::call_on_rank(is_main_process(), f, std::forward<decltype(args)>(args)...);
  };
}

/// ignite `one_rank_first`: a scope whose body runs first on `rank` (a rank of the group, or a
/// local rank on every node when `local`), then on every other rank once `rank` left the scope. If
/// the first rank leaves by an exception, the others throw Error from the constructor instead of
/// running the body against a half-done state.
///
/// [[nodiscard]]: a guard dropped at once would order an empty block.
class [[nodiscard("the guard orders the block it lives in: write auto first = mpidist::zero_first(); (a guard "
                  "dropped at once orders nothing), or pass the block as a function")]] OneRankFirst {
 public:
  explicit OneRankFirst(int rank = 0, bool local = false);
  explicit OneRankFirst(Communicator comm, int rank = 0, bool local = false);
  ~OneRankFirst();
  OneRankFirst(const OneRankFirst&) = delete;
  OneRankFirst& operator=(const OneRankFirst&) = delete;

  /// On the first rank: why its block failed, so that the others' Error carries the text (a
  /// destructor cannot see the exception that unwinds it). The call forms below do this.
  void failed_with(const std::exception_ptr& error) noexcept;

 private:
  Communicator comm_;
  int first_;
  bool local_;
  bool is_first_;
  int uncaught_at_start_;
  std::string failure_;
};

namespace detail {
/// Runs `fn` inside `first`'s block, recording its exception there before it propagates.
template <class F>
decltype(auto) run_first_block(OneRankFirst& first, F&& fn) {
  try {
    return std::forward<F>(fn)();
  } catch (...) {
    first.failed_with(std::current_exception());
    throw;
  }
}
}  // namespace detail

/// axolotl `zero_first`: `{ auto first = mpidist::zero_first(); prepare_dataset(); }` runs the
/// block on rank 0 first, then on the others.
inline OneRankFirst zero_first() { return OneRankFirst(0, false); }
inline OneRankFirst zero_first(const Communicator& comm) { return OneRankFirst(comm, 0, false); }

/// Runs `fn` on rank 0 first, then on the others; returns fn's result on every rank.
template <detail::Callable F>
decltype(auto) zero_first(F&& fn) {
  OneRankFirst first(0, false);
  return detail::run_first_block(first, std::forward<F>(fn));
}
template <detail::Callable F>
decltype(auto) zero_first(const Communicator& comm, F&& fn) {
  OneRankFirst first(comm, 0, false);
  return detail::run_first_block(first, std::forward<F>(fn));
}

/// ignite `one_rank_first(rank, local)` as a scope: `{ auto first = mpidist::one_rank_first(0, true);
/// download(); }` runs the block on local rank 0 of every node first, then on the others.
inline OneRankFirst one_rank_first(int rank = 0, bool local = false) { return OneRankFirst(rank, local); }
inline OneRankFirst one_rank_first(const Communicator& comm, int rank = 0, bool local = false) {
  return OneRankFirst(comm, rank, local);
}

/// Runs `fn` on rank 0 first, then on the others.
template <detail::Callable F>
decltype(auto) one_rank_first(F&& fn) {
  OneRankFirst first(0, false);
  return detail::run_first_block(first, std::forward<F>(fn));
}

/// Runs `fn` on `rank` first, then on the others (ignite `one_rank_first` as a call).
template <detail::Callable F>
decltype(auto) one_rank_first(int rank, bool local, F&& fn) {
  OneRankFirst first(rank, local);
  return detail::run_first_block(first, std::forward<F>(fn));
}
template <detail::Callable F>
decltype(auto) one_rank_first(const Communicator& comm, int rank, bool local, F&& fn) {
  OneRankFirst first(comm, rank, local);
  return detail::run_first_block(first, std::forward<F>(fn));
}

/// axolotl `zero_only`: runs `fn` now on rank 0 (of the world or of `comm`) only; returns its
/// result there (std::optional).
template <detail::Callable F>
auto zero_only(F&& fn) {
  MainProcessContext main_only;
  return detail::call_on_rank(is_main_process(), fn);
}
template <detail::Callable F>
auto zero_only(const Communicator& comm, F&& fn) {
  MainProcessContext main_only;
  return detail::call_on_rank(detail::rank_in(comm, "zero_only") == 0, fn);
}

/// ignite `one_rank_only(rank, with_barrier)`: a decorator. `one_rank_only(1, true)(f)` returns a
/// callable that runs `f` on rank `rank` (of the world, or of `comm`) only (std::optional result)
/// and, with `with_barrier`, synchronizes all ranks afterwards, turning an exception on `rank` into
/// Error on every rank.
class one_rank_only {
 public:
  explicit one_rank_only(int rank = 0, bool with_barrier = false) : one_rank_only(world(), rank, with_barrier) {}
  one_rank_only(Communicator comm, int rank, bool with_barrier = false)
      : comm_(std::move(comm)), rank_(rank), with_barrier_(with_barrier) {
    detail::check_rank(comm_, "one_rank_only", rank);
  }

  template <class F>
  [[nodiscard("one_rank_only(rank)(f) returns a callable and runs nothing yet: call it, "
              "one_rank_only(rank)(f)()")]] auto
  operator()(F f) const {
    return [f = std::move(f), comm = comm_, rank = rank_, with_barrier = with_barrier_](auto&&... args) mutable {
      const bool here = detail::rank_in(comm, "one_rank_only") == rank;
      using R = std::invoke_result_t<F&, decltype(args)...>;
      if (!with_barrier) return detail::call_on_rank(here, f, std::forward<decltype(args)>(args)...);
      std::exception_ptr failure;
      [[maybe_unused]] std::conditional_t<std::is_void_v<R>, int, std::optional<R>> result{};
      if (here) {
        failure = detail::capture([&] {
          if constexpr (std::is_void_v<R>) f(std::forward<decltype(args)>(args)...);
          else result = f(std::forward<decltype(args)>(args)...);
        });
      }
      detail::agree_on_outcome(comm, "one_rank_only", failure);
      if constexpr (!std::is_void_v<R>) return result;
    };
  }

 private:
  Communicator comm_;
  int rank_;
  bool with_barrier_;
};

}  // namespace mpidist
