// Point-to-point front end: argument checks, the Work states of sends and receives, and their
// polled waits under the communicator's timeout. The messages themselves are mpi/p2p_messages.
#include "mpidist/p2p.hpp"

#include <mpi.h>

#include <boost/container/small_vector.hpp>

#include <algorithm>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/context.hpp"
#include "core/device_backend.hpp"
#include "core/group.hpp"
#include "core/mpi_check.hpp"
#include "core/p2p_rules.hpp"
#include "core/seconds_text.hpp"
#include "core/settings.hpp"
#include "mpi/p2p_messages.hpp"
#include "tensors/open_batch.hpp"
#include "watch/flight_recorder.hpp"
#include "watch/timeout.hpp"
#include "watch/watchdog.hpp"
#include "mpidist/error.hpp"
#include "mpidist/guards.hpp"

namespace mpidist {
namespace detail {
static_assert(no_peer == proc_null, "core/p2p_rules.hpp spells p2p.hpp's proc_null");
namespace {

// The checks every operation makes before anything moves: a local Error on this rank only.
void check_op(Group& group, const char* operation, const BufferView& buffer, int peer, int tag, bool receiving,
              bool blocking_send = false) {
  check_p2p(group, operation, peer, tag, receiving, blocking_send);
  if (buffer.data() == nullptr && buffer.count() > 0)
    throw Error(group.name, operation, "null buffer with " + std::to_string(buffer.count()) + " elements");
  if (buffer.device() < 0) return;
  const int mine = rank_device(context(operation).topology.local_rank);
  if (buffer.device() != mine)
    throw Error(group.name, operation, "the buffer is on cuda:" + std::to_string(buffer.device()) +
                                           " but this rank's device is cuda:" + std::to_string(mine) + " (mpidist::device())");
}

// Device memory goes through NCCL unless MPIDIST_BACKEND=mpi (then it is staged through host
// memory, as the collectives' fallback is).
bool through_nccl(const char* operation, const BufferView& buffer) {
  return buffer.device() >= 0 && nccl_built() && settings(operation).backend != Backend::Mpi;
}

// NCCL has no wildcard: a device receive names its peer.
void check_nccl_peer(Group& group, const char* operation, int peer) {
  if (peer == any_source)
    throw Error(group.name, operation, "a receive into device memory names its peer: NCCL has no any_source");
}

struct Pending {
  mpi::Message message;
  int peer;  // as asked (any_source for a wildcard receive)
  int tag;
  std::uint64_t record = 0;  // flight-recorder id, 0 when not recorded
};

// The flight recorder keeps p2p beside the collectives, outside the numbered sequence: the peer
// shows as the call's root, the tag as its type ("tag 7", written when the entry is read).
std::uint64_t record_start(Group& group, const char* operation, const BufferView& buffer, int peer, int tag) {
  Context* ctx = context_if_initialized();
  if (ctx == nullptr || !ctx->recorder) return 0;
  Fingerprint call{operation, buffer.count(), buffer.bytes(), static_cast<int>(buffer.dtype()), peer, -1};
  call.tag = tag;
  return ctx->recorder->begin(group.key, -1, 0, group.hash, call, 0.0f);
}

// The group's kept datatypes, for a payload past the packing limit; nullptr below it.
mpi::MessageTypes* types_for(Group& group, const BufferView& buffer) {
  if (buffer.bytes() <= mpi::packing_limit) return nullptr;
  std::call_once(group.p2p_types_once, [&] { group.p2p_types = std::make_shared<mpi::MessageTypes>(); });
  return static_cast<mpi::MessageTypes*>(group.p2p_types.get());
}

void record_end(Group& group, std::uint64_t id, bool failed) noexcept {
  if (id == 0) return;
  if (Context* ctx = context_if_initialized(); ctx != nullptr && ctx->recorder)
    ctx->recorder->end(id, failed ? CallState::Failed : CallState::Completed, -1, 0, group.hash, false);
}

// One started operation: its messages, all posted when it starts, and their polled wait. A blocking
// send or recv keeps it on the stack; a Work holds it as a P2PWork.
class P2POps {
 public:
  P2POps(Group& group, const char* operation) : group_(&group), operation_(operation) {}
  P2POps(const P2POps&) = delete;
  P2POps& operator=(const P2POps&) = delete;
  ~P2POps() {
    // A Work is destroyed only once done (Work waits first); this is for an Error while starting.
    for (auto& p : pending_)
      if (!p.message.done() && p.message.receiving()) p.message.cancel_receive();
  }

