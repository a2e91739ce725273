// The front end of the collectives where every pair of ranks moves a block of its own size:
// all_to_all (equal blocks and uneven splits), all_gather_v, gather and scatter. Describes each
// as an exchange of blocks, checks it (with MPIDIST_VALIDATE=1: across the ranks, naming each
// rank's value) and hands it to mpi/uneven_collectives (host memory) or uneven_device (device
// memory: NCCL, or staged through host memory). Also their non-blocking forms (run_async), whose
// host exchange goes to the communicator's lane where MPI allows.
#include <cstdint>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "core/async_lane.hpp"
#include "core/context.hpp"
#include "core/device_backend.hpp"
#include "core/group.hpp"
#include "core/mpi_check.hpp"
#include "core/settings.hpp"
#include "core/text_collectives.hpp"
#include "mpi/uneven_collectives.hpp"
#include "shm/exchange.hpp"
#include "shm/segment.hpp"
#include "shm/through_leaders.hpp"
#include "tensors/issue.hpp"
#include "tensors/uneven_device.hpp"
#include "watch/agreement.hpp"
#include "watch/call_scope.hpp"
#include "mpidist/async_collectives.hpp"
#include "mpidist/collectives.hpp"
#include "mpidist/error.hpp"
#include "mpidist/guards.hpp"

