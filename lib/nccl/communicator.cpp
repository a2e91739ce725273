// Creating the NCCL communicator over MPI, with a check that no two ranks drive the same GPU.
#include "communicator.hpp"

#include <array>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "../context.hpp"
#include "../cuda/runtime.hpp"
#include "../mpi_check.hpp"
#include "mpidist/device.hpp"
#include "mpidist/error.hpp"
#include "mpidist/guards.hpp"

namespace mpidist::detail::nccl {
namespace {

std::unique_ptr<Communicator> g_comm;
std::string g_aborted_by;  // the operation whose failure aborted the communicator, if any

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

// NCCL needs one GPU per rank: two ranks on one GPU hang in init or fail with "Duplicate GPU
// detected". Every rank sees every record, so every rank throws the same Error.
void check_distinct_gpus(const char* operation, const std::vector<GpuRecord>& all) {
  for (std::size_t a = 0; a < all.size(); ++a)
    for (std::size_t b = a + 1; b < all.size(); ++b)
      if (all[a].uuid == all[b].uuid && std::strcmp(all[a].host.data(), all[b].host.data()) == 0)
        throw Error(operation, "ranks " + std::to_string(a) + " and " + std::to_string(b) + " both use " +
                                   hex(all[a].uuid) + " (cuda:" + std::to_string(all[a].device) + ") on host " +
                                   all[a].host.data() + "; NCCL needs one GPU per rank: give each rank its own "
                                   "device (CUDA_VISIBLE_DEVICES) or start fewer ranks per node");
}

std::unique_ptr<Communicator> create(const char* operation) {
  auto& ctx = context(operation);
  const auto& t = ctx.topology;
  // 1. Every rank picks its GPU; a failure anywhere becomes an Error everywhere.
  GpuRecord mine;
  agree_on_outcome(operation, capture([&] { mine = describe_my_gpu(operation); }));
  // The library stream is made before the communicator so that finalize destroys it after.
  cuda::library_stream(operation, mine.device);
  // 2. No two ranks may share a GPU.
  std::vector<GpuRecord> all(static_cast<std::size_t>(t.world_size));
  MPIDIST_MPI_CHECK(MPI_Allgather(&mine, sizeof(GpuRecord), MPI_BYTE, all.data(), sizeof(GpuRecord), MPI_BYTE, ctx.world));
  check_distinct_gpus(operation, all);
  // 3. Rank 0 makes the id; MPI carries it to everyone (NCCL's bootstrap is ours to provide).
  ncclUniqueId id{};
  agree_on_outcome(operation, capture([&] {
    if (t.rank == 0) MPIDIST_NCCL_CHECK(ncclGetUniqueId(&id), nullptr);
  }));
  MPIDIST_MPI_CHECK(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, ctx.world));
  // 4. All ranks join; ncclCommInitRank returns once every rank has.
  ncclComm_t comm = nullptr;
  MPIDIST_NCCL_CHECK(ncclCommInitRank(&comm, t.world_size, id, t.rank), nullptr);
  return std::make_unique<Communicator>(comm, mine.device);
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
}

void Communicator::abort() noexcept {
  if (comm_ != nullptr) ncclCommAbort(comm_);
  comm_ = nullptr;
}

Communicator& communicator(const char* operation) {
  if (!g_aborted_by.empty())
    throw Error(operation, "the NCCL communicator was aborted when " + g_aborted_by +
                               " failed; device collectives cannot continue in this job");
  if (!g_comm) {
    g_comm = create(operation);
    at_finalize([] { g_comm.reset(); g_aborted_by.clear(); });
  }
  return *g_comm;
}

void abort_communicator(const char* operation) noexcept {
  if (g_comm) g_comm->abort();
  g_aborted_by = operation;
}

}  // namespace mpidist::detail::nccl
