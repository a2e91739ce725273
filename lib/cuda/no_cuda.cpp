// The CUDA side of the device seam for builds without CUDA: all memory is host memory.
#include "core/device_backend.hpp"
#include "core/device_info.hpp"
#include "mpidist/device.hpp"
#include "mpidist/error.hpp"

namespace mpidist {
namespace detail {

MemoryLocation locate_memory(const void*) { return {}; }
void make_rank_device_current(int) noexcept {}
int cuda_device_count() noexcept { return 0; }
std::string describe_cuda_device(int) { return "none (built without CUDA)"; }
int rank_device(int) noexcept { return -1; }
void synchronize_stream(const char*, Stream, int) {}

void run_staged(const Call& call, void (*)(const Call&)) {
  throw Error(call.name, "device memory, but mpidist was built without CUDA");  // unreachable: no device views
}

void copy_device_memory(const char* operation, void*, const void*, std::size_t, int, Stream) {
  throw Error(operation, "device memory, but mpidist was built without CUDA");  // unreachable: no device views
}

}  // namespace detail

Device device() { return {}; }
double gpu_mem_usage() { return 0.0; }

}  // namespace mpidist
