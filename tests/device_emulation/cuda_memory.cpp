// Emulated CUDA runtime: allocation, copies, memset, pointer attributes, memory info.
#include <cuda.h>

#include <cstring>
#include <string>
#include <vector>

#include "cudart_internal.hpp"

namespace mpidist_emu {
namespace {

using Lock = std::lock_guard<std::recursive_mutex>;

const char* kind_name(cudaMemcpyKind kind) {
  switch (kind) {
    case cudaMemcpyHostToHost: return "HostToHost";
    case cudaMemcpyHostToDevice: return "HostToDevice";
    case cudaMemcpyDeviceToHost: return "DeviceToHost";
    case cudaMemcpyDeviceToDevice: return "DeviceToDevice";
    default: return "Default";
  }
}

// Checks one side of a copy: `device` says whether the direction wants device memory there.
cudaError_t check_side(const char* call, const char* side, const void* pointer, std::size_t bytes, bool device) {
  int owner = 0;
  std::string why;
  const bool is_device = is_device_range(pointer, bytes, &owner, &why);
  if (device && !is_device)
    return fail(cudaErrorInvalidValue, std::string(call) + ": " + side + " " + hex(pointer) + " must be device memory (" +
                                           std::to_string(bytes) + " bytes) but is " + why);
  const Allocation* a = find_allocation(pointer);
  if (!device && a != nullptr && a->kind == MemoryKind::Device)
    return fail(cudaErrorInvalidValue,
                std::string(call) + ": " + side + " " + hex(pointer) + " is device memory but the copy kind says host");
  if (pointer == nullptr) return fail(cudaErrorInvalidValue, std::string(call) + ": " + side + " is null");
  return cudaSuccess;
}

// Resolves cudaMemcpyDefault from the pointers and validates both sides against the direction.
cudaError_t check_copy(const char* call, void* dst, const void* src, std::size_t bytes, cudaMemcpyKind* kind) {
  if (*kind < cudaMemcpyHostToHost || *kind > cudaMemcpyDefault)
    return fail(cudaErrorInvalidMemcpyDirection, std::string(call) + ": invalid cudaMemcpyKind " + std::to_string(*kind));
  if (*kind == cudaMemcpyDefault) {
    const Allocation* d = find_allocation(dst);
    const Allocation* s = find_allocation(src);
    const bool dst_device = d != nullptr && d->kind == MemoryKind::Device;
    const bool src_device = s != nullptr && s->kind == MemoryKind::Device;
    *kind = static_cast<cudaMemcpyKind>((src_device ? 2 : 0) + (dst_device ? 1 : 0));
  }
  const bool src_device = *kind == cudaMemcpyDeviceToHost || *kind == cudaMemcpyDeviceToDevice;
  const bool dst_device = *kind == cudaMemcpyHostToDevice || *kind == cudaMemcpyDeviceToDevice;
  if (const cudaError_t e = check_side(call, "src", src, bytes, src_device); e != cudaSuccess) return e;
  return check_side(call, "dst", dst, bytes, dst_device);
}

/// A copy queued on a stream.
class CopyWork : public Work {
 public:
  CopyWork(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind, const char* call)
      : dst_(dst), src_(src), bytes_(bytes), kind_(kind), call_(call) {
    accesses.push_back({static_cast<const std::byte*>(src), bytes, false});
    accesses.push_back({static_cast<const std::byte*>(dst), bytes, true});
  }
  Step step() override {
    DeviceAccess open(dst_, src_);
    std::memmove(dst_, src_, bytes_);
    return Step::Done;
  }
  std::string describe() const override {
    return std::string(call_) + " " + std::to_string(bytes_) + " bytes " + kind_name(kind_) + " " + hex(src_) + " -> " +
           hex(dst_);
  }

 private:
  void* dst_;
  const void* src_;
  std::size_t bytes_;
  cudaMemcpyKind kind_;
  const char* call_;
};

/// The device half of a pageable host-to-device cudaMemcpy: CUDA copies the source into a
/// staging buffer and returns; the DMA lands later, ordered on the legacy default stream.
class StagedCopyWork : public Work {
 public:
  StagedCopyWork(void* dst, const void* src, std::size_t bytes)
      : dst_(dst), staged_(static_cast<const std::byte*>(src), static_cast<const std::byte*>(src) + bytes) {
    accesses.push_back({static_cast<const std::byte*>(dst), bytes, true});
  }
  Step step() override {
    DeviceAccess open(dst_);
    std::memcpy(dst_, staged_.data(), staged_.size());
    return Step::Done;
  }
  std::string describe() const override {
    return "cudaMemcpy " + std::to_string(staged_.size()) + " bytes HostToDevice from pageable memory -> " + hex(dst_) +
           " (staged; the DMA lands later)";
  }