  void add(int peer, int tag) {
    Pending& p = pending_.emplace_back();  // in place: a Message moved costs as much as its checks
    p.peer = peer;
    p.tag = tag;
  }

  // Device memory through MPI: a host copy of the buffer (filled now for a send; copied back to
  // the device when a receive completes). Returns what the message uses.
  BufferView stage(const BufferView& buffer, bool receiving, Stream stream) {
    if (buffer.device() < 0 || buffer.count() == 0) return buffer;
    return stage_on_host(buffer, receiving, stream);
  }
  void reserve(std::size_t n) { pending_.reserve(n); }

  // Posts op `i` (after every op was added: the vector no longer moves).
  void start(std::size_t i, const BufferView& buffer, bool receiving) {
    Pending& p = pending_[i];
    const char* recorded_as = receiving ? "recv" : "send";
    // Recorded once posted: a send leaves a few hundred instructions sooner (the ping-pong's
    // latency), and an op that MPI refuses is recorded as failed.
    try {
      mpi::MessageTypes* types = types_for(*group_, buffer);
      if (receiving)
        p.message.start_recv(group_->comm, buffer.data(), buffer.count(), buffer.dtype(),
                             p.peer == any_source ? MPI_ANY_SOURCE : p.peer, p.tag == any_tag ? MPI_ANY_TAG : p.tag,
                             types);
      else
        p.message.start_send(group_->comm, buffer.data(), buffer.count(), buffer.dtype(), p.peer, p.tag, types);
    } catch (...) {
      record_end(*group_, record_start(*group_, recorded_as, buffer, p.peer, p.tag), true);
      throw;
    }
    p.record = record_start(*group_, recorded_as, buffer, p.peer, p.tag);
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
    if (all) unstage();
    return all;
  }

  void complete() {
    // Made at the 16th poll: most small messages arrive before it, and then no clock is read.
    std::optional<Deadline> deadline;
    for (unsigned polls = 0;; ++polls) {
      if (poll()) return;
      // The clock every 16th poll, as complete_before (watch/timeout.cpp).
      if (polls % 16 == 15) {
        if (!deadline) deadline.emplace(operation_, group_);
        else if (deadline->passed()) time_out(*deadline);  // returns if all matched meanwhile
      }
      // A small message arrives within a few polls: yielding at once cost 3 us a message (8 B,
      // 2 ranks); after 64 polls ranks that oversubscribe cores let the others progress.
      if (polls >= 64) std::this_thread::yield();
    }
  }

  // The first op's sender, tag and bytes: a blocking recv's, an irecv's.
  Status status() const {
    const auto& m = pending_.front().message;
    return Status{m.source(), m.tag(), m.bytes()};
  }

 private:
  BufferView stage_on_host(const BufferView& buffer, bool receiving, Stream stream) {
    Staged s{std::vector<std::byte>(buffer.bytes()), buffer.data(), buffer.device(), stream, receiving};
    if (!receiving) {
      copy_device_memory(operation_, s.host.data(), s.device_data, s.host.size(), s.device, stream);
      synchronize_stream(operation_, stream, s.device);
    }
    staged_.push_back(std::move(s));
    return BufferView(staged_.back().host.data(), buffer.count(), buffer.dtype());
  }

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
    throw Error(group_->name, operation_,
                "timed out after " + seconds_text(deadline.seconds()) + " waiting for " + waiting + deadline.setting() +
                    "; the peer never sent it, or sent it with another tag. The receive was cancelled: the "
                    "communicator can still be used" + describe_wait_in_flight());
  }

  // The received host copies back into device memory, once.
  void unstage() {
    for (auto& s : staged_) {
      if (!s.receiving || s.device_data == nullptr) continue;
      copy_device_memory(operation_, s.device_data, s.host.data(), s.host.size(), s.device, s.stream);
      synchronize_stream(operation_, s.stream, s.device);
      s.device_data = nullptr;
    }
  }

  struct Staged {
    std::vector<std::byte> host;
    void* device_data;
    int device;
    Stream stream;
    bool receiving;
  };

