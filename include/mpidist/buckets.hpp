// GradientBuckets: DDP's reducer for C++ training loops. Gradients are grouped into buckets, and
// each bucket is all-reduced (one fused collective) as soon as backward has produced all of its
// gradients, while backward goes on computing the earlier layers.
//
//   std::vector<mpidist::BufferView> grads = ...;  // in the order backward produces them
//   mpidist::GradientBuckets buckets(comm, grads, {.bucket_bytes = 25 << 20, .op = mpidist::ReduceOp::Avg});
//   for (int step = 0; step < steps; ++step) {
//     for (int i = layers - 1; i >= 0; --i) { backward(i); buckets.mark_ready(i); }
//     buckets.wait();  // every gradient reduced
//     optimizer_step();
//   }
//   { auto accumulate = buckets.no_sync(); /* steps of gradient accumulation: nothing is reduced */ }
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "mpidist/communicator.hpp"
#include "mpidist/reduce_op.hpp"
#include "mpidist/tensor.hpp"
#include "mpidist/work.hpp"

namespace mpidist {

/// How GradientBuckets forms and reduces its buckets.
struct BucketOptions {
  /// A bucket holds consecutive buffers up to this many bytes (a larger buffer is a bucket alone).
  std::size_t bucket_bytes = std::size_t{25} << 20;
  /// The reduction (DDP averages).
  ReduceOp op = ReduceOp::Avg;
  /// Start a bucket's all-reduce at the first mark of its buffers, not the last: it reduces each
  /// part of the bucket as soon as that part is marked (host memory, where the reduction runs on
  /// the communicator's lane: one node, or across nodes at ThreadLevel::Multiple; elsewhere a
  /// bucket starts at its last mark). False: each bucket starts once complete.
  bool stream = true;
};

/// One step of GradientBuckets as it ran on this rank, in steady_clock time (benchmarks, logs).
struct BucketsTimeline {
  using time_point = std::chrono::steady_clock::time_point;
  struct Bucket {
    std::size_t bytes = 0;
    time_point marked;    ///< its last buffer marked (wait() for a bucket some buffer of which was not)
    time_point launched;  ///< its all-reduce issued: once complete and every earlier bucket was issued
    time_point started;   ///< its data step began, on the lane or at issue (unset on device memory)
    time_point finished;  ///< its data step ended (unset on device memory)
  };
  time_point wait_called;  ///< wait() entered
  time_point reduced;      ///< every bucket's Work done
  time_point checked;      ///< the ranks' end-of-step check done: wait() returned
  std::vector<Bucket> buckets;
};

/// The buffers' reducer. Not copyable or movable (its buckets' work refers to it); one step at a
/// time: mark_ready every buffer, then wait().
///
/// - Buckets are consecutive buffers in the given order, of one dtype and one memory (host, or one
///   CUDA device), up to `bucket_bytes`; zero-length buffers join the bucket they fall in.
/// - The constructor is collective: the ranks must pass the same counts and types, else an Error on
///   every rank naming the first differing index and each rank's value. It reduces on a duplicate
///   of `comm` ("world/buckets" in errors and logs, with comm's timeout when made), so collectives
///   the caller issues on `comm` mid-step run independently of the buckets, before or after them.
/// - A bucket is reduced (one fused all_reduce_many) once every earlier bucket was started and all
///   its buffers are marked, or with `stream` (the default) once the first is: the reduction then
///   takes in the bucket's buffers in order as each is marked. Every rank starts the same buckets in
///   the same order.
/// - wait() ends the step: every buffer reduced as all_reduce would leave it. A buffer that some rank
///   did not mark this step, or marked twice, is an Error on every rank naming the buffer and the
///   rank (never a hang: the remaining buckets are still reduced, with whatever they hold).
/// - The buffers must not be touched between their mark_ready and wait().
class GradientBuckets {
 public:
  GradientBuckets(const Communicator& comm, std::vector<BufferView> buffers, BucketOptions options = {});
  /// On the world.
  explicit GradientBuckets(std::vector<BufferView> buffers, BucketOptions options = {});
  /// The gradients as they are held (std::vector<std::vector<float>>, a vector of spans): views of
  /// them are kept, so the containers must outlive the buckets and keep their memory.
  template <class R>
  requires detail::TensorList<R&>
  GradientBuckets(const Communicator& comm, R& buffers, BucketOptions options = {})
      : GradientBuckets(comm, detail::as_buffers(buffers), options) {}
  template <class R>
  requires detail::TensorList<R&>
  explicit GradientBuckets(R& buffers, BucketOptions options = {})
      : GradientBuckets(detail::as_buffers(buffers), options) {}
  ~GradientBuckets();
  GradientBuckets(const GradientBuckets&) = delete;
  GradientBuckets& operator=(const GradientBuckets&) = delete;

