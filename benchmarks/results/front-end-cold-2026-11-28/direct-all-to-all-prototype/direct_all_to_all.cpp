// PROTOTYPE: equal-block all_to_all across nodes, the node's blocks through the segment and the
// other nodes' straight between the ranks (MPI point-to-point), overlapped.
#include <cstring>
#include <functional>
#include <vector>

#include "core/group.hpp"
#include "core/mpi_check.hpp"
#include "mpi/host_collectives.hpp"
#include "shm/exchange.hpp"
#include "shm/node_members.hpp"
#include "shm/segment.hpp"
#include "shm/through_leaders.hpp"

namespace mpidist::detail::shm {

void run_direct_all_to_all(const mpi::Exchange& e, const char* operation) {
  Group& group = *e.group;
  const std::size_t count = e.send_counts.empty() ? 0 : e.send_counts[0];
  if (count == 0) return;
  const auto& members = node_members(group, operation);
  const auto node = static_cast<std::size_t>(group.topology.node_rank);
  const auto& here = members[node];
  const std::size_t element = size_of(e.dtype);
  const auto* in = static_cast<const std::byte*>(e.in);
  auto* out = static_cast<std::byte*>(e.out);
  const MPI_Datatype type = mpi::datatype(e.dtype);
  std::vector<MPI_Request> requests;
  std::vector<char> local_rank(static_cast<std::size_t>(e.size), 0);
  for (int r : here) local_rank[static_cast<std::size_t>(r)] = 1;
  for (int s = 1; s < e.size; ++s) {
    const int from = (e.rank - s + e.size) % e.size;
    if (local_rank[static_cast<std::size_t>(from)]) continue;
    requests.push_back(MPI_REQUEST_NULL);
    MPIDIST_MPI_CHECK(MPI_Irecv(out + static_cast<std::size_t>(from) * count * element, static_cast<int>(count), type,
                                from, 7301, group.control, &requests.back()));
  }
  for (int s = 1; s < e.size; ++s) {
    const int to = (e.rank + s) % e.size;
    if (local_rank[static_cast<std::size_t>(to)]) continue;
    requests.push_back(MPI_REQUEST_NULL);
    MPIDIST_MPI_CHECK(MPI_Isend(in + static_cast<std::size_t>(to) * count * element, static_cast<int>(count), type,
                                to, 7301, group.control, &requests.back()));
  }
  if (here.size() > 1) {
    Segment& seg = segment(group, operation);
    mpi::Exchange local{mpi::Exchange::Shape::AllToAll, &group, e.in, e.out, e.dtype, 0, seg.rank(),
                        static_cast<int>(here.size()), {}, {}, {}, {}, true};
    local.send_counts.assign(here.size(), count);
    local.recv_counts.assign(here.size(), count);
    local.send_displs.assign(here.size(), 0);
    local.recv_displs.assign(here.size(), 0);
    for (std::size_t l = 0; l < here.size(); ++l)
      local.send_displs.begin()[l] = local.recv_displs.begin()[l] = static_cast<std::size_t>(here[l]) * count;
    const std::function<void()> work = [&] {
      int done = 0;
      MPIDIST_MPI_CHECK(MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done, MPI_STATUSES_IGNORE));
    };
    WhileWaiting progress(seg, work);
    exchange_through(seg, local, operation);
  } else {
    std::memcpy(out + static_cast<std::size_t>(e.rank) * count * element,
                in + static_cast<std::size_t>(e.rank) * count * element, count * element);
  }
  MPIDIST_MPI_CHECK(MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE));
}

}  // namespace mpidist::detail::shm