  Group* group_;
  const char* operation_;
  // One op (a send or a receive) lives here: a blocking call allocates nothing.
  boost::container::small_vector<Pending, 1> pending_;
  std::vector<Staged> staged_;  // moved as the vector grows, their host buffers stay put
  std::string mismatch_;
};

// The ops as a Work's state.
class P2PWork final : public WorkState, private P2POps {
 public:
  // `says_status`: an irecv's (its one op, a receive), whose status() says where its message came
  // from (a batch's does not).
  P2PWork(Group& group, const char* operation, bool says_status = false)
      : WorkState(group.name, operation), P2POps(group, operation), says_status_(says_status) {}
  using P2POps::add;
  using P2POps::reserve;
  using P2POps::stage;
  using P2POps::start;
  bool poll() override { return P2POps::poll(); }
  void complete() override { P2POps::complete(); }
  std::optional<Status> received() const override {
    if (!says_status_) return std::nullopt;
    return status();
  }

 private:
  bool says_status_;
};

// An irecv from proc_null: done at once, from no one (recv's Status for it).
class ReceivedFromNoOne final : public WorkState {
 public:
  ReceivedFromNoOne(Group& group, const char* operation) : WorkState(group.name, operation) {}
  bool poll() override { return true; }
  void complete() override {}
  std::optional<Status> received() const override { return Status{no_peer, any_tag}; }
};

// Device isend/irecv through NCCL wait here until the first of them is waited for or tested, or
// until a blocking send/recv or a batch on the communicator: then all of them go as one NCCL group.
// NCCL runs the messages of one stream in order, so an irecv and an isend launched one by one
// would wait for each other (a ring, an exchange); together they never do, as with MPI.
class DeviceBatch {
 public:
  DeviceBatch(Group& group, Stream stream) : group_(&group), stream_(stream) {}
  void add(const DeviceMessage& message) { messages_.push_back(message); }
  Stream stream() const noexcept { return stream_; }
  bool launched() const noexcept { return launched_ != nullptr; }
  WorkState& launch(const char* operation) {
    if (!launched_) {
      if (group_->device_p2p.get() == this) group_->device_p2p.reset();  // no later message joins
      launched_ = start_nccl_p2p(*group_, operation, messages_, stream_);
    }
    return *launched_;
  }

 private:
  Group* group_;
  Stream stream_;
  std::vector<DeviceMessage> messages_;
  std::unique_ptr<WorkState> launched_;
};

class DeferredWork final : public WorkState {
 public:
  DeferredWork(Group& group, const char* operation, std::shared_ptr<DeviceBatch> batch, std::optional<Status> received)
      : WorkState(group.name, operation), operation_(operation), batch_(std::move(batch)), received_(received) {}
  bool poll() override { return batch_->launch(operation_).poll(); }
  void complete() override { batch_->launch(operation_).complete(); }
  std::optional<Status> received() const override { return received_; }

