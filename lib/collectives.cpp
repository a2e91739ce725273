// The tensor-collective front end: describes the call, checks it on every rank, picks the path
// (MPI on host memory; NCCL, CUDA-aware MPI or pinned-host staging on device memory) and hands it
// to that backend. Backends live in mpi/, nccl/ and cuda/; this file has no #if.
#include "mpidist/collectives.hpp"

#include <cstdint>
#include <cstdlib>
#include <string>

#include "agreement.hpp"
#include "call_checks.hpp"
#include "context.hpp"
#include "device_backend.hpp"
#include "device_info.hpp"
#include "mpi/host_collectives.hpp"
#include "mpidist/error.hpp"
#include "mpidist/guards.hpp"
#include "text_collectives.hpp"

namespace mpidist {
namespace detail {
namespace {

enum class Choice { Auto, Mpi, Nccl };

// MPIDIST_BACKEND=mpi|nccl|auto (unset or empty = auto).
Choice backend_choice(const char* operation) {
  const char* text = std::getenv("MPIDIST_BACKEND");
  const std::string name = text ? text : "";
  if (name.empty() || name == "auto") return Choice::Auto;
  if (name == "mpi") return Choice::Mpi;
  if (name == "nccl") {
    if (!nccl_built()) throw Error(operation, "MPIDIST_BACKEND=nccl but mpidist was built without NCCL");
    return Choice::Nccl;
  }
  throw Error(operation, "MPIDIST_BACKEND='" + name + "' is not one of mpi, nccl, auto");
}

bool mpi_reads_device_memory() { return cuda_aware_mpi() == "yes"; }

Path choose_path(const Call& call) {
  if (call.device < 0 || call.count == 0) return Path::Host;
  const Choice choice = backend_choice(call.name);
  if (choice != Choice::Mpi && nccl_built()) return Path::Nccl;
  // Without NCCL: hand device pointers to MPI when it can read them and no CPU arithmetic is
  // needed; otherwise copy through pinned host memory (Aluminum's host-transfer backend).
  if (mpi_reads_device_memory() && !mpi::needs_host_arithmetic(call)) return Path::CudaAwareMpi;
  return Path::Staged;
}

void execute(const Call& call, Path path) {
  if (call.count == 0) return;
  switch (path) {
    case Path::Host: mpi::run(call); return;
    case Path::CudaAwareMpi:
      synchronize_stream(call.name, call.stream);  // MPI reads the buffers now, from the host
      mpi::run(call);
      return;
    case Path::Staged: run_staged(call, &mpi::run); return;
    case Path::Nccl: run_nccl(call); return;
  }
}

// The one entry point of every public collective.
void collective(CollectiveKind kind, const char* name, const BufferView& in, const BufferView& out, ReduceOp op,
                int root, Stream stream) {
  const auto& topology = context(name).topology;
  Call call{kind, name, in.data(), out.data(), 0, in.dtype(), op, root, stream,
            topology.world_size, topology.rank, in.device()};
  Path path = Path::Host;
  const auto local = capture([&] {
    check_local_arguments(kind, name, in, out, op, topology.world_size, topology.rank, root);
    call.count = kind == CollectiveKind::ReduceScatter ? out.count() : in.count();
    // Non-root ranks of reduce may pass no output; NCCL then gets the input, which it never writes.
    if (call.out == nullptr) call.out = in.data();
    path = choose_path(call);
    // Checked before the ranks agree, so that a wrong device fails every rank instead of one.
    if (path == Path::Nccl && call.device != rank_device(topology.local_rank))
      throw Error(name, "buffers are on cuda:" + std::to_string(call.device) + " but this rank's device is cuda:" +
                            std::to_string(rank_device(topology.local_rank)) + " (mpidist::device())");
  });
  agree_on_call(call, path, local);
  execute(call, path);
}

}  // namespace
}  // namespace detail

void all_reduce(BufferView buffer, ReduceOp op, Stream stream) {
  detail::collective(detail::CollectiveKind::AllReduce, "all_reduce", buffer, buffer, op, 0, stream);
}

void all_reduce(BufferView in, BufferView out, ReduceOp op, Stream stream) {
  detail::collective(detail::CollectiveKind::AllReduce, "all_reduce", in, out, op, 0, stream);
}

void broadcast(BufferView buffer, int root, Stream stream) {
  detail::collective(detail::CollectiveKind::Broadcast, "broadcast", buffer, buffer, ReduceOp::Sum, root, stream);
}

void all_gather(BufferView in, BufferView out, Stream stream) {
  detail::collective(detail::CollectiveKind::AllGather, "all_gather", in, out, ReduceOp::Sum, 0, stream);
}

void reduce_scatter(BufferView in, BufferView out, ReduceOp op, Stream stream) {
  detail::collective(detail::CollectiveKind::ReduceScatter, "reduce_scatter", in, out, op, 0, stream);
}

void reduce(BufferView in, BufferView out, ReduceOp op, int root, Stream stream) {
  detail::collective(detail::CollectiveKind::Reduce, "reduce", in, out, op, root, stream);
}

void average(BufferView buffer, Stream stream) {
  detail::collective(detail::CollectiveKind::AllReduce, "average", buffer, buffer, ReduceOp::Avg, 0, stream);
}

void average(const std::map<std::string, BufferView>& buffers, Stream stream) {
  // The ranks must hold the same keys, or the per-key collectives would pair different tensors.
  std::string keys;
  for (const auto& [key, view] : buffers) keys += key + '\n';
  auto& ctx = detail::context("average");
  if (!detail::extremes_across_ranks(ctx.world, detail::fnv1a(keys)).same()) {
    const auto all = detail::all_gather_text(ctx.world, keys);
    std::string detail = "ranks hold different keys:";
    for (std::size_t r = 0; r < all.size(); ++r) {
      std::string listed = all[r];
      for (auto& ch : listed) ch = ch == '\n' ? ' ' : ch;
      detail += (r ? "; rank " : " rank ") + std::to_string(r) + ": " + (listed.empty() ? "(none)" : listed);
    }
    throw Error("average", detail);
  }
  for (const auto& [key, view] : buffers) average(view, stream);
}

bool init_nccl() {
  if (detail::backend_choice("init_nccl") == detail::Choice::Mpi || !detail::nccl_built() ||
      detail::cuda_device_count() == 0)
    return false;
  detail::start_nccl("init_nccl");
  return true;
}

std::string_view to_string(Backend backend) noexcept {
  switch (backend) {
    case Backend::Mpi: return "mpi";
    case Backend::CudaAwareMpi: return "cuda-aware-mpi";
    case Backend::Nccl: return "nccl";
  }
  return "mpi";
}

std::string backend() {
  const auto choice = detail::backend_choice("backend");
  const bool have_device = detail::cuda_device_count() > 0;
  if (choice == detail::Choice::Nccl) return "nccl";
  if (choice == detail::Choice::Auto && detail::nccl_built() && have_device) return "nccl";
  if (have_device && detail::mpi_reads_device_memory()) return "cuda-aware-mpi";
  return "mpi";
}

std::vector<std::string> available_backends() {
  std::vector<std::string> names{"mpi"};
  const bool have_device = detail::cuda_device_count() > 0;
  if (have_device && detail::mpi_reads_device_memory()) names.emplace_back("cuda-aware-mpi");
  if (have_device && detail::nccl_built()) names.emplace_back("nccl");
  return names;
}

}  // namespace mpidist