namespace mpidist {
namespace detail {
namespace {

using Shape = mpi::Exchange::Shape;

std::string list(Counts counts) {
  std::string text = "[";
  for (std::size_t i = 0; i < counts.size(); ++i) text += (i ? ", " : "") + std::to_string(counts[i]);
  return text + "]";
}

// at[i]: the sum of counts[0..i), block i's offset when the blocks lie one after the other.
void offsets(const mpi::Counts& counts, mpi::Counts& at) {
  at.resize_for_overwrite(counts.size());
  std::size_t sum = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) at[i] = sum, sum += counts[i];
}

std::size_t sum(Counts counts) {
  std::size_t total = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) total += counts[i];
  return total;
}

void copy(Counts counts, mpi::Counts& to) {
  to.resize_for_overwrite(counts.size());
  for (std::size_t i = 0; i < counts.size(); ++i) to[i] = counts[i];
}

// What one call asked for, before it is checked.
struct Request {
  Shape shape;
  const char* name;
  BufferView in, out;
  Counts send_counts, recv_counts;  // all_to_all's uneven form; all_gather_v's counts in recv_counts
  int root = 0;
  Stream stream = nullptr;
};

// Where this rank's side of the call lives, as the ranks agree on it: a rank with no element to
// send or receive has no say (one receiving everything, say) and follows the others.
enum Memory : std::int64_t { HostMemory = -1, NoElements = 0, DeviceMemory = 1 };

// The buffers this rank reads and writes: scatter's in and gather's out are the root's only.
bool in_used(const Request& r, int rank) { return r.shape != Shape::Scatter || rank == r.root; }
bool out_used(const Request& r, int rank) { return r.shape != Shape::Gather || rank == r.root; }

// The device of this rank's buffers (-1: host memory, or no elements): in and out on one device,
// this rank's (mpidist::device()), as for the other collectives. Throws the local Error.
int device_of(const Request& r, int rank) {
  const bool in = in_used(r, rank) && r.in.count() > 0, out = out_used(r, rank) && r.out.count() > 0;
  if (in && out && r.in.device() != r.out.device()) {
    const auto where = [](int d) { return d < 0 ? std::string("host memory") : "cuda:" + std::to_string(d); };
    throw Error(r.name, "in and out must live in the same memory (host, or the same CUDA device); in is on " +
                            where(r.in.device()) + ", out on " + where(r.out.device()));
  }
  const int device = in ? r.in.device() : out ? r.out.device() : -1;
  if (device >= 0) {
    const int mine = rank_device(context(r.name).topology.local_rank);
    if (device != mine)
      throw Error(r.name, "buffers are on cuda:" + std::to_string(device) + " but this rank's device is cuda:" +
                              std::to_string(mine) + " (mpidist::device())");
  }
  return device;
}

// Without device_of's checks: a rank whose own checks failed still votes and agrees with it.
Memory memory_of(const Request& r, int rank) {
  const bool in = in_used(r, rank) && r.in.count() > 0, out = out_used(r, rank) && r.out.count() > 0;
  if (!in && !out) return NoElements;
  return (in && r.in.device() >= 0) || (out && r.out.device() >= 0) ? DeviceMemory : HostMemory;
}

std::string memory_text(Memory m) {
  return m == HostMemory ? "host memory" : m == DeviceMemory ? "device memory" : "no elements";
}

// The count every rank must share (Count of the agreement), or 0 where counts differ by rank.
std::size_t shared_count(const Request& r, int size) {
  switch (r.shape) {
    case Shape::AllToAll: return size > 0 ? r.in.count() / static_cast<std::size_t>(size) : 0;
    case Shape::Gather: return r.in.count();
    case Shape::Scatter: return r.out.count();
    default: return 0;
  }
}

// This rank's own checks, and its side of the exchange, written into `e` (filled in place: a
// small call's front end is a good part of its cost). Throws the local Error.
void describe(const Request& r, Group& group, int size, int rank, mpi::Exchange& e) {
  const char* name = r.name;
  if (r.in.dtype() != r.out.dtype())
    throw Error(name, "in has element type " + std::string(to_string(r.in.dtype())) + " but out has " +
                          std::string(to_string(r.out.dtype())));
  const auto n = static_cast<std::size_t>(size);
  const auto me = static_cast<std::size_t>(rank);
  e.shape = r.shape;
  e.group = &group;
  e.in = r.in.data();
  e.out = r.out.data();
  e.dtype = r.in.dtype();
  e.root = r.root;
  e.rank = rank;
  e.size = size;
  const auto want_out = [&](std::size_t expected, const char* rule) {
    if (r.out.count() != expected)
      throw Error(name, "out has " + std::to_string(r.out.count()) + " elements but must have " +
                            std::to_string(expected) + " (" + rule + ")");
  };
  const auto want_size = [&](Counts counts, const char* what) {
    if (counts.size() != n)
      throw Error(name, std::string(what) + " has " + std::to_string(counts.size()) + " entries but the group has " +
                            std::to_string(size) + " ranks");
    for (std::size_t i = 0; i < n; ++i)
      if (counts.negative(i))
        throw Error(name, std::string(what) + "[" + std::to_string(i) + "] is " +
                              std::to_string(static_cast<std::int64_t>(counts[i])) + "; counts cannot be negative");
  };
  const auto check_root = [&] {
    if (r.root < 0 || r.root >= size)
      throw Error(name, "root " + std::to_string(r.root) + " out of range for " +
                            (MainProcessContext::depth() > 0 ? "the one rank of a MainProcessContext"
                                                             : "world size " + std::to_string(size)));
  };
  switch (r.shape) {
    case Shape::AllToAll: {
      if (r.in.count() % n != 0)
        throw Error(name, "in has " + std::to_string(r.in.count()) + " elements, not a multiple of the world size " +
                              std::to_string(size));
      want_out(r.in.count(), "in's count");
      const std::size_t k = r.in.count() / n;
      e.send_counts.assign(n, k);
      e.recv_counts.assign(n, k);
      break;
    }
    case Shape::AllToAllV: {
      want_size(r.send_counts, "send_counts");
      want_size(r.recv_counts, "recv_counts");
      if (sum(r.send_counts) != r.in.count())
        throw Error(name, "send_counts " + list(r.send_counts) + " add up to " + std::to_string(sum(r.send_counts)) +
                              " but in has " + std::to_string(r.in.count()) + " elements");
      if (sum(r.recv_counts) != r.out.count())
        throw Error(name, "recv_counts " + list(r.recv_counts) + " add up to " + std::to_string(sum(r.recv_counts)) +
                              " but out has " + std::to_string(r.out.count()) + " elements");
      copy(r.send_counts, e.send_counts);
      copy(r.recv_counts, e.recv_counts);
      break;
    }
    case Shape::AllGatherV: {
      want_size(r.recv_counts, "counts");
      if (r.recv_counts[me] != r.in.count())
        throw Error(name, "counts[" + std::to_string(rank) + "] is " + std::to_string(r.recv_counts[me]) +
                              " but this rank's in has " + std::to_string(r.in.count()) + " elements");
      want_out(sum(r.recv_counts), "the sum of counts");
      e.send_counts.assign(n, r.in.count());
      copy(r.recv_counts, e.recv_counts);
      break;
    }
    case Shape::Gather: {
      check_root();
      if (rank == r.root) want_out(r.in.count() * n, "world size x in's count");
      e.send_counts.assign(n, 0);
      e.send_counts[static_cast<std::size_t>(r.root)] = r.in.count();
      e.recv_counts.assign(n, rank == r.root ? r.in.count() : 0);
      break;
    }
    case Shape::Scatter: {
      check_root();
      if (rank == r.root && r.in.count() != r.out.count() * n)
        throw Error(name, "in has " + std::to_string(r.in.count()) + " elements but must have " +
                              std::to_string(r.out.count() * n) + " (world size x out's count)");
      e.send_counts.assign(n, rank == r.root ? r.out.count() : 0);
      e.recv_counts.assign(n, 0);
      e.recv_counts[static_cast<std::size_t>(r.root)] = r.out.count();
      break;
    }
  }
  // All blocks are one shape everywhere: block i's offset is the sum of those before it.
  if (r.shape == Shape::AllGatherV) e.send_displs.assign(n, 0);
  else offsets(e.send_counts, e.send_displs);
  offsets(e.recv_counts, e.recv_displs);
  // Separate buffers only: MPI forbids aliasing, and no in-place layout is defined for these.
  const auto* in_begin = static_cast<const std::byte*>(r.in.data());
  const auto* out_begin = static_cast<const std::byte*>(r.out.data());
  const std::size_t in_bytes = r.in.bytes(), out_bytes = r.out.bytes();
  if (in_used(r, rank) && out_used(r, rank) && in_bytes > 0 && out_bytes > 0 && in_begin < out_begin + out_bytes &&
      out_begin < in_begin + in_bytes)
    throw Error(name, "in and out overlap; " + std::string(name) + " takes separate buffers");
  device_of(r, rank);  // the memory checks, after the shape's (which name the counts)
}

// MPIDIST_VALIDATE: the ranks agree on the element type, the root, the memory and the shared
// count (or, for all_gather_v, the counts); for all_to_all's uneven form every rank's recv_counts
// must be what the others send it. A difference is the same Error on every rank, naming each
// rank's value. Returns whether the call takes the device path (on every rank alike).
bool agree(Group& group, const Fingerprint& fp, const Request& r, const mpi::Exchange* e, std::exception_ptr local) {
  CallRecord mine(r.name, group.sequence);
  mine[CallRecord::Failed] = local ? 1 : 0;
  const Memory memory = local ? NoElements : memory_of(r, group.topology.rank);
  if (!local) {
    mine[CallRecord::Route] = memory;
    mine[CallRecord::Dtype] = static_cast<std::int64_t>(r.in.dtype());
    mine[CallRecord::Root] = r.root;
    mine[CallRecord::Count] = static_cast<std::int64_t>(shared_count(r, group.topology.size));
    if (r.shape == Shape::AllGatherV) mine[CallRecord::Detail] = static_cast<std::int64_t>(fnv1a(list(r.recv_counts)) >> 1);
  }
  const Verdict verdict = agree_on_record(group, fp, mine);
  if (verdict.any_failed()) throw_agreed_failure(group, r.name, local);
  const auto disagree = [&](const char* what, const std::string& value) {
    const auto all = all_gather_text(group.control, value);
    std::string detail = std::string("ranks disagree on ") + what + ":";
    for (std::size_t i = 0; i < all.size(); ++i) detail += (i ? ", rank " : " rank ") + std::to_string(i) + " has " + all[i];
    group.failed_in_step = true;
    throw Error(group.name, r.name, detail);
  };
  if (!verdict.same(CallRecord::Dtype)) disagree("the element type", std::string(to_string(r.in.dtype())));
  if (!verdict.same(CallRecord::Root)) disagree("the root", std::to_string(r.root));
  // Host on some ranks and device on others would take different paths and wait for each other.
  if (verdict.smallest[CallRecord::Route] == HostMemory && verdict.largest[CallRecord::Route] == DeviceMemory)
    disagree("the memory", memory_text(memory));
  const bool device = verdict.largest[CallRecord::Route] == DeviceMemory;
  if (!verdict.same(CallRecord::Count))
    disagree(r.shape == Shape::AllToAll ? "the block count (in's count / world size)"
                                        : r.shape == Shape::Gather ? "in's count" : "out's count",
             std::to_string(shared_count(r, group.topology.size)));
  if (!verdict.same(CallRecord::Detail)) disagree("the counts", list(r.recv_counts));
  if (r.shape != Shape::AllToAllV) return device;
  // What every rank will send this one, against what it expects.
  const auto n = static_cast<std::size_t>(group.topology.size);
  std::vector<std::uint64_t> sends(e->send_counts.begin(), e->send_counts.end()), coming(n);
  MPIDIST_MPI_CHECK(MPI_Alltoall(sends.data(), 1, MPI_UINT64_T, coming.data(), 1, MPI_UINT64_T, group.control));
  std::string problem;
  for (std::size_t i = 0; i < n; ++i)
    if (coming[i] != e->recv_counts[i])
      problem += (problem.empty() ? "" : ", ") + std::string("recv_counts[") + std::to_string(i) + "] is " +
                 std::to_string(e->recv_counts[i]) + " but rank " + std::to_string(i) + " sends " +
                 std::to_string(coming[i]);
  const auto all = all_gather_text(group.control, problem);
  std::string detail;
  for (std::size_t i = 0; i < all.size(); ++i)
    if (!all[i].empty()) detail += (detail.empty() ? "" : "; ") + std::string("rank ") + std::to_string(i) + ": " + all[i];
  if (!detail.empty()) {
    group.failed_in_step = true;
    throw Error(group.name, r.name, "recv_counts do not match the senders' send_counts: " + detail);
  }
  return device;
}

// The call's memory, from this rank's buffers. Only all_to_all's uneven form can leave a rank with
// no elements while the others have some, and only a job with a GPU can have device memory: there
// the ranks vote (a rank with nothing would otherwise not know whether to join an NCCL group or
// MPI's collective, nor, under MPIDIST_VALIDATE=auto, whether the call is checked). The blocking
// call's votes travel with its first messages (votes_in_exchange); this vote, a collective of its
// own, is the non-blocking call's across nodes, whose exchange goes to the lane.
bool device_path(Group& group, const Request& r) {
  int memory = memory_of(r, group.topology.rank);
  if (r.shape == Shape::AllToAllV && settings(r.name).any_device)
    MPIDIST_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &memory, 1, MPI_INT, MPI_MAX, group.control));
  return memory == DeviceMemory;
}

