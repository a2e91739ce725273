// Emulated NCCL operations: validation, groups, and the queued work that runs them as MPI
// non-blocking collectives when the stream is driven.
//
// Life of an operation:
//   1. The call validates the communicator, type, op, root/peer, count and that every buffer is
//      emulated device memory of the communicator's device; errors return at once.
//   2. Outside a group it is queued on its stream; inside one it waits for the outermost
//      ncclGroupEnd, which queues each stream's operations as one unit.
//   3. When a synchronization or query drives the stream, it copies its input out of device
//      memory into host staging (half types widened to float) and posts the MPI request, in the
//      communicator's submission order so all ranks post collectives in the same order.
//   4. Each later drive calls MPI_Test (cudaStreamQuery says cudaErrorNotReady until the peers
//      arrive); on completion the result is written back to device memory.
//   5. ncclCommAbort cancels queued operations; posted requests are abandoned, never waited on.
//   6. The launches of one device run one at a time, in the order they were launched (a call, or
//      a group's ncclGroupEnd, is one launch): a launch posts its requests only after every earlier
//      launch of its device finished. That is the worst a GPU allows (NCCL kernels need not run
//      concurrently), so ranks issuing two communicators' work in different orders deadlock here
//      as they may on hardware; the hang report names the launch holding the others back.
// On a non-blocking communicator step 2 is deferred once more: the call (or ncclGroupEnd)
// returns ncclInProgress and the work reaches its stream only when ncclCommGetAsyncError is
// polled, as NCCL's launch thread would put it there "later". A stream synchronized before that
// is empty, and its result stale, as on a GPU.
#include <algorithm>
#include <climits>
#include <cstring>
#include <cstdlib>
#include <map>

#include "nccl_internal.hpp"

