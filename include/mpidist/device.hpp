// The CUDA device of this rank, and its memory use.
#pragma once

#include <string>

namespace mpidist {

/// ignite `device()`: a CUDA device (`is_cuda`, `index`) or the CPU.
struct Device {
  bool is_cuda = false;
  int index = -1;
  /// "cuda:1" or "cpu".
  std::string str() const { return is_cuda ? "cuda:" + std::to_string(index) : "cpu"; }
};

/// The CUDA device for this rank, `local_rank() % device count`, made current with cudaSetDevice;
/// the CPU when built without CUDA or when no device is visible.
Device device();

/// virtex `gpu_mem_usage`: MiB of device memory in use on this rank's device; 0 without a GPU
/// (never an error).
double gpu_mem_usage();

}  // namespace mpidist