 private:
  void* dst_;
  std::vector<std::byte> staged_;
};

/// A memset queued on a stream.
class FillWork : public Work {
 public:
  FillWork(void* dst, int value, std::size_t bytes, const char* call) : dst_(dst), value_(value), bytes_(bytes), call_(call) {
    accesses.push_back({static_cast<const std::byte*>(dst), bytes, true});
  }
  Step step() override {
    DeviceAccess open(dst_);
    std::memset(dst_, value_, bytes_);
    return Step::Done;
  }
  std::string describe() const override {
    return std::string(call_) + " " + std::to_string(bytes_) + " bytes at " + hex(dst_) + " to " + std::to_string(value_);
  }

 private:
  void* dst_;
  int value_;
  std::size_t bytes_;
  const char* call_;
};

/// A marker with no effect: waiting for it waits for everything it was ordered after.
class BarrierWork : public Work {
 public:
  explicit BarrierWork(const char* call) : call_(call) {}
  Step step() override { return Step::Done; }
  std::string describe() const override { return call_; }

 private:
  const char* call_;
};

// A synchronous host-side access racing with queued work on a non-blocking stream (which the
// legacy default stream does not wait for) is a missing synchronization: refuse it, loudly.
cudaError_t check_host_side_race(const char* call, const Access& access) {
  const Stream* where = nullptr;
  const Work* pending = conflicting_nonblocking_work(access, &where);
  if (pending == nullptr) return cudaSuccess;
  return fail(cudaErrorIllegalState,
              std::string(call) + (access.write ? " writes " : " reads ") + std::to_string(access.bytes) + " bytes at " +
                  hex(access.begin) + " while " + pending->describe() + " is still queued on " + where->name() +
                  " (the legacy default stream does not wait for non-blocking streams): missing "
                  "cudaStreamSynchronize/cudaEventSynchronize before this call");
}

// Legacy-stream synchronous behaviour: queue a marker and wait for it.
cudaError_t wait_legacy(int device, const char* call) {
  std::shared_ptr<Stream> legacy;
  std::uint64_t ticket = 0;
  {
    Lock hold(big_lock());
    legacy = legacy_stream(device);
    enqueue(legacy, std::make_unique<BarrierWork>(call));
    ticket = legacy->enqueued;
  }
  return fail(wait(legacy, ticket, call));
}

cudaError_t allocate(void** pointer, std::size_t size, MemoryKind kind, const char* call) {
  if (pointer == nullptr) return fail(cudaErrorInvalidValue);
  if (config().device_count == 0) return fail(cudaErrorNoDevice);
  Lock hold(big_lock());
  if (const cudaError_t e = use_context(call); e != cudaSuccess) return e;
  const int device = current_device();
  if (kind == MemoryKind::Device && device_bytes_in_use(device) + size > config().device_memory - config().context_memory)
    return fail(cudaErrorMemoryAllocation, std::string(call) + "(" + std::to_string(size) + " bytes): device " +
                                               std::to_string(device) + " is out of emulated memory");
  *pointer = map_allocation(size, device, kind);
  return *pointer == nullptr ? fail(cudaErrorMemoryAllocation) : cudaSuccess;
}

cudaError_t release(void* pointer, MemoryKind kind, const char* call) {
  if (pointer == nullptr) return cudaSuccess;
  int device = 0;
  Access whole;
  {
    Lock hold(big_lock());
    Allocation* a = find_allocation(pointer);
    if (a == nullptr || a->base != pointer || a->kind != kind)
      return fail(kind == MemoryKind::Device ? cudaErrorInvalidValue : cudaErrorInvalidValue,
                  std::string(call) + "(" + hex(pointer) + "): not the start of a live " +
                      (kind == MemoryKind::Device ? "cudaMalloc" : "cudaMallocHost/cudaHostAlloc") +
                      " allocation (double free, interior pointer or wrong free function?)");
    whole = {a->base, a->size == 0 ? 1 : a->size, true};
    if (const cudaError_t e = check_host_side_race(call, whole); e != cudaSuccess) return e;
    device = a->device;
  }
  // Like the real call, freeing synchronizes with the legacy default stream (and so with every
  // blocking stream of the device).
  if (const cudaError_t e = wait_legacy(device, call); e != cudaSuccess) return e;
  Lock hold(big_lock());
  if (const cudaError_t e = check_host_side_race(call, whole); e != cudaSuccess) return e;
  Allocation* a = find_allocation(pointer);
  if (a == nullptr || a->base != pointer) return fail(cudaErrorInvalidValue);
  unmap_allocation(a);
  return cudaSuccess;
}

// The driver's pointer query, as cudaGetDriverEntryPointByVersion hands it out: the attributes
// libmpidist asks for (memory type, device ordinal, managed), defaults for an unknown pointer (as
// the driver answers for host memory), and an error where no context can be made.
CUresult emulated_cu_pointer_get_attributes(unsigned int count, CUpointer_attribute* attributes, void** data,
                                            CUdeviceptr ptr) {
  if (attributes == nullptr || data == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Lock hold(big_lock());
  if (use_context("cuPointerGetAttributes") != cudaSuccess) return CUDA_ERROR_INVALID_CONTEXT;
  const Allocation* a = find_allocation(reinterpret_cast<const void*>(ptr));
  for (unsigned int i = 0; i < count; ++i) {
    switch (attributes[i]) {
      case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        *static_cast<unsigned int*>(data[i]) = a == nullptr                     ? 0u
                                               : a->kind == MemoryKind::Host ? unsigned{CU_MEMORYTYPE_HOST}
                                                                             : unsigned{CU_MEMORYTYPE_DEVICE};
        break;
      case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: *static_cast<int*>(data[i]) = a == nullptr ? -2 : a->device; break;
      case CU_POINTER_ATTRIBUTE_IS_MANAGED:
        *static_cast<bool*>(data[i]) = a != nullptr && a->kind == MemoryKind::Managed;
        break;
      default:
        fail(cudaErrorNotSupported, "cuPointerGetAttributes: attribute " +
                                        std::to_string(static_cast<int>(attributes[i])) + " is not emulated");
        return CUDA_ERROR_NOT_SUPPORTED;
    }
  }
  return CUDA_SUCCESS;
}

}  // namespace

/// Queues a copy, after validation, on an already resolved stream (the NCCL side has none).
cudaError_t queue_copy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind, cudaStream_t handle,
                       const char* call, std::shared_ptr<Stream>* used) {
  Lock hold(big_lock());
  if (const cudaError_t e = use_context(call); e != cudaSuccess) return e;
  if (bytes == 0) return cudaSuccess;
  if (const cudaError_t e = check_copy(call, dst, src, bytes, &kind); e != cudaSuccess) return e;
  std::shared_ptr<Stream> stream;
  if (resolve_stream(handle, &stream) != cudaSuccess)
    return fail(cudaErrorInvalidResourceHandle, std::string(call) + ": unknown or destroyed stream " + hex(handle));
  enqueue(stream, std::make_unique<CopyWork>(dst, src, bytes, kind, call));
  if (used != nullptr) *used = stream;
  return cudaSuccess;
}

}  // namespace mpidist_emu

