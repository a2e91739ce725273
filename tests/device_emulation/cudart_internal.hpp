// Pieces of the emulated CUDA runtime shared by its own source files only (not by NCCL).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "emu.hpp"

namespace mpidist_emu {

/// Maps a fresh allocation (PROT_NONE for device memory when protection is on) and registers it.
void* map_allocation(std::size_t size, int device, MemoryKind kind);
/// Unregisters and unmaps an allocation found by find_allocation().
void unmap_allocation(Allocation* allocation);
/// Bytes (whole pages) of device allocations on `device`, for cudaMemGetInfo.
std::size_t device_bytes_in_use(int device);
/// cudaSetDevice's half of the per-thread current device.
void set_current_device(int device);
/// Records `error` as the thread's last error (unless success or not-ready) and returns it.
cudaError_t fail(cudaError_t error);
/// fail() plus a diagnostic naming the call and what was wrong.
cudaError_t fail(cudaError_t error, const std::string& message);

}  // namespace mpidist_emu