// The call as the recorder and the watchdog see it.
Fingerprint fingerprint(const Request& r, int size, bool async) {
  const bool rooted = r.shape == Shape::Gather || r.shape == Shape::Scatter;
  Fingerprint fp{r.name, shared_count(r, size), shared_count(r, size) * size_of(r.in.dtype()),
                 static_cast<int>(r.in.dtype()), rooted ? r.root : -1, -1, nullptr, 0, false};
  fp.async = async;
  return fp;
}

bool alone(const Group& group) { return MainProcessContext::depth() > 0 || group.topology.size == 1; }

// Inside a MainProcessContext, or in a world of one: this rank's own block, copied.
void run_alone(Group& group, const Request& r) {
  mpi::Exchange e{};
  naming_errors(group.name, [&] { describe(r, group, 1, 0, e); });
  if (const int device = device_of(r, 0); device >= 0)
    naming_errors(group.name, [&] { copy_own_block(e, device, r.stream, r.name); });
  else if (e.recv_counts[0] > 0)
    std::memmove(static_cast<char*>(e.out) + e.recv_displs[0] * size_of(e.dtype),
                 static_cast<const char*>(e.in) + e.send_displs[0] * size_of(e.dtype),
                 e.recv_counts[0] * size_of(e.dtype));
}