 private:
  const char* operation_;
  std::shared_ptr<DeviceBatch> batch_;
  std::optional<Status> received_;  // a receive's: NCCL's messages come from the peer named, tags aside
};


std::unique_ptr<WorkState> defer(Group& group, const char* operation, const DeviceMessage& message, int tag,
                                 Stream stream) {
  auto open = std::static_pointer_cast<DeviceBatch>(group.device_p2p);
  if (open && open->stream() != stream) {  // one NCCL group runs on one stream
    open->launch(operation);
    open.reset();
  }
  if (!open) {
    open = std::make_shared<DeviceBatch>(group, stream);
    group.device_p2p = open;
  }
  open->add(message);
  std::optional<Status> received;
  if (message.receiving) received = Status{message.peer, tag, message.count * size_of(message.dtype)};
  return std::make_unique<DeferredWork>(group, operation, open, received);
}

Group& group_for(const Communicator* comm, const char* operation) {
  return comm != nullptr ? group_of(*comm, operation) : world_group(operation);
}

// The checks of one op (`blocking`: send or recv, which wait before returning; isend and irecv do
// not). Returns whether it goes through NCCL.
bool check_one(Group& group, const char* operation, const BufferView& buffer, int peer, int tag, bool receiving,
               bool blocking) {
  check_op(group, operation, buffer, peer, tag, receiving, blocking && !receiving);
  if (!through_nccl(operation, buffer)) return false;
  check_nccl_peer(group, operation, peer);
  return true;
}

// One op through NCCL: joins the open batch; a blocking one launches the batch now.
std::unique_ptr<WorkState> start_on_device(Group& group, const char* operation, const BufferView& buffer, int peer,
                                           int tag, bool receiving, Stream stream, bool blocking) {
  const DeviceMessage message{receiving, buffer.data(), buffer.count(), buffer.dtype(), peer};
  auto work = defer(group, operation, message, tag, stream);
  if (blocking) launch_open_batch(group, operation);
  return work;
}

std::unique_ptr<WorkState> start_one(const Communicator* comm, const char* operation, const BufferView& buffer,
                                     int peer, int tag, bool receiving, Stream stream) {
  Group& group = group_for(comm, operation);
  const bool nccl = check_one(group, operation, buffer, peer, tag, receiving, false);
  if (peer == no_peer) return receiving ? std::make_unique<ReceivedFromNoOne>(group, operation) : nullptr;  // done
  if (nccl) return start_on_device(group, operation, buffer, peer, tag, receiving, stream, false);
  auto work = std::make_unique<P2PWork>(group, operation, receiving);
  work->add(peer, tag);
  naming_errors(group.name, [&] { work->start(0, work->stage(buffer, receiving, stream), receiving); });
  return work;
}

// A blocking op: through MPI its state lives on the stack (a call allocates nothing).
Status run_blocking(const Communicator* comm, const char* operation, const BufferView& buffer, int peer, int tag,
                    bool receiving, Stream stream) {
  Group& group = group_for(comm, operation);
  const bool nccl = check_one(group, operation, buffer, peer, tag, receiving, true);
  if (peer == no_peer) return Status{no_peer, any_tag};
  if (nccl) {
    auto work = start_on_device(group, operation, buffer, peer, tag, receiving, stream, true);
    naming_errors(group.name, [&] { work->complete(); });
    return Status{peer, tag, buffer.bytes()};  // NCCL matches in order per peer, tags aside: the one from peer
  }
  P2POps work(group, operation);
  work.add(peer, tag);
  naming_errors(group.name, [&] {
    work.start(0, work.stage(buffer, receiving, stream), receiving);
    work.complete();
  });
  return work.status();
}

void send_blocking(const Communicator* comm, const BufferView& buffer, int dest, int tag, Stream stream) {
  run_blocking(comm, "send", buffer, dest, tag, false, stream);
}

Status recv_blocking(const Communicator* comm, const BufferView& buffer, int src, int tag, Stream stream) {
  return run_blocking(comm, "recv", buffer, src, tag, true, stream);
}

Work start_receive(const Communicator* comm, const BufferView& buffer, int src, int tag, Stream stream) {
  Work work(start_one(comm, "irecv", buffer, src, tag, true, stream));
  if (src == no_peer) (void)work.test();  // done at once, from no one: done() and status() say so
  return work;
}

Work batch(const Communicator* comm, const char* operation, std::span<const P2POp> ops, Stream stream) {
  Group& group = group_for(comm, operation);
  for (const auto& op : ops) {
    if (op.kind() == P2POp::Kind::Recv && op.peer() == any_source)
      throw Error(group.name, operation, std::string("a receive of ") + operation +
                                             " names its peer: any_source is for recv and irecv");
    check_op(group, operation, op.buffer(), op.peer(), op.tag(), op.kind() == P2POp::Kind::Recv);
  }
  const auto to_no_one = [](const P2POp& op) { return op.peer() == no_peer; };
  std::vector<P2POp> rest;  // the ops with a peer, when some have none: they do nothing
  if (std::any_of(ops.begin(), ops.end(), to_no_one)) {
    std::remove_copy_if(ops.begin(), ops.end(), std::back_inserter(rest), to_no_one);
    ops = rest;
  }
  if (ops.empty()) return Work();
  const bool nccl = std::any_of(ops.begin(), ops.end(), [&](const P2POp& op) { return through_nccl(operation, op.buffer()); });
  if (nccl) {  // one NCCL group: every buffer in device memory
    std::vector<DeviceMessage> messages;
    for (const auto& op : ops) {
      if (op.buffer().device() < 0 && op.buffer().count() > 0)
        throw Error(group.name, operation, "a batch that moves device memory through NCCL is all device memory; "
                                           "this one also has a host buffer (peer " + std::to_string(op.peer()) + ")");
      messages.push_back({op.kind() == P2POp::Kind::Recv, op.buffer().data(), op.buffer().count(), op.buffer().dtype(),
                          op.peer()});
    }
    launch_open_batch(group, operation);  // earlier isend/irecv first, in issue order
    return Work(start_nccl_p2p(group, operation, messages, stream));
  }
  auto work = std::make_unique<P2PWork>(group, operation);
  work->reserve(ops.size());
  for (const auto& op : ops) work->add(op.peer(), op.tag());
  // Receives first: a message then never waits unmatched for a receive posted a moment later.
  try {
    naming_errors(group.name, [&] {
      for (std::size_t i = 0; i < ops.size(); ++i)
        if (ops[i].kind() == P2POp::Kind::Recv) work->start(i, work->stage(ops[i].buffer(), true, stream), true);
      for (std::size_t i = 0; i < ops.size(); ++i)
        if (ops[i].kind() == P2POp::Kind::Send) work->start(i, work->stage(ops[i].buffer(), false, stream), false);
    });
  } catch (const Error& e) {
    // MPI refused to post a message: the peers of the others posted may now wait for nothing.
    break_group(group, std::string(operation) + " failed while posting its messages: " + e.detail());
    throw;
  }
  return Work(std::move(work));
}

}  // namespace

void launch_open_batch(Group& group, const char* operation) {
  if (auto open = std::static_pointer_cast<DeviceBatch>(group.device_p2p)) open->launch(operation);
}

}  // namespace detail