using namespace mpidist_emu;

extern "C" {

cudaError_t cudaMalloc(void** devPtr, size_t size) { return allocate(devPtr, size, MemoryKind::Device, "cudaMalloc"); }
cudaError_t cudaMallocHost(void** ptr, size_t size) { return allocate(ptr, size, MemoryKind::Host, "cudaMallocHost"); }
cudaError_t cudaHostAlloc(void** pHost, size_t size, unsigned int flags) {
  if ((flags & ~0xfu) != 0) return fail(cudaErrorInvalidValue, "cudaHostAlloc: unknown flags " + std::to_string(flags));
  return allocate(pHost, size, MemoryKind::Host, "cudaHostAlloc");
}
cudaError_t cudaMallocManaged(void** devPtr, size_t size, unsigned int flags) {
  if (flags != cudaMemAttachGlobal && flags != cudaMemAttachHost)
    return fail(cudaErrorInvalidValue, "cudaMallocManaged: flags must be cudaMemAttachGlobal or cudaMemAttachHost");
  return allocate(devPtr, size, MemoryKind::Managed, "cudaMallocManaged");
}
cudaError_t cudaFree(void* devPtr) {
  {
    Lock hold(big_lock());
    const Allocation* a = find_allocation(devPtr);
    if (a != nullptr && a->base == devPtr && a->kind == MemoryKind::Managed)
      return release(devPtr, MemoryKind::Managed, "cudaFree");
  }
  return release(devPtr, MemoryKind::Device, "cudaFree");
}
cudaError_t cudaFreeHost(void* ptr) { return release(ptr, MemoryKind::Host, "cudaFreeHost"); }

cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind) {
  {
    Lock hold(big_lock());
    if (const cudaError_t e = use_context("cudaMemcpy"); e != cudaSuccess) return e;
    if (count == 0) return cudaSuccess;
    if (const cudaError_t e = check_copy("cudaMemcpy", dst, src, count, &kind); e != cudaSuccess) return e;
    if (const cudaError_t e = check_host_side_race("cudaMemcpy", {static_cast<const std::byte*>(src), count, false});
        e != cudaSuccess)
      return e;
    if (const cudaError_t e = check_host_side_race("cudaMemcpy", {static_cast<const std::byte*>(dst), count, true});
        e != cudaSuccess)
      return e;
  }
  {
    // From pageable memory to the device: returns once the source is staged, before the DMA
    // lands (CUDA's documented behaviour); work not ordered after the legacy stream may race it.
    Lock hold(big_lock());
    const bool pageable_source = find_allocation(src) == nullptr;
    if (pageable_source && (kind == cudaMemcpyHostToDevice ||
                            (kind == cudaMemcpyDefault && find_allocation(dst) != nullptr))) {
      enqueue(legacy_stream(current_device()), std::make_unique<StagedCopyWork>(dst, src, count));
      return cudaSuccess;
    }
  }
  std::shared_ptr<Stream> legacy;
  if (const cudaError_t e = queue_copy(dst, src, count, kind, nullptr, "cudaMemcpy", &legacy); e != cudaSuccess) return e;
  // Device-to-device copies do not block the host on real hardware either.
  if (kind == cudaMemcpyDeviceToDevice) return cudaSuccess;
  std::uint64_t ticket = 0;
  {
    Lock hold(big_lock());
    ticket = legacy->enqueued;
  }
  return fail(wait(legacy, ticket, "cudaMemcpy"));
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind, cudaStream_t stream) {
  return queue_copy(dst, src, count, kind, stream, "cudaMemcpyAsync", nullptr);
}