namespace mpidist_emu {
namespace {

using Lock = std::lock_guard<std::recursive_mutex>;
using Kind = OpArgs::Kind;

bool reduces(Kind k) { return k == Kind::AllReduce || k == Kind::Reduce || k == Kind::ReduceScatter; }
bool is_half(ncclDataType_t t) { return t == ncclFloat16 || t == ncclBfloat16; }

MPI_Datatype mpi_type(ncclDataType_t type, bool widened) {
  switch (type) {
    case ncclInt8: return MPI_INT8_T;
    case ncclUint8: return MPI_UINT8_T;
    case ncclInt32: return MPI_INT32_T;
    case ncclUint32: return MPI_UINT32_T;
    case ncclInt64: return MPI_INT64_T;
    case ncclUint64: return MPI_UINT64_T;
    case ncclFloat32: return MPI_FLOAT;
    case ncclFloat64: return MPI_DOUBLE;
    default: return widened ? MPI_FLOAT : MPI_UINT16_T;  // the half types
  }
}

// Unsigned min/max travel with the top bit flipped, as the signed type of the same width: that
// keeps their order, and does not rely on MPI comparing unsigned types right (MPICH 4.0.2
// compares them as signed: pmodels/mpich#6083).
bool flips_sign(ncclDataType_t type, ncclRedOp_t op) {
  const bool unsigned_type = type == ncclUint8 || type == ncclUint32 || type == ncclUint64;
  return unsigned_type && (op == ncclMin || op == ncclMax);
}
MPI_Datatype signed_twin(ncclDataType_t type) {
  return type == ncclUint8 ? MPI_INT8_T : type == ncclUint32 ? MPI_INT32_T : MPI_INT64_T;
}
void flip_top_bits(std::byte* data, std::size_t count, std::size_t size) {
  for (std::size_t i = 0; i < count; ++i) data[i * size + size - 1] ^= std::byte{0x80};  // little-endian
}

MPI_Op mpi_op(ncclRedOp_t op) {
  switch (op) {
    case ncclProd: return MPI_PROD;
    case ncclMax: return MPI_MAX;
    case ncclMin: return MPI_MIN;
    default: return MPI_SUM;  // Sum, and Avg before its division
  }
}

template <typename T>
void divide(std::byte* data, std::size_t count, int by) {
  T* values = reinterpret_cast<T*>(data);
  for (std::size_t i = 0; i < count; ++i) values[i] = static_cast<T>(values[i] / static_cast<T>(by));
}

void divide_all(ncclDataType_t type, std::byte* data, std::size_t count, int by) {
  switch (type) {
    case ncclInt8: divide<std::int8_t>(data, count, by); break;
    case ncclUint8: divide<std::uint8_t>(data, count, by); break;
    case ncclInt32: divide<std::int32_t>(data, count, by); break;
    case ncclUint32: divide<std::uint32_t>(data, count, by); break;
    case ncclInt64: divide<std::int64_t>(data, count, by); break;
    case ncclUint64: divide<std::uint64_t>(data, count, by); break;
    case ncclFloat64: divide<double>(data, count, by); break;
    default: divide<float>(data, count, by); break;  // float32 and widened halves
  }
}

// The shape of an operation: how many elements it reads and writes on this rank, and whether it
// touches its send and receive buffers at all (a non-root broadcast reads nothing, a non-root
// reduce writes nothing).
std::size_t input_count(const ncclComm& c, const OpArgs& a) {
  if (a.kind == Kind::ReduceScatter) return a.count * static_cast<std::size_t>(c.nranks);
  return a.kind == Kind::Recv ? 0 : a.count;
}
std::size_t output_count(const ncclComm& c, const OpArgs& a) {
  if (a.kind == Kind::AllGather) return a.count * static_cast<std::size_t>(c.nranks);
  return a.kind == Kind::Send ? 0 : a.count;
}
bool reads_send(const ncclComm& c, const OpArgs& a) {
  if (a.kind == Kind::Recv) return false;
  return a.kind != Kind::Broadcast || c.rank == a.root;
}
bool writes_recv(const ncclComm& c, const OpArgs& a) {
  if (a.kind == Kind::Send) return false;
  return a.kind != Kind::Reduce || c.rank == a.root;
}

std::vector<Access> accesses_of(const ncclComm& c, const OpArgs& a) {
  std::vector<Access> list;
  const std::size_t size = element_size(a.type);
  if (reads_send(c, a)) list.push_back({static_cast<const std::byte*>(a.send), input_count(c, a) * size, false});
  if (writes_recv(c, a)) list.push_back({static_cast<const std::byte*>(a.recv), output_count(c, a) * size, true});
  return list;
}

/// One operation with its host staging buffers and MPI request.
class Operation {
 public:
  Operation(ncclComm* comm, const OpArgs& args) : comm_(comm), a_(args), sequence_(comm->queued++) {
    widened_ = reduces(a_.kind) && is_half(a_.type);
    flipped_ = reduces(a_.kind) && flips_sign(a_.type, a_.op);
    stage_size_ = widened_ ? sizeof(float) : element_size(a_.type);
  }
  ncclComm* comm() const { return comm_; }
  bool started() const { return started_; }

  /// Posts the MPI request if it is this operation's turn on the communicator.
  bool try_start() {
    if (comm_->started != sequence_) return false;
    in_.resize(input_count() * stage_size_);
    out_.resize(output_count() * stage_size_);
    if (reads_send()) load(a_.send, in_.data(), input_count());
    if (flipped_) flip_top_bits(in_.data(), input_count(), stage_size_);
    post();
    started_ = true;
    ++comm_->started;
    return true;
  }
  bool test() {
    int done = 0;
    MPI_Test(&request_, &done, MPI_STATUS_IGNORE);
    return done != 0;
  }
  void finish() {
    if (!writes_recv()) return;
    if (a_.op == ncclAvg && reduces(a_.kind)) divide_all(a_.type, out_.data(), output_count(), comm_->nranks);
    if (flipped_) flip_top_bits(out_.data(), output_count(), stage_size_);
    store(out_.data(), a_.recv, output_count());
  }
  /// Abort: a posted request cannot be cancelled, so it and its buffers are leaked on purpose.
  void abandon() {
    if (!started_) return;
    comm_->abandoned_requests = true;
    static std::vector<std::vector<std::byte>> graveyard;
    graveyard.push_back(std::move(in_));
    graveyard.push_back(std::move(out_));
  }
  std::vector<Access> accesses() const { return accesses_of(*comm_, a_); }
  std::string describe() const {
    return std::string(a_.call) + "(count " + std::to_string(a_.count) + ") on comm rank " + std::to_string(comm_->rank);
  }

 private:
  std::size_t input_count() const { return mpidist_emu::input_count(*comm_, a_); }
  std::size_t output_count() const { return mpidist_emu::output_count(*comm_, a_); }
  bool reads_send() const { return mpidist_emu::reads_send(*comm_, a_); }
  bool writes_recv() const { return mpidist_emu::writes_recv(*comm_, a_); }

