// Device discovery, pointer attributes, streams and the public device() / gpu_mem_usage().
#include "cuda/runtime.hpp"
#include "core/device_info.hpp"

#include <cuda.h>

#include <cstdio>
#include <map>
#include <string>

#include "core/context.hpp"
#include "core/device_backend.hpp"
#include "core/host_memory.hpp"
#include "mpidist/device.hpp"
#include "mpidist/error.hpp"

namespace mpidist {
namespace detail {
namespace cuda {

void throw_cuda_error(const char* call, cudaError_t code, const char* file, int line) {
  cudaGetLastError();  // clear the sticky copy of a non-fatal error
  std::string name(call);
  name = name.substr(0, name.find('('));
  throw Error(name, std::string(cudaGetErrorString(code)) + " (CUDA error " + std::to_string(static_cast<int>(code)) +
                        ") at " + file + ":" + std::to_string(line));
}

int device_count() noexcept {
  // A machine with the runtime but no driver or no GPU answers with an error: that means "no device".
  static const int count = [] {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
      cudaGetLastError();
      return 0;
    }
    return n;
  }();
  return count;
}

cudaStream_t library_stream(const char* operation, int device) {
  // One stream per device; the map lives until finalize, which destroys the streams.
  static std::map<int, cudaStream_t> streams;
  if (auto found = streams.find(device); found != streams.end()) return found->second;
  int current = 0;
  MPIDIST_CUDA_CHECK(cudaGetDevice(&current));
  if (current != device) MPIDIST_CUDA_CHECK(cudaSetDevice(device));
  cudaStream_t stream = nullptr;
  const cudaError_t rc = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  if (current != device) cudaSetDevice(current);
  if (rc != cudaSuccess)
    throw Error(operation, std::string("cannot create the library's CUDA stream on cuda:") + std::to_string(device) +
                               ": " + cudaGetErrorString(rc));
  if (streams.empty())
    at_finalize([] {
      for (auto& [index, s] : streams) cudaStreamDestroy(s);
      streams.clear();
    });
  streams.emplace(device, stream);
  return stream;
}

// The device made current on this thread by mpidist, -1 while none. Per thread, as CUDA's own
// current device is: a thread that never called cudaSetDevice works on device 0.
thread_local int t_rank_device = -1;

int ensure_rank_device() {
  const int count = device_count();
  const Context* ctx = context_if_initialized();
  if (count == 0 || ctx == nullptr) return -1;
  const int device = ctx->topology.local_rank % count;
  if (t_rank_device != device) {
    MPIDIST_CUDA_CHECK(cudaSetDevice(device));
    t_rank_device = device;
  }
  return device;
}

}  // namespace cuda

void make_rank_device_current(int local_rank) noexcept {
  const int count = cuda::device_count();
  if (count == 0) return;
  // Before any call that needs a context (a pointer query, a stream): otherwise the first one
  // creates a context on device 0, on every rank of the node.
  if (cudaSetDevice(local_rank % count) == cudaSuccess) cuda::t_rank_device = local_rank % count;
  else cudaGetLastError();  // retried, and reported as an Error, at the first device use
}

namespace {

// The driver's pointer query, reached through the runtime so that mpidist links no libcuda (a
// machine without a driver has none). On an H200 node it answered in 152-162 ns for host memory
// and 69 ns for device memory, where cudaPointerGetAttributes took 284-306 and 210
// (benchmarks/results/gpu-h200-2026-11-26/after-host-memory/). Null where the runtime has none.
using DriverPointerQuery = CUresult (*)(unsigned int, CUpointer_attribute*, void**, CUdeviceptr);
DriverPointerQuery driver_pointer_query() noexcept {
  static const DriverPointerQuery query = []() noexcept -> DriverPointerQuery {
    void* function = nullptr;
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    if (cudaGetDriverEntryPointByVersion("cuPointerGetAttributes", &function, 7000, cudaEnableDefault, &found) !=
            cudaSuccess ||
        found != cudaDriverEntryPointSuccess || function == nullptr) {
      cudaGetLastError();
      return nullptr;
    }
    return reinterpret_cast<DriverPointerQuery>(function);
  }();
  return query;
}

// The driver's answer; false where it gave none, and then the runtime is asked (its failure is the
// Error). Only with this rank's device current (`mine`): without a context there is nothing to ask.
bool locate_with_driver(const void* data, int mine, MemoryLocation& where) noexcept {
  const DriverPointerQuery query = driver_pointer_query();
  if (query == nullptr || mine < 0) return false;
  CUpointer_attribute attributes[3] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                       CU_POINTER_ATTRIBUTE_IS_MANAGED};
  unsigned int type = 0, managed = 0;  // IS_MANAGED is a bool: the word's other bytes stay 0
  int device = -1;
  void* values[3] = {&type, &device, &managed};
  if (query(3, attributes, values, reinterpret_cast<CUdeviceptr>(data)) != CUDA_SUCCESS) return false;
  // As below: managed memory is this rank's device's; unregistered (0) and pinned memory are host.
  if (managed != 0) where = {MemoryKind::Device, mine};
  else if (type == CU_MEMORYTYPE_DEVICE) where = {MemoryKind::Device, device};
  else where = {};
  return true;
}

}  // namespace