cudaError_t cudaMemsetAsync(void* devPtr, int value, size_t count, cudaStream_t handle) {
  Lock hold(big_lock());
  if (const cudaError_t e = use_context("cudaMemsetAsync"); e != cudaSuccess) return e;
  if (count == 0) return cudaSuccess;
  if (const cudaError_t e = check_side("cudaMemsetAsync", "devPtr", devPtr, count, true); e != cudaSuccess) return e;
  std::shared_ptr<Stream> stream;
  if (resolve_stream(handle, &stream) != cudaSuccess)
    return fail(cudaErrorInvalidResourceHandle, "cudaMemsetAsync: unknown or destroyed stream " + hex(handle));
  enqueue(stream, std::make_unique<FillWork>(devPtr, value, count, handle == nullptr ? "cudaMemset" : "cudaMemsetAsync"));
  return cudaSuccess;
}

// Like the real call on device memory, asynchronous with respect to the host: it is queued on the
// legacy default stream and takes effect at the next synchronization.
cudaError_t cudaMemset(void* devPtr, int value, size_t count) { return cudaMemsetAsync(devPtr, value, count, nullptr); }

cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes* attributes, const void* ptr) {
  if (attributes == nullptr) return fail(cudaErrorInvalidValue);
  Lock hold(big_lock());
  // Even for host memory: the query initializes the current device's context (device 0 on a
  // thread that never called cudaSetDevice).
  if (const cudaError_t e = use_context("cudaPointerGetAttributes"); e != cudaSuccess) return e;
  *attributes = cudaPointerAttributes{};
  const Allocation* a = find_allocation(ptr);
  if (a == nullptr) {
    attributes->type = cudaMemoryTypeUnregistered;
    attributes->device = -2;
    attributes->hostPointer = const_cast<void*>(ptr);
    return cudaSuccess;
  }
  attributes->device = a->device;
  attributes->devicePointer = const_cast<void*>(ptr);
  if (a->kind == MemoryKind::Device) {
    attributes->type = cudaMemoryTypeDevice;
  } else if (a->kind == MemoryKind::Managed) {
    attributes->type = cudaMemoryTypeManaged;
    attributes->hostPointer = const_cast<void*>(ptr);
  } else {
    attributes->type = cudaMemoryTypeHost;
    attributes->hostPointer = const_cast<void*>(ptr);
  }
  return cudaSuccess;
}


cudaError_t cudaGetDriverEntryPointByVersion(const char* symbol, void** function, unsigned int, unsigned long long,
                                             cudaDriverEntryPointQueryResult* status) {
  if (symbol == nullptr || function == nullptr) return fail(cudaErrorInvalidValue);
  const bool known = std::string(symbol) == "cuPointerGetAttributes";
  *function = known ? reinterpret_cast<void*>(&emulated_cu_pointer_get_attributes) : nullptr;
  if (status != nullptr) *status = known ? cudaDriverEntryPointSuccess : cudaDriverEntryPointSymbolNotFound;
  return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t* free, size_t* total) {
  if (free == nullptr || total == nullptr) return fail(cudaErrorInvalidValue);
  if (config().device_count == 0) return fail(cudaErrorNoDevice);
  Lock hold(big_lock());
  if (const cudaError_t e = use_context("cudaMemGetInfo"); e != cudaSuccess) return e;
  const std::size_t used = config().context_memory + device_bytes_in_use(current_device());
  *total = config().device_memory;
  *free = used >= *total ? 0 : *total - used;
  return cudaSuccess;
}

}  // extern "C"
