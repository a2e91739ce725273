// The tensor-collective front end: describes the call, checks it on every rank, picks a transport
// from the table (transports.hpp) and hands it over. Backends live in mpi/, nccl/ and cuda/; this
// file has no #if.
#include "mpidist/collectives.hpp"

#include <optional>
#include <string>

#include "core/context.hpp"
#include "core/device_backend.hpp"
#include "core/device_info.hpp"
#include "core/text_collectives.hpp"
#include "tensors/call_checks.hpp"
#include "tensors/fusion.hpp"
#include "tensors/issue.hpp"
#include "tensors/transports.hpp"
#include "watch/agreement.hpp"
#include "watch/call_scope.hpp"
#include "mpidist/error.hpp"
#include "mpidist/guards.hpp"

namespace mpidist {
namespace detail {

const Transport* prepare_call(Group& group, Call& call, const BufferView& in, const BufferView& out) {
  const Transport* transport = nullptr;
  const auto local = capture([&] {
    check_local_arguments(call.kind, call.name, in, out, call.op, call.size, call.rank, call.root);
    // Non-root ranks of reduce may pass no output; NCCL then gets the input, which it never writes.
    if (call.out == nullptr) call.out = in.data();
    transport = &choose_transport(call);
    if (transport->check != nullptr) transport->check(call);
  });
  naming_errors(group.name, [&] { agree_on_call(call, transport, local); });
  return transport;
}

Call describe_call(Group& group, CollectiveKind kind, const char* name, const BufferView& in, const BufferView& out,
                   ReduceOp op, int root, Stream stream) {
  const std::size_t count = kind == CollectiveKind::ReduceScatter ? out.count() : in.count();
  // Inside a MainProcessContext only this rank runs: a group of one, whatever the communicator.
  const bool alone = MainProcessContext::depth() > 0;
  return Call{kind, name, in.data(), out.data(), count, in.dtype(), op, root, stream, &group,
              alone ? 1 : group.topology.size, alone ? 0 : group.topology.rank, in.device()};
}

Fingerprint recorded_fingerprint(const Call& call, std::size_t bytes, bool async) {
  const bool rooted = call.kind == CollectiveKind::Broadcast || call.kind == CollectiveKind::Reduce;
  Fingerprint fp{call.name, call.count, bytes, static_cast<int>(call.dtype), rooted ? call.root : -1,
                 reduces(call) ? static_cast<int>(call.op) : -1, nullptr, 0, false};
  fp.async = async;
  return fp;
}

namespace {

// The checks, the ranks' agreement and the transport; `call` as the caller described it.
void check_and_run(Group& group, Call& call, const BufferView& in, const BufferView& out) {
  const Transport* transport = prepare_call(group, call, in, out);
  if (call.count > 0) naming_errors(group.name, [&] { transport->run(call); });
}

}  // namespace

void collective(Group& group, CollectiveKind kind, const char* name, const BufferView& in, const BufferView& out,
                ReduceOp op, int root, Stream stream, bool async) {
  Call call = describe_call(group, kind, name, in, out, op, root, stream);
  if (MainProcessContext::depth() > 0) return check_and_run(group, call, in, out);  // local: not numbered
  // Numbered, fingerprinted and watched (call_scope.hpp). Finished by hand rather than by a
  // CallScope: its std::uncaught_exceptions() costs two thread-local lookups a call.
  const CallTicket ticket = start_call(group, recorded_fingerprint(call, in.bytes(), async));
  try {
    check_and_run(group, call, in, out);
  } catch (...) {
    finish_call(ticket, true);
    throw;
  }
  finish_call(ticket, false);
}

void failed_collective(Group& group, CollectiveKind kind, const char* name, const BufferView& in, const BufferView& out,
                       ReduceOp op, int root, Stream stream, bool async, std::exception_ptr local) {
  Call call = describe_call(group, kind, name, in, out, op, root, stream);
  if (MainProcessContext::depth() > 0) std::rethrow_exception(local);  // local: not numbered
  const CallTicket ticket = start_call(group, recorded_fingerprint(call, in.bytes(), async));
  try {
    naming_errors(group.name, [&] { agree_on_call(call, nullptr, local); });
  } catch (...) {
    finish_call(ticket, true);
    throw;
  }
  finish_call(ticket, true);
  std::rethrow_exception(local);  // not reached: agree_on_call throws for a local failure
}

// The public calls' two forms.
void collective(const Communicator& comm, CollectiveKind kind, const char* name, const BufferView& in,
                const BufferView& out, ReduceOp op, int root, Stream stream) {
  collective(group_of(comm, name), kind, name, in, out, op, root, stream, false);
}

void collective(CollectiveKind kind, const char* name, const BufferView& in, const BufferView& out, ReduceOp op,
                int root, Stream stream) {
  collective(world_group(name), kind, name, in, out, op, root, stream, false);
}

void average_named(const Communicator* comm, std::span<const NamedBuffer> buffers, Stream stream) {
  Group& group = comm ? group_of(*comm, "average") : world_group("average");
  const Fingerprint call{"average", buffers.size(), 0, -1, -1, -1, nullptr, 0, false};  // keys are agreed below
  std::optional<CallScope> scope;
  if (MainProcessContext::depth() == 0) scope.emplace(group, call);
  // The ranks must hold the same keys, or the per-key collectives would pair different tensors.
  std::string keys;
  for (const auto& [key, view] : buffers) keys.append(key).push_back('\n');
  if (MainProcessContext::depth() == 0 && group.topology.size > 1) {
    CallRecord mine("average", group.sequence);
    mine[CallRecord::Detail] = static_cast<std::int64_t>(fnv1a(keys) >> 1);
    if (!agree_on_record(group, call, mine).same(CallRecord::Detail)) {
      const auto all = all_gather_text(group.control, keys);
      std::string detail = "ranks hold different keys:";
      for (std::size_t r = 0; r < all.size(); ++r) {
        std::string listed = all[r];
        for (auto& ch : listed) ch = ch == '\n' ? ' ' : ch;
        detail += (r ? "; rank " : " rank ") + std::to_string(r) + ": " + (listed.empty() ? "(none)" : listed);
      }
      group.failed_in_step = true;
      throw Error(group.name, "average", detail);
    }
  }
  std::vector<BufferView> views;
  views.reserve(buffers.size());
  for (const auto& [key, view] : buffers) views.push_back(view);
  all_reduce_many(group, "average", views, ReduceOp::Avg, stream);
}

}  // namespace detail

using detail::CollectiveKind;

void all_reduce(BufferView buffer, ReduceOp op, Stream stream) {
  detail::collective(CollectiveKind::AllReduce, "all_reduce", buffer, buffer, op, 0, stream);
}
void all_reduce(const Communicator& comm, BufferView buffer, ReduceOp op, Stream stream) {
  detail::collective(comm, CollectiveKind::AllReduce, "all_reduce", buffer, buffer, op, 0, stream);
}

void all_reduce(InputView in, BufferView out, ReduceOp op, Stream stream) {
  detail::collective(CollectiveKind::AllReduce, "all_reduce", in, out, op, 0, stream);
}
void all_reduce(const Communicator& comm, InputView in, BufferView out, ReduceOp op, Stream stream) {
  detail::collective(comm, CollectiveKind::AllReduce, "all_reduce", in, out, op, 0, stream);
}

void broadcast(BufferView buffer, int root, Stream stream) {
  detail::collective(CollectiveKind::Broadcast, "broadcast", buffer, buffer, ReduceOp::Sum, root, stream);
}
void broadcast(const Communicator& comm, BufferView buffer, int root, Stream stream) {
  detail::collective(comm, CollectiveKind::Broadcast, "broadcast", buffer, buffer, ReduceOp::Sum, root, stream);
}

void all_gather(InputView in, BufferView out, Stream stream) {
  detail::collective(CollectiveKind::AllGather, "all_gather", in, out, ReduceOp::Sum, 0, stream);
}
void all_gather(const Communicator& comm, InputView in, BufferView out, Stream stream) {
  detail::collective(comm, CollectiveKind::AllGather, "all_gather", in, out, ReduceOp::Sum, 0, stream);
}

void reduce_scatter(InputView in, BufferView out, ReduceOp op, Stream stream) {
  detail::collective(CollectiveKind::ReduceScatter, "reduce_scatter", in, out, op, 0, stream);
}
void reduce_scatter(const Communicator& comm, InputView in, BufferView out, ReduceOp op, Stream stream) {
  detail::collective(comm, CollectiveKind::ReduceScatter, "reduce_scatter", in, out, op, 0, stream);
}

void reduce(InputView in, BufferView out, ReduceOp op, int root, Stream stream) {
  detail::collective(CollectiveKind::Reduce, "reduce", in, out, op, root, stream);
}
void reduce(const Communicator& comm, InputView in, BufferView out, ReduceOp op, int root, Stream stream) {
  detail::collective(comm, CollectiveKind::Reduce, "reduce", in, out, op, root, stream);
}

void reduce(BufferView buffer, ReduceOp op, int root, Stream stream) {
  detail::collective(CollectiveKind::Reduce, "reduce", buffer, buffer, op, root, stream);
}
void reduce(const Communicator& comm, BufferView buffer, ReduceOp op, int root, Stream stream) {
  detail::collective(comm, CollectiveKind::Reduce, "reduce", buffer, buffer, op, root, stream);
}

void average(BufferView buffer, Stream stream) {
  detail::collective(CollectiveKind::AllReduce, "average", buffer, buffer, ReduceOp::Avg, 0, stream);
}
void average(const Communicator& comm, BufferView buffer, Stream stream) {
  detail::collective(comm, CollectiveKind::AllReduce, "average", buffer, buffer, ReduceOp::Avg, 0, stream);
}

void average(const std::map<std::string, BufferView>& buffers, Stream stream) {
  detail::average_named(nullptr, detail::named_buffers(buffers), stream);
}
void average(const Communicator& comm, const std::map<std::string, BufferView>& buffers, Stream stream) {
  detail::average_named(&comm, detail::named_buffers(buffers), stream);
}

bool init_nccl() {
  const auto& settings = detail::settings("init_nccl");
  if (settings.backend == Backend::Mpi || !detail::nccl_built() || detail::cuda_device_count() == 0) return false;
  detail::start_nccl(detail::world_group("init_nccl"), "init_nccl");
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
  const auto chosen = detail::settings("backend").backend;
  const bool have_device = detail::cuda_device_count() > 0;
  if (chosen == Backend::Nccl) return "nccl";
  if (!chosen && detail::nccl_built() && have_device) return "nccl";
  if (have_device && detail::cuda_aware_mpi() == "yes") return "cuda-aware-mpi";
  return "mpi";
}

std::vector<std::string> available_backends() {
  std::vector<std::string> names{"mpi"};
  const bool have_device = detail::cuda_device_count() > 0;
  if (have_device && detail::cuda_aware_mpi() == "yes") names.emplace_back("cuda-aware-mpi");
  if (have_device && detail::nccl_built()) names.emplace_back("nccl");
  return names;
}

}  // namespace mpidist