// A checked call: this rank's side of the exchange, and whether it takes the device path. Where
// the ranks vote in the exchange (voted), the path is decided in its first messages: this rank's
// own failure waits there (local), and the exchange may be done (exchanged).
struct Prepared {
  mpi::Exchange e{};
  bool device = false;
  bool voted = false;
  bool exchanged = false;
  std::exception_ptr local;
};

// all_to_all's splits in a job with a GPU, unchecked: the ranks' standing (host memory, device
// memory, or failed its own checks) travels with the exchange's first messages, in the segment's
// first step on one node (shm::exchange_split) and in a header beside each block across nodes
// (mpi::exchange_split), instead of device_path's MPI_Allreduce. That vote cost about 0.9 µs a call
// at 2 ranks on one node, and across hosts a whole round trip: 2.1x MPI_Alltoallv at 4 B on a GPU
// node's two-host harness. Checked calls learn the memory from the agreement instead. Non-blocking
// calls vote in the exchange on one node only: across nodes their exchange goes to the lane, after
// the path is known.
bool votes_in_exchange(const Group& group, const Request& r, bool async) {
  const auto& s = settings(r.name);
  return r.shape == Shape::AllToAllV && s.any_device && !s.validate && (!async || shm::takes_exchange(group, r.name));
}

// This rank's checks and the ranks' agreement, or the call's Error on every rank. The call's
// memory, alike on every rank (device_path), decides whether it is checked (under auto: device
// memory only); the agreement then also compares every rank's memory.
Prepared prepare(Group& group, const Request& r, const Fingerprint& fp) {
  Prepared p;
  const auto local = capture([&] { describe(r, group, group.topology.size, group.topology.rank, p.e); });
  if (votes_in_exchange(group, r, fp.async)) {
    p.voted = true;
    p.local = local;
    return p;
  }
  naming_errors(group.name, [&] {
    p.device = device_path(group, r);
    if (settings(r.name).validates(p.device)) {
      p.device = agree(group, fp, r, local ? nullptr : &p.e, local);
      p.e.counts_agreed = true;
    } else if (local) {
      vote_on_local_failure(group, fp, local);
    }
  });
  return p;
}

