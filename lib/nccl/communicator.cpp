// Creating a group's NCCL communicator over MPI at its first device collective, with a check that
// no two ranks of the group drive the same GPU, and tearing it down as NCCL 2.28 requires.
#include "nccl/communicator.hpp"

#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/context.hpp"
#include "core/device_backend.hpp"
#include "core/device_info.hpp"
#include "core/mpi_check.hpp"
#include "core/outcome.hpp"
#include "cuda/runtime.hpp"
#include "watch/timeout.hpp"
#include "mpidist/device.hpp"
#include "mpidist/error.hpp"

namespace mpidist::detail::nccl {
namespace {

// What each rank tells the others about its GPU before NCCL is started.
struct GpuRecord {
  int device = -1;
  std::array<unsigned char, 16> uuid{};
  std::array<char, MPI_MAX_PROCESSOR_NAME + 1> host{};
};

std::string hex(const std::array<unsigned char, 16>& uuid) {
  std::string text = "GPU-";
  char digits[3];
  for (std::size_t i = 0; i < uuid.size(); ++i) {
    std::snprintf(digits, sizeof digits, "%02x", uuid[i]);
    text += digits;
    if (i == 3 || i == 5 || i == 7 || i == 9) text += '-';
  }
  return text;
}

GpuRecord describe_my_gpu(const char* operation) {
  const Device mine = device();  // cudaSetDevice(local_rank % count)
  if (!mine.is_cuda) throw Error(operation, "device memory given but no CUDA device is visible to this rank");
  GpuRecord record;
  record.device = mine.index;
  cudaDeviceProp properties{};
  MPIDIST_CUDA_CHECK(cudaGetDeviceProperties(&properties, mine.index));
  std::memcpy(record.uuid.data(), properties.uuid.bytes, record.uuid.size());
  int length = 0;
  MPIDIST_MPI_CHECK(MPI_Get_processor_name(record.host.data(), &length));
  return record;
}

// NCCL needs one GPU per rank of a communicator: two ranks on one GPU hang in init or fail with
// "Duplicate GPU detected". Every rank sees every record, so every rank throws the same Error.
void check_distinct_gpus(const char* operation, const std::vector<GpuRecord>& all) {
  for (std::size_t a = 0; a < all.size(); ++a)
    for (std::size_t b = a + 1; b < all.size(); ++b)
      if (all[a].uuid == all[b].uuid && std::strcmp(all[a].host.data(), all[b].host.data()) == 0)
        throw Error(operation, "ranks " + std::to_string(a) + " and " + std::to_string(b) + " both use " +
                                   hex(all[a].uuid) + " (cuda:" + std::to_string(all[a].device) + ") on host " +
                                   all[a].host.data() + "; NCCL needs one GPU per rank: give each rank its own "
                                   "device (CUDA_VISIBLE_DEVICES) or start fewer ranks per node");
}

// The stream the group's collectives run on without a caller's stream: non-blocking, so it never
// waits for (or is waited on by) the legacy default stream.
cudaStream_t make_stream(int device) {
  cudaStream_t stream = nullptr;
  MPIDIST_CUDA_CHECK(cudaSetDevice(device));
  MPIDIST_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  return stream;
}

// The finalize at teardown gets the group's timeout; without one, a bound all the same: a
// collective stuck on a dead peer must not hang finalize() inside a destructor.
std::shared_ptr<void> own(ncclComm_t comm, int device, cudaStream_t stream, const Deadline& deadline) {
  constexpr double unbounded_fallback_seconds = 60;
  const double seconds = deadline.seconds() > 0 ? deadline.seconds() : unbounded_fallback_seconds;
  return std::make_shared<Communicator>(comm, device, stream, seconds);
}

// The bootstrap's MPI steps are bounded by the same deadline as NCCL's own initialization: a
// rank that never starts the communicator leaves the others with an Error, not blocked in MPI.
constexpr const char* kStarting = "every rank to start the NCCL communicator";

// The buffers of those steps. After a timeout their requests stay posted (MPI cannot cancel a
// collective) and a late rank may still complete them, so a failed bootstrap keeps them until
// finalize() (which, after a timeout, ends the job instead of finalizing MPI).
struct Exchange {
  int first_failed = 0;
  GpuRecord mine;
  std::vector<GpuRecord> all;
  ncclUniqueId id{};
};

void agree_in_time(Group& group, const char* operation, const Deadline& deadline, std::exception_ptr local,
                   int& first_failed) {
  first_failed = local ? group.topology.rank : group.topology.size;
  MPI_Request request = MPI_REQUEST_NULL;
  MPIDIST_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, &first_failed, 1, MPI_INT, MPI_MIN, group.control, &request));
  wait_or_time_out(operation, deadline, request, kStarting);
  // Everyone is here now, so the failing rank's message can travel by a plain agreement; every
  // rank raises it alike, so the ranks stay in step (call_scope.hpp).
  if (first_failed == group.topology.size) return;
  group.failed_in_step = true;
  agree_on_outcome(group.control, operation, local);
}

