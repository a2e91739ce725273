// Environment knobs, device identity and diagnostics of the device emulation.
#include <mpi.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <sstream>
#include <unistd.h>

#include "emu.hpp"

namespace mpidist_emu {
namespace {

long env_integer(const char* name, long fallback, long low, long high) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  errno = 0;
  const long value = std::strtol(text, &end, 10);
  if (errno != 0 || *end != '\0' || value < low || value > high) {
    std::fprintf(stderr, "[mpidist-emu] %s='%s' is not an integer in [%ld, %ld]; using %ld\n", name, text, low,
                 high, fallback);
    return fallback;
  }
  return value;
}

bool env_flag(const char* name, bool fallback) { return env_integer(name, fallback ? 1 : 0, 0, 1) != 0; }

// The world rank without needing MPI to be initialized (device queries may come first).
int world_rank_hint() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    return rank;
  }
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"}) {
    const char* text = std::getenv(name);
    if (text != nullptr) return std::atoi(text);
  }
  return 0;
}

thread_local int t_device = 0;
thread_local bool t_device_set = false;
std::string& g_last_diagnostic = *new std::string;  // never destroyed: exit-time reports use it

}  // namespace

const Config& config() {
  static const Config c = [] {
    Config made;
    made.device_count = static_cast<int>(env_integer("MPIDIST_EMU_DEVICE_COUNT", 8, 0, 1024));
    made.device_memory = static_cast<std::size_t>(env_integer("MPIDIST_EMU_DEVICE_MEMORY_MIB", 16384, 1, 1 << 24)) << 20;
    made.context_memory = static_cast<std::size_t>(env_integer("MPIDIST_EMU_CONTEXT_MIB", 256, 0, 1 << 20)) << 20;
    made.same_uuid = env_flag("MPIDIST_EMU_SAME_UUID", false);
    made.protect = env_flag("MPIDIST_EMU_PROTECT", true);
    made.poison = env_flag("MPIDIST_EMU_POISON", true);
    made.allow_shared_device = env_flag("MPIDIST_EMU_ALLOW_SHARED_DEVICE", false);
    made.hang_seconds = static_cast<double>(env_integer("MPIDIST_EMU_HANG_SECONDS", 120, 0, 1 << 20));
    made.init_stall_rank = static_cast<int>(env_integer("MPIDIST_EMU_NCCL_INIT_STALL", -1, -1, 1 << 24));
    made.comm_blocking = static_cast<int>(env_integer("NCCL_COMM_BLOCKING", -1, -1, 1));
    made.max_contexts = static_cast<int>(env_integer("MPIDIST_EMU_MAX_CONTEXTS", 0, 0, 1024));
    made.unavailable_device = static_cast<int>(env_integer("MPIDIST_EMU_UNAVAILABLE_DEVICE", -1, -1, 1024));
    if (const char* text = std::getenv("MPIDIST_EMU_NCCL_FAIL_ENQUEUE"); text != nullptr && *text != '\0') {
      made.fail_enqueue_rank = std::atoi(text);
      if (const char* colon = std::strchr(text, ':')) made.fail_enqueue_nth = std::atoi(colon + 1);
    }
    return made;
  }();
  return c;
}

std::string host_identity() {
  char name[MPI_MAX_PROCESSOR_NAME + 1] = {};
  int length = 0;
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) {
    MPI_Get_processor_name(name, &length);
  } else {
    gethostname(name, sizeof name - 1);
  }
  std::string host(name);
  // Mirror mpidist's simulated nodes, so two "nodes" on one machine own distinct GPUs.
  const long per_node = env_integer("MPIDIST_RANKS_PER_NODE", 0, 0, 1 << 30);
  if (per_node > 0) host += "/node" + std::to_string(world_rank_hint() / per_node);
  return host;
}

cudaUUID_t device_uuid(int device) {
  const std::string key = host_identity() + "#" + std::to_string(config().same_uuid ? 0 : device);
  const std::size_t h1 = std::hash<std::string>{}(key);
  const std::size_t h2 = std::hash<std::string>{}(key + "/uuid");
  cudaUUID_t uuid{};
  std::memcpy(uuid.bytes, &h1, sizeof h1);
  std::memcpy(uuid.bytes + 8, &h2, sizeof h2);
  return uuid;
}

void diagnose(const std::string& message) {
  std::lock_guard<std::recursive_mutex> hold(big_lock());
  g_last_diagnostic = message;
  std::fprintf(stderr, "[mpidist-emu rank %d] %s\n", world_rank_hint(), message.c_str());
  std::fflush(stderr);
}

std::recursive_mutex& big_lock() {
  static auto* lock = new std::recursive_mutex;  // never destroyed: calls may come from static destructors
  return *lock;
}

int current_device() { return t_device; }
bool device_was_set() { return t_device_set; }

std::string hex(const void* pointer) {
  char text[32];
  std::snprintf(text, sizeof text, "%p", pointer);
  return text;
}

/// cudaSetDevice's side of the per-thread current device (declared in cuda_device.cpp).
void set_current_device(int device) {
  t_device = device;
  t_device_set = true;
}

}  // namespace mpidist_emu

extern "C" const char* mpidist_emu_last_diagnostic() {
  static thread_local std::string copy;
  std::lock_guard<std::recursive_mutex> hold(mpidist_emu::big_lock());
  copy = mpidist_emu::g_last_diagnostic;
  mpidist_emu::g_last_diagnostic.clear();
  return copy.c_str();
}

extern "C" int mpidist_emu_is_emulation() { return 1; }
