// The transport table. Order matters: the first entry that accepts a call runs it.
#include "tensors/transports.hpp"

#include <array>
#include <cstring>

#include "core/context.hpp"
#include "core/device_backend.hpp"
#include "core/device_info.hpp"
#include "core/group.hpp"
#include "core/settings.hpp"
#include "mpi/host_collectives.hpp"
#include "shm/collectives.hpp"
#include "mpidist/error.hpp"
#include "mpidist/guards.hpp"

namespace mpidist::detail {
namespace {

// A group of one (a world of one, or inside a MainProcessContext): every collective is a copy of
// `in` to `out`, or nothing in place (the sum, average, minimum... of one value is that value).
// A world of one on device memory keeps its backend, which checks the device as with more ranks.
bool one_rank(const Call& call) { return call.size == 1 && (call.device < 0 || MainProcessContext::depth() > 0); }
void run_local(const Call& call) {
  if (call.in == call.out) return;
  const std::size_t bytes = call.count * size_of(call.dtype);
  if (call.device < 0) std::memmove(call.out, call.in, bytes);
  else copy_device_memory(call.name, call.out, call.in, bytes, call.device, call.stream);
}

bool host_memory(const Call& call) { return call.device < 0 || call.count == 0; }

// NCCL has no bitwise reductions: those go through MPI, CUDA-aware or staged.
bool nccl_allowed(const Call& call) {
  return nccl_built() && settings(call.name).backend != Backend::Mpi && !(reduces(call) && bitwise(call.op));
}
// Checked before the ranks agree, so that a wrong device fails every rank instead of one. The
// device follows the rank's place on its node in the world (mpidist::device()), in every group.
void check_nccl_device(const Call& call) {
  const int mine = rank_device(context(call.name).topology.local_rank);
  if (call.device != mine)
    throw Error(call.name, "buffers are on cuda:" + std::to_string(call.device) + " but this rank's device is cuda:" +
                               std::to_string(mine) + " (mpidist::device())");
}

// Host all-reduce through the node's shared memory (MPIDIST_HOST_ALLREDUCE, lib/mpi/shm_*).
bool shm_one_node(const Call& call) { return shm::accepts(call, true); }
bool shm_hierarchical(const Call& call) { return shm::accepts(call, false); }

// Device pointers straight to MPI when it can read them and no CPU arithmetic is needed.
bool cuda_aware(const Call& call) { return cuda_aware_mpi() == "yes" && !mpi::needs_host_arithmetic(call); }
void run_cuda_aware(const Call& call) {
  // MPI reads the buffers now, from the host: after the caller's stream, or without one after
  // the caller's work on the legacy default stream.
  synchronize_stream(call.name, call.stream, call.device);
  mpi::run(call);
}

// Otherwise device memory is copied through pinned host memory (Aluminum's host-transfer backend).
bool always(const Call&) { return true; }
void run_staged_mpi(const Call& call) { run_staged(call, &mpi::run); }

constexpr std::array table{
    Transport{"local (group of one)", &one_rank, nullptr, &run_local},
    Transport{"shm (host memory, one node)", &shm_one_node, nullptr, &shm::run_one_node, true},
    Transport{"hierarchical (host memory: shm in nodes, mpi across)", &shm_hierarchical, nullptr,
              &shm::run_hierarchical},
    Transport{"mpi (host memory)", &host_memory, nullptr, &mpi::run},
    Transport{"nccl", &nccl_allowed, &check_nccl_device, &run_nccl, false, &start_nccl_many},
    Transport{"cuda-aware-mpi", &cuda_aware, nullptr, &run_cuda_aware},
    Transport{"mpi (staged through host)", &always, nullptr, &run_staged_mpi},
};

}  // namespace

std::span<const Transport> transports() noexcept { return table; }

const Transport& first_accepting(const Call& call) {
  for (const auto& transport : table)
    if (transport.accepts(call)) return transport;
  return table.back();  // not reached: the last entry accepts every call
}

const Transport& choose_transport(const Call& call) {
  // Every row's test is a function of the call's shape below, the group (its topology and
  // placement, fixed at creation) and the job's settings (fixed at initialization): a call shaped
  // like the group's last one takes the same row. A group of one is decided by the first row at
  // once, and a MainProcessContext's calls (size 1) never touch the group's cache.
  Group::Route& last = call.group->route;
  const bool cached = call.size > 1;
  if (cached && last.transport != nullptr && last.count == call.count && last.kind == static_cast<int>(call.kind) &&
      last.dtype == static_cast<int>(call.dtype) && last.op == static_cast<int>(call.op) &&
      last.device == call.device && last.size == call.size)
    return *static_cast<const Transport*>(last.transport);
  const Transport* chosen = &first_accepting(call);
  if (cached)
    last = Group::Route{chosen, static_cast<int>(call.kind), static_cast<int>(call.dtype), static_cast<int>(call.op),
                        call.device, call.size, call.count};
  return *chosen;
}

}  // namespace mpidist::detail
