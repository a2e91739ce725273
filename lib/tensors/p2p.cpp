// Point-to-point front end: argument checks, the Work states of sends and receives, and their
// polled waits under the communicator's timeout. The messages themselves are mpi/p2p_messages.
#include "mpidist/p2p.hpp"

#include <mpi.h>

#include <cstdio>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "core/context.hpp"
#include "core/group.hpp"
#include "core/mpi_check.hpp"
#include "core/p2p_rules.hpp"
#include "mpi/p2p_messages.hpp"
#include "watch/flight_recorder.hpp"
#include "watch/timeout.hpp"
#include "watch/watchdog.hpp"
#include "mpidist/error.hpp"
#include "mpidist/guards.hpp"

namespace mpidist {
namespace detail {
namespace {

std::string describe_peer(int peer) { return peer == any_source ? "any rank" : "rank " + std::to_string(peer); }
std::string describe_tag(int tag) { return tag == any_tag ? "any tag" : "tag " + std::to_string(tag); }

// The checks every operation makes before anything moves: a local Error on this rank only.
void check_op(Group& group, const char* operation, const BufferView& buffer, int peer, int tag, bool receiving,
              bool blocking_send = false) {
  check_p2p(group, operation, peer, tag, receiving, blocking_send);
  if (buffer.device() >= 0)
    throw Error(group.name, operation, "device memory (CUDA device " + std::to_string(buffer.device()) +
                                           ") is not supported by point-to-point calls yet; copy it to host memory");
  if (buffer.data() == nullptr && buffer.count() > 0)
    throw Error(group.name, operation, "null buffer with " + std::to_string(buffer.count()) + " elements");
}

struct Pending {
  mpi::Message message;
  int peer = 0;  // as asked (any_source for a wildcard receive)
  int tag = 0;
  std::uint64_t record = 0;  // flight-recorder id, 0 when not recorded
};

// The flight recorder keeps p2p beside the collectives, outside the numbered sequence (the
// peer shows as the call's root, the tag as its type tag).
std::uint64_t record_start(Group& group, const char* operation, const BufferView& buffer, int peer, int tag) {
  Context* ctx = context_if_initialized();
  if (ctx == nullptr || !ctx->recorder) return 0;
  const Fingerprint call{operation, buffer.count(), buffer.bytes(), static_cast<int>(buffer.dtype()), peer, -1,
                         nullptr, static_cast<std::uint64_t>(tag < 0 ? 0 : tag), false};
  return ctx->recorder->begin(group.key, -1, 0, group.hash, call, 0.0f);
}

void record_end(Group& group, std::uint64_t id, bool failed) noexcept {
  if (id == 0) return;
  if (Context* ctx = context_if_initialized(); ctx != nullptr && ctx->recorder)
    ctx->recorder->end(id, failed ? CallState::Failed : CallState::Completed, -1, 0, group.hash, false);
}

// The messages of one call, all posted when it starts, and their polled wait. The blocking calls
// keep it and their one message on the stack (no allocation on their path); P2PWork keeps it on
// the heap for isend, irecv and batches.
class Exchange {
 public:
  Exchange(Group& group, const char* operation, std::span<Pending> pending)
      : group_(&group), operation_(operation), pending_(pending) {}
  ~Exchange() {
    // Done once waited for; this is for an Error while starting or polling.
    for (auto& p : pending_)
      if (!p.message.done() && p.message.receiving()) p.message.cancel_receive();
  }
  Exchange(const Exchange&) = delete;
  Exchange& operator=(const Exchange&) = delete;

  // Posts op `i` (after every op was added: the storage no longer moves).
  void start(std::size_t i, const BufferView& buffer, bool receiving) {
    Pending& p = pending_[i];
    p.record = record_start(*group_, receiving ? "recv" : "send", buffer, p.peer, p.tag);
    if (receiving)
      p.message.start_recv(group_->comm, buffer.data(), buffer.count(), buffer.dtype(),
                           p.peer == any_source ? MPI_ANY_SOURCE : p.peer, p.tag == any_tag ? MPI_ANY_TAG : p.tag);
    else
      p.message.start_send(group_->comm, buffer.data(), buffer.count(), buffer.dtype(), p.peer, p.tag);
  }