  void load(const void* device, std::byte* host, std::size_t count) {
    DeviceAccess open(device);
    if (!widened_) {
      std::memcpy(host, device, count * stage_size_);
      return;
    }
    const auto* bits = static_cast<const std::uint16_t*>(device);
    auto* values = reinterpret_cast<float*>(host);
    for (std::size_t i = 0; i < count; ++i)
      values[i] = a_.type == ncclFloat16 ? half_to_float(bits[i]) : bfloat16_to_float(bits[i]);
  }
  void store(const std::byte* host, void* device, std::size_t count) {
    DeviceAccess open(device);
    if (!widened_) {
      std::memcpy(device, host, count * stage_size_);
      return;
    }
    auto* bits = static_cast<std::uint16_t*>(device);
    const auto* values = reinterpret_cast<const float*>(host);
    for (std::size_t i = 0; i < count; ++i)
      bits[i] = a_.type == ncclFloat16 ? float_to_half(values[i]) : float_to_bfloat16(values[i]);
  }
  void post() {
    const MPI_Datatype t = flipped_ ? signed_twin(a_.type) : mpi_type(a_.type, widened_);
    const int n = static_cast<int>(a_.count);
    MPI_Comm c = comm_->mpi;
    constexpr int kTag = 0x4e43;
    switch (a_.kind) {
      case Kind::AllReduce: MPI_Iallreduce(in_.data(), out_.data(), n, t, mpi_op(a_.op), c, &request_); break;
      case Kind::Reduce: MPI_Ireduce(in_.data(), out_.data(), n, t, mpi_op(a_.op), a_.root, c, &request_); break;
      case Kind::ReduceScatter:
        MPI_Ireduce_scatter_block(in_.data(), out_.data(), n, t, mpi_op(a_.op), c, &request_);
        break;
      case Kind::AllGather: MPI_Iallgather(in_.data(), n, t, out_.data(), n, t, c, &request_); break;
      case Kind::Broadcast:
        if (comm_->rank == a_.root) out_ = in_;
        MPI_Ibcast(out_.data(), n, t, a_.root, c, &request_);
        break;
      case Kind::Send: MPI_Isend(in_.data(), n, t, a_.root, kTag, c, &request_); break;
      case Kind::Recv: MPI_Irecv(out_.data(), n, t, a_.root, kTag, c, &request_); break;
    }
  }

  ncclComm* comm_;
  OpArgs a_;
  std::uint64_t sequence_;
  bool widened_ = false;
  bool flipped_ = false;  // unsigned min/max staged as signed (flips_sign)
  std::size_t stage_size_ = 0;
  bool started_ = false;
  std::vector<std::byte> in_, out_;
  MPI_Request request_ = MPI_REQUEST_NULL;
};

class NcclWork;

// Rule 6: per device, the launches not finished yet, by launch number, with their stream.
struct LaunchOrder {
  std::uint64_t next = 0;
  std::map<std::uint64_t, std::weak_ptr<Stream>> pending;
};
std::map<int, LaunchOrder>& launch_orders() {
  static auto* all = new std::map<int, LaunchOrder>;  // never destroyed: see streams.cpp
  return *all;
}

/// The operations of one call, or of one stream within a group: they run concurrently.
class NcclWork : public Work {
 public:
  void add(std::unique_ptr<Operation> op) {
    for (const Access& a : op->accesses()) accesses.push_back(a);
    ops_.push_back(std::move(op));
  }
  /// Takes its place in the device's launch order (rule 6).
  void launch(int device, std::uint64_t number, const std::shared_ptr<Stream>& stream) {
    device_ = device;
    launch_ = number;
    launch_orders()[device].pending[number] = stream;
  }
  Step step() override {
    if (stepping_) return Step::Pending;  // re-entered while driving an earlier launch
    stepping_ = true;
    const Step result = advance();
    stepping_ = false;
    if (result == Step::Done) leave_order();
    return result;
  }
  std::string describe() const override {
    std::string text = ops_.size() > 1 ? "group of " : "";
    for (std::size_t i = 0; i < ops_.size(); ++i) text += (i > 0 ? ", " : "") + ops_[i]->describe();
    if (!held_back_by_.empty())
      text += " [held back: device " + std::to_string(device_) + " runs NCCL launches one at a time in launch order, and " +
              held_back_by_ + ", launched before it, has not finished; ranks that issue two communicators' work in "
              "different orders deadlock like this on a GPU]";
    return text;
  }
  bool involves(const ncclComm* comm) const {
    for (const auto& op : ops_) {
      if (op->comm() == comm) return true;
    }
    return false;
  }
  /// The first communicator of an operation that is not on `device`, or nullptr.
  const ncclComm* off_device(int device) const {
    for (const auto& op : ops_) {
      if (op->comm()->device != device) return op->comm();
    }
    return nullptr;
  }
  std::vector<ncclComm*> comms() const {
    std::vector<ncclComm*> list;
    for (const auto& op : ops_) {
      if (std::find(list.begin(), list.end(), op->comm()) == list.end()) list.push_back(op->comm());
    }
    return list;
  }
  void abandon() {
    for (auto& op : ops_) op->abandon();
    cancelled = true;
    leave_order();
  }

