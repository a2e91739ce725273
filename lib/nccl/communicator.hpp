// The NCCL communicator behind the library communicator, and the NCCL check macro. Compiled only
// with MPIDIST_HAVE_NCCL. Internal.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

namespace mpidist::detail::nccl {

/// Throws Error naming the NCCL call with ncclGetErrorString and ncclGetLastError(comm).
[[noreturn]] void throw_nccl_error(const char* call, ncclResult_t code, ncclComm_t comm, const char* file, int line);

/// Owns one ncclComm_t (move-only). The destructor destroys it and never throws.
class Communicator {
 public:
  Communicator(ncclComm_t comm, int device) noexcept : comm_(comm), device_(device) {}
  Communicator(Communicator&& other) noexcept : comm_(other.comm_), device_(other.device_) { other.comm_ = nullptr; }
  Communicator& operator=(Communicator&&) = delete;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;
  ~Communicator();

  ncclComm_t get() const noexcept { return comm_; }
  /// The CUDA device the communicator was created on.
  int device() const noexcept { return device_; }
  /// Aborts pending NCCL work and frees the communicator (after an error or a timeout).
  void abort() noexcept;

 private:
  ncclComm_t comm_;
  int device_;
};

/// The communicator for the library's world, created on first use (a collective call on every
/// rank): GPU check, unique id from rank 0 over MPI, cudaSetDevice, ncclCommInitRank. Throws
/// Error if an earlier failure aborted it.
Communicator& communicator(const char* operation);

/// Marks the communicator unusable after `operation` failed and aborts it.
void abort_communicator(const char* operation) noexcept;

}  // namespace mpidist::detail::nccl

/// Evaluates an NCCL call; any result but ncclSuccess becomes mpidist::Error.
#define MPIDIST_NCCL_CHECK(call, comm)                                                          \
  do {                                                                                          \
    const ncclResult_t mpidist_nccl_rc_ = (call);                                               \
    if (mpidist_nccl_rc_ != ncclSuccess)                                                        \
      ::mpidist::detail::nccl::throw_nccl_error(#call, mpidist_nccl_rc_, comm, __FILE__, __LINE__); \
  } while (0)