  bool poll() {
    bool all = true;
    for (auto& p : pending_) {
      if (p.message.done()) continue;
      bool done = false;
      try {
        done = p.message.test();
      } catch (...) {
        record_end(*group_, p.record, true);
        throw;
      }
      if (!done) {
        all = false;
        continue;
      }
      record_end(*group_, p.record, !p.message.mismatch().empty());
      if (!p.message.mismatch().empty()) mismatch_ = p.message.mismatch();
    }
    if (all && !mismatch_.empty()) throw Error(group_->name, operation_, mismatch_);
    return all;
  }

  void complete() {
    // A small message is there within a few polls: the deadline (a settings lookup and a clock
    // read) is set only at the first check, 15 polls (a few microseconds) after the start.
    std::optional<Deadline> deadline;
    for (unsigned polls = 0;; ++polls) {
      if (poll()) return;
      // The clock every 16th poll, as complete_before (watch/timeout.cpp).
      if (polls % 16 == 15) {
        if (!deadline) deadline.emplace(operation_, group_);
        if (deadline->passed()) time_out(*deadline);  // returns if all matched meanwhile
      }
      // A small message arrives within a few polls: yielding at once cost 3 us a message (8 B,
      // 2 ranks); after 64 polls ranks that oversubscribe cores let the others progress.
      if (polls >= 64) std::this_thread::yield();
    }
  }

  Status status() const {
    const auto& m = pending_.front().message;
    return Status{m.source(), m.tag()};
  }

 private:
  // Past the deadline. Receives are cancelled (nothing is written into their buffers later), and
  // then the communicator is still sound; a send cannot be taken back, so a send that timed out
  // breaks the communicator like any other timeout.
  void time_out(const Deadline& deadline) {
    std::string waiting;
    bool sends = false;
    for (auto& p : pending_) {
      if (p.message.done()) continue;
      if (p.message.receiving()) {
        if (!p.message.cancel_receive()) continue;  // it matched meanwhile
        record_end(*group_, p.record, true);
      } else {
        sends = true;
      }
      if (!waiting.empty()) waiting += ", ";
      waiting += (p.message.receiving() ? "a message from " : "a receive on ") + describe_peer(p.peer) + " (" +
                 describe_tag(p.tag) + ")";
    }
    if (waiting.empty()) return;  // every receive matched while being cancelled: poll() finishes them
    if (sends) deadline.time_out(operation_, waiting.c_str());
    char limit[32];
    std::snprintf(limit, sizeof limit, "%g", deadline.seconds());
    throw Error(group_->name, operation_,
                std::string("timed out after ") + limit + " s waiting for " + waiting +
                    (group_->timeout_seconds >= 0 ? " (the communicator's set_timeout)" : " (MPIDIST_TIMEOUT)") +
                    "; the peer never sent it, or sent it with another tag. The receive was cancelled: the "
                    "communicator can still be used" + describe_wait_in_flight());
  }

  Group* group_;
  const char* operation_;
  std::span<Pending> pending_;
  std::string mismatch_;
};

// A started operation behind a Work (isend, irecv, batch_isend_irecv).
class P2PWork final : public WorkState {
 public:
  P2PWork(Group& group, const char* operation, std::size_t ops)
      : WorkState(group.name, operation), pending_(ops), exchange_(group, operation, pending_) {}

  Pending& op(std::size_t i) { return pending_[i]; }
  void start(std::size_t i, const BufferView& buffer, bool receiving) { exchange_.start(i, buffer, receiving); }
  bool poll() override { return exchange_.poll(); }
  void complete() override { exchange_.complete(); }