int max_tag() {
  auto& group = detail::world_group("max_tag");
  return detail::tag_upper_bound(group) - detail::reserved_tags;
}

void send(InputView buffer, int dest, int tag, Stream stream) {
  detail::send_blocking(nullptr, buffer, dest, tag, stream);
}
void send(const Communicator& comm, InputView buffer, int dest, int tag, Stream stream) {
  detail::send_blocking(&comm, buffer, dest, tag, stream);
}
Status recv(BufferView buffer, int src, int tag, Stream stream) {
  return detail::recv_blocking(nullptr, buffer, src, tag, stream);
}
Status recv(const Communicator& comm, BufferView buffer, int src, int tag, Stream stream) {
  return detail::recv_blocking(&comm, buffer, src, tag, stream);
}
Work isend(InputView buffer, int dest, int tag, Stream stream) {
  return Work(detail::start_one(nullptr, "isend", buffer, dest, tag, false, stream));
}
Work isend(const Communicator& comm, InputView buffer, int dest, int tag, Stream stream) {
  return Work(detail::start_one(&comm, "isend", buffer, dest, tag, false, stream));
}
Work irecv(BufferView buffer, int src, int tag, Stream stream) {
  return detail::start_receive(nullptr, buffer, src, tag, stream);
}
Work irecv(const Communicator& comm, BufferView buffer, int src, int tag, Stream stream) {
  return detail::start_receive(&comm, buffer, src, tag, stream);
}
Work batch_isend_irecv(std::span<const P2POp> ops, Stream stream) {
  return detail::batch(nullptr, "batch_isend_irecv", ops, stream);
}
Work batch_isend_irecv(const Communicator& comm, std::span<const P2POp> ops, Stream stream) {
  return detail::batch(&comm, "batch_isend_irecv", ops, stream);
}
void sendrecv(InputView send_buffer, int dest, BufferView recv_buffer, int src, int tag, Stream stream) {
  const P2POp ops[] = {P2POp::send(send_buffer, dest, tag), P2POp::recv(recv_buffer, src, tag)};
  detail::batch(nullptr, "sendrecv", ops, stream).wait();
}
void sendrecv(const Communicator& comm, InputView send_buffer, int dest, BufferView recv_buffer, int src, int tag,
              Stream stream) {
  const P2POp ops[] = {P2POp::send(send_buffer, dest, tag), P2POp::recv(recv_buffer, src, tag)};
  detail::batch(&comm, "sendrecv", ops, stream).wait();
}

}  // namespace mpidist