  /// Buffer `index` holds this step's gradient; its bucket starts once complete. Any order.
  /// An index out of range is an Error at once (this rank).
  void mark_ready(std::size_t index);
  /// The same, naming the buffer itself (`mark_ready(grads[i])`, a span or BufferView of it): the
  /// bucketed buffer at its address with its count and type (of several, such as zero-length ones,
  /// the first not yet marked). Any other buffer is an Error at once (this rank).
  void mark_ready(InputView buffer);
  /// Starts every bucket not yet started, waits for all, and checks the step on every rank.
  void wait();

  /// While the guard lives, mark_ready and wait do nothing (gradient accumulation).
  class NoSync {
   public:
    NoSync(NoSync&& other) noexcept : owner_(other.owner_) { other.owner_ = nullptr; }
    NoSync& operator=(NoSync&&) = delete;
    ~NoSync();

   private:
    friend class GradientBuckets;
    explicit NoSync(GradientBuckets* owner) noexcept : owner_(owner) {}
    GradientBuckets* owner_;
  };
  [[nodiscard]] NoSync no_sync();

  /// The number of buckets, and the first buffer of each (for tests and logs).
  std::size_t bucket_count() const noexcept { return first_.size(); }
  const std::vector<std::size_t>& bucket_starts() const noexcept { return first_; }
  /// The last step that wait() ended (empty times before the first).
  const BucketsTimeline& last_step() const noexcept { return timeline_; }

 private:
  void form_buckets();
  void agree_on_buffers();
  void launch_ready();
  void launch(std::size_t bucket);
  // One past the bucket's last buffer.
  std::size_t end_of(std::size_t bucket) const noexcept {
    return bucket + 1 < first_.size() ? first_[bucket + 1] : buffers_.size();
  }
  bool started_early(std::size_t bucket) const;
  // On the lane: returns once buffers [from, to] are marked (or released by wait()), moving `from`
  // past them; an Error after `timeout` (zero: none).
  void await_marked(std::size_t& from, std::size_t to, std::chrono::duration<double> timeout);
  // Every buffer counts as marked: a streaming bucket goes on with what its buffers hold.
  void release_all();

  Communicator comm_;
  std::vector<BufferView> buffers_;
  BucketOptions options_;
  std::vector<std::size_t> first_;       // first buffer of each bucket
  std::vector<std::size_t> bucket_of_;   // bucket of each buffer
  std::vector<std::size_t> by_address_;  // the buffers' indices, sorted by address (then index)
  std::vector<std::size_t> remaining_;   // buffers of each bucket not yet marked this step
  std::vector<std::uint8_t> marks_;      // marks of each buffer this step
  std::vector<Work> works_;              // one per bucket started this step
  std::size_t next_ = 0;                 // the next bucket to start
  std::int64_t problem_ = -1;            // this step's first problem: index * 2 + (double mark ? 1 : 0)
  int no_sync_ = 0;
  // Streaming buckets: which buffers the lane may read this step, under their own lock (the lane
  // waits on it while the caller marks).
  std::mutex ready_mutex_;
  std::condition_variable ready_changed_;
  std::unique_ptr<bool[]> ready_;
  BucketsTimeline step_;      // this step's, written as it goes (the lane writes started, finished)
  BucketsTimeline timeline_;  // the last ended step's
};

}  // namespace mpidist
