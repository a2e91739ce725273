// CUDA contexts of the process: which devices a call has made a primary context on, and the
// check at exit. On a real GPU each context holds hundreds of MiB of device memory, and a
// context on a device that is not the rank's (device 0, by default) is wasted on every rank of
// a node; in exclusive-process mode it fails outright.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "cudart_internal.hpp"

namespace mpidist_emu {
namespace {

// Device -> the first call that created its context. Never destroyed: read at exit.
std::map<int, std::string>& contexts() {
  static auto* all = new std::map<int, std::string>;
  return *all;
}

std::string listing() {
  std::string text;
  for (const auto& [device, first] : contexts())
    text += (text.empty() ? "" : ", ") + std::string("device ") + std::to_string(device) + " (made by " + first + ")";
  return text;
}

// At exit: more than one context is listed; above MPIDIST_EMU_MAX_CONTEXTS the process fails.
void check_contexts() {
  std::lock_guard<std::recursive_mutex> hold(big_lock());
  const int count = static_cast<int>(contexts().size());
  if (count <= 1) return;
  const bool too_many = config().max_contexts > 0 && count > config().max_contexts;
  diagnose("at exit, this process holds " + std::to_string(count) + " CUDA contexts: " + listing() +
           (too_many ? "; more than MPIDIST_EMU_MAX_CONTEXTS=" + std::to_string(config().max_contexts) +
                           ": a process should use one device only (failing the process)"
                     : ""));
  if (too_many) {
    std::fflush(nullptr);
    _exit(3);
  }
}

[[maybe_unused]] const int g_check_registered = std::atexit(check_contexts);

}  // namespace

cudaError_t use_context(const char* call, int device) {
  std::lock_guard<std::recursive_mutex> hold(big_lock());
  if (device < 0) device = current_device();
  if (contexts().count(device) != 0) return cudaSuccess;
  if (device == config().unavailable_device)
    return fail(cudaErrorDevicesUnavailable,
                std::string(call) + ": cannot create a context on device " + std::to_string(device) +
                    ": exclusive-process mode and another process holds it (MPIDIST_EMU_UNAVAILABLE_DEVICE)");
  contexts().emplace(device, std::string(call) + (device_was_set() ? "" : " on a thread that never called cudaSetDevice"));
  return cudaSuccess;
}

}  // namespace mpidist_emu

extern "C" int mpidist_emu_contexts() {
  std::lock_guard<std::recursive_mutex> hold(mpidist_emu::big_lock());
  return static_cast<int>(mpidist_emu::contexts().size());
}