// Host memory: through the node's segment where the group is on one node, else through MPI, or
// through the nodes' leaders where that measured faster (equal blocks).
void host_exchange(const mpi::Exchange& e, const char* name) {
  if (shm::takes_exchange(*e.group, name)) shm::exchange(e, name);
  else if (shm::leader_all_to_all(e, name)) shm::run_leader_all_to_all(e, name);
  else mpi::exchange(e);
}

// The exchange, started: a device exchange through NCCL returns the Work that waits for it; every
// other path is done on return (null).
std::unique_ptr<WorkState> start_exchange(Group& group, const Request& r, const Prepared& p) {
  return naming_errors(group.name, [&]() -> std::unique_ptr<WorkState> {
    if (p.device) return start_exchange_on_device(p.e, device_of(r, group.topology.rank), r.stream, r.name);
    host_exchange(p.e, r.name);
    return nullptr;
  });
}

// The path voted in the exchange's first messages (votes_in_exchange). Where every rank holds host
// memory (or nothing) the exchange went on and is done. Otherwise no rank's out was written: a rank
// failed its own checks, and every rank raises the same Error, as after vote_on_local_failure (its
// own where all failed, else the lowest failed rank's); or some rank holds device memory, and the
// call takes the device path, checked under auto as any device call (which names a rank in host
// memory).
void decide_in_exchange(Group& group, const Request& r, const Fingerprint& fp, Prepared& p) {
  const mpi::Standing mine = p.local                                                  ? mpi::Standing::Failed
                             : memory_of(r, group.topology.rank) == DeviceMemory ? mpi::Standing::Device
                                                                                  : mpi::Standing::Host;
  const mpi::Exchange* host = mine == mpi::Standing::Host ? &p.e : nullptr;
  const std::string failure = p.local ? describe_exception(p.local) : std::string();
  const mpi::Split split = naming_errors(group.name, [&] {
    return shm::takes_exchange(group, r.name) ? shm::exchange_split(group, host, mine, failure, r.name)
                                              : mpi::exchange_split(group, host, mine, failure);
  });
  switch (split.kind) {
    case mpi::Split::Exchanged: p.exchanged = true; return;
    case mpi::Split::Failed:
      group.failed_in_step = true;  // every rank read the same votes: they stay in step
      if (p.local && split.failed == group.topology.size) std::rethrow_exception(p.local);
      throw Error(group.name, r.name, "rank " + std::to_string(split.first_failed) + " failed: " + split.failure);
    case mpi::Split::OnDevice:
      p.device = true;
      if (settings(r.name).validates(true)) naming_errors(group.name, [&] { p.device = agree(group, fp, r, &p.e, nullptr); });
      return;
  }
}

