// The all-reduce: two algorithms share the segment's steps (shm/steps.hpp, shm/segment.hpp):
//  - one-shot, for small messages: every rank copies its whole input into its half (up to 56 B:
//    its control line), then reduces all of them into its output. One wait; every rank does all
//    the arithmetic.
//  - reduce-scatter in the segment, for the rest, chunk by chunk (a half at a time): every rank
//    copies the other ranks' slices of a chunk of its input in, reduces its own 1/L slice from
//    all halves (its own part straight from its input) into its half, copies that slice out, then
//    every other rank's once they are reduced. Two waits per chunk; consecutive chunks alternate
//    halves, so a fast rank starts the next chunk while slow ones still copy the last one out.
// Both reduce in rank order, so every rank gets the same bits whoever arrives first. The other
// collectives are in shm/other_collectives.cpp; this file picks the transport for all of them.
#include "shm/collectives.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <vector>

#include "core/context.hpp"
#include "core/group.hpp"
#include "core/mpi_check.hpp"
#include "core/settings.hpp"
#include "mpi/host_collectives.hpp"
#include "shm/through_leaders.hpp"
#include "shm/other_collectives.hpp"
#include "shm/reduce.hpp"
#include "shm/segment.hpp"
#include "shm/steps.hpp"
#include "shm/two_level.hpp"

