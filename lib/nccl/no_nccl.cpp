// The NCCL side of the device seam for builds without NCCL.
#include "core/device_backend.hpp"
#include "core/device_info.hpp"
#include "mpidist/error.hpp"

namespace mpidist::detail {

bool nccl_built() noexcept { return false; }

std::string nccl_version() { return "none"; }

void start_nccl(Group&, const char*) {}

void run_nccl(const Call& call) {
  throw Error(call.name, "mpidist was built without NCCL");  // unreachable: the front end checks nccl_built()
}

std::unique_ptr<WorkState> start_nccl_p2p(Group&, const char* operation, std::span<const DeviceMessage>, Stream) {
  throw Error(operation, "mpidist was built without NCCL");  // unreachable, as above
}

std::unique_ptr<WorkState> start_nccl_many(std::span<const Call> calls) {
  throw Error(calls.front().name, "mpidist was built without NCCL");  // unreachable, as above
}

void run_nccl_many(std::span<const Call> calls) {
  if (!calls.empty()) run_nccl(calls.front());  // unreachable, as above
}

}  // namespace mpidist::detail
