// Creating a group's NCCL communicator over MPI (or splitting it from its parent's), with a check
// that no two ranks of the group drive the same GPU.
#include "communicator.hpp"

#include <array>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "../context.hpp"
#include "../cuda/runtime.hpp"
#include "../device_backend.hpp"
#include "../device_info.hpp"
#include "../mpi_check.hpp"
#include "../outcome.hpp"
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

std::shared_ptr<void> own(ncclComm_t comm, int device, cudaStream_t stream) {
  return std::make_shared<Communicator>(comm, device, stream);
}

std::shared_ptr<void> create(Group& group, const char* operation) {
  const auto& t = group.topology;
  // 1. Every rank picks its GPU and stream; a failure anywhere becomes an Error everywhere.
  GpuRecord mine;
  cudaStream_t stream = nullptr;
  agree_on_outcome(group.control, operation, capture([&] {
                     mine = describe_my_gpu(operation);
                     stream = make_stream(mine.device);
                   }));
  auto release_stream = [&] { if (stream != nullptr) cudaStreamDestroy(stream); };
  try {
    // 2. No two ranks of the group may share a GPU.
    std::vector<GpuRecord> all(static_cast<std::size_t>(t.size));
    MPIDIST_MPI_CHECK(MPI_Allgather(&mine, sizeof(GpuRecord), MPI_BYTE, all.data(), sizeof(GpuRecord), MPI_BYTE,
                                    group.control));
    check_distinct_gpus(operation, all);
    // 3. The group's rank 0 makes the id; MPI carries it (NCCL's bootstrap is ours to provide).
    ncclUniqueId id{};
    agree_on_outcome(group.control, operation, capture([&] {
                       if (t.rank == 0) MPIDIST_NCCL_CHECK(ncclGetUniqueId(&id), nullptr);
                     }));
    MPIDIST_MPI_CHECK(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, group.control));
    // 4. All ranks join; ncclCommInitRank returns once every rank has.
    ncclComm_t comm = nullptr;
    MPIDIST_NCCL_CHECK(ncclCommInitRank(&comm, t.size, id, t.rank), nullptr);
    return own(comm, mine.device, stream);
  } catch (...) {
    release_stream();
    throw;
  }
}

}  // namespace

void throw_nccl_error(const char* call, ncclResult_t code, ncclComm_t comm, const char* file, int line) {
  std::string name(call);
  name = name.substr(0, name.find('('));
  std::string detail = std::string(ncclGetErrorString(code)) + " (NCCL error " + std::to_string(static_cast<int>(code)) + ")";
  const char* last = ncclGetLastError(comm);
  if (last != nullptr && *last != '\0') detail += ": " + std::string(last);
  throw Error(name, detail + " at " + file + ":" + std::to_string(line));
}

Communicator::~Communicator() {
  if (comm_ != nullptr) ncclCommDestroy(comm_);
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

void split_device_communicator(Group& parent, Group* child, int color, int key) {
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 18, 0)
  // ncclCommSplit is collective over the parent: every parent rank must take the same branch.
  auto* comm = static_cast<nccl::Communicator*>(parent.nccl.get());
  int usable = comm != nullptr && comm->aborted_by().empty() ? 1 : 0;
  MPIDIST_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &usable, 1, MPI_INT, MPI_MIN, parent.control));
  if (usable == 0) return;
  cudaStream_t stream = child ? nccl::make_stream(comm->device()) : nullptr;
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  ncclComm_t piece = nullptr;
  const ncclResult_t rc =
      ncclCommSplit(comm->get(), child ? color : NCCL_SPLIT_NOCOLOR, key, &piece, &config);
  if (rc != ncclSuccess) {
    if (stream != nullptr) cudaStreamDestroy(stream);
    nccl::throw_nccl_error("ncclCommSplit", rc, comm->get(), __FILE__, __LINE__);
  }
  if (child != nullptr) child->nccl = nccl::own(piece, comm->device(), stream);
#else
  (void)parent, (void)child, (void)color, (void)key;  // the child bootstraps its own at first use
#endif
}

}  // namespace mpidist::detail