 private:
  Step advance() {
    if (!ops_.front()->started() && earlier_launch_pending()) return Step::Pending;
    for (auto& op : ops_) {
      if (!op->started() && !op->try_start()) return Step::Pending;
    }
    for (auto& op : ops_) {
      if (!op->test()) return Step::Pending;
    }
    for (auto& op : ops_) op->finish();
    return Step::Done;
  }
  // Drives the streams of earlier launches of the device (nothing else would: the caller waits on
  // this stream) and says whether one of them is still unfinished.
  bool earlier_launch_pending() {
    auto& order = launch_orders()[device_];
    for (auto it = order.pending.begin(); it != order.pending.end() && it->first < launch_;) {
      const std::shared_ptr<Stream> stream = it->second.lock();
      if (!stream) {
        it = order.pending.erase(it);
        continue;
      }
      const std::uint64_t number = it->first;
      progress(*stream);
      if (order.pending.count(number) != 0) {
        held_back_by_ = "launch " + std::to_string(number) + " on " + stream->name();
        for (const auto& w : stream->queue) {
          const auto* nccl = dynamic_cast<const NcclWork*>(w.get());
          if (nccl != nullptr && nccl->launch_ == number) held_back_by_ = nccl->describe_ops() + " on " + stream->name();
        }
        return true;
      }
      it = order.pending.upper_bound(number);
    }
    held_back_by_.clear();
    return false;
  }
  std::string describe_ops() const {
    std::string text;
    for (std::size_t i = 0; i < ops_.size(); ++i) text += (i > 0 ? ", " : "") + ops_[i]->describe();
    return text;
  }
  void leave_order() {
    if (launch_ != 0) launch_orders()[device_].pending.erase(launch_);
    launch_ = 0;
  }

