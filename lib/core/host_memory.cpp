// Host memory known from the process's own layout (host_memory.hpp). Linux and glibc: the heap's
// start from /proc/self/stat, its end from sbrk(0) (glibc keeps it: no system call), a thread's
// stack top from pthread_getattr_np (once per thread).
#include "core/host_memory.hpp"

#include <pthread.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

namespace mpidist::detail {
namespace {

// The brk heap's start: field 47 of /proc/self/stat (start_brk, Linux 3.5+); 0 where unknown.
std::uintptr_t heap_start() noexcept {
  static const std::uintptr_t start = []() noexcept -> std::uintptr_t {
    try {
      std::ifstream stat("/proc/self/stat");
      std::string text;
      std::getline(stat, text);
      // Field 2, the command's name, may hold spaces and parentheses: count from the last ')'.
      const auto close = text.rfind(')');
      if (close == std::string::npos) return 0;
      std::istringstream fields(text.substr(close + 1));
      std::string field;
      for (int i = 3; fields >> field; ++i)
        if (i == 47) return static_cast<std::uintptr_t>(std::stoull(field));
    } catch (...) {
    }
    return 0;
  }();
  return start;
}

// The top (highest address) of the calling thread's stack; 0 where unknown.
std::uintptr_t stack_top() noexcept {
  thread_local const std::uintptr_t top = []() noexcept -> std::uintptr_t {
    pthread_attr_t attributes;
    if (pthread_getattr_np(pthread_self(), &attributes) != 0) return 0;
    void* low = nullptr;
    std::size_t size = 0;
    const bool known = pthread_attr_getstack(&attributes, &low, &size) == 0;
    pthread_attr_destroy(&attributes);
    return known ? reinterpret_cast<std::uintptr_t>(low) + size : 0;
  }();
  return top;
}

}  // namespace

bool surely_host(const void* data) noexcept {
  const auto at = reinterpret_cast<std::uintptr_t>(data);
  if (at == 0) return false;
  // The stack grows down: from this frame up to the top it holds the callers' live frames. The
  // frame's own address, not a local's: a sanitizer may keep locals in frames of its own elsewhere.
  if (at > reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0)) && at < stack_top()) return true;
  const std::uintptr_t start = heap_start();
  return start != 0 && at >= start && at < reinterpret_cast<std::uintptr_t>(sbrk(0));
}

}  // namespace mpidist::detail
