// all_gather into a list of tensors, one per rank (torch's all_gather(tensor_list, tensor)), on
// top of the contiguous all_gather: straight into the list when its tensors lie one after the
// other, else through one host buffer (host memory) or a broadcast from each rank (device memory,
// where a contiguous buffer would be device memory mpidist does not allocate).
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

constexpr const char* operation = "all_gather";

bool one_after_another(std::span<const BufferView> outs, std::size_t bytes) {
  const auto* first = static_cast<const std::byte*>(outs[0].data());
  for (std::size_t r = 1; r < outs.size(); ++r)
    if (outs[r].data() != first + r * bytes || outs[r].device() != outs[0].device()) return false;
  return true;
}

// The group the call runs on: inside a MainProcessContext, this rank alone (as every collective).
int ranks(const Communicator& comm) { return MainProcessContext::depth() > 0 ? 1 : comm.size(); }
int this_rank(const Communicator& comm) { return MainProcessContext::depth() > 0 ? 0 : comm.rank(); }

void check_list(const Communicator& comm, const InputView& in, std::span<const BufferView> outs) {
  if (outs.size() != static_cast<std::size_t>(ranks(comm)))
    throw Error(comm.name(), operation, "the list holds " + std::to_string(outs.size()) + " tensors but the group has " +
                                            std::to_string(ranks(comm)) + " ranks: it takes one per rank" +
                                            (MainProcessContext::depth() > 0 ? " (one in a MainProcessContext)" : ""));
  for (std::size_t r = 0; r < outs.size(); ++r) {
    if (outs[r].count() != in.count() || outs[r].dtype() != in.dtype())
      throw Error(comm.name(), operation, "tensor " + std::to_string(r) + " of the list holds " + std::to_string(outs[r].count()) +
                                              " " + std::string(to_string(outs[r].dtype())) + " elements where the input holds " +
                                              std::to_string(in.count()) + " " + std::string(to_string(in.dtype())));
    if (outs[r].memory() != in.memory())
      throw Error(comm.name(), operation, "tensor " + std::to_string(r) + " of the list is in " +
                                              (outs[r].memory() == MemoryKind::Device ? "device" : "host") +
                                              " memory and the input is not: all of them live in one kind of memory");
  }
}

void gather_into_list(const Communicator& comm, const InputView& in, std::span<const BufferView> outs, Stream stream) {
  check_list(comm, in, outs);
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

}  // namespace

void all_gather(InputView in, std::span<const BufferView> outs, Stream stream) {
  gather_into_list(world(), in, outs, stream);
}
void all_gather(const Communicator& comm, InputView in, std::span<const BufferView> outs, Stream stream) {
  gather_into_list(comm, in, outs, stream);
}

}  // namespace mpidist
