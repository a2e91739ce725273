// Work: the handle of a started operation (isend, irecv, batch_isend_irecv; later the
// non-blocking collectives), as torch.distributed's Work and MPI's request.
#pragma once

#include <chrono>
#include <cstddef>
#include <exception>
#include <memory>
#include <optional>
#include <span>
#include <string>

namespace mpidist {

/// Where a received message came from: the sender's rank in the group, the message's tag and its
/// size (what recv and probe return and an irecv's Work keeps, for any_source and any_tag receives).
struct Status {
  int source = -1;
  int tag = -1;
  /// The payload's bytes: a buffer's elements times their size; an object's encoded size.
  std::size_t bytes = 0;
  /// The elements of T the payload holds (MPI_Get_count, Boost.MPI's `status.count<T>()`): what to
  /// allocate for a probed message before receiving it.
  template <class T>
  std::size_t count() const noexcept {
    return bytes / sizeof(T);
  }
};

namespace detail {
/// The state behind a Work: one started operation. A transport derives from it; Work drives it.
/// Internal, but public so that the operations of any layer (and of later issues: non-blocking
/// collectives) can hand out a Work.
class WorkState {
 public:
  /// `communicator` and `operation` name the operation in its errors ("world", "irecv").
  WorkState(std::string communicator, std::string operation);
  virtual ~WorkState();
  WorkState(const WorkState&) = delete;
  WorkState& operator=(const WorkState&) = delete;

  /// Advances the operation without blocking; true once it is done. Throws the operation's Error
  /// when it failed (it is then done).
  virtual bool poll() = 0;
  /// Blocks until the operation is done, polling under the communicator's timeout; throws the
  /// operation's Error (a timeout included) when it failed. Device work given a stream is done
  /// here once that stream is ordered after it (the host does not wait for the GPU).
  virtual void complete() = 0;
  /// Where the message of a single receive (irecv) came from, asked once it is done; nothing for
  /// any other operation.
  virtual std::optional<Status> received() const { return std::nullopt; }

  const std::string& communicator() const noexcept { return communicator_; }
  const std::string& operation() const noexcept { return operation_; }

 private:
  std::string communicator_;
  std::string operation_;
};
}  // namespace detail

/// The handle of a started operation. Move-only. A default-constructed Work is done.
///
/// - `wait()` blocks until the operation is done and rethrows its Error; waiting again returns at
///   once (or rethrows the same Error again). For device work started with a stream, `wait()`
///   instead makes that stream wait for it and returns (async_collectives.hpp).
/// - `test()` never blocks: true when the operation is done, successfully or not (`wait()` then
///   returns or rethrows at once).
/// - `wait_for(timeout)` waits at most `timeout`: true once done (rethrowing its Error, as `wait()`),
///   false if the operation is still running then; the Work stays as it was, to wait again.
/// - Destroying (or assigning over) an unfinished Work waits for it; a failure there is written to
///   the log (mpidist::logger(), on every rank) instead of being thrown.
/// - `status()` of an irecv's Work, once done, says which rank sent the message and with which tag
///   (torch's `work._source_rank()`; what recv returns): for receives from any_source or any_tag.
/// - Waits poll under the communicator's timeout (set_timeout, MPIDIST_TIMEOUT): a receive that is
///   never matched ends in an Error naming the peer and the tag, not in a hang.
class Work {
 public:
  Work() noexcept = default;
  explicit Work(std::unique_ptr<detail::WorkState> state) noexcept : state_(std::move(state)) {}
  Work(Work&& other) noexcept = default;
  Work& operator=(Work&& other) noexcept;
  Work(const Work&) = delete;
  Work& operator=(const Work&) = delete;
  ~Work();

  /// Blocks until done; rethrows the operation's Error. Idempotent.
  void wait();
  /// Polls without blocking; true when done (successfully or not).
  bool test();
  /// Waits at most `timeout` (torch's `work.wait(timeout)`, std::future's `wait_for`): true when done
  /// (then as wait(): rethrows the Error), false when still running.
  bool wait_for(std::chrono::duration<double> timeout);
  /// test() under torch's name (`work.is_completed()`).
  bool is_completed() { return test(); }
  /// True when the operation is known to be done (no polling).
  bool done() const noexcept { return state_ == nullptr; }
  /// An irecv's Work, done: the sender's rank in the group and the message's tag (from proc_null:
  /// `{proc_null, any_tag}`). An Error while it runs (wait() first), for any other Work (an isend's,
  /// a batch_isend_irecv's, a collective's), and (rethrown) when the receive failed.
  Status status() const;
  /// status().source, under torch's name (`work._source_rank()`).
  int source_rank() const { return status().source; }

 private:
  void finish_quietly() noexcept;
  std::unique_ptr<detail::WorkState> state_;  // null once done
  std::exception_ptr error_;                  // the operation's failure, rethrown by every wait()
  std::optional<Status> received_;            // a done receive's sender and tag
};

/// Waits for every Work (all of them, also after one failed), then rethrows the first Error in
/// the span's order. The works advance together, so their order does not matter.
void wait_all(std::span<Work> works);

}  // namespace mpidist
