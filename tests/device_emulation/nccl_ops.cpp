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
// On a non-blocking communicator step 2 is deferred once more: the call (or ncclGroupEnd)
// returns ncclInProgress and the work reaches its stream only when ncclCommGetAsyncError is
// polled, as NCCL's launch thread would put it there "later". A stream synchronized before that
// is empty, and its result stale, as on a GPU.
#include <algorithm>
#include <climits>
#include <cstring>
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

/// The operations of one call, or of one stream within a group: they run concurrently.
class NcclWork : public Work {
 public:
  void add(std::unique_ptr<Operation> op) {
    for (const Access& a : op->accesses()) accesses.push_back(a);
    ops_.push_back(std::move(op));
  }
  Step step() override {
    for (auto& op : ops_) {
      if (!op->started() && !op->try_start()) return Step::Pending;
    }
    for (auto& op : ops_) {
      if (!op->test()) return Step::Pending;
    }
    for (auto& op : ops_) op->finish();
    return Step::Done;
  }
  std::string describe() const override {
    std::string text = ops_.size() > 1 ? "group of " : "";
    for (std::size_t i = 0; i < ops_.size(); ++i) text += (i > 0 ? ", " : "") + ops_[i]->describe();
    return text;
  }
  bool involves(const ncclComm* comm) const {
    for (const auto& op : ops_) {
      if (op->comm() == comm) return true;
    }
    return false;
  }
  void abandon() {
    for (auto& op : ops_) op->abandon();
    cancelled = true;
  }

 private:
  std::vector<std::unique_ptr<Operation>> ops_;
};

}  // namespace

/// Work that a non-blocking call handed to NCCL's (emulated) launch thread: it reaches its
/// streams at the first ncclCommGetAsyncError on one of `comms` (complete_launch).
struct HeldLaunch {
  std::vector<std::pair<std::shared_ptr<Stream>, std::unique_ptr<NcclWork>>> units;
};

namespace {

// Group state is per thread, as in NCCL.
thread_local int t_group_depth = 0;
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
    if (device != comm->device)
      return std::string(which) + " " + hex(access.begin) + " is memory of device " + std::to_string(device) +
             " but the communicator uses device " + std::to_string(comm->device);
  }
  return "";
}

}  // namespace

ncclResult_t submit(ncclComm_t comm, const OpArgs& args, cudaStream_t handle) {
  if (const ncclResult_t r = check_comm(comm, args.call); r != ncclSuccess) return r;
  Lock hold(big_lock());
  if (const std::string problem = validate(comm, args); !problem.empty())
    return nccl_fail(ncclInvalidArgument, std::string(args.call) + ": " + problem);
  std::shared_ptr<Stream> stream;
  if (resolve_stream(handle, &stream, comm->device) != cudaSuccess)
    return nccl_fail(ncclInvalidArgument, std::string(args.call) + ": unknown or destroyed stream " + hex(handle));
  if (stream->device != comm->device)
    return nccl_fail(ncclInvalidArgument, std::string(args.call) + ": the stream belongs to device " +
                                              std::to_string(stream->device) + ", the communicator to device " +
                                              std::to_string(comm->device));
  if (args.count == 0) return ncclSuccess;  // as in NCCL: validated, then nothing to do
  auto op = std::make_unique<Operation>(comm, args);
  if (t_group_depth > 0) {
    t_deferred.push_back({stream, std::move(op)});
    return ncclSuccess;
  }
  auto work = std::make_unique<NcclWork>();
  work->add(std::move(op));
  if (!comm->blocking) {
    comm->launch = std::make_shared<HeldLaunch>();
    comm->launch->units.emplace_back(stream, std::move(work));
    comm->async = ncclInProgress;
    return ncclInProgress;
  }
  enqueue(stream, std::move(work));
  return ncclSuccess;
}

void complete_launch(ncclComm* comm) {
  const std::shared_ptr<HeldLaunch> launch = std::move(comm->launch);
  for (auto& [stream, work] : launch->units) {
    if (work) enqueue(stream, std::move(work));  // moved-from: another member of the group was polled first
  }
  comm->async = ncclSuccess;
}

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
  std::vector<std::pair<std::shared_ptr<Stream>, std::unique_ptr<NcclWork>>> units;
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
  for (auto& [stream, work] : units) enqueue(stream, std::move(work));
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
