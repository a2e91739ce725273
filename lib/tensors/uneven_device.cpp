// The uneven collectives on device memory (uneven_device.hpp). Through NCCL every block is one
// ncclSend and one ncclRecv of a single group, the block to itself included (NCCL allows a send
// to its own rank inside a group), so no rank waits for another's order of peers. Through MPI
// the buffers are copied to host memory around the host path, as point-to-point stages them.
#include "tensors/uneven_device.hpp"

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include "core/device_backend.hpp"
#include "core/group.hpp"
#include "core/settings.hpp"
#include "tensors/open_batch.hpp"
#include "mpidist/error.hpp"

namespace mpidist::detail {
namespace {

const char* at(const void* base, std::size_t elements, DataType dtype) {
  return static_cast<const char*>(base) + elements * size_of(dtype);
}

// Elements from the start of a buffer to the end of its last block.
std::size_t extent(const mpi::Counts& counts, const mpi::Counts& displs) {
  std::size_t end = 0;
  for (std::size_t i = 0; i < counts.size(); ++i)
    if (counts[i] > 0) end = std::max(end, displs[i] + counts[i]);
  return end;
}

std::unique_ptr<WorkState> through_nccl(const mpi::Exchange& e, Stream stream, const char* name) {
  std::vector<DeviceMessage> messages;
  for (int r = 0; r < e.size; ++r) {
    const auto i = static_cast<std::size_t>(r);
    if (e.recv_counts[i] > 0)
      messages.push_back({true, const_cast<char*>(at(e.out, e.recv_displs[i], e.dtype)), e.recv_counts[i], e.dtype, r});
    if (e.send_counts[i] > 0)
      messages.push_back({false, const_cast<char*>(at(e.in, e.send_displs[i], e.dtype)), e.send_counts[i], e.dtype, r});
  }
  // Even with no message of its own a rank launches the (empty) group: the first device call of a
  // group creates its NCCL communicator, collectively.
  launch_open_batch(*e.group, name);
  return start_nccl_p2p(*e.group, name, messages, stream);
}

// A device copy that has landed on return (the host side is a vector about to be read or freed).
void copy_now(const char* name, void* to, const void* from, std::size_t bytes, int device, Stream stream) {
  if (bytes == 0) return;
  copy_device_memory(name, to, from, bytes, device, stream);
  if (stream != nullptr) synchronize_stream(name, stream, device);
}

void staged(const mpi::Exchange& e, int device, Stream stream, const char* name) {
  const std::size_t element = size_of(e.dtype);
  std::vector<std::byte> in(extent(e.send_counts, e.send_displs) * element);
  std::vector<std::byte> out(extent(e.recv_counts, e.recv_displs) * element);
  try {
    copy_now(name, in.data(), e.in, in.size(), device, stream);
  } catch (const Error& failure) {
    // The peers go on into the host exchange and would wait there for this rank.
    break_group(*e.group, std::string(name) + " failed in its device copies: " + failure.detail());
    throw;
  }
  mpi::Exchange host = e;
  host.in = in.data();
  host.out = out.data();
  mpi::exchange(host);
  copy_now(name, e.out, out.data(), out.size(), device, stream);
}

}  // namespace

std::unique_ptr<WorkState> start_exchange_on_device(const mpi::Exchange& e, int device, Stream stream,
                                                    const char* name) {
  if (nccl_built() && settings(name).backend != Backend::Mpi) return through_nccl(e, stream, name);
  staged(e, device, stream, name);
  return nullptr;
}

void exchange_on_device(const mpi::Exchange& e, int device, Stream stream, const char* name) {
  if (auto work = start_exchange_on_device(e, device, stream, name)) work->complete();
}

void copy_own_block(const mpi::Exchange& e, int device, Stream stream, const char* name) {
  if (e.recv_counts[0] == 0) return;
  copy_device_memory(name, const_cast<char*>(at(e.out, e.recv_displs[0], e.dtype)), at(e.in, e.send_displs[0], e.dtype),
                     e.recv_counts[0] * size_of(e.dtype), device, stream);
}

}  // namespace mpidist::detail
