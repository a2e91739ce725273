// The list forms of torch: all_gather into a list of tensors, one per rank (all_gather(tensor_list,
// tensor)), and reduce_scatter from one (reduce_scatter(output, input_list)), on top of the
// contiguous collectives: straight from or into the list when its tensors lie one after the other,
// else through one host buffer (host memory) or one rooted call per rank (device memory, where a
// contiguous buffer would be device memory mpidist does not allocate).
#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "core/device_backend.hpp"
#include "mpidist/collectives.hpp"
#include "mpidist/error.hpp"
#include "mpidist/guards.hpp"

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

void gather_into_list(const Communicator& comm, const InputView& in, std::span<const BufferView> outs, Stream stream) {
  constexpr const char* operation = "all_gather";
  check_list(comm, operation, in, "input", outs);
  const std::size_t bytes = in.bytes();
  if (outs.empty()) return;
  if (one_after_another(outs, bytes)) {
    all_gather(comm, in, BufferView(outs[0].data(), outs.size() * in.count(), in.dtype()), stream);
    return;
  }
  if (in.memory() == MemoryKind::Host) {
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
  if (one_after_another(ins, bytes)) {
    reduce_scatter(comm, InputView(ins[0].data(), ins.size() * out.count(), out.dtype()), out, op, stream);
    return;
  }
  if (out.memory() == MemoryKind::Host) {
    std::vector<std::byte> all(ins.size() * bytes);
    for (std::size_t r = 0; r < ins.size(); ++r)
      if (bytes > 0) std::memcpy(all.data() + r * bytes, ins[r].data(), bytes);
    reduce_scatter(comm, InputView(all.data(), ins.size() * out.count(), out.dtype()), out, op, stream);
    return;
  }
  // Rank r's result is the reduction of every rank's ins[r], at r; `out` is written at r only.
  for (int r = 0; r < ranks(comm); ++r) reduce(comm, ins[static_cast<std::size_t>(r)], out, op, r, stream);
}

}  // namespace

void all_gather(InputView in, std::span<const BufferView> outs, Stream stream) {
  gather_into_list(world(), in, outs, stream);
}
void all_gather(const Communicator& comm, InputView in, std::span<const BufferView> outs, Stream stream) {
  gather_into_list(comm, in, outs, stream);
}

void reduce_scatter(std::span<const InputView> ins, BufferView out, ReduceOp op, Stream stream) {
  reduce_scatter_from_list(world(), ins, out, op, stream);
}
void reduce_scatter(const Communicator& comm, std::span<const InputView> ins, BufferView out, ReduceOp op, Stream stream) {
  reduce_scatter_from_list(comm, ins, out, op, stream);
}

}  // namespace mpidist