  std::vector<std::unique_ptr<Operation>> ops_;
  int device_ = 0;
  std::uint64_t launch_ = 0;
  bool stepping_ = false;
  std::string held_back_by_;
};

// Queues the units of one launch (a call, or a group) on their streams, with one launch number
// per device. A stream of another device than the communicator's fails here, at launch, as a
// kernel launch on it fails on a GPU; returns that failure or ncclSuccess.
using Unit = std::pair<std::shared_ptr<Stream>, std::unique_ptr<NcclWork>>;

std::string launch_failure(const std::vector<Unit>& units) {
  for (const auto& [stream, work] : units) {
    if (!work) continue;
    if (const ncclComm* c = work->off_device(stream->device))
      return "Cuda failure 'invalid resource handle' at launch: " + stream->name() + " is not a stream of device " +
             std::to_string(c->device) + ", the communicator's";
  }
  return "";
}

void launch_units(std::vector<Unit>& units) {
  std::map<int, std::uint64_t> numbers;
  for (auto& [stream, work] : units) {
    if (!work) continue;  // moved-from: another member of the group was polled first
    std::uint64_t& number = numbers[stream->device];
    if (number == 0) number = ++launch_orders()[stream->device].next;
    work->launch(stream->device, number, stream);
    enqueue(stream, std::move(work));
  }
}

// A launch failure marks every communicator of the launch failed, as NCCL does.
ncclResult_t fail_launch(const std::vector<ncclComm*>& comms, const std::string& message) {
  const ncclResult_t r = nccl_fail(ncclUnhandledCudaError, message);
  for (ncclComm* c : comms) {
    c->async = ncclUnhandledCudaError;
    c->failure = message;
  }
  return r;
}

}  // namespace

/// Work that a non-blocking call handed to NCCL's (emulated) launch thread: it reaches its
/// streams at the first ncclCommGetAsyncError on one of `comms` (complete_launch).
struct HeldLaunch {
  std::vector<Unit> units;
};

namespace {

// Group state is per thread, as in NCCL.
thread_local int t_group_depth = 0;
// NCCL 2.28's ncclCommDestroy on a failed communicator returns from inside its own group without
// closing it: the thread's later NCCL calls join that group and are swallowed, an ncclCommAbort
// included, until an ncclGroupEnd closes it (which then runs the aborts).
thread_local bool t_group_left_open = false;
thread_local std::vector<ncclComm*> t_deferred_aborts;
int g_swallowed = 0;

void report_swallowed() {
  if (g_swallowed > 0)
    diagnose("at exit, " + std::to_string(g_swallowed) + " NCCL call(s) were swallowed by the group that ncclCommDestroy "
             "of a failed communicator left open (NCCL 2.28): they returned success and never ran. Abort a "
             "communicator with an asynchronous error; do not destroy it");
}
[[maybe_unused]] const int g_swallowed_registered = std::atexit(report_swallowed);

void swallowed(const char* call) {
  ++g_swallowed;
  diagnose(std::string(call) + ": swallowed by the group ncclCommDestroy left open; returns success, runs nothing");
}
struct Deferred {
  std::shared_ptr<Stream> stream;
  std::unique_ptr<Operation> op;
};
thread_local std::vector<Deferred> t_deferred;

std::string validate(ncclComm* comm, const OpArgs& a) {
  const std::size_t size = element_size(a.type);
  if (size == 0) return "data type " + std::to_string(a.type) + " is invalid or not emulated (fp8)";
  if (reduces(a.kind) && (a.op < ncclSum || a.op >= ncclNumOps))
    return "reduction op " + std::to_string(a.op) + " is invalid or not emulated (custom ops)";
  if ((a.kind == Kind::Broadcast || a.kind == Kind::Reduce) && (a.root < 0 || a.root >= comm->nranks))
    return "root " + std::to_string(a.root) + " out of range for " + std::to_string(comm->nranks) + " ranks";
  if ((a.kind == Kind::Send || a.kind == Kind::Recv) && (a.root < 0 || a.root >= comm->nranks))
    return "peer " + std::to_string(a.root) + " out of range for " + std::to_string(comm->nranks) + " ranks";
  if (a.count > static_cast<std::size_t>(INT_MAX)) return "count " + std::to_string(a.count) + " above INT_MAX is not emulated";
  if (a.count == 0) return "";
  for (const Access& access : accesses_of(*comm, a)) {
    int device = -1;
    std::string why;
    const char* which = access.write ? "recvbuff" : "sendbuff";
    if (!is_device_range(access.begin, access.bytes, &device, &why))
      return std::string(which) + " " + hex(access.begin) + " (" + std::to_string(access.bytes) + " bytes) is " + why;
    const Allocation* owner = find_allocation(access.begin);
    // Managed memory migrates to whichever device touches it; only cudaMalloc memory is fixed.
    if (device != comm->device && owner->kind != MemoryKind::Managed)
      return std::string(which) + " " + hex(access.begin) + " is memory of device " + std::to_string(device) +
             " but the communicator uses device " + std::to_string(comm->device);
  }
  return "";
}

// MPIDIST_EMU_NCCL_FAIL_ENQUEUE=R[:N]: world rank R's Nth operation fails as a kernel launch can
// (out of memory for its arguments, a sticky CUDA error).
bool injected_enqueue_failure() {
  static int calls = 0;
  if (config().fail_enqueue_rank < 0) return false;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank == config().fail_enqueue_rank && ++calls == config().fail_enqueue_nth;
}

}  // namespace

ncclResult_t submit(ncclComm_t comm, const OpArgs& args, cudaStream_t handle) {
  if (t_group_left_open && t_group_depth > 0) {
    swallowed(args.call);
    return ncclSuccess;
  }
  if (const ncclResult_t r = check_comm(comm, args.call); r != ncclSuccess) return r;
  Lock hold(big_lock());
  // A failed enqueue marks a non-blocking communicator failed for good, as NCCL does: its
  // ncclCommGetAsyncError reports the error and every later call returns it.
  const auto refuse = [&](ncclResult_t result, const std::string& problem) {
    const std::string message = std::string(args.call) + ": " + problem;
    if (!comm->blocking) {
      comm->async = result;
      comm->failure = message;
    }
    return nccl_fail(result, message);
  };
  if (const std::string problem = validate(comm, args); !problem.empty()) return refuse(ncclInvalidArgument, problem);
  std::shared_ptr<Stream> stream;
  if (resolve_stream(handle, &stream, comm->device) != cudaSuccess)
    return refuse(ncclInvalidArgument, "unknown or destroyed stream " + hex(handle));
  if (injected_enqueue_failure())
    return refuse(ncclUnhandledCudaError, "Cuda failure 'out of memory' while enqueuing (MPIDIST_EMU_NCCL_FAIL_ENQUEUE)");
  if (args.count == 0) return ncclSuccess;  // as in NCCL: validated, then nothing to do
  auto op = std::make_unique<Operation>(comm, args);
  if (t_group_depth > 0) {
    t_deferred.push_back({stream, std::move(op)});
    return ncclSuccess;
  }
  std::vector<Unit> units;
  units.emplace_back(stream, std::make_unique<NcclWork>());
  units.back().second->add(std::move(op));
  if (!comm->blocking) {
    comm->launch = std::make_shared<HeldLaunch>();
    comm->launch->units = std::move(units);
    comm->async = ncclInProgress;
    return ncclInProgress;
  }
  // A blocking call launches before it returns: a launch failure is its result.
  if (const std::string failure = launch_failure(units); !failure.empty())
    return fail_launch({comm}, std::string(args.call) + ": " + failure);
  launch_units(units);
  return ncclSuccess;
}

void complete_launch(ncclComm* comm) {
  const std::shared_ptr<HeldLaunch> launch = std::move(comm->launch);
  if (const std::string failure = launch_failure(launch->units); !failure.empty()) {
    std::vector<ncclComm*> comms;
    for (const auto& unit : launch->units) {
      if (unit.second)
        for (ncclComm* c : unit.second->comms()) comms.push_back(c);
    }
    if (comms.empty()) comms.push_back(comm);
    launch->units.clear();
    fail_launch(comms, "NCCL launch: " + failure);
    for (ncclComm* c : comms) c->launch.reset();
    return;
  }
  launch_units(launch->units);
  comm->async = ncclSuccess;
}

void leave_group_open() {
  ++t_group_depth;
  t_group_left_open = true;
}

bool swallow_abort(ncclComm* comm) {
  if (!t_group_left_open || t_group_depth == 0) return false;
  t_deferred_aborts.push_back(comm);
  swallowed("ncclCommAbort");
  return true;
}

namespace {
void run_deferred_aborts() {
  t_group_left_open = false;
  std::vector<ncclComm*> aborts = std::move(t_deferred_aborts);
  t_deferred_aborts.clear();
  for (ncclComm* c : aborts) ncclCommAbort(c);
}
}  // namespace

void cancel_operations(ncclComm* comm) {
  for (const auto& stream : all_streams()) {
    for (const auto& work : stream->queue) {
      auto* nccl = dynamic_cast<NcclWork*>(work.get());
      if (nccl != nullptr && !nccl->cancelled && nccl->involves(comm)) nccl->abandon();
    }
  }
  std::erase_if(t_deferred, [&](const Deferred& d) { return d.op->comm() == comm; });
  if (comm->launch) {
    // Never started: nothing to abandon, only to drop.
    for (auto& unit : comm->launch->units) {
      if (unit.second && unit.second->involves(comm)) unit.second.reset();
    }
    comm->launch.reset();
  }
}

void flush_operations(ncclComm* comm) {
  std::vector<std::pair<std::shared_ptr<Stream>, std::uint64_t>> targets;
  {
    Lock hold(big_lock());
    for (const auto& stream : all_streams()) {
      std::uint64_t ticket = stream->completed;
      for (const auto& work : stream->queue) {
        ++ticket;
        auto* nccl = dynamic_cast<NcclWork*>(work.get());
        if (nccl != nullptr && !nccl->cancelled && nccl->involves(comm)) targets.emplace_back(stream, ticket);
      }
    }
  }
  for (const auto& [stream, ticket] : targets) wait(stream, ticket, "ncclCommFinalize/ncclCommDestroy");
}

bool operations_pending(ncclComm* comm) {
  for (const auto& stream : all_streams()) {
    for (const auto& work : stream->queue) {
      auto* nccl = dynamic_cast<NcclWork*>(work.get());
      if (nccl != nullptr && !nccl->cancelled && nccl->involves(comm)) {
        progress(*stream);
        return true;  // looked again at the next poll
      }
    }
  }
  return false;
}

}  // namespace mpidist_emu