// 4. Every rank joins, non-blocking: ncclCommInitRankConfig returns at once and the wait is ours,
// so a rank whose NCCL never joins (a peer that stopped, a bootstrap that cannot connect) ends in
// an Error at the deadline. ncclCommAbort is the only call NCCL allows on a communicator whose
// initialization has not finished; it also releases the peers' half-made communicators.
ncclComm_t join(Group& group, const char* operation, const Deadline& deadline, const ncclUniqueId& id) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comm = nullptr;
  const ncclResult_t started = ncclCommInitRankConfig(&comm, group.topology.size, id, group.topology.rank, &config);
  if (started != ncclSuccess && started != ncclInProgress) {
    if (comm != nullptr) ncclCommAbort(comm);
    throw_nccl_error("ncclCommInitRankConfig", started, nullptr, __FILE__, __LINE__);
  }
  const ncclResult_t state = settle(comm, deadline);
  if (state == ncclSuccess) return comm;
  const std::string detail = describe(state, comm);  // before the abort frees what it refers to
  ncclCommAbort(comm);
  if (state == ncclInProgress)
    deadline.time_out(operation, "every rank to join NCCL's initialization (ncclCommInitRankConfig)",
                      "the NCCL communicator was aborted");
  throw Error(group.name, operation, "NCCL's initialization (ncclCommInitRankConfig) failed: " + detail);
}

std::shared_ptr<void> create(Group& group, const char* operation) {
  const auto& t = group.topology;
  const Deadline deadline(operation, &group);
  auto x = std::make_unique<Exchange>();
  cudaStream_t stream = nullptr;
  try {
    // 1. Every rank picks its GPU and stream; a failure anywhere becomes an Error everywhere.
    agree_in_time(group, operation, deadline, capture([&] {
                    x->mine = describe_my_gpu(operation);
                    stream = make_stream(x->mine.device);
                  }), x->first_failed);
    // 2. No two ranks of the group may share a GPU.
    x->all.resize(static_cast<std::size_t>(t.size));
    MPI_Request request = MPI_REQUEST_NULL;
    MPIDIST_MPI_CHECK(MPI_Iallgather(&x->mine, sizeof(GpuRecord), MPI_BYTE, x->all.data(), sizeof(GpuRecord),
                                     MPI_BYTE, group.control, &request));
    wait_or_time_out(operation, deadline, request, kStarting);
    group.failed_in_step = true;  // every rank holds every record: a clash is an Error on all alike
    check_distinct_gpus(operation, x->all);
    group.failed_in_step = false;
    // 3. The group's rank 0 makes the id; MPI carries it (NCCL's bootstrap is ours to provide).
    agree_in_time(group, operation, deadline, capture([&] {
                    if (t.rank == 0) MPIDIST_NCCL_CHECK(ncclGetUniqueId(&x->id), nullptr);
                  }), x->first_failed);
    MPIDIST_MPI_CHECK(MPI_Ibcast(&x->id, sizeof x->id, MPI_BYTE, 0, group.control, &request));
    wait_or_time_out(operation, deadline, request, kStarting);
    return own(join(group, operation, deadline, x->id), x->mine.device, stream, deadline);
  } catch (...) {
    if (stream != nullptr) cudaStreamDestroy(stream);
    at_finalize([kept = std::shared_ptr<Exchange>(std::move(x))] {});  // see Exchange
    throw;
  }
}

}  // namespace

void throw_nccl_error(const char* call, ncclResult_t code, ncclComm_t comm, const char* file, int line) {
  std::string name(call);
  name = name.substr(0, name.find('('));
  throw Error(name, describe(code, comm) + " at " + file + ":" + std::to_string(line));
}