 private:
  std::vector<Pending> pending_;  // before exchange_, which refers to it
  Exchange exchange_;
};

Group& group_for(const Communicator* comm, const char* operation) {
  return comm != nullptr ? group_of(*comm, operation) : world_group(operation);
}

std::unique_ptr<P2PWork> start_one(const Communicator* comm, const char* operation, const BufferView& buffer,
                                   int peer, int tag, bool receiving) {
  Group& group = group_for(comm, operation);
  check_op(group, operation, buffer, peer, tag, receiving);
  auto work = std::make_unique<P2PWork>(group, operation, 1);
  work->op(0).peer = peer, work->op(0).tag = tag;
  naming_errors(group.name, [&] { work->start(0, buffer, receiving); });
  return work;
}

// send and recv: checked, posted and waited for like isend and irecv, with the state on the stack.
Status blocking(const Communicator* comm, const char* operation, const BufferView& buffer, int peer, int tag,
                bool receiving) {
  Group& group = group_for(comm, operation);
  check_op(group, operation, buffer, peer, tag, receiving, !receiving);
  Pending one{mpi::Message(), peer, tag, 0};
  Exchange exchange(group, operation, std::span(&one, 1));
  naming_errors(group.name, [&] {
    exchange.start(0, buffer, receiving);
    exchange.complete();
  });
  return exchange.status();
}

Work batch(const Communicator* comm, std::span<const P2POp> ops) {
  const char* operation = "batch_isend_irecv";
  Group& group = group_for(comm, operation);
  for (const auto& op : ops) {
    if (op.kind() == P2POp::Kind::Recv && op.peer() == any_source)
      throw Error(group.name, operation, "a receive of a batch names its peer: any_source is for recv and irecv");
    check_op(group, operation, op.buffer(), op.peer(), op.tag(), op.kind() == P2POp::Kind::Recv);
  }
  if (ops.empty()) return Work();
  auto work = std::make_unique<P2PWork>(group, operation, ops.size());
  for (std::size_t i = 0; i < ops.size(); ++i) work->op(i).peer = ops[i].peer(), work->op(i).tag = ops[i].tag();
  // Receives first: a message then never waits unmatched for a receive posted a moment later.
  try {
    naming_errors(group.name, [&] {
      for (std::size_t i = 0; i < ops.size(); ++i)
        if (ops[i].kind() == P2POp::Kind::Recv) work->start(i, ops[i].buffer(), true);
      for (std::size_t i = 0; i < ops.size(); ++i)
        if (ops[i].kind() == P2POp::Kind::Send) work->start(i, ops[i].buffer(), false);
    });
  } catch (const Error& e) {
    // MPI refused to post a message: the peers of the others posted may now wait for nothing.
    break_group(group, std::string(operation) + " failed while posting its messages: " + e.detail());
    throw;
  }
  return Work(std::move(work));
}

}  // namespace
}  // namespace detail

int max_tag() {
  auto& group = detail::world_group("max_tag");
  return detail::tag_upper_bound(group) - detail::reserved_tags;
}

void send(BufferView buffer, int dest, int tag, Stream) { detail::blocking(nullptr, "send", buffer, dest, tag, false); }
void send(const Communicator& comm, BufferView buffer, int dest, int tag, Stream) {
  detail::blocking(&comm, "send", buffer, dest, tag, false);
}
Status recv(BufferView buffer, int src, int tag, Stream) {
  return detail::blocking(nullptr, "recv", buffer, src, tag, true);
}
Status recv(const Communicator& comm, BufferView buffer, int src, int tag, Stream) {
  return detail::blocking(&comm, "recv", buffer, src, tag, true);
}
Work isend(BufferView buffer, int dest, int tag, Stream) {
  return Work(detail::start_one(nullptr, "isend", buffer, dest, tag, false));
}
Work isend(const Communicator& comm, BufferView buffer, int dest, int tag, Stream) {
  return Work(detail::start_one(&comm, "isend", buffer, dest, tag, false));
}
Work irecv(BufferView buffer, int src, int tag, Stream) {
  return Work(detail::start_one(nullptr, "irecv", buffer, src, tag, true));
}
Work irecv(const Communicator& comm, BufferView buffer, int src, int tag, Stream) {
  return Work(detail::start_one(&comm, "irecv", buffer, src, tag, true));
}
Work batch_isend_irecv(std::span<const P2POp> ops, Stream) { return detail::batch(nullptr, ops); }
Work batch_isend_irecv(const Communicator& comm, std::span<const P2POp> ops, Stream) {
  return detail::batch(&comm, ops);
}

}  // namespace mpidist