// Whether no rank moves an element, as every rank's own arguments say alike (the shapes whose
// counts every rank knows): then no rank waits for another, as with MPI, which returns at once.
bool moves_nothing(const Request& r) {
  switch (r.shape) {
    case Shape::AllToAll: return r.in.count() == 0;
    case Shape::AllGatherV: return sum(r.recv_counts) == 0;
    case Shape::Gather: return r.in.count() == 0;
    case Shape::Scatter: return r.out.count() == 0;
    case Shape::AllToAllV: return false;  // a rank knows only its own counts
  }
  return false;
}

// The call's data, once prepared: voted in the exchange first where the ranks do so. Returns the
// Work of a device exchange still in flight (start_exchange), else null.
std::unique_ptr<WorkState> start_prepared(Group& group, const Request& r, const Fingerprint& fp, Prepared& p) {
  if (p.voted) decide_in_exchange(group, r, fp, p);
  else if (moves_nothing(r)) return nullptr;
  return p.exchanged ? nullptr : start_exchange(group, r, p);
}

void run_prepared(Group& group, const Request& r, const Fingerprint& fp, Prepared& p) {
  if (auto work = start_prepared(group, r, fp, p)) naming_errors(group.name, [&] { work->complete(); });
}

void run(Group& group, const Request& r) {
  if (alone(group)) return run_alone(group, r);
  const Fingerprint fp = fingerprint(r, group.topology.size, false);
  CallScope scope(group, fp);
  Prepared p = prepare(group, r, fp);
  run_prepared(group, r, fp, p);
}

// The non-blocking form: issued (numbered, checked, agreed) here as the blocking call is. A host
// exchange, whose steps are MPI calls, goes to the communicator's lane at ThreadLevel::Multiple
// and runs at issue below it (after the lane's queued steps), as the other MPI steps do; a device
// exchange starts at issue: NCCL queues it on the communicator's stream and the Work waits for it
// (as the other device collectives' Work), staging copies at issue.
Work run_async(Group& group, const Request& r) {
  if (alone(group)) return run_at_issue(group, r.name, [&] { run(group, r); });
  const Fingerprint fp = fingerprint(r, group.topology.size, true);
  const CallTicket ticket = start_call(group, fp);
  Prepared p;
  try {
    p = prepare(group, r, fp);
    // On one node an exchange whose plan every rank knows stays in the segment: no MPI call, so
    // the lane may run it at any thread level.
    // A path voted in the exchange is known only once the exchange has begun: at issue.
    const bool mpi_free = !p.device && !p.voted && shm::exchange_without_mpi(p.e, r.name);
    if (p.device || p.voted || !lane_may_run(group, mpi_free, -1)) {
      drain(group);
      Work started(start_prepared(group, r, fp, p));
      finish_call(ticket, false);
      return started;
    }
    if (mpi_free) shm::segment(group, r.name);  // made with MPI calls: here, on the caller's thread
  } catch (...) {
    const auto error = std::current_exception();
    drain(group);  // the recorder hears of calls in the order they were issued
    finish_call(ticket, true);
    return finished_work(group.name, r.name, error);
  }
  return queue_step(group, r.name, ticket, [e = std::move(p.e), name = r.name] { host_exchange(e, name); });
}

Group& group_for(const Communicator* comm, const char* name) {
  return comm != nullptr ? group_of(*comm, name) : world_group(name);
}

// Every public form: the world's (comm null) or the communicator's group.
void run(const Communicator* comm, const Request& r) { run(group_for(comm, r.name), r); }
Work run_async(const Communicator* comm, const Request& r) { return run_async(group_for(comm, r.name), r); }

}  // namespace
}  // namespace detail

using detail::Request;
using detail::Shape;

