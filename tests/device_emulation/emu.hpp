// Internals of the strict CUDA runtime / NCCL emulation used by tests only. Shared between the
// emulated libcudart.so.13 (which owns all state below) and the emulated libnccl.so.2, which
// imports it through the private version node MPIDIST_EMU_PRIVATE. Never part of libmpidist.
#pragma once

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace mpidist_emu {

// ---------------------------------------------------------------------------------------------
// Configuration (environment variables, read once; see README.md)

/// The emulation's knobs, read from MPIDIST_EMU_* environment variables on first use.
struct Config {
  int device_count = 8;              ///< MPIDIST_EMU_DEVICE_COUNT
  std::size_t device_memory = 0;     ///< MPIDIST_EMU_DEVICE_MEMORY_MIB, in bytes
  std::size_t context_memory = 0;    ///< MPIDIST_EMU_CONTEXT_MIB, in bytes: "used" before any cudaMalloc
  bool same_uuid = false;            ///< MPIDIST_EMU_SAME_UUID=1: every device of a host has one UUID
  bool protect = true;               ///< MPIDIST_EMU_PROTECT=0 keeps device memory readable by the host
  bool poison = true;                ///< MPIDIST_EMU_POISON=0 leaves fresh allocations zero
  bool allow_shared_device = false;  ///< MPIDIST_EMU_ALLOW_SHARED_DEVICE=1: NCCL accepts two ranks on one GPU
  double hang_seconds = 120;         ///< MPIDIST_EMU_HANG_SECONDS: a blocking wait longer than this aborts
  int init_stall_rank = -1;          ///< MPIDIST_EMU_NCCL_INIT_STALL: this world rank's NCCL init never reaches its peers
  int comm_blocking = -1;            ///< NCCL_COMM_BLOCKING (0 or 1) overrides config.blocking, as in NCCL; -1 unset
  int max_contexts = 0;              ///< MPIDIST_EMU_MAX_CONTEXTS: more contexts than this fail the process at exit; 0 no limit
  int unavailable_device = -1;       ///< MPIDIST_EMU_UNAVAILABLE_DEVICE: a context on it fails (exclusive-process GPU held elsewhere)
  int fail_enqueue_rank = -1;        ///< MPIDIST_EMU_NCCL_FAIL_ENQUEUE=R[:N]: world rank R's Nth NCCL operation fails to enqueue
  int fail_enqueue_nth = 1;
};
const Config& config();

/// This process's "host" for device identity: the processor name, plus the simulated node when
/// MPIDIST_RANKS_PER_NODE groups ranks into nodes (as mpidist's topology does).
std::string host_identity();
/// The UUID of `device` on this host: equal for equal (host, device), or for every device of the
/// host with MPIDIST_EMU_SAME_UUID=1.
cudaUUID_t device_uuid(int device);

// ---------------------------------------------------------------------------------------------
// Diagnostics and locking

/// Prints "[mpidist-emu rank R] message" to stderr and remembers it for mpidist_emu_last_diagnostic().
void diagnose(const std::string& message);
/// All emulation state is guarded by one recursive lock; blocking waits release it between polls.
std::recursive_mutex& big_lock();
/// The calling thread's current device (0 until cudaSetDevice) and whether cudaSetDevice was called.
int current_device();
bool device_was_set();
/// Formats a pointer as 0x... for messages.
std::string hex(const void* pointer);

/// A call that needs a CUDA context on the thread's current device (device 0 on a thread that
/// never called cudaSetDevice) creates the device's primary context, as the real runtime does.
/// Remembered per process and listed at exit; cudaErrorDevicesUnavailable for
/// MPIDIST_EMU_UNAVAILABLE_DEVICE. `device` -1: the current device.
cudaError_t use_context(const char* call, int device = -1);

// ---------------------------------------------------------------------------------------------
// Memory

enum class MemoryKind { Device, Host, Managed };

/// One cudaMalloc (Device), cudaMallocHost/cudaHostAlloc (Host) or cudaMallocManaged (Managed:
/// readable by the host, usable on any device; `device` is the one current at allocation, as
/// cudaPointerGetAttributes reports it) allocation.
struct Allocation {
  std::byte* base = nullptr;
  std::size_t size = 0;    ///< bytes asked for
  std::size_t mapped = 0;  ///< bytes mapped (whole pages)
  int device = 0;
  MemoryKind kind = MemoryKind::Device;
  int open = 0;  ///< nesting count of DeviceAccess guards that made it readable
};

/// The allocation containing `pointer`, or nullptr for memory the emulation did not allocate.
Allocation* find_allocation(const void* pointer);
/// Whether [pointer, pointer + bytes) lies inside one device allocation; on failure `why` says
/// what the memory is instead ("host memory from cudaMallocHost", "not allocated by cudaMalloc",
/// "runs 8 bytes past the end of a 64-byte device allocation").
bool is_device_range(const void* pointer, std::size_t bytes, int* device, std::string* why);

/// While alive, the device allocations holding the given ranges are readable and writable by the
/// host (they are PROT_NONE otherwise, so that production code dereferencing a device pointer on
/// the host crashes as it would on real hardware).
class DeviceAccess {
 public:
  DeviceAccess(const void* first, const void* second = nullptr);
  ~DeviceAccess();
  DeviceAccess(const DeviceAccess&) = delete;
  DeviceAccess& operator=(const DeviceAccess&) = delete;

 private:
  Allocation* opened_[2] = {nullptr, nullptr};
};

// ---------------------------------------------------------------------------------------------
// Streams and queued work

/// A byte range a queued operation reads or writes, for the race checks.
struct Access {
  const std::byte* begin = nullptr;
  std::size_t bytes = 0;
  bool write = false;
};

struct Stream;

/// "Wait until `stream` has completed its first `ticket` operations."
struct Dependency {
  std::shared_ptr<Stream> stream;
  std::uint64_t ticket = 0;
};

enum class Step { Done, Pending };

/// An operation queued on a stream. It has no effect until the stream is driven by a
/// synchronization (or a query), which calls step() until it returns Done.
class Work {
 public:
  virtual ~Work();
  /// Advances the operation; Done once its effect is complete (memory written).
  virtual Step step() = 0;
  /// "cudaMemcpyAsync 64 bytes DeviceToHost" and the like, for diagnostics.
  virtual std::string describe() const = 0;
  std::vector<Access> accesses;
  std::vector<Dependency> after;  ///< implicit and explicit (event) ordering
  std::uint64_t sequence = 0;     ///< global enqueue order
  bool cancelled = false;  ///< set by ncclCommAbort: completes without effect
  bool race_checked = false;
};

/// A CUDA stream of one device: a FIFO of work, with counters for event and ordering tickets.
struct Stream {
  int device = 0;
  unsigned flags = 0;       ///< cudaStreamDefault or cudaStreamNonBlocking
  bool legacy = false;      ///< the device's legacy default stream (handle 0 / cudaStreamLegacy)
  bool destroyed = false;   ///< cudaStreamDestroy was called; kept until its work drains
  std::deque<std::unique_ptr<Work>> queue;
  std::uint64_t enqueued = 0;
  std::uint64_t completed = 0;
  cudaError_t error = cudaSuccess;  ///< reported by the next synchronization of this stream
  std::string name() const;
  bool blocking() const { return legacy || (flags & cudaStreamNonBlocking) == 0; }
};

/// The stream behind a handle: 0 and cudaStreamLegacy mean the legacy default stream of
/// `device` (the current device when -1); cudaStreamPerThread a per-thread blocking stream.
/// Unknown or destroyed handles give cudaErrorInvalidResourceHandle.
cudaError_t resolve_stream(cudaStream_t handle, std::shared_ptr<Stream>* out, int device = -1);
/// The legacy default stream of `device`.
std::shared_ptr<Stream> legacy_stream(int device);
/// Queues `work` on `stream`, adding the legacy-default-stream ordering: legacy work waits for
/// every blocking stream of the device, and blocking-stream work waits for legacy work.
void enqueue(const std::shared_ptr<Stream>& stream, std::unique_ptr<Work> work);
/// Drives `stream` until it has completed `until` operations (all when UINT64_MAX) or an
/// operation is not ready. Returns whether the target was reached. Never blocks.
bool progress(Stream& stream, std::uint64_t until = UINT64_MAX);
/// Blocks (polling, releasing the lock between polls) until `stream` completed `until`
/// operations; returns and clears the stream's error. Aborts after MPIDIST_EMU_HANG_SECONDS.
cudaError_t wait(const std::shared_ptr<Stream>& stream, std::uint64_t until, const char* what);
/// Creates a registered stream (cudaStreamCreate*); its address is the handle.
std::shared_ptr<Stream> create_stream(int device, unsigned flags);
/// Waits for every stream of `device` (all devices when -1).
cudaError_t wait_all(int device, const char* what);
/// Every live or draining stream, for NCCL's finalize and abort.
std::vector<std::shared_ptr<Stream>> all_streams();
/// The first queued operation on a non-blocking stream whose accesses conflict with `access`
/// (a write overlapping anything, or anything overlapping a pending write), or nullptr.
const Work* conflicting_nonblocking_work(const Access& access, const Stream** where);

}  // namespace mpidist_emu

extern "C" {
/// Test hook: the last diagnostic the emulation printed ("" if none); cleared by the call.
const char* mpidist_emu_last_diagnostic();
/// Test hook: how many operations are queued and not yet complete, over all streams.
int mpidist_emu_pending_work();
/// Test hook: always 1; tests call it to prove they run against the emulation.
int mpidist_emu_is_emulation();
/// Test hook: how many CUDA contexts (devices with a primary context) this process holds.
int mpidist_emu_contexts();
}
