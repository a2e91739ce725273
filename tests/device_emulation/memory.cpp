// The allocation registry: which addresses are emulated device memory, and host access to it.
#include <sys/mman.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>

#include "emu.hpp"
#include "cudart_internal.hpp"

namespace mpidist_emu {
namespace {

// Keyed by base address; an address belongs to the last allocation starting at or before it.
std::map<const std::byte*, Allocation>& registry() {
  static auto* allocations = new std::map<const std::byte*, Allocation>;  // never destroyed: see streams.cpp
  return *allocations;
}

std::size_t page_size() {
  static const std::size_t size = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  return size;
}

void set_protection(Allocation& a, int protection) {
  if (a.kind != MemoryKind::Device || !config().protect) return;
  if (mprotect(a.base, a.mapped, protection) != 0) {
    std::perror("[mpidist-emu] mprotect");
    std::abort();
  }
}

}  // namespace

Allocation* find_allocation(const void* pointer) {
  auto& all = registry();
  const auto* p = static_cast<const std::byte*>(pointer);
  auto it = all.upper_bound(p);
  if (it == all.begin()) return nullptr;
  --it;
  Allocation& a = it->second;
  // A zero-byte request still owns its first byte, so its pointer is recognised.
  const std::size_t extent = a.size == 0 ? 1 : a.size;
  return p < a.base + extent ? &a : nullptr;
}

bool is_device_range(const void* pointer, std::size_t bytes, int* device, std::string* why) {
  const Allocation* a = find_allocation(pointer);
  if (a == nullptr) {
    *why = pointer == nullptr ? "a null pointer" : "not memory allocated by cudaMalloc";
    return false;
  }
  if (a->kind == MemoryKind::Host) {
    *why = "host memory from cudaMallocHost/cudaHostAlloc, not device memory";
    return false;
  }
  const auto offset = static_cast<std::size_t>(static_cast<const std::byte*>(pointer) - a->base);
  if (bytes > a->size - offset) {
    *why = std::to_string(bytes) + " bytes at offset " + std::to_string(offset) + " run past the end of a " +
           std::to_string(a->size) + "-byte cudaMalloc allocation";
    return false;
  }
  *device = a->device;
  return true;
}

DeviceAccess::DeviceAccess(const void* first, const void* second) {
  const void* pointers[2] = {first, second};
  for (int i = 0; i < 2; ++i) {
    Allocation* a = pointers[i] == nullptr ? nullptr : find_allocation(pointers[i]);
    if (a == nullptr || a->kind != MemoryKind::Device || (i == 1 && a == opened_[0])) continue;
    if (a->open++ == 0) set_protection(*a, PROT_READ | PROT_WRITE);
    opened_[i] = a;
  }
}

DeviceAccess::~DeviceAccess() {
  for (Allocation* a : opened_) {
    if (a != nullptr && --a->open == 0) set_protection(*a, PROT_NONE);
  }
}

void* map_allocation(std::size_t size, int device, MemoryKind kind) {
  const std::size_t pages = (size == 0 ? 1 : (size + page_size() - 1) / page_size());
  const std::size_t mapped = pages * page_size();
  void* base = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (base == MAP_FAILED) return nullptr;
  Allocation a;
  a.base = static_cast<std::byte*>(base);
  a.size = size;
  a.mapped = mapped;
  a.device = device;
  a.kind = kind;
  // Real cudaMalloc memory holds leftovers; a fixed pattern (NaN for floats) exposes reads of
  // memory the production code never initialised.
  if (kind == MemoryKind::Device && config().poison) std::memset(base, 0xff, size);
  set_protection(a, PROT_NONE);
  registry().emplace(a.base, a);
  return base;
}

void unmap_allocation(Allocation* a) {
  munmap(a->base, a->mapped);
  registry().erase(a->base);
}

std::size_t device_bytes_in_use(int device) {
  std::size_t total = 0;
  for (const auto& [base, a] : registry()) {
    if (a.kind == MemoryKind::Device && a.device == device) total += a.mapped;
  }
  return total;
}

}  // namespace mpidist_emu
