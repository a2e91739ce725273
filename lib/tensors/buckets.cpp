// GradientBuckets: forming the buckets, the ranks' agreement on the buffers, starting each bucket
// once it is complete and its turn has come, and the end-of-step check. Built on the non-blocking
// all_reduce_many (told where to write its step's times) and two small blocking calls for the
// agreements.
#include "mpidist/buckets.hpp"

#include <algorithm>
#include <array>
#include <functional>
#include <numeric>
#include <string>

#include "core/group.hpp"
#include "mpidist/guards.hpp"
#include "tensors/fusion.hpp"
#include "mpidist/collectives.hpp"
#include "mpidist/error.hpp"

namespace mpidist {
namespace {

constexpr const char* operation = "GradientBuckets";

BucketsTimeline::time_point now() { return std::chrono::steady_clock::now(); }

// A buffer as the ranks compare it: count, then type and memory in one word.
std::array<std::int64_t, 2> describe(const BufferView& b) {
  return {static_cast<std::int64_t>(b.count()), static_cast<std::int64_t>(b.dtype()) + (b.device() >= 0 ? 256 : 0)};
}

std::string describe_text(const std::int64_t* entry) {
  if (entry == nullptr) return "no buffer";
  std::string text = std::to_string(entry[0]) + " " + std::string(to_string(static_cast<DataType>(entry[1] % 256)));
  return entry[1] >= 256 ? text + " (device)" : text;
}

std::int64_t mix(std::int64_t hash, std::int64_t value) {
  auto h = static_cast<std::uint64_t>(hash);
  h = (h ^ static_cast<std::uint64_t>(value)) * 0x100000001b3ULL;
  return static_cast<std::int64_t>(h >> 1);  // non-negative: -h must not overflow
}

}  // namespace

GradientBuckets::GradientBuckets(std::vector<BufferView> buffers, BucketOptions options)
    : GradientBuckets(world(), std::move(buffers), options) {}

GradientBuckets::GradientBuckets(const Communicator& comm, std::vector<BufferView> buffers, BucketOptions options)
    : buffers_(std::move(buffers)), options_(options) {
  if (options_.bucket_bytes == 0) throw Error(comm.name(), operation, "bucket_bytes must be positive");
  // A communicator of its own (in a MainProcessContext, comm's group of one does): a streaming
  // bucket holds its lane until its buffers are marked, and the caller's collectives on comm must
  // not queue behind it.
  comm_ = MainProcessContext::depth() > 0 ? comm : detail::duplicate(comm, "buckets");
  agree_on_buffers();
  form_buckets();
  marks_.assign(buffers_.size(), 0);
  remaining_.resize(first_.size());
  for (std::size_t b = 0; b < first_.size(); ++b)
    remaining_[b] = end_of(b) - first_[b];
  works_.reserve(first_.size());
  ready_ = std::make_unique<bool[]>(buffers_.size());
  by_address_.resize(buffers_.size());
  std::iota(by_address_.begin(), by_address_.end(), std::size_t{0});
  std::stable_sort(by_address_.begin(), by_address_.end(), [&](std::size_t a, std::size_t b) {
    return std::less<>{}(buffers_[a].data(), buffers_[b].data());
  });
  step_.buckets.resize(first_.size());
  for (std::size_t i = 0; i < buffers_.size(); ++i) step_.buckets[bucket_of_[i]].bytes += buffers_[i].bytes();
  timeline_ = step_;
}

GradientBuckets::~GradientBuckets() {
  // A streaming bucket of an unfinished step goes on with what its buffers hold, so that its
  // Work, waited for here (a failure goes to the log), ends.
  release_all();
  works_.clear();
}

void GradientBuckets::agree_on_buffers() {
  // One small all-reduce when the ranks agree (the usual case); the lists themselves only when not.
  std::int64_t hash = static_cast<std::int64_t>(buffers_.size());
  for (const auto& b : buffers_)
    for (const auto v : describe(b)) hash = mix(hash, v);
  std::array<std::int64_t, 2> both{hash, -hash};
  all_reduce(comm_, BufferView(both.data(), 2, DataType::Int64), ReduceOp::Max);
  if (both[0] == -both[1]) return;
  const int size = comm_.size();
  std::int64_t mine = static_cast<std::int64_t>(buffers_.size());
  std::vector<std::int64_t> lengths(static_cast<std::size_t>(size));
  all_gather(comm_, BufferView(&mine, 1, DataType::Int64), BufferView(lengths.data(), lengths.size(), DataType::Int64));
  std::vector<std::int64_t> entries;
  for (const auto& b : buffers_)
    for (const auto v : describe(b)) entries.push_back(v);
  std::vector<std::size_t> counts;
  std::size_t total = 0;
  for (const auto n : lengths) counts.push_back(2 * static_cast<std::size_t>(n)), total += counts.back();
  std::vector<std::int64_t> all(total);
  all_gather_v(comm_, BufferView(entries.data(), entries.size(), DataType::Int64),
               BufferView(all.data(), all.size(), DataType::Int64), counts);
  std::vector<const std::int64_t*> lists;
  for (std::size_t r = 0, at = 0; r < counts.size(); at += counts[r], ++r) lists.push_back(all.data() + at);
  // The first index where any rank's entry (or its absence) differs from rank 0's.
  for (std::size_t i = 0;; ++i) {
    const auto entry = [&](std::size_t r) -> const std::int64_t* {
      return i < static_cast<std::size_t>(lengths[r]) ? lists[r] + 2 * i : nullptr;
    };
    bool differs = false;
    bool any = false;
    for (std::size_t r = 0; r < lists.size(); ++r) {
      const auto* e = entry(r);
      any = any || e != nullptr;
      const auto* first = entry(0);
      differs = differs || (e == nullptr) != (first == nullptr) || (e && (e[0] != first[0] || e[1] != first[1]));
    }
    if (!any) break;  // not reached: the hashes differed
    if (!differs) continue;
    std::string detail = "ranks pass different buffers: the first difference is buffer " + std::to_string(i) + ":";
    for (std::size_t r = 0; r < lists.size(); ++r)
      detail += (r ? ", rank " : " rank ") + std::to_string(r) + " has " + describe_text(entry(r));
    throw Error(comm_.name(), operation, detail);
  }
}

void GradientBuckets::form_buckets() {
  std::size_t bytes = 0;
  const BufferView* kind = nullptr;  // the bucket's first non-empty buffer: its dtype and memory
  for (std::size_t i = 0; i < buffers_.size(); ++i) {
    const BufferView& b = buffers_[i];
    const bool fits = kind != nullptr && b.dtype() == kind->dtype() && b.device() == kind->device() &&
                      bytes + b.bytes() <= options_.bucket_bytes;
    if (first_.empty() || (b.count() > 0 && kind != nullptr && !fits)) {
      first_.push_back(i);
      bytes = 0;
      kind = nullptr;
    }
    if (b.count() > 0 && kind == nullptr) kind = &b;
    bytes += b.bytes();
    bucket_of_.push_back(first_.size() - 1);
  }
}

void GradientBuckets::mark_ready(std::size_t index) {
  if (no_sync_ > 0) return;
  if (index >= buffers_.size())
    throw Error(comm_.name(), "GradientBuckets::mark_ready",
                "buffer " + std::to_string(index) + " out of range for " + std::to_string(buffers_.size()) + " buffers");
  if (marks_[index]++ > 0) {  // reported on every rank at wait()
    if (problem_ < 0) problem_ = static_cast<std::int64_t>(index) * 2 + 1;
    return;
  }
  const std::size_t bucket = bucket_of_[index];
  // The time first: once the lane hears of the mark, the bucket may finish at once.
  if (--remaining_[bucket] == 0) step_.buckets[bucket].marked = now();
  if (options_.stream) {
    {
      std::lock_guard lock(ready_mutex_);
      ready_[index] = true;
    }
    ready_changed_.notify_all();
  }
  launch_ready();
}

void GradientBuckets::mark_ready(InputView buffer) {
  if (no_sync_ > 0) return;
  const auto first = std::partition_point(by_address_.begin(), by_address_.end(), [&](std::size_t i) {
    return std::less<>{}(buffers_[i].data(), buffer.data());
  });
  std::size_t found = buffers_.size();
  for (auto it = first; it != by_address_.end() && buffers_[*it].data() == buffer.data(); ++it) {
    const BufferView& b = buffers_[*it];
    if (b.count() != buffer.count() || b.dtype() != buffer.dtype()) continue;
    if (found == buffers_.size()) found = *it;  // all marked already: the first, reported as marked twice
    if (marks_[*it] == 0) {
      found = *it;
      break;
    }
  }
  if (found == buffers_.size())
    throw Error(comm_.name(), "GradientBuckets::mark_ready",
                "the buffer of " + std::to_string(buffer.count()) + " " + std::string(to_string(buffer.dtype())) +
                    " elements it was given is none of the " + std::to_string(buffers_.size()) +
                    " buffers the buckets were made with (mark the buffer itself, or its index)");
  mark_ready(found);
}

void GradientBuckets::launch_ready() {
  while (next_ < first_.size() && (remaining_[next_] == 0 || started_early(next_))) launch(next_);
}

bool GradientBuckets::started_early(std::size_t bucket) const {
  if (!options_.stream) return false;
  const std::size_t end = end_of(bucket);
  if (remaining_[bucket] == end - first_[bucket]) return false;  // nothing marked yet
  // Only where the lane runs the step: a step run at issue would wait for marks on this thread.
  const std::span<const BufferView> views(buffers_.data() + first_[bucket], end - first_[bucket]);
  return detail::all_reduce_many_on_lane(detail::group_of(comm_, "all_reduce_many"), views);
}

void GradientBuckets::await_marked(std::size_t& from, std::size_t to, std::chrono::duration<double> timeout) {
  std::unique_lock lock(ready_mutex_);
  const auto all_marked = [&] {
    while (from <= to && ready_[from]) ++from;
    return from > to;
  };
  if (timeout <= timeout.zero()) return ready_changed_.wait(lock, all_marked);
  if (!ready_changed_.wait_for(lock, timeout, all_marked))
    throw Error(comm_.name(), operation,
                "a streaming bucket waited " + std::to_string(timeout.count()) + " s for buffer " +
                    std::to_string(from) + " to be marked (mark_ready) or the step to end (wait())");
}

void GradientBuckets::release_all() {
  if (!options_.stream) return;
  {
    std::lock_guard lock(ready_mutex_);
    std::fill(ready_.get(), ready_.get() + buffers_.size(), true);
  }
  ready_changed_.notify_all();
}

void GradientBuckets::launch(std::size_t bucket) {
  const std::size_t end = end_of(bucket);
  const std::span<const BufferView> views(buffers_.data() + first_[bucket], end - first_[bucket]);
  auto& times = step_.buckets[bucket];
  times.launched = now();
  times.started = times.finished = {};
  const char* name = "all_reduce_many";
  detail::ListGate gate;
  if (remaining_[bucket] > 0)
    gate = [this, from = first_[bucket], first = first_[bucket], timeout = comm_.timeout()](std::size_t index) mutable {
      await_marked(from, first + index, timeout);
    };
  works_.push_back(detail::all_reduce_many_async(detail::group_of(comm_, name), name, views, options_.op, nullptr,
                                                 {&times.started, &times.finished}, std::move(gate)));
  next_ = bucket + 1;
}

void GradientBuckets::wait() {
  if (no_sync_ > 0) return;
  step_.wait_called = now();
  // Every rank starts every bucket, marked or not, so the ranks' collectives always pair up.
  for (std::size_t b = 0; b < first_.size(); ++b)
    if (remaining_[b] > 0) step_.buckets[b].marked = step_.wait_called;
  // Buffers left unmarked are reduced with what they hold, also in a bucket already streaming.
  release_all();
  while (next_ < first_.size()) launch(next_);
  std::int64_t mine = problem_;
  for (std::size_t i = 0; i < marks_.size(); ++i)
    if (marks_[i] == 0) {
      if (mine < 0 || static_cast<std::int64_t>(i) * 2 < mine) mine = static_cast<std::int64_t>(i) * 2;
      break;
    }
  // Inside a MainProcessContext the check is this rank's alone, as in a group of one.
  const bool alone = MainProcessContext::depth() > 0;
  std::vector<std::int64_t> all(alone ? 1 : static_cast<std::size_t>(comm_.size()), -1);
  std::exception_ptr step_failed;
  std::exception_ptr check_failed;
  try {
    wait_all(works_);
  } catch (...) {
    step_failed = std::current_exception();
  }
  step_.reduced = now();
  if (!step_failed) {
    try {
      all_gather(comm_, BufferView(&mine, 1, DataType::Int64), BufferView(all.data(), all.size(), DataType::Int64));
    } catch (...) {
      check_failed = std::current_exception();
    }
  }
  // The next step starts clean, whatever happened to this one.
  works_.clear();
  step_.checked = now();
  timeline_ = step_;
  std::fill(marks_.begin(), marks_.end(), 0);
  if (options_.stream) {
    std::lock_guard lock(ready_mutex_);  // the lane is done with them: every Work has ended
    std::fill(ready_.get(), ready_.get() + buffers_.size(), false);
  }
  for (std::size_t b = 0; b < first_.size(); ++b)
    remaining_[b] = end_of(b) - first_[b];
  next_ = 0;
  problem_ = -1;
  if (step_failed) std::rethrow_exception(step_failed);
  if (check_failed) std::rethrow_exception(check_failed);
  for (std::size_t r = 0; r < all.size(); ++r) {
    if (all[r] < 0) continue;
    const std::string buffer = "buffer " + std::to_string(all[r] / 2);
    const std::string rank = std::to_string(alone ? comm_.rank() : static_cast<int>(r));
    throw Error(comm_.name(), "GradientBuckets::wait",
                all[r] % 2 ? buffer + " was marked ready twice this step by rank " + rank
                           : buffer + " was not marked ready this step by rank " + rank +
                                 " (its bucket was reduced with what it held)");
  }
}

GradientBuckets::NoSync GradientBuckets::no_sync() {
  ++no_sync_;
  return NoSync(this);
}

GradientBuckets::NoSync::~NoSync() {
  if (owner_ != nullptr) --owner_->no_sync_;
}

}  // namespace mpidist