std::string describe(ncclResult_t code, ncclComm_t comm) {
  std::string text = std::string(ncclGetErrorString(code)) + " (NCCL error " + std::to_string(static_cast<int>(code)) + ")";
  const char* last = ncclGetLastError(comm);
  if (last != nullptr && *last != '\0') text += ": " + std::string(last);
  return text;
}

ncclResult_t settle(ncclComm_t comm, const Deadline& deadline) {
  for (unsigned polls = 0;; ++polls) {
    ncclResult_t state = ncclInProgress;
    if (const ncclResult_t rc = ncclCommGetAsyncError(comm, &state); rc != ncclSuccess) return rc;
    if (state != ncclInProgress) return state;
    if (deadline.passed()) return ncclInProgress;
    // NCCL's own threads do the work: after a few quick polls, leave them (and ranks sharing
    // the cores) the CPU.
    if (polls < 64) std::this_thread::yield();
    else std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

void abort_and_throw(Group& group, Communicator& comm, const char* operation, ncclResult_t code,
                     const Deadline& deadline, const char* waiting_for) {
  if (code == ncclInProgress) {
    comm.abort(operation);
    deadline.time_out(operation, waiting_for, "the NCCL communicator was aborted");
  }
  const std::string detail = "NCCL failed: " + describe(code, comm.get()) + "; the NCCL communicator was aborted";
  comm.abort(operation);
  break_group(group, std::string(operation) + " " + detail);
  throw Error(group.name, operation, detail + ". The communicator can no longer be used");
}

void teardown(ncclComm_t comm, double seconds) noexcept {
  ncclResult_t async = ncclSuccess;
  if (ncclCommGetAsyncError(comm, &async) != ncclSuccess || (async != ncclSuccess && async != ncclInProgress)) {
    ncclCommAbort(comm);
    return;
  }
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                          std::chrono::duration<double>(seconds));
  // Polls ncclCommGetAsyncError until it leaves ncclInProgress; false on an error or past `end`.
  const auto settled = [&] {
    for (unsigned polls = 0;; ++polls) {
      if (ncclCommGetAsyncError(comm, &async) != ncclSuccess) return false;
      if (async != ncclInProgress) return async == ncclSuccess;
      if (std::chrono::steady_clock::now() >= end) return false;
      if (polls < 64) std::this_thread::yield();
      else std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  };
  // A launch still in progress first (NCCL refuses finalize until it settles), then the finalize,
  // which on a non-blocking communicator returns at once and completes in NCCL's thread.
  if (!settled()) {
    ncclCommAbort(comm);
    return;
  }
  const ncclResult_t finalizing = ncclCommFinalize(comm);
  if ((finalizing != ncclSuccess && finalizing != ncclInProgress) || !settled()) {
    ncclCommAbort(comm);
    return;
  }
  // Finalized cleanly: destroy only frees. Should it fail anyway, nothing is left to try (an
  // abort after a failed destroy may be swallowed, see teardown's declaration).
  ncclCommDestroy(comm);
}

Communicator::~Communicator() {
  if (comm_ != nullptr) teardown(comm_, teardown_seconds_);
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

void Communicator::abort(const char* operation) noexcept {
  if (comm_ != nullptr) ncclCommAbort(comm_);
  comm_ = nullptr;
  aborted_by_ = operation;
}

Communicator& communicator(Group& group, const char* operation) {
  if (!group.nccl) group.nccl = create(group, operation);
  auto& comm = *static_cast<Communicator*>(group.nccl.get());
  if (!comm.aborted_by().empty())
    throw Error(operation, "the NCCL communicator of '" + group.name + "' was aborted when " + comm.aborted_by() +
                               " failed; device collectives cannot continue on it");
  return comm;
}

}  // namespace mpidist::detail::nccl

namespace mpidist::detail {

bool nccl_built() noexcept { return true; }

std::string nccl_version() {
  int code = 0;
  if (ncclGetVersion(&code) != ncclSuccess) return "unknown";
  // Since 2.9 the code is major*10000 + minor*100 + patch.
  return std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100) + "." + std::to_string(code % 100);
}

void start_nccl(Group& group, const char* operation) { nccl::communicator(group, operation); }

}  // namespace mpidist::detail