namespace mpidist::detail::shm {
namespace {

// Auto's crossover across nodes (MPIDIST_HOST_ALLREDUCE=auto), measured with mpidist-bench on the
// reference machine (benchmarks/results/shm.md, simulated nodes of 2 at 4 ranks): at 16 KiB the
// hierarchical all-reduce took 0.44-0.68 of MPI_Allreduce's time in three runs, and at most 0.97
// above it; below it the two were even or MPI ahead (1 KiB: 0.90-1.43). On one node the segment wins from 4 B (one flag
// handshake against Open MPI's two messages and its sched_yield when a message is not there yet),
// so auto takes it at every size for every collective of the segment. That includes reduce and
// all_gather at 2 ranks from 16 MiB, once left to MPI: 0.24-0.80 of MPI's time (reduce, two runs,
// since its root reduces straight into its output) and 0.10-0.97 (all_gather, three runs); an
// earlier, quieter run had found them even with MPI.
constexpr std::size_t hierarchical_crossover = 16 * 1024;
// That crossover holds on one host. Across real hosts (tests/hosts/bench_two_hosts.sh: two network
// namespaces, TCP over a veth between them, shared memory within; benchmarks/results/
// two-hosts-2026-11-25/README.md, "After: the host-aware choice"), the hierarchical path against
// MPIDIST_HOST_ALLREDUCE=mpi, both as ratios to raw MPI_Allreduce in the same run, medians of 8 runs
// at 4 KiB-4 MiB:
//  - 2 + 2: the hierarchical path 1.16-4.14 at every size (4.1 at 4 KiB, 2.2-2.5 at 16-64 KiB, 1.4
//    at 1 MiB), MPI 1.01-1.04. Both send 2 N across the hosts a call (the veth's byte counts), and
//    the hierarchical path runs its three steps one after the other while MPI overlaps them.
//  - 3 + 1: the hierarchical path 0.55-0.74 from 16 KiB (0.87 at 4 KiB, up to 1.09 in one run), MPI
//    1.00-1.05. MPI sends 3 N across the hosts a call (the veth's counts), the leaders' exchange 2 N.
//  - 1 + 1: even (1.00-1.04 both ways): the hierarchical path is MPI_Allreduce between the two
//    ranks, in 4 MiB pieces (0.76 of MPI's time at 64 MiB in the "before" runs).
// Then with the 2D all-reduce (shm/two_level.cpp) beside them, three runs each, 4 B-64 MiB
// (benchmarks/results/two-hosts-2026-11-25-2d/README.md):
//  - 2 + 2: forced through MPI 0.8-1.22 of raw MPI_Allreduce (the same call: noise), the 2D path
//    1.23-1.73 from 1 MiB and 1.5-15.6 up to 64 KiB (0.68 at 256 KiB, where raw MPI was slow), the
//    leader path 0.71-1.19 from 1 MiB and 0.94-4.8 up to 64 KiB. The veth counted the same bytes for
//    all three: Open MPI's all-reduce at 4 ranks (recursive halving, then doubling) sends
//    2 (n-1)/n N / L per rank across the hosts, N per host, exactly what the 2D path sends, without
//    the copies through the segment. Neither hierarchical path wins at every size: auto kept MPI then.
//  - 3 + 1: the leader path 0.57-0.66 at 4 B-1 KiB (one exchange between the two leaders against
//    MPI's steps across the hosts), 0.81 at 4 KiB, 0.26-0.49 at 16-256 KiB, 0.58-0.73 from 1 MiB (N
//    per host against MPI's 1.5 N), MPI 0.98-1.39: auto takes the leader path at every size. The 2D
//    path needs nodes of equal size and is not used there (2d runs the leader path).
//  - 1 + 1: the leader path is MPI_Allreduce between the two ranks (even): the crossover stays.
// Then on the quiet 16 cores of a GPU node, each host on 8 of its own (benchmarks/results/
// two-hosts-2026-11-26-h200/README.md, three runs; the leaders swap below 64 KiB, further down):
//  - 2 + 2: the leader path 0.89-0.97 below 16 KiB; the 2D path 0.72-0.89 at 16-256 KiB, 1.17-1.22
//    at 1-16 MiB (MPI's four TCP streams beat two plus the segment's copies over a veth that costs
//    CPU, not link time), 0.69 at 64 MiB (Open MPI's all-reduce faults memory in above 16 MiB);
//    MPI itself 1.01 at 1-16 MiB. auto takes the best of each band.
//  - 3 + 1: the leader path 0.62-0.94 at every size: auto keeps it.
//  The 2D path's 1-16 MiB there was 0.85-1.01 in one run and 1.17-1.22 in three others: with
//  slices of 128 KiB (a rendezvous over TCP) and four chunks in flight, tested once a chunk.
// Then the 2D path with its slices sent in pieces under TCP's eager limit and its requests tested
// while the segment waits (shm/two_level.cpp; benchmarks/results/two-hosts-2026-11-27-2d-eager/
// README.md), on the 2-core machine, medians of five runs at 2 + 2:
//  - each host on a core of its own: 2D 1.08 at 1 MiB, 0.83 at 2 MiB, 0.74 at 4 MiB, 0.62 at
//    8 MiB, 0.58 at 16 MiB; MPI 1.01-1.02 (five other runs);
//  - both hosts on both cores: 2D 0.89, 0.78, 0.70, 0.66, 0.59; MPI 1.00-1.02 in the same runs.
//  The old 2D path on the same harness, the same day: 1.19-1.21 at 1 MiB, 1.10-1.18 at 2 MiB.
//  So the 2D path took 2-16 MiB back; [1 MiB, 2 MiB) (four chunks, all in flight at once: no
//  steady state) stayed with MPI.
// Then between two nodes the counterparts swap their slices (one exchange) instead of MPI_Iallreduce
// (shm/two_level.cpp), 2D forced at 2 + 2, a core a host, eight runs interleaved with the commit
// before: 16 KiB 0.48-0.53 (before 0.84-0.93), 64 KiB 0.64-0.69 (0.84-1.37), 256 KiB 0.59-0.67
// (0.78-0.81), 1 MiB 0.86-1.11, median 0.95 (1.01-1.30), 4-64 MiB within the runs' spread of
// before. But against MPIDIST_HOST_ALLREDUCE=mpi in the same batch (six runs each, later) 1 MiB
// measured 0.95-1.22 (median 1.14) against MPI's 1.00-1.05, where 512 KiB took 0.80-0.99 and 2 MiB
// 0.83-0.95: four chunks, all in flight at once, have no steady state (chunks of an eighth or a
// sixteenth of the message did no better). So [1 MiB, 2 MiB) stays with MPI.
// Then on the GPU node's quiet cores, each host on 8 (benchmarks/results/two-hosts-2026-11-27-h200/
// README.md), three runs of auto and two of 2D forced at 2 + 2: 2D 0.89-0.92 at 1 MiB against MPI's
// 1.00-1.10 there. There no rank shares a core; in both 2-core set-ups two ranks share each core,
// and a chunk in flight waits for its owner to be scheduled.
// So [1 MiB, 2 MiB) goes to MPI only where some machine of the job runs more ranks than it has cores
// for them (Context::cores_shared_somewhere, the same on every rank).
// On one host (simulated nodes) the 16 KiB crossover stays. The choice depends only on the settings,
// the size and the job's placement table, the same on every rank: every member of the group takes
// the same path (one rank in the hierarchical path and another in MPI_Allreduce would hang).
constexpr std::size_t mpi_band_from = std::size_t{1} << 20;
constexpr std::size_t mpi_band_to = std::size_t{2} << 20;
// Below 16 KiB, where no core is shared, the node measured the 2D path (with the swap) forced
// against auto's leader path in two batches, interleaved (five runs against eleven, medians):
// 0.87 against 0.95 at 1 KiB, 0.87 against 0.92 at 4 KiB; at 4-256 B the two were within the runs'
// spread (0.97-1.07 against 1.02-1.03). Every rank there carries half the message in a pair of its
// own, and no broadcast inside the node follows: auto takes the 2D path from 1 KiB where no
// machine's ranks share cores.
constexpr std::size_t two_d_from_on_free_cores = 1024;
// Where a host's ranks share only its own cores (CoreSharing::WithinHosts: the 2-core machine, a core a
// host; benchmarks/results/targets-across-hosts-2026-11-27/, band-2+2/), five runs interleaved at
// 2 + 2, medians (range): the leader path 0.58 at 256 KiB, 0.68 (0.62-0.83) at 512 KiB, 0.97
// (0.72-1.08) at 1 MiB, 0.98 at 2 MiB, 0.82 at 4 MiB; the 2D path 0.66, 1.07 (1.00-1.13), 1.30
// (1.01-1.40), 0.97, 0.78; MPI's call 0.99-1.01. With a host's two ranks on one core, the 2D path's
// chunks in flight each wait for their owner to be scheduled, where the leader path has one rank a
// host on the network: auto takes the leader path there below 4 MiB, the 2D path from it.
constexpr std::size_t two_d_from_within_hosts = std::size_t{4} << 20;

// Messages up to this size go one-shot (measured: beyond it the split arithmetic wins).
constexpr std::size_t one_shot_limit = 16 * 1024;

void one_shot(Segment& seg, const char* operation, const Layout& layout, const Reduction& red) {
  const std::size_t bytes = layout.bytes();
  const std::uint64_t step = seg.begin_step(operation);
  // A few words ride in the control line with the flag: one cache-line transfer per reader.
  const bool in_line = bytes <= Segment::inline_bytes;
  layout.gather(0, bytes, seg.payload(seg.rank(), step, in_line));
  seg.post(Segment::posted(step));
  seg.wait(Segment::posted(step), operation);
  Sources sources(seg.size());
  layout.visit(0, bytes, [&](const Piece& p, std::size_t at, std::size_t done, std::size_t n) {
    sources.fill(seg, step, done, in_line);
    void* out = static_cast<std::byte*>(p.out) + at;
    reduce(out, sources.data(), seg.size(), n / red.element, red.dtype, red.op);
    if (red.divisor > 0) mpi::divide(out, n / red.element, red.dtype, red.divisor);
  });
}

// The whole all-reduce among the node's ranks. A chunk is a multiple of the element size; `gate`
// (optional) is asked for each chunk's input before it is read.
void all_reduce_local(Segment& seg, const char* operation, const Layout& layout, const Reduction& red,
                      const InputGate* gate) {
  const std::size_t total = layout.bytes();
  if (total <= one_shot_limit) {
    if (gate) (*gate)(total);
    return one_shot(seg, operation, layout, red);
  }
  const std::size_t chunk = Segment::half_bytes / red.element * red.element;
  for (std::size_t first = 0; first < total; first += chunk) {
    const std::size_t bytes = std::min(chunk, total - first);
    if (gate) (*gate)(first + bytes);
    const std::uint64_t step = reduce_chunk(seg, operation, layout, red, first, bytes);
    copy_out_chunk(seg, operation, layout, red, step, first, bytes);
  }
}

// Group::spans_hosts and Group::ranks_per_node, worked out once per group from the job's placement
// table.
void work_out_nodes(Group& group) {
  const auto& ranks = context("all_reduce").topology.ranks;
  const auto& first = ranks[static_cast<std::size_t>(group.world_ranks.front())];
  bool hosts = false;
  std::vector<int> per_node;  // the group's ranks on each world node
  for (const int w : group.world_ranks) {
    const auto& placement = ranks[static_cast<std::size_t>(w)];
    hosts = hosts || placement.hostname != first.hostname;
    const auto node = static_cast<std::size_t>(placement.node_rank);
    if (node >= per_node.size()) per_node.resize(node + 1, 0);
    ++per_node[node];
  }
  std::erase(per_node, 0);
  const bool even = std::all_of(per_node.begin(), per_node.end(), [&](int n) { return n == per_node.front(); });
  group.spans_hosts = hosts ? 1 : 0;
  group.ranks_per_node = even ? per_node.front() : 0;
}

// Who competes for the job's cores, for auto's choices across hosts (the same on every rank):
//   - None: no machine runs more ranks than it has CPUs (the GPU node's two hosts on 8 cores each);
//   - WithinHosts: some machine does, but no two hosts share a machine's CPUs: a host's own ranks take
//     turns on its cores, as on oversubscribed real machines (the 2-core harness, a core a host);
//   - AcrossHosts: two hosts on one machine run on the same CPUs (namespaces or containers on one box:
//     the 2-core harness's default), and one host's ranks wait for cores the other's hold.
// A leaders' path lets one rank a host talk to the network while its others wait in the segment:
// where a host's ranks take turns on its cores that saves MPI's context switches across the network,
// where the hosts take turns with each other the segment's readers wait for them instead.
enum class CoreSharing { None, WithinHosts, AcrossHosts };
CoreSharing core_sharing(const char* operation) {
  const Context& ctx = context(operation);
  if (!ctx.cores_shared_somewhere) return CoreSharing::None;
  return ctx.hosts_share_cores ? CoreSharing::AcrossHosts : CoreSharing::WithinHosts;
}

// How an all-reduce on a group spanning nodes travels. The same on every member: it depends only
// on the settings, the size and the placement table (one rank in MPI_Allreduce and another in a
// hierarchical path would hang).
enum class AcrossNodes { Mpi, Leader, TwoD };

AcrossNodes across_nodes(const Call& call) {
  Group& group = *call.group;
  if (group.ranks_per_node < 0) work_out_nodes(group);
  const int ranks_per_node = group.ranks_per_node;
  // The 2D path needs equal slices on every node, and more than one rank a node to slice for.
  const bool two_d = ranks_per_node > 1;
  switch (settings(call.name).host_all_reduce) {
    case HostAllReduce::Mpi: return AcrossNodes::Mpi;
    case HostAllReduce::Shm: return AcrossNodes::Leader;
    case HostAllReduce::TwoD: return two_d ? AcrossNodes::TwoD : AcrossNodes::Leader;
    case HostAllReduce::Auto: break;
  }
  const std::size_t bytes = call.count * size_of(call.dtype);
  // Across real hosts with more than one rank on some node (the measurements above): uneven nodes
  // take the leader path at every size. Even ones take it below 4 MiB where a host's ranks share only
  // its own cores; elsewhere below 16 KiB (1 KiB where no cores are shared), MPI's all-reduce from 1
  // to 2 MiB where two hosts share a machine's cores, and the 2D path (every local rank carries a
  // slice) elsewhere.
  if (group.spans_hosts == 1 && ranks_per_node != 1) {
    const CoreSharing sharing = core_sharing(call.name);
    if (sharing == CoreSharing::WithinHosts)
      return two_d && bytes >= two_d_from_within_hosts ? AcrossNodes::TwoD : AcrossNodes::Leader;
    const bool cores_shared = sharing == CoreSharing::AcrossHosts;
    const std::size_t two_d_from = cores_shared ? hierarchical_crossover : two_d_from_on_free_cores;
    if (!two_d || bytes < two_d_from) return AcrossNodes::Leader;
    const bool in_band = bytes >= mpi_band_from && bytes < mpi_band_to;
    if (in_band && cores_shared) return AcrossNodes::Mpi;
    return AcrossNodes::TwoD;
  }
  // One host (simulated nodes), or one rank a node (1 + 1): the crossover measured on one host.
  return bytes >= hierarchical_crossover ? AcrossNodes::Leader : AcrossNodes::Mpi;
}

// The 2D all-gather (shm/two_level_all_gather.cpp) against MPI_Allgather at 2 + 2 on the two-host
// harness (benchmarks/results/two-hosts-2026-11-27-2d-others/), three runs each, 16 B-64 MiB
// gathered: each host on a core of its own 0.67-0.99 below 256 KiB, 0.59-0.72 from 256 KiB; both
// hosts on both cores 1.06-1.48 below 16 KiB, 0.90-1.07 at 16-64 KiB (median 1.02 at 64 KiB, MPI's
// call 1.02), 0.82-1.16 at 256 KiB-1 MiB, 0.67-1.00 from 4 MiB. On the GPU node's quiet cores
// (two-hosts-2026-11-27-h200/) 1.00-1.16 below 4 KiB, 0.82-0.85 at 4-64 KiB, where MPI's call
// measured 1.02-1.03 (1.07-1.12 in three later runs). A host sends half the bytes MPI's does (the
// veth's counts): N / 2 against N. The pieces' segment steps cost a context switch each where ranks
// share cores, and nothing where they do not: auto takes it from 4 KiB where no machine's ranks
// share cores (the GPU node) and from 64 KiB where some do (both 2-core set-ups won or were even
// with MPI's call there); below, MPI.
// Where a host's ranks take turns on its own cores (a core a host) the leaders' path beat it at every
// size (0.46-0.65 against 0.62-0.77: leader_all_gather below), and auto leaves it out.
constexpr std::size_t two_d_all_gather_from(CoreSharing sharing) {
  switch (sharing) {
    case CoreSharing::None: return 4 * 1024;
    case CoreSharing::WithinHosts: break;
    case CoreSharing::AcrossHosts: return 64 * 1024;
  }
  return SIZE_MAX;
}
// The 2D reduce-scatter (shm/two_level_reduce_scatter.cpp) against MPI_Reduce_scatter_block, the
// same harness and runs, 16 B-64 MiB scattered: medians a core a host 0.71-0.93 below 16 KiB,
// 0.70-0.90 at 16-64 KiB, 0.25-0.39 from 256 KiB; shared cores 0.68-0.93 below 16 KiB (one launch
// of three 1.06-1.13), 0.74-0.96 at 16-64 KiB, 0.22-0.38 from 256 KiB; MPI's own call 1.00-1.04.
// On the GPU node 0.73-0.98 below 16 KiB, 0.16-0.89 above. Open MPI's reduce-scatter at 4 ranks
// sends 2.5 times the 2D path's bytes across the hosts (the veth's counts). Auto takes it at every
// size, but where a host's ranks take turns on its own cores (a core a host, 2 + 2, three runs
// interleaved, benchmarks/results/targets-across-hosts-2026-11-28/): the leaders' path measured
// 0.46-0.74 below 64 KiB of input against the 2D path's 0.65-0.97 (its pieces' steps each wait for
// their owner to be scheduled), and 0.95-1.17 at 64 KiB against 0.86-0.89. Auto takes the leaders'
// there below 64 KiB of input (leader_reduce_scatter).
constexpr std::size_t two_d_reduce_scatter_from(CoreSharing sharing) {
  return sharing == CoreSharing::WithinHosts ? std::size_t{64} << 10 : 0;
}
//
// Whether an all_gather or a reduce_scatter on a group spanning nodes takes its 2D path: forced by
// MPIDIST_HOST_ALLREDUCE=2d, and under auto across real hosts (the all-gather from the sizes above,
// of its gathered output). It needs nodes of equal size above one rank, and bytes to move.
// The same on every member, as across_nodes.
bool two_d_other(const Call& call) {
  Group& group = *call.group;
  if (group.ranks_per_node < 0) work_out_nodes(group);
  const std::size_t block = call.count * size_of(call.dtype);
  if (group.ranks_per_node < 2 || block == 0) return false;
  const bool gather = call.kind == CollectiveKind::AllGather;
  // The reduce-scatter's pieces of every block share a segment half: 64 bytes a rank, at least.
  if (!gather && call.size > static_cast<int>(Segment::half_bytes / 64)) return false;
  switch (settings(call.name).host_all_reduce) {
    case HostAllReduce::TwoD: return true;
    case HostAllReduce::Auto:
      if (group.spans_hosts != 1) return false;
      return (gather ? two_d_all_gather_from : two_d_reduce_scatter_from)(core_sharing(call.name)) <=
             block * static_cast<std::size_t>(call.size);
    case HostAllReduce::Mpi:
    case HostAllReduce::Shm: return false;
  }
  return false;
}

// MPIDIST_HOST_ALLREDUCE's word on a path through the nodes' leaders across nodes (the broadcast,
// the all-gather and reduce-scatter beside their 2D paths, the equal-block all_to_all): shm and 2d
// take it, mpi does not, auto (none) measures.
std::optional<bool> forced_through_leaders(const char* operation) {
  switch (settings(operation).host_all_reduce) {
    case HostAllReduce::Shm:
    case HostAllReduce::TwoD: return true;
    case HostAllReduce::Mpi: return false;
    case HostAllReduce::Auto: break;
  }
  return std::nullopt;
}

// Whether auto's paths through the leaders may apply to `group`: across real hosts, with more than
// one of its ranks on some node (at one rank a node they are MPI's own tree). The same on every member.
bool leaders_may_help(Group& group) {
  if (group.ranks_per_node < 0) work_out_nodes(group);
  return group.spans_hosts == 1 && group.ranks_per_node != 1;
}

// The all-gather through the nodes' leaders (shm/leader_all_gather.cpp) against MPI_Allgather on the
// two-host harness (benchmarks/results/all-gather-through-leaders-2026-11-27/), three runs each, 16 B-
// 64 MiB gathered, medians: at 3 + 1 a core a host 0.44-0.91, both hosts on both cores 0.55-0.87
// (MPI's own call 1.01-1.05); at 2 + 2 a core a host 0.46-0.65 at every size (the 2D path 0.62-0.77
// and auto's MPI 1.01-1.10 below 64 KiB in the same batch), both hosts on both cores 1.04-1.05 below
// 4 KiB and 1.07-1.12 at 64 KiB-16 MiB (the 2D path there: 0.77-0.92 from 64 KiB). Uneven nodes have
// no 2D path: auto takes the leaders' at every size there. On even nodes it takes the leaders' at
// every size where a host's ranks share only its own cores (CoreSharing::WithinHosts); elsewhere it
// keeps the 2D path where it applies (two_d_other) and below it takes the leaders' where no
// machine's ranks share cores, MPI where two hosts share a machine's.
// Then on the GPU node's quiet cores, each host on 8 (benchmarks/results/two-hosts-2026-11-27-h200-
// leaders/), 16 B-64 MiB gathered: at 3 + 1 the leaders' path 0.73-0.83 below 1 MiB (MPI's own call
// 1.02-1.09), but from 1 MiB 0.97-1.13 (single runs up to 1.37) against MPI's 1.00-1.01: with no
// core shared MPI's ring overlaps its steps, while the leaders' three phases (segment gather,
// leaders' exchange, segment broadcast) run one after the other. At 2 + 2 the leaders' path measured
// 0.99-1.14 against the 2D path's 0.80-0.98 from 4 KiB, and below 4 KiB all three (leaders, 2D, MPI)
// within the runs' spread (medians 0.99-1.09). So where no machine's ranks share cores the leaders
// carry gathered outputs below 1 MiB only.
constexpr std::size_t leader_all_gather_below_on_free_cores = std::size_t{1} << 20;

// Whether an all_gather on a group spanning nodes, not taking its 2D path, goes through the leaders:
// forced by MPIDIST_HOST_ALLREDUCE=shm, and by 2d where the 2D path does not apply; under auto as
// above. Its leaders' MPI_Allgatherv counts the whole output in one int. The same on every member.
bool leader_all_gather(const Call& call) {
  const std::size_t gathered = call.count * static_cast<std::size_t>(call.size);
  if (gathered > mpi::max_count() || call.count == 0) return false;
  if (const auto forced = forced_through_leaders(call.name)) return *forced;
  if (!leaders_may_help(*call.group)) return false;
  switch (core_sharing(call.name)) {
    case CoreSharing::None: return gathered * size_of(call.dtype) < leader_all_gather_below_on_free_cores;
    case CoreSharing::WithinHosts: return true;
    case CoreSharing::AcrossHosts: return call.group->ranks_per_node == 0;
  }
  return false;
}

// The reduce-scatter through the nodes' leaders (shm/leader_reduce_scatter.cpp), for nodes where the
// 2D reduce-scatter cannot slice (3 + 1), against MPI_Reduce_scatter at 3 + 1, 16 B-16 MiB in (64 MiB
// on the node), three runs each, medians (MPI's own call 0.98-1.10 in the same batches):
//   - the GPU node's quiet cores (benchmarks/results/two-hosts-2026-11-27-h200-leaders/, forced):
//     0.58-0.73 below 16 KiB, 0.89 at 16 KiB, then 1.11-1.64;
//   - the 2-core machine (benchmarks/results/reduce-scatter-through-leaders-2026-11-27/): a core a
//     host 0.51-0.97 below 4 MiB, 1.04-1.07 at 4-16 MiB; both hosts on both cores 0.59-0.70 below
//     64 KiB, then 0.93-1.65.
// Its leader sums the node's whole input (P blocks) before anything crosses the network and hands
// the blocks out after, one phase after the other, where MPI's recursive halving overlaps its steps:
// auto takes it below 64 KiB of input.
constexpr std::size_t leader_reduce_scatter_below = std::size_t{64} << 10;
// Where a host's ranks take turns on its cores (CoreSharing::WithinHosts) MPI's steps do too, and the
// leaders' path wins up to 4 MiB (a core a host above; 1.02-1.05 for MPI's call from 64 KiB in
// benchmarks/results/targets-across-hosts-2026-11-27/).
constexpr std::size_t leader_reduce_scatter_below_within_hosts = std::size_t{4} << 20;

// Whether a reduce_scatter on a group spanning nodes, not taking its 2D path, goes through the
// leaders: forced by MPIDIST_HOST_ALLREDUCE=shm, and by 2d where the 2D path does not apply; under
// auto as above. Its leaders' MPI_Reduce_scatter counts the whole input in one int. The same on every
// member.
bool leader_reduce_scatter(const Call& call) {
  const std::size_t total = call.count * static_cast<std::size_t>(call.size);
  if (total > mpi::max_count() || call.count == 0) return false;
  if (const auto forced = forced_through_leaders(call.name)) return *forced;
  if (!leaders_may_help(*call.group)) return false;
  const std::size_t bytes = total * size_of(call.dtype);
  const CoreSharing sharing = core_sharing(call.name);
  // Even nodes: below where their 2D path starts (above 0 only where a host's ranks share its cores).
  if (call.group->ranks_per_node != 0) return bytes < two_d_reduce_scatter_from(sharing);
  return bytes < (sharing == CoreSharing::WithinHosts ? leader_reduce_scatter_below_within_hosts
                                                      : leader_reduce_scatter_below);
}

// The broadcast between the leaders and through the nodes' segments (shm/hierarchical_broadcast.cpp)
// against MPI_Bcast on the two-host harness (benchmarks/results/broadcast-across-hosts-2026-11-27/),
// from roots 0, 1 and 3 at 2 + 2 and 3 + 1, three runs each, 4 B-64 MiB, medians: each host on a core
// of its own 0.28-0.94 at every size and root (no single run above 0.99), MPI's own call 0.97-1.10;
// both hosts on both cores 0.26-0.95 from 1 KiB but for two cells (1.12-1.15: 2 + 2 from root 3 at
// 16 KiB, 3 + 1 from root 0 at 64 KiB; 0.60 and 0.80 with a core a host), and below 1 KiB 0.31-0.88
// but for 3 + 1 from root 1, 1.35-1.37 (launches there settle on one of two speeds; in the slow one
// the segment's readers wait for a core). Then on the GPU node's quiet cores (benchmarks/results/
// two-hosts-2026-11-27-h200-leaders/, two to four runs, 4 B-4 MiB): 0.24-0.89 from every root at
// every size but two bands, each at MPI's own level through mpidist's front end in the same runs:
// root 0 at 2 + 2 below 4 KiB, 1.00-1.06 (its binomial tree crosses once too); root 1 at 3 + 1 below
// 1 KiB, 1.07-1.33 (MPI's call 1.06-1.18: Open MPI's tree from there reaches the other host in
// 3-5 us, as fast as the leaders' path). Auto takes it across real hosts where some node holds more
// than one rank: from 1 KiB where two hosts share a machine's cores (CoreSharing::AcrossHosts, the set-up
// of the band at 3 + 1 from root 1), at every size elsewhere (with a core a host, MPI's call measured
// 1.02-1.18 below 1 KiB: benchmarks/results/targets-across-hosts-2026-11-27/). On one host (simulated
// nodes, not measured) and at one rank a node (the same tree) MPI_Bcast.
constexpr std::size_t hierarchical_broadcast_from_on_shared_cores = 1024;

// Whether a broadcast on a group spanning nodes takes that path: forced by MPIDIST_HOST_ALLREDUCE=shm
// or 2d, and under auto as above. The same on every member, as across_nodes.
bool hierarchical_broadcast(const Call& call) {
  if (const auto forced = forced_through_leaders(call.name)) return *forced;
  return leaders_may_help(*call.group) && (core_sharing(call.name) != CoreSharing::AcrossHosts ||
                                           call.count * size_of(call.dtype) >= hierarchical_broadcast_from_on_shared_cores);
}

}  // namespace

// The all_to_all of equal blocks through the nodes' leaders (shm/leader_all_to_all.cpp) against
// MPI_Alltoall on the 2-core machine's two hosts (benchmarks/results/all-to-all-through-leaders-
// 2026-11-27/), 16 B-256 KiB a rank, three runs each, medians (MPI's own call 1.02-1.12 in the same
// batches): at 3 + 1 0.53-0.76 below 64 KiB and 0.68-0.69 at it, 1.10-1.12 at 128-256 KiB (a core a
// host and shared cores alike); at 2 + 2 a core a host 0.53-0.66 below 64 KiB, 1.00 at it; shared
// cores 0.71-0.84 below 64 KiB, 1.45-1.49 at 64-128 KiB. On the GPU node's quiet cores (benchmarks/
// results/two-hosts-2026-11-27-h200-leaders/, run 8, three runs under a 64 KiB rule): at 3 + 1
// 0.47-0.56 below 16 KiB, 0.73 at 16-32 KiB; at 2 + 2 0.72-0.91 below 32 KiB, but 1.10 (1.15) at
// 32 KiB. Small messages are latency: one message each way between the leaders against MPI's one per
// pair of ranks across. Auto takes it across real hosts, below 32 KiB a rank.
constexpr std::size_t leader_all_to_all_below = std::size_t{32} << 10;
// Where a host's ranks share only its own cores (a core a host on the 2-core machine, five runs, 2+2
// and 3+1, benchmarks/results/targets-across-hosts-2026-11-27/all-to-all/): forced at 64 KiB a rank
// 0.67 (0.65-0.72) at 3 + 1 against MPI's call's 1.04, and at 2 + 2 0.96 (0.87-1.24), then 1.09-1.32
// under auto (targets-a2a/, three runs); at 128-256 KiB 1.00 (to 1.61) and 1.10 at 3 + 1. Auto takes
// it there on uneven nodes below 128 KiB a rank.
constexpr std::size_t leader_all_to_all_below_within_hosts = std::size_t{128} << 10;
// On even nodes there, eight runs at 2 + 2 (the five above, three more interleaved with auto's MPI
// call in benchmarks/results/targets-across-hosts-2026-11-28/): 0.83-0.98 at 128 KiB a rank and
// 0.55-0.89 at 256 KiB (MPI's call 1.01-1.11; its 64 KiB blocks are past TCP's eager limit, a
// rendezvous each, where the leaders' one message each way pays one), but 0.87-1.44 at 64 KiB; from
// 512 KiB a rank's blocks no longer fit a segment half (MPI's call, 0.99-1.04). Auto takes it there
// from 128 KiB a rank, as far as it fits, and below 32 KiB.
constexpr std::size_t leader_all_to_all_from_on_even_nodes_within_hosts = std::size_t{128} << 10;

// Whether exchange `e` goes through the leaders (through_leaders.hpp).
bool leader_all_to_all(const mpi::Exchange& e, const char* operation) {
  Group& group = *e.group;
  if (e.shape != mpi::Exchange::Shape::AllToAll || group.topology.num_nodes < 2 || e.send_counts.empty()) return false;
  const std::size_t block = e.send_counts[0] * size_of(e.dtype);
  if (block == 0) return false;
  // The cheap answers first: leader_all_to_all_fits walks the group's nodes.
  const auto forced = forced_through_leaders(operation);
  if (forced == false) return false;
  if (!forced) {
    if (!leaders_may_help(group)) return false;  // it works out group.ranks_per_node
    const std::size_t bytes = block * static_cast<std::size_t>(e.size);
    const bool taken = core_sharing(operation) != CoreSharing::WithinHosts ? bytes < leader_all_to_all_below
                       : group.ranks_per_node == 0 ? bytes < leader_all_to_all_below_within_hosts
                                                   : bytes < leader_all_to_all_below ||
                                                         bytes >= leader_all_to_all_from_on_even_nodes_within_hosts;
    if (!taken) return false;
  }
  return leader_all_to_all_fits(group, block, operation);
}

bool accepts(const Call& call, bool one_node) {
  if (call.device >= 0 || call.size < 2) return false;
  if (call.group->topology.num_nodes == 1 ? !one_node : one_node) return false;
  if (!one_node) {
    if (call.kind == CollectiveKind::AllGather) return two_d_other(call) || leader_all_gather(call);
    if (call.kind == CollectiveKind::ReduceScatter) return two_d_other(call) || leader_reduce_scatter(call);
    if (call.kind == CollectiveKind::Broadcast) return hierarchical_broadcast(call);
    return call.kind == CollectiveKind::AllReduce && across_nodes(call) != AcrossNodes::Mpi;
  }
  // Every rank needs a 64-byte piece of a half (reduce_scatter), which bounds a node at 4096 ranks.
  if (call.kind != CollectiveKind::AllReduce && call.size > static_cast<int>(Segment::half_bytes / 64)) return false;
  return settings(call.name).host_all_reduce != HostAllReduce::Mpi;
}

void run_one_node(const Call& call) {
  if (call.kind != CollectiveKind::AllReduce) return run_other_collective(call);
  const Piece piece{call.in, call.out, call.count * size_of(call.dtype)};
  all_reduce_pieces(*call.group, call.name, std::span(&piece, 1), call.dtype, call.op);
}

void all_reduce_pieces(Group& group, const char* operation, std::span<const Piece> pieces, DataType dtype,
                       ReduceOp op, const InputGate* gate) {
  Segment& seg = segment(group, operation);
  all_reduce_local(seg, operation, Layout(pieces), reduction_of(dtype, op, seg.size()), gate);
}

// The all-reduce of two leaders below TCP's eager limit (Open MPI's btl_tcp_eager_limit, 64 KiB):
// one exchange, then the segment's own reduction of the two, leader 0's values first on both (the
// same bits). Open MPI's all-reduce of two ranks takes two round trips from a few KiB on: with it
// the leader path measured 1.38-1.45 x MPI_Allreduce at 4 KiB at 2 + 2 on the H200 node's two
// hosts, with the exchange 0.86-0.95. From 64 KiB the exchange is a rendezvous (another round
// trip), and at 1-4 MiB it was slower than MPI's all-reduce of the two: it is used below 64 KiB only.
constexpr std::size_t leader_exchange_limit = 64 * 1024;

void exchange_with_other_leader(MPI_Comm leaders, void* data, std::size_t count, MPI_Datatype type, DataType dtype,
                                ReduceOp op) {
  int me = 0;
  MPIDIST_MPI_CHECK(MPI_Comm_rank(leaders, &me));
  const int other = 1 - me;
  const int n = static_cast<int>(count);
  // On the heap, not the stack: a caller's thread may have a small one. Beside a TCP round trip
  // of 10 µs or more, the allocation is free.
  const auto theirs = std::make_unique_for_overwrite<std::byte[]>(count * size_of(dtype));
  MPIDIST_MPI_CHECK(MPI_Sendrecv(data, n, type, other, 0, theirs.get(), n, type, other, 0, leaders, MPI_STATUS_IGNORE));
  const void* const in_leader_order[2] = {me == 0 ? data : theirs.get(), me == 0 ? theirs.get() : data};
  reduce(data, in_leader_order, 2, count, dtype, op);  // Avg as Sum: the caller divides
}

void run_hierarchical(const Call& call) {
  if (call.kind == CollectiveKind::AllGather)
    return two_d_other(call) ? run_two_level_all_gather(call) : run_leader_all_gather(call);
  if (call.kind == CollectiveKind::ReduceScatter)
    return two_d_other(call) ? run_two_level_reduce_scatter(call) : run_leader_reduce_scatter(call);
  if (call.kind == CollectiveKind::Broadcast) return run_hierarchical_broadcast(call);
  if (across_nodes(call) == AcrossNodes::TwoD) return run_two_level(call);
  Group& group = *call.group;
  // A rank alone on its node (the 1 of 3 + 1) needs no segment.
  Segment* seg = group.topology.local_size > 1 ? &segment(group, call.name) : nullptr;
  const std::size_t bytes = call.count * size_of(call.dtype);
  const Piece piece{call.in, call.out, bytes};
  // Inside the node a plain sum (or min, ...); the average is taken once, by the leader, at the end.
  if (seg) reduce_to_rank(*seg, call.name, piece, reduction_of(call.dtype, call.op, 0), 0);
  else if (call.in != call.out) std::memcpy(call.out, call.in, bytes);
  if (group.leaders != MPI_COMM_NULL) {
    const MPI_Datatype type = mpi::datatype(call.dtype);
    const MPI_Op op = mpi::reduction(call.op, call.dtype);
    // Pieces of 4 MiB: Open MPI's all-reduce slows down tenfold above 16 MiB (it faults its
    // temporary memory in anew on every call), and ints bound an MPI count anyway.
    const std::size_t limit = std::max<std::size_t>(1, (std::size_t{4} << 20) / size_of(call.dtype));
    auto* out = static_cast<std::byte*>(call.out);
    if (group.topology.num_nodes == 2 && bytes < leader_exchange_limit) {
      exchange_with_other_leader(group.leaders, out, call.count, type, call.dtype, call.op);
    } else {
      for (std::size_t first = 0; first < call.count; first += limit) {
        const int n = static_cast<int>(std::min(limit, call.count - first));
        MPIDIST_MPI_CHECK(
            MPI_Allreduce(MPI_IN_PLACE, out + first * size_of(call.dtype), n, type, op, group.leaders));
      }
    }
    if (call.op == ReduceOp::Avg) mpi::divide(call.out, call.count, call.dtype, call.size);
  }
  if (seg) broadcast_from_rank(*seg, call.name, call.out, bytes, 0);
}

}  // namespace mpidist::detail::shm
