// The list forms of torch: all_gather into a list of tensors, one per rank (all_gather(tensor_list,
// tensor)), reduce_scatter from one (reduce_scatter(output, input_list)), all_to_all between two
// (all_to_all(output_tensor_list, input_tensor_list)), gather into and scatter from one on root
// (gather_list, scatter_list), on top of the contiguous collectives: straight from or into the
// lists when their tensors lie one after the other, else through host buffers (host memory), or one
// rooted call per rank (all_gather's and reduce_scatter's device lists, where a contiguous buffer
// would be device memory mpidist does not allocate; the others' device lists go through host).
#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "core/device_backend.hpp"
#include "mpidist/collectives.hpp"
#include "mpidist/error.hpp"
#include "mpidist/guards.hpp"
#include "mpidist/objects.hpp"

namespace mpidist {
namespace {

template <class View>
bool one_after_another(std::span<const View> list, std::size_t bytes) {
  const auto* first = static_cast<const std::byte*>(list[0].data());
  for (std::size_t r = 1; r < list.size(); ++r)
    if (list[r].data() != first + r * bytes || list[r].device() != list[0].device()) return false;
  return true;
}

// The group the call runs on: inside a MainProcessContext, this rank alone (as every collective).
int ranks(const Communicator& comm) { return MainProcessContext::depth() > 0 ? 1 : comm.size(); }
int this_rank(const Communicator& comm) { return MainProcessContext::depth() > 0 ? 0 : comm.rank(); }

// Whether `mine` holds on every rank (one small reduction). A device list's layout picks between
// collectives (one over the whole list, or one per rank, or host staging), and separately allocated
// tensors may lie one after the other on some ranks only: every rank must pick alike. A host list's
// layout of all_gather and reduce_scatter picks only where the data is copied, and needs none.
bool everywhere(const Communicator& comm, bool mine) { return all_reduce(comm, mine ? 1 : 0, ReduceOp::Min) == 1; }

// One tensor per rank, each of `single`'s count, type and memory (`role`: "input", "output").
template <class View>
void check_list(const Communicator& comm, const char* operation, const BufferView& single, const char* role,
                std::span<const View> list) {
  if (list.size() != static_cast<std::size_t>(ranks(comm)))
    throw Error(comm.name(), operation, "the list holds " + std::to_string(list.size()) + " tensors but the group has " +
                                            std::to_string(ranks(comm)) + " ranks: it takes one per rank" +
                                            (MainProcessContext::depth() > 0 ? " (one in a MainProcessContext)" : ""));
  for (std::size_t r = 0; r < list.size(); ++r) {
    if (list[r].count() != single.count() || list[r].dtype() != single.dtype())
      throw Error(comm.name(), operation, "tensor " + std::to_string(r) + " of the list holds " + std::to_string(list[r].count()) +
                                              " " + std::string(to_string(list[r].dtype())) + " elements where the " + role +
                                              " holds " + std::to_string(single.count()) + " " +
                                              std::string(to_string(single.dtype())));
    if (list[r].memory() != single.memory())
      throw Error(comm.name(), operation, "tensor " + std::to_string(r) + " of the list is in " +
                                              (list[r].memory() == MemoryKind::Device ? "device" : "host") + " memory and the " +
                                              role + " is not: all of them live in one kind of memory");
  }
}

void all_gather_into_list(const Communicator& comm, const InputView& in, std::span<const BufferView> outs, Stream stream) {
  constexpr const char* operation = "all_gather";
  check_list(comm, operation, in, "input", outs);
  const std::size_t bytes = in.bytes();
  if (outs.empty()) return;
  const bool host = in.memory() == MemoryKind::Host;
  const bool adjacent = one_after_another(outs, bytes);
  if (host ? adjacent : everywhere(comm, adjacent)) {
    all_gather(comm, in, BufferView(outs[0].data(), outs.size() * in.count(), in.dtype()), stream);
    return;
  }
  if (host) {
    std::vector<std::byte> all(outs.size() * bytes);
    all_gather(comm, in, BufferView(all.data(), outs.size() * in.count(), in.dtype()), stream);
    for (std::size_t r = 0; r < outs.size(); ++r)
      if (bytes > 0) std::memcpy(outs[r].data(), all.data() + r * bytes, bytes);
    return;
  }
  const BufferView& mine = outs[static_cast<std::size_t>(this_rank(comm))];
  if (mine.data() != in.data() && bytes > 0)
    detail::copy_device_memory(operation, mine.data(), in.data(), bytes, mine.device(), stream);
  for (int r = 0; r < ranks(comm); ++r) broadcast(comm, outs[static_cast<std::size_t>(r)], r, stream);
}

void reduce_scatter_from_list(const Communicator& comm, std::span<const InputView> ins, const BufferView& out,
                              ReduceOp op, Stream stream) {
  constexpr const char* operation = "reduce_scatter";
  check_list(comm, operation, out, "output", ins);
  const std::size_t bytes = out.bytes();
  if (ins.empty()) return;
  const bool host = out.memory() == MemoryKind::Host;
  const bool adjacent = one_after_another(ins, bytes);
  if (host ? adjacent : everywhere(comm, adjacent)) {
    reduce_scatter(comm, InputView(ins[0].data(), ins.size() * out.count(), out.dtype()), out, op, stream);
    return;
  }
  if (host) {
    std::vector<std::byte> all(ins.size() * bytes);
    for (std::size_t r = 0; r < ins.size(); ++r)
      if (bytes > 0) std::memcpy(all.data() + r * bytes, ins[r].data(), bytes);
    reduce_scatter(comm, InputView(all.data(), ins.size() * out.count(), out.dtype()), out, op, stream);
    return;
  }
  // Rank r's result is the reduction of every rank's ins[r], at r; `out` is written at r only.
  for (int r = 0; r < ranks(comm); ++r) reduce(comm, ins[static_cast<std::size_t>(r)], out, op, r, stream);
}

// Where `list` starts when each of its tensors lies right after the one before it, whatever their
// sizes (empty ones anywhere); null otherwise.
template <class View>
const std::byte* packed(std::span<const View> list) {
  const std::byte* base = nullptr;
  std::size_t offset = 0;
  for (const View& tensor : list) {
    if (tensor.count() == 0) continue;
    const auto* at = static_cast<const std::byte*>(tensor.data());
    if (base == nullptr) base = at;  // the first that holds elements: nothing before it
    else if (at != base + offset) return nullptr;
    offset += tensor.bytes();
  }
  return base;
}

// Moves `bytes` between host memory and a tensor of the list (a copy, or a device copy waited for:
// the host buffer it reads or fills is gone when the call returns).
void copy_between(const char* operation, void* to, const void* from, std::size_t bytes, int device, Stream stream) {
  if (bytes == 0) return;
  if (device < 0) return static_cast<void>(std::memcpy(to, from, bytes));
  detail::copy_device_memory(operation, to, from, bytes, device, stream);
  detail::synchronize_stream(operation, stream, device);
}

void all_to_all_lists(const Communicator& comm, std::span<const InputView> ins, std::span<const BufferView> outs,
                      Stream stream) {
  constexpr const char* operation = "all_to_all";
  const auto n = static_cast<std::size_t>(ranks(comm));
  for (const auto& [list, role] : {std::pair{ins.size(), "ins"}, std::pair{outs.size(), "outs"}})
    if (list != n)
      throw Error(comm.name(), operation, std::string(role) + " holds " + std::to_string(list) + " tensors but the group has " +
                                              std::to_string(n) + " ranks: it takes one per rank" +
                                              (MainProcessContext::depth() > 0 ? " (one in a MainProcessContext)" : ""));
  if (n == 0) return;
  // One type everywhere; one memory for every tensor that holds elements (an empty one may be a
  // host view whatever the others are).
  const DataType dtype = ins[0].dtype();
  const BufferView* first = nullptr;
  for (const BufferView& tensor : ins)
    if (first == nullptr && tensor.count() > 0) first = &tensor;
  for (const BufferView& tensor : outs)
    if (first == nullptr && tensor.count() > 0) first = &tensor;
  const auto where = [](const BufferView& tensor) {
    return tensor.device() < 0 ? std::string("host memory") : "cuda:" + std::to_string(tensor.device());
  };
  const auto check = [&](const BufferView& tensor, const char* role, std::size_t r) {
    if (tensor.dtype() != dtype)
      throw Error(comm.name(), operation, std::string(role) + "[" + std::to_string(r) + "] holds " +
                                              std::string(to_string(tensor.dtype())) + " elements where ins[0] holds " +
                                              std::string(to_string(dtype)) + ": both lists hold one element type");
    if (tensor.count() > 0 && tensor.device() != first->device())
      throw Error(comm.name(), operation, std::string(role) + "[" + std::to_string(r) + "] is in " + where(tensor) +
                                              " and another tensor of the lists in " + where(*first) +
                                              ": all of them live in one memory");
  };
  std::vector<std::size_t> send(n), recv(n);
  std::size_t send_total = 0, recv_total = 0;
  for (std::size_t r = 0; r < n; ++r) {
    check(ins[r], "ins", r);
    check(outs[r], "outs", r);
    send_total += send[r] = ins[r].count();
    recv_total += recv[r] = outs[r].count();
  }
  const std::byte* in_base = packed(ins);
  const std::byte* out_base = packed(outs);
  const bool direct = (in_base != nullptr || send_total == 0) && (out_base != nullptr || recv_total == 0);
  // Agreed on every rank, whatever its memory: device lists staged on some ranks only would meet
  // device lists elsewhere in one call, and a rank that moves nothing cannot tell which it holds.
  if (everywhere(comm, direct)) {
    all_to_all(comm, InputView(const_cast<std::byte*>(in_base), send_total, dtype), send,
               BufferView(const_cast<std::byte*>(out_base), recv_total, dtype), recv, stream);
    return;
  }
  // Through host memory: one buffer each way, the uneven all_to_all between them.
  const std::size_t element = size_of(dtype);
  std::vector<std::byte> sent(send_total * element), received(recv_total * element);
  for (std::size_t r = 0, at = 0; r < n; at += ins[r].bytes(), ++r)
    copy_between(operation, sent.data() + at, ins[r].data(), ins[r].bytes(), ins[r].device(), stream);
  all_to_all(comm, InputView(sent.data(), send_total, dtype), send, BufferView(received.data(), recv_total, dtype), recv);
  for (std::size_t r = 0, at = 0; r < n; at += outs[r].bytes(), ++r)
    copy_between(operation, outs[r].data(), received.data() + at, outs[r].bytes(), outs[r].device(), stream);
}

// Root's list, checked on root and its verdict sent to every rank (one small broadcast): a bad list
// is the same Error everywhere, where root failing alone would leave the others waiting in the
// collective until the communicator's timeout.
template <class View>
void check_root_list(const Communicator& comm, const char* operation, const BufferView& single, const char* role,
                     std::span<const View> list, int root) {
  std::string problem;
  if (this_rank(comm) == root) {
    try {
      check_list(comm, operation, single, role, list);
    } catch (const Error& error) {
      problem = error.detail();
    }
  }
  problem = broadcast(comm, problem, root);
  if (!problem.empty())
    throw Error(comm.name(), operation, this_rank(comm) == root ? problem : "root " + std::to_string(root) + "'s list: " + problem);
}

// What both rooted list forms know once root's list is checked.
struct Rooted {
  bool at_root;
  std::size_t ranks;
  std::size_t bytes;  // of the one tensor of every rank
  DataType dtype;
};
template <class View>
Rooted rooted(const Communicator& comm, const char* operation, const BufferView& single, const char* role,
              std::span<const View> list, int root) {
  check_root_list(comm, operation, single, role, list, root);
  return {this_rank(comm) == root, static_cast<std::size_t>(ranks(comm)), single.bytes(), single.dtype()};
}

// Root's list: direct when it lies one after the other, else through one host buffer. Device
// memory goes through host memory on every rank, root's list or not: the others cannot know
// root's layout, and every rank must take the path root takes.
void gather_into_list(const Communicator& comm, const InputView& in, std::span<const BufferView> outs, int root,
                      Stream stream) {
  constexpr const char* operation = "gather";
  const auto [at_root, n, bytes, dtype] = rooted(comm, operation, in, "input", outs, root);
  if (in.memory() == MemoryKind::Host && !at_root) return gather(comm, in, BufferView(nullptr, 0, dtype), root, stream);
  if (in.memory() == MemoryKind::Host && one_after_another(outs, bytes))
    return gather(comm, in, BufferView(outs[0].data(), n * in.count(), dtype), root, stream);
  std::vector<std::byte> mine(in.memory() == MemoryKind::Host ? 0 : bytes), all(at_root ? n * bytes : 0);
  if (!mine.empty()) copy_between(operation, mine.data(), in.data(), bytes, in.device(), stream);
  const InputView sent = mine.empty() && bytes > 0 ? in : InputView(mine.data(), in.count(), dtype);
  gather(comm, sent, BufferView(all.data(), at_root ? n * in.count() : 0, dtype), root);
  if (at_root)
    for (std::size_t r = 0; r < n; ++r) copy_between(operation, outs[r].data(), all.data() + r * bytes, bytes, outs[r].device(), stream);
}

// The mirror of gather_into_list: root's list one after the other goes as it is.
void scatter_from_list(const Communicator& comm, std::span<const InputView> ins, const BufferView& out, int root,
                       Stream stream) {
  constexpr const char* operation = "scatter";
  const auto [at_root, n, bytes, dtype] = rooted(comm, operation, out, "output", ins, root);
  if (out.memory() == MemoryKind::Host && !at_root) return scatter(comm, InputView(nullptr, 0, dtype), out, root, stream);
  if (out.memory() == MemoryKind::Host && one_after_another(ins, bytes))
    return scatter(comm, InputView(ins[0].data(), n * out.count(), dtype), out, root, stream);
  std::vector<std::byte> all(at_root ? n * bytes : 0), mine(out.memory() == MemoryKind::Host ? 0 : bytes);
  if (at_root)
    for (std::size_t r = 0; r < n; ++r) copy_between(operation, all.data() + r * bytes, ins[r].data(), bytes, ins[r].device(), stream);
  const BufferView received = mine.empty() && bytes > 0 ? out : BufferView(mine.data(), out.count(), dtype);
  scatter(comm, InputView(all.data(), at_root ? n * out.count() : 0, dtype), received, root);
  if (!mine.empty()) copy_between(operation, out.data(), mine.data(), bytes, out.device(), stream);
}

}  // namespace

void all_gather(InputView in, std::span<const BufferView> outs, Stream stream) {
  all_gather_into_list(world(), in, outs, stream);
}
void all_gather(const Communicator& comm, InputView in, std::span<const BufferView> outs, Stream stream) {
  all_gather_into_list(comm, in, outs, stream);
}

void reduce_scatter(std::span<const InputView> ins, BufferView out, ReduceOp op, Stream stream) {
  reduce_scatter_from_list(world(), ins, out, op, stream);
}
void reduce_scatter(const Communicator& comm, std::span<const InputView> ins, BufferView out, ReduceOp op, Stream stream) {
  reduce_scatter_from_list(comm, ins, out, op, stream);
}


void all_to_all(std::span<const InputView> ins, std::span<const BufferView> outs, Stream stream) {
  all_to_all_lists(world(), ins, outs, stream);
}
void all_to_all(const Communicator& comm, std::span<const InputView> ins, std::span<const BufferView> outs, Stream stream) {
  all_to_all_lists(comm, ins, outs, stream);
}

void gather(InputView in, std::span<const BufferView> outs, int root, Stream stream) {
  gather_into_list(world(), in, outs, root, stream);
}
void gather(const Communicator& comm, InputView in, std::span<const BufferView> outs, int root, Stream stream) {
  gather_into_list(comm, in, outs, root, stream);
}

void scatter(std::span<const InputView> ins, BufferView out, int root, Stream stream) {
  scatter_from_list(world(), ins, out, root, stream);
}
void scatter(const Communicator& comm, std::span<const InputView> ins, BufferView out, int root, Stream stream) {
  scatter_from_list(comm, ins, out, root, stream);
}

}  // namespace mpidist
