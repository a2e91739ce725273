// Device buffers through MPI without CUDA-aware MPI: copy them into pinned host memory, run the
// host path, copy the result back (Aluminum's "host-transfer" backend, without its overlap).
#include <cstddef>

#include <memory>
#include <string>

#include "core/device_backend.hpp"
#include "core/group.hpp"
#include "cuda/runtime.hpp"
#include "mpidist/error.hpp"

namespace mpidist::detail {
namespace {

// One pinned buffer per group, grown on demand and kept: cudaMallocHost is slow, and training
// repeats the same collectives every step. Freed with the group.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  ~PinnedBuffer() { release(); }
  char* reserve(std::size_t bytes) {
    if (bytes <= size_) return data_;
    release();
    void* fresh = nullptr;
    MPIDIST_CUDA_CHECK(cudaMallocHost(&fresh, bytes));
    data_ = static_cast<char*>(fresh);
    size_ = bytes;
    return data_;
  }
  void release() noexcept {
    if (data_ != nullptr) cudaFreeHost(data_);
    data_ = nullptr;
    size_ = 0;
  }

 private:
  char* data_ = nullptr;
  std::size_t size_ = 0;
};

PinnedBuffer& staging_of(Group& group) {
  if (!group.staging) group.staging = std::make_shared<PinnedBuffer>();
  return *static_cast<PinnedBuffer*>(group.staging.get());
}

// A CUDA failure between the ranks' steps leaves the peers in the host collective or past it:
// the group cannot be trusted any more, as after a timeout.
template <class F>
void breaking_the_group(const Call& call, F&& steps) {
  try {
    steps();
  } catch (const Error& e) {
    if (call.group != nullptr) break_group(*call.group, std::string(call.name) + " failed in its device copies: " + e.detail());
    throw;
  }
}

void run_staged_steps(const Call& call, void (*host_path)(const Call&)) {
  // The caller's stream orders us after the work that produced the input; without one, the
  // library's stream, ordered after the caller's work on the legacy default stream.
  const cudaStream_t stream = call.stream ? call.stream : cuda::library_stream(call.name, call.device);
  if (call.stream == nullptr) cuda::order_after_default_stream(call.name, call.device, stream);
  const std::size_t element = size_of(call.dtype);
  const std::size_t in_bytes = in_count(call) * element;
  const std::size_t out_bytes = out_count(call) * element;
  const bool in_place = call.in == call.out;
  char* host_in = staging_of(*call.group).reserve(in_place ? out_bytes : in_bytes + out_bytes);
  char* host_out = in_place ? host_in : host_in + in_bytes;
  // Broadcast only needs the root's data; everyone else's buffer is overwritten.
  const bool send_input = call.kind != CollectiveKind::Broadcast || call.rank == call.root;
  if (send_input) MPIDIST_CUDA_CHECK(cudaMemcpyAsync(host_in, call.in, in_bytes, cudaMemcpyDeviceToHost, stream));
  MPIDIST_CUDA_CHECK(cudaStreamSynchronize(stream));

  Call host = call;
  host.in = host_in;
  host.out = host_out;
  host.device = -1;
  host_path(host);

  if (writes_output(call)) {
    MPIDIST_CUDA_CHECK(cudaMemcpyAsync(call.out, host_out, out_bytes, cudaMemcpyHostToDevice, stream));
    // Even with a caller's stream: the pinned buffer is reused by the next call.
    MPIDIST_CUDA_CHECK(cudaStreamSynchronize(stream));
  }
}

}  // namespace

void run_staged(const Call& call, void (*host_path)(const Call&)) {
  breaking_the_group(call, [&] { run_staged_steps(call, host_path); });
}

}  // namespace mpidist::detail

namespace mpidist::detail {

void copy_device_memory(const char* operation, void* to, const void* from, std::size_t bytes, int device,
                        Stream stream) {
  const cudaStream_t queue = stream ? stream : cuda::library_stream(operation, device);
  if (stream == nullptr) cuda::order_after_default_stream(operation, device, queue);
  MPIDIST_CUDA_CHECK(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDefault, queue));  // either side may be host
  if (stream == nullptr) MPIDIST_CUDA_CHECK(cudaStreamSynchronize(queue));
}

}  // namespace mpidist::detail