MemoryLocation locate_memory(const void* data) {
  if (data == nullptr || cuda::device_count() == 0) return {};
  if (surely_host(data)) return {};  // a stack or small heap buffer: no query (core/host_memory.hpp)
  const int mine = cuda::ensure_rank_device();
  if (MemoryLocation where; locate_with_driver(data, mine, where)) return where;
  cudaPointerAttributes attributes{};
  if (const cudaError_t rc = cudaPointerGetAttributes(&attributes, data); rc != cudaSuccess) {
    cudaGetLastError();
    // CUDA 11+ answers cudaMemoryTypeUnregistered for plain host memory: an error means the
    // runtime could not look (no context possible, e.g. an exclusive-process GPU held by another
    // process), and guessing "host" would hand device memory to the host path.
    char where[32];
    std::snprintf(where, sizeof where, "%p", data);
    throw Error("BufferView", std::string("cudaPointerGetAttributes(") + where + ") failed on cuda:" +
                                  std::to_string(mine < 0 ? 0 : mine) + ": " + cudaGetErrorName(rc) + " (" +
                                  cudaGetErrorString(rc) + "); cannot tell host from device memory");
  }
  // Managed memory reports the device current when it was allocated; it is used on this rank's.
  if (attributes.type == cudaMemoryTypeManaged) return {MemoryKind::Device, mine >= 0 ? mine : attributes.device};
  if (attributes.type == cudaMemoryTypeDevice) return {MemoryKind::Device, attributes.device};
  return {};
}

int cuda_device_count() noexcept { return cuda::device_count(); }

std::string describe_cuda_device(int local_rank) {
  int count = 0;
  const cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc != cudaSuccess) {
    cudaGetLastError();  // clear the error so later CUDA calls start clean
    if (rc == cudaErrorInsufficientDriver) return "none (no NVIDIA driver)";
    if (rc == cudaErrorNoDevice) return "none (no CUDA device visible)";
    return std::string("none (") + cudaGetErrorString(rc) + ")";
  }
  if (count == 0) return "none (no CUDA device visible)";
  const int device = local_rank % count;
  cudaDeviceProp properties{};
  if (cudaGetDeviceProperties(&properties, device) != cudaSuccess) return "cuda:" + std::to_string(device);
  return "cuda:" + std::to_string(device) + " " + properties.name;
}

int rank_device(int local_rank) noexcept {
  const int count = cuda::device_count();
  return count == 0 ? -1 : local_rank % count;
}


}  // namespace detail

Device device() {
  const int count = detail::cuda::device_count();
  if (count == 0) return {};
  detail::context("device");  // Error before initialize()
  const int index = detail::cuda::ensure_rank_device();
  // The application may have switched this thread since: device() always makes it current.
  MPIDIST_CUDA_CHECK(cudaSetDevice(index));
  return {true, index};
}

double gpu_mem_usage() {
  if (detail::cuda::device_count() == 0) return 0.0;
  // Device-wide use (free vs. total) on this rank's current device; never an error.
  std::size_t free = 0, total = 0;
  if (cudaMemGetInfo(&free, &total) != cudaSuccess) {
    cudaGetLastError();
    return 0.0;
  }
  return static_cast<double>(total - free) / (1024.0 * 1024.0);
}

}  // namespace mpidist