using namespace mpidist_emu;

extern "C" {

ncclResult_t ncclGroupStart() {
  ++t_group_depth;
  return ncclSuccess;
}

ncclResult_t ncclGroupEnd() {
  if (t_group_depth == 0) return nccl_fail(ncclInvalidUsage, "ncclGroupEnd: no matching ncclGroupStart");
  if (--t_group_depth > 0) return ncclSuccess;
  if (t_group_left_open) run_deferred_aborts();
  Lock hold(big_lock());
  // As in NCCL, one group cannot mix blocking and non-blocking communicators.
  std::vector<ncclComm*> nonblocking;
  bool blocking = false;
  for (const Deferred& d : t_deferred) {
    ncclComm* c = d.op->comm();
    if (c->blocking) blocking = true;
    else if (std::find(nonblocking.begin(), nonblocking.end(), c) == nonblocking.end()) nonblocking.push_back(c);
  }
  if (blocking && !nonblocking.empty()) {
    t_deferred.clear();
    return nccl_fail(ncclInvalidArgument, "ncclGroupEnd: Blocking and nonblocking communicators are not allowed in the same group");
  }
  // One unit of work per stream, keeping the order the operations were issued in.
  std::vector<Unit> units;
  for (Deferred& d : t_deferred) {
    auto it = std::find_if(units.begin(), units.end(), [&](const auto& u) { return u.first == d.stream; });
    if (it == units.end()) {
      units.emplace_back(d.stream, std::make_unique<NcclWork>());
      it = units.end() - 1;
    }
    it->second->add(std::move(d.op));
  }
  t_deferred.clear();
  if (!nonblocking.empty()) {
    auto launch = std::make_shared<HeldLaunch>();
    launch->units = std::move(units);
    for (ncclComm* c : nonblocking) {
      c->launch = launch;
      c->async = ncclInProgress;
    }
    return ncclInProgress;
  }
  if (const std::string failure = launch_failure(units); !failure.empty()) {
    std::vector<ncclComm*> comms;
    for (const auto& unit : units)
      for (ncclComm* c : unit.second->comms()) comms.push_back(c);
    return fail_launch(comms, "ncclGroupEnd: " + failure);
  }
  launch_units(units);
  return ncclSuccess;
}

ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream) {
  return submit(comm, {Kind::AllReduce, "ncclAllReduce", sendbuff, recvbuff, count, datatype, op, 0}, stream);
}

ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                           ncclComm_t comm, cudaStream_t stream) {
  return submit(comm, {Kind::Broadcast, "ncclBroadcast", sendbuff, recvbuff, count, datatype, ncclSum, root}, stream);
}

ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  return submit(comm, {Kind::Broadcast, "ncclBcast", buff, buff, count, datatype, ncclSum, root}, stream);
}

ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                        int root, ncclComm_t comm, cudaStream_t stream) {
  return submit(comm, {Kind::Reduce, "ncclReduce", sendbuff, recvbuff, count, datatype, op, root}, stream);
}

ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
                           ncclComm_t comm, cudaStream_t stream) {
  return submit(comm, {Kind::AllGather, "ncclAllGather", sendbuff, recvbuff, sendcount, datatype, ncclSum, 0}, stream);
}

ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype,
                               ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return submit(comm, {Kind::ReduceScatter, "ncclReduceScatter", sendbuff, recvbuff, recvcount, datatype, op, 0}, stream);
}

ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                      cudaStream_t stream) {
  return submit(comm, {Kind::Send, "ncclSend", sendbuff, nullptr, count, datatype, ncclSum, peer}, stream);
}

ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                      cudaStream_t stream) {
  return submit(comm, {Kind::Recv, "ncclRecv", nullptr, recvbuff, count, datatype, ncclSum, peer}, stream);
}

}  // extern "C"