void all_to_all(InputView in, BufferView out, Stream stream) {
  detail::run(nullptr, Request{Shape::AllToAll, "all_to_all", in, out, {}, {}, 0, stream});
}
void all_to_all(const Communicator& comm, InputView in, BufferView out, Stream stream) {
  detail::run(&comm, Request{Shape::AllToAll, "all_to_all", in, out, {}, {}, 0, stream});
}
void all_to_all(InputView in, Counts send_counts, BufferView out,
                Counts recv_counts, Stream stream) {
  detail::run(nullptr, Request{Shape::AllToAllV, "all_to_all", in, out, send_counts, recv_counts, 0, stream});
}
void all_to_all(const Communicator& comm, InputView in, Counts send_counts, BufferView out,
                Counts recv_counts, Stream stream) {
  detail::run(&comm, Request{Shape::AllToAllV, "all_to_all", in, out, send_counts, recv_counts, 0, stream});
}
void all_gather_v(InputView in, BufferView out, Counts counts, Stream stream) {
  detail::run(nullptr, Request{Shape::AllGatherV, "all_gather_v", in, out, {}, counts, 0, stream});
}
void all_gather_v(const Communicator& comm, InputView in, BufferView out, Counts counts,
                  Stream stream) {
  detail::run(&comm, Request{Shape::AllGatherV, "all_gather_v", in, out, {}, counts, 0, stream});
}
void gather(InputView in, BufferView out, int root, Stream stream) {
  detail::run(nullptr, Request{Shape::Gather, "gather", in, out, {}, {}, root, stream});
}
void gather(const Communicator& comm, InputView in, BufferView out, int root, Stream stream) {
  detail::run(&comm, Request{Shape::Gather, "gather", in, out, {}, {}, root, stream});
}
void scatter(InputView in, BufferView out, int root, Stream stream) {
  detail::run(nullptr, Request{Shape::Scatter, "scatter", in, out, {}, {}, root, stream});
}
void scatter(const Communicator& comm, InputView in, BufferView out, int root, Stream stream) {
  detail::run(&comm, Request{Shape::Scatter, "scatter", in, out, {}, {}, root, stream});
}

// The non-blocking forms (async_collectives.hpp). The counts are copied into the exchange at issue.
Work all_to_all_async(InputView in, BufferView out, Stream stream) {
  return detail::run_async(nullptr, Request{Shape::AllToAll, "all_to_all", in, out, {}, {}, 0, stream});
}
Work all_to_all_async(const Communicator& comm, InputView in, BufferView out, Stream stream) {
  return detail::run_async(&comm, Request{Shape::AllToAll, "all_to_all", in, out, {}, {}, 0, stream});
}
Work all_to_all_async(InputView in, Counts send_counts, BufferView out,
                      Counts recv_counts, Stream stream) {
  return detail::run_async(nullptr, Request{Shape::AllToAllV, "all_to_all", in, out, send_counts, recv_counts, 0, stream});
}
Work all_to_all_async(const Communicator& comm, InputView in, Counts send_counts,
                      BufferView out, Counts recv_counts, Stream stream) {
  return detail::run_async(&comm, Request{Shape::AllToAllV, "all_to_all", in, out, send_counts, recv_counts, 0, stream});
}
Work gather_async(InputView in, BufferView out, int root, Stream stream) {
  return detail::run_async(nullptr, Request{Shape::Gather, "gather", in, out, {}, {}, root, stream});
}
Work gather_async(const Communicator& comm, InputView in, BufferView out, int root, Stream stream) {
  return detail::run_async(&comm, Request{Shape::Gather, "gather", in, out, {}, {}, root, stream});
}
Work scatter_async(InputView in, BufferView out, int root, Stream stream) {
  return detail::run_async(nullptr, Request{Shape::Scatter, "scatter", in, out, {}, {}, root, stream});
}
Work scatter_async(const Communicator& comm, InputView in, BufferView out, int root, Stream stream) {
  return detail::run_async(&comm, Request{Shape::Scatter, "scatter", in, out, {}, {}, root, stream});
}
Work all_gather_v_async(InputView in, BufferView out, Counts counts, Stream stream) {
  return detail::run_async(nullptr, Request{Shape::AllGatherV, "all_gather_v", in, out, {}, counts, 0, stream});
}
Work all_gather_v_async(const Communicator& comm, InputView in, BufferView out, Counts counts,
                        Stream stream) {
  return detail::run_async(&comm, Request{Shape::AllGatherV, "all_gather_v", in, out, {}, counts, 0, stream});
}

}  // namespace mpidist
