// Emulated NCCL: unique ids, communicator creation (checked across its members), teardown, errors.
//
// ncclCommInitRank is checked collectively: the joiners exchange what they were given (id, rank,
// nranks, device, host, GPU UUID), and all of them apply the same checks to the same table, so a
// mismatch fails on every member with the same message instead of hanging. A communicator as
// large as MPI_COMM_WORLD exchanges over MPI_COMM_WORLD (which also catches ids that differ); a
// smaller one, called by its members only, meets at the id's file rendezvous (nccl_rendezvous.cpp)
// and then creates its MPI communicator with MPI_Comm_create_group, collective over the members.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <sstream>
#include <thread>

#include "nccl_internal.hpp"

namespace mpidist_emu {
namespace {

using Lock = std::lock_guard<std::recursive_mutex>;

constexpr char kIdMagic[16] = "mpidist-emu-id";

std::string g_last_error;

std::vector<std::unique_ptr<ncclComm>>& comms() {
  static auto* all = new std::vector<std::unique_ptr<ncclComm>>;  // never destroyed: tombstones, and exit-time calls
  return *all;
}

std::string id_text(const ncclUniqueId& id) {
  char text[40];
  std::snprintf(text, sizeof text, "%02x%02x%02x%02x%02x%02x", static_cast<unsigned char>(id.internal[16]),
                static_cast<unsigned char>(id.internal[17]), static_cast<unsigned char>(id.internal[18]),
                static_cast<unsigned char>(id.internal[19]), static_cast<unsigned char>(id.internal[20]),
                static_cast<unsigned char>(id.internal[21]));
  return std::memcmp(id.internal, kIdMagic, sizeof kIdMagic) == 0 ? text : "(not from ncclGetUniqueId)";
}

// The checks, in the order NCCL users usually get them wrong, over the joiners ordered by world
// rank. Returns "" when all pass.
std::string check_joiners(const std::vector<Joiner>& all, ncclResult_t* result) {
  const int joined = static_cast<int>(all.size());
  *result = ncclInvalidArgument;
  for (const Joiner& j : all) {
    const std::string process = "process " + std::to_string(j.world_rank);
    if (j.bad_arguments == 1) return process + " passed a null comm pointer";
    if (j.bad_arguments == 2) return process + " passed a config not set from NCCL_CONFIG_INITIALIZER";
    if (j.bad_arguments == 3) return process + " passed a config.blocking other than 0 or 1";
    if (std::memcmp(j.id.internal, kIdMagic, sizeof kIdMagic) != 0)
      return process + " passed an id that ncclGetUniqueId did not produce (not broadcast?)";
    if (std::memcmp(&j.id, &all[0].id, sizeof j.id) != 0)
      return "processes disagree on the unique id: process " + std::to_string(all[0].world_rank) + " has " +
             id_text(all[0].id) + ", " + process + " has " + id_text(j.id);
    if (j.nranks != joined)
      return process + " passed nranks " + std::to_string(j.nranks) + " but " + std::to_string(joined) +
             " processes joined with this id";
    if (j.rank < 0 || j.rank >= j.nranks)
      return process + " passed rank " + std::to_string(j.rank) + " outside [0, " + std::to_string(j.nranks) + ")";
  }
  for (std::size_t a = 0; a < all.size(); ++a) {
    for (std::size_t b = a + 1; b < all.size(); ++b) {
      if (all[a].rank == all[b].rank)
        return "processes " + std::to_string(all[a].world_rank) + " and " + std::to_string(all[b].world_rank) +
               " both passed rank " + std::to_string(all[a].rank);
    }
  }
  *result = ncclInvalidUsage;
  for (const Joiner& j : all) {
    if (j.device_set == 0) return "rank " + std::to_string(j.rank) + " never called cudaSetDevice before ncclCommInitRank";
  }
  // Per communicator, as in NCCL: one process may use its GPU in several communicators.
  if (config().allow_shared_device) return "";
  for (std::size_t a = 0; a < all.size(); ++a) {
    for (std::size_t b = a + 1; b < all.size(); ++b) {
      const Joiner& x = all[a];
      const Joiner& y = all[b];
      if (std::strcmp(x.host, y.host) == 0 && std::memcmp(&x.uuid, &y.uuid, sizeof x.uuid) == 0)
        return "Duplicate GPU detected: rank " + std::to_string(x.rank) + " and rank " + std::to_string(y.rank) +
               " both on CUDA device " + std::to_string(y.device) + " (same UUID) of host " + x.host;
    }
  }
  return "";
}

// The members' MPI communicator over MPI_COMM_WORLD, collective over the members only, with the
// world ranks ordered by NCCL rank so that MPI rank == NCCL rank.
MPI_Comm members_communicator(const std::vector<Joiner>& all) {
  std::vector<int> world_ranks(all.size());
  for (const Joiner& j : all) world_ranks[static_cast<std::size_t>(j.rank)] = j.world_rank;
  MPI_Group world_group = MPI_GROUP_NULL, members = MPI_GROUP_NULL;
  MPI_Comm_group(MPI_COMM_WORLD, &world_group);
  MPI_Group_incl(world_group, static_cast<int>(world_ranks.size()), world_ranks.data(), &members);
  // A tag from the id keeps creations over overlapping groups apart (any value <= 32767 is valid).
  const int tag = static_cast<int>(std::hash<std::string>{}(id_token(all[0].id)) & 0x7fff);
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Comm_create_group(MPI_COMM_WORLD, members, tag, &comm);
  MPI_Group_free(&members);
  MPI_Group_free(&world_group);
  return comm;
}

}  // namespace

// The joiners' exchange of one initialization, advanced one look at a time so that a
// non-blocking init can return ncclInProgress in between. A communicator spanning
// MPI_COMM_WORLD (nranks >= world size: a larger nranks is a mistake the whole world should
// report) exchanges over MPI itself (MPI_Comm_idup, then MPI_Iallgather), which also catches
// ids that were never broadcast; a smaller one meets at the id's rendezvous.
struct PendingInit {
  Joiner mine{};
  std::string call;
  bool whole_world = false;
  bool stalled = false;  // MPIDIST_EMU_NCCL_INIT_STALL: this process never reaches the others
  MPI_Comm scratch = MPI_COMM_NULL;
  MPI_Request request = MPI_REQUEST_NULL;
  bool gathering = false;  // whole world: the idup completed, the allgather is posted
  std::string dir;         // the rendezvous
  std::vector<Joiner> table;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
};

namespace {

// A whole-world exchange aborted before every process joined leaves its MPI_Comm_idup posted on
// MPI_COMM_WORLD, where a late process's next idup will match it: the next whole-world exchange
// of this process takes it over instead of posting another, so the counts stay matched.
std::shared_ptr<PendingInit>& orphan() {
  static auto* left = new std::shared_ptr<PendingInit>;  // never destroyed: MPI may still write into it
  return *left;
}

void start_exchange(PendingInit& p) {
  if (p.mine.world_rank == config().init_stall_rank) {
    // As when NCCL's bootstrap cannot reach its root (a firewall, a wrong NCCL_SOCKET_IFNAME).
    p.stalled = true;
    diagnose(p.call + ": stalling on purpose (MPIDIST_EMU_NCCL_INIT_STALL): this process never reaches its peers");
    return;
  }
  if (p.whole_world) {
    if (p.request == MPI_REQUEST_NULL) MPI_Comm_idup(MPI_COMM_WORLD, &p.scratch, &p.request);
  } else {
    p.dir = rendezvous_join(p.mine, p.call.c_str());
  }
}

// One look at the exchange; true once the table of every joiner is complete.
bool poll_exchange(PendingInit& p) {
  if (p.stalled) return false;
  if (!p.whole_world) return rendezvous_poll(p.dir, p.mine, &p.table);
  int done = 0;
  MPI_Test(&p.request, &done, MPI_STATUS_IGNORE);
  if (done == 0) return false;
  if (p.gathering) return true;
  int world = 0;
  MPI_Comm_size(p.scratch, &world);
  p.table.assign(static_cast<std::size_t>(world), Joiner{});
  MPI_Iallgather(&p.mine, sizeof p.mine, MPI_BYTE, p.table.data(), sizeof p.mine, MPI_BYTE, p.scratch, &p.request);
  p.gathering = true;
  return false;
}

std::string waiting_text(const PendingInit& p, double waited) {
  std::string text = p.call + " waited " + std::to_string(static_cast<int>(waited)) +
                     " s (MPIDIST_EMU_HANG_SECONDS) for the " + std::to_string(p.mine.nranks) + " ranks of id " +
                     id_token(p.mine.id);
  if (p.stalled) return text + "; this process was told to stall (MPIDIST_EMU_NCCL_INIT_STALL)";
  if (p.whole_world) return text + " (nranks is the world size or more): not every process called it";
  return text + "; joined: " + rendezvous_arrivals(p.dir) + ". The others never called it with this id (was it sent to every member?)";
}

// A member whose peers never arrive must not hang the job, blocking or not.
void give_up_if_hung(const PendingInit& p) {
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - p.start).count();
  if (config().hang_seconds <= 0 || waited <= config().hang_seconds) return;
  diagnose(waiting_text(p, waited));
  std::abort();
}

// ncclCommAbort before the exchange completed: the rendezvous record is taken back; posted MPI
// requests cannot be cancelled, so they are abandoned with their communicator.
void withdraw(const std::shared_ptr<PendingInit>& p) {
  if (!p->whole_world && !p->stalled) rendezvous_withdraw(p->dir, p->mine);
  if (!p->whole_world || p->stalled) return;
  if (!p->gathering && !orphan()) {
    orphan() = p;
    return;
  }
  // The posted allgather still reads `mine` and writes `table`: they must outlive it.
  static auto* graveyard = new std::vector<std::shared_ptr<PendingInit>>;
  graveyard->push_back(p);
}

// A new whole-world exchange: the orphaned one when there is one (its idup still pending).
std::shared_ptr<PendingInit> whole_world_exchange() {
  std::shared_ptr<PendingInit> p = std::move(orphan());
  if (!p) return std::make_shared<PendingInit>();
  p->table.clear();
  p->start = std::chrono::steady_clock::now();
  return p;
}

// The table is complete: every member applies the same checks, then builds its MPI communicators.
ncclResult_t finish(PendingInit& p, ncclComm* comm) {
  ncclResult_t result = ncclSuccess;
  const std::string problem = check_joiners(p.table, &result);
  if (!problem.empty()) {
    if (p.scratch != MPI_COMM_NULL) MPI_Comm_free(&p.scratch);
    return nccl_fail(result, p.call + ": " + problem);
  }
  if (p.whole_world) {
    MPI_Comm_split(p.scratch, 0, p.mine.rank, &comm->mpi);
    MPI_Comm_free(&p.scratch);
  } else {
    comm->mpi = members_communicator(p.table);
  }
  MPI_Comm_dup(comm->mpi, &comm->control);
  return ncclSuccess;
}

// Blocking initialization, or (non-blocking) a handle whose ncclCommGetAsyncError says
// ncclInProgress until every member joined. A local mistake (null comm pointer, bad config) is
// exchanged blocking, so that every member fails with the same message instead of hanging.
ncclResult_t init(ncclComm_t* out, int nranks, const ncclUniqueId& id, int rank, int bad_arguments, bool blocking,
                  const char* call) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized)
    return nccl_fail(ncclSystemError, std::string(call) + ": the emulation needs MPI to be initialized (it is its transport)");
  if (out != nullptr) *out = nullptr;
  int world = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  const bool whole_world = nranks >= world;
  auto p = whole_world ? whole_world_exchange() : std::make_shared<PendingInit>();
  p->call = call;
  p->whole_world = whole_world;
  Joiner& mine = p->mine;
  MPI_Comm_rank(MPI_COMM_WORLD, &mine.world_rank);
  mine.bad_arguments = out == nullptr ? 1 : bad_arguments;
  mine.id = id;
  mine.rank = rank;
  mine.nranks = nranks;
  mine.device = current_device();
  mine.device_set = device_was_set() ? 1 : 0;
  mine.uuid = device_uuid(mine.device);
  std::snprintf(mine.host, sizeof mine.host, "%s", host_identity().c_str());

  // Without the token there is no rendezvous to meet the others at: this process fails alone.
  if (!p->whole_world && std::memcmp(id.internal, kIdMagic, sizeof kIdMagic) != 0)
    return nccl_fail(ncclInvalidArgument, std::string(call) + ": process " + std::to_string(mine.world_rank) +
                                              " passed an id that ncclGetUniqueId did not produce (not broadcast?)");
  if (use_context(call) != cudaSuccess)
    return nccl_fail(ncclUnhandledCudaError, std::string(call) + ": Cuda failure: no context on device " +
                                                 std::to_string(mine.device));
  auto comm = std::make_unique<ncclComm>();
  comm->rank = rank;
  comm->nranks = nranks;
  comm->device = mine.device;
  comm->blocking = blocking || mine.bad_arguments != 0;
  start_exchange(*p);
  if (!comm->blocking) {
    comm->async = ncclInProgress;
    comm->init = std::move(p);
    *out = adopt(std::move(comm));
    return ncclInProgress;
  }
  for (int polls = 0; !poll_exchange(*p); ++polls) {
    give_up_if_hung(*p);
    if (polls > 100) std::this_thread::sleep_for(std::chrono::microseconds(polls > 2000 ? 500 : 20));
  }
  if (const ncclResult_t r = finish(*p, comm.get()); r != ncclSuccess) return r;
  *out = adopt(std::move(comm));
  return ncclSuccess;
}

// ncclCommGetAsyncError's step of a non-blocking initialization.
void progress_init(ncclComm* comm) {
  PendingInit& p = *comm->init;
  if (!poll_exchange(p)) {
    give_up_if_hung(p);
    return;
  }
  comm->async = finish(p, comm);
  if (comm->async != ncclSuccess) comm->failure = g_last_error;
  comm->init.reset();
}

const char* state_text(ncclComm::State state) {
  switch (state) {
    case ncclComm::State::Finalized: return "finalized by ncclCommFinalize";
    case ncclComm::State::Destroyed: return "destroyed by ncclCommDestroy";
    case ncclComm::State::Aborted: return "aborted by ncclCommAbort";
    default: return "ready";
  }
}

// For the queries and teardown, which must also reject unknown handles but accept finalized ones.
ncclResult_t check_known(ncclComm_t comm, const char* call, bool allow_finalized) {
  if (comm == nullptr) return nccl_fail(ncclInvalidArgument, std::string(call) + ": comm is null");
  Lock hold(big_lock());
  const auto& all = comms();
  if (std::none_of(all.begin(), all.end(), [&](const auto& c) { return c.get() == comm; }))
    return nccl_fail(ncclInvalidArgument, std::string(call) + ": " + hex(comm) + " is not a communicator");
  if (comm->state == ncclComm::State::Ready || (allow_finalized && comm->state == ncclComm::State::Finalized))
    return ncclSuccess;
  return nccl_fail(ncclInvalidUsage, std::string(call) + ": the communicator was " + state_text(comm->state));
}

// A peer's ncclCommAbort breaks the connections of the running collectives: NCCL reports it as
// the asynchronous error of the others (ncclRemoteError). The emulation sends a notice over the
// communicator's control channel, which no collective of it matches.
constexpr int kAbortNoticeTag = 0x4e41;

void tell_peers_aborted(ncclComm* comm) {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized || comm->control == MPI_COMM_NULL) return;
  static int notice = 1;
  static auto* sent = new std::vector<MPI_Request>;  // never waited on: the peers may be gone
  for (int peer = 0; peer < comm->nranks; ++peer) {
    if (peer == comm->rank) continue;
    MPI_Request request = MPI_REQUEST_NULL;
    MPI_Isend(&notice, 1, MPI_INT, peer, kAbortNoticeTag, comm->control, &request);
    sent->push_back(request);
  }
}

void notice_peer_abort(ncclComm* comm) {
  if (comm->control == MPI_COMM_NULL || comm->nranks < 2) return;
  int arrived = 0;
  MPI_Status status;
  MPI_Iprobe(MPI_ANY_SOURCE, kAbortNoticeTag, comm->control, &arrived, &status);
  if (arrived == 0) return;
  int notice = 0;
  MPI_Recv(&notice, 1, MPI_INT, status.MPI_SOURCE, kAbortNoticeTag, comm->control, MPI_STATUS_IGNORE);
  comm->async = ncclRemoteError;
  comm->failure = "rank " + std::to_string(status.MPI_SOURCE) + " aborted the communicator (ncclCommAbort); the " +
                  "collectives running on it cannot complete";
  nccl_fail(ncclRemoteError, "ncclCommGetAsyncError: " + comm->failure);
}

}  // namespace

ncclResult_t nccl_fail(ncclResult_t result, const std::string& message) {
  Lock hold(big_lock());
  g_last_error = message;
  diagnose("NCCL " + message);
  return result;
}

ncclResult_t ensure_ready(ncclComm_t comm, const char* call) {
  Lock hold(big_lock());
  if (comm->async == ncclSuccess) return ncclSuccess;
  if (comm->async == ncclInProgress)
    return nccl_fail(ncclInvalidArgument, std::string(call) + ": Attempt to use communicator before the previous "
                                              "operation returned ncclSuccess (poll ncclCommGetAsyncError until it does)");
  return nccl_fail(comm->async, std::string(call) + ": the communicator's initialization failed: " + comm->failure);
}

ncclResult_t check_comm(ncclComm_t comm, const char* call) {
  if (const ncclResult_t r = check_known(comm, call, false); r != ncclSuccess) return r;
  return ensure_ready(comm, call);
}

ncclComm_t adopt(std::unique_ptr<ncclComm> comm) {
  Lock hold(big_lock());
  comms().push_back(std::move(comm));
  return comms().back().get();
}

}  // namespace mpidist_emu

using namespace mpidist_emu;

extern "C" {

ncclResult_t ncclGetVersion(int* version) {
  if (version == nullptr) return nccl_fail(ncclInvalidArgument, "ncclGetVersion: version is null");
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId* uniqueId) {
  if (uniqueId == nullptr) return nccl_fail(ncclInvalidArgument, "ncclGetUniqueId: uniqueId is null");
  *uniqueId = ncclUniqueId{};
  std::memcpy(uniqueId->internal, kIdMagic, sizeof kIdMagic);
  std::random_device entropy;
  for (int i = 16; i < 32; i += 4) {
    const unsigned word = entropy();
    std::memcpy(uniqueId->internal + i, &word, sizeof word);
  }
  return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
  return init(comm, nranks, commId, rank, 0, config().comm_blocking != 0, "ncclCommInitRank");
}

// config.blocking = 0: returns ncclInProgress with a handle at once; ncclCommGetAsyncError
// reports ncclInProgress until every member joined, and nothing else may use the handle before
// (ncclCommAbort excepted). NCCL_COMM_BLOCKING overrides config.blocking, as in NCCL.
ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank, ncclConfig_t* config) {
  int bad = 0;
  bool blocking = true;
  if (config != nullptr) {
    if (config->magic != 0xcafebeef || config->size != sizeof(ncclConfig_t)) {
      bad = 2;
    } else if (config->blocking != NCCL_CONFIG_UNDEF_INT && config->blocking != 0 && config->blocking != 1) {
      bad = 3;
    } else {
      blocking = config->blocking != 0;
    }
  }
  if (mpidist_emu::config().comm_blocking >= 0) blocking = mpidist_emu::config().comm_blocking != 0;
  return init(comm, nranks, commId, rank, bad, blocking, "ncclCommInitRankConfig");
}

ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  if (const ncclResult_t r = check_comm(comm, "ncclCommFinalize"); r != ncclSuccess) return r;
  if (!comm->blocking) {
    // As NCCL's: returns at once; ncclCommGetAsyncError says ncclInProgress until the queued work
    // is done, which may be never (a peer that died): the caller bounds the wait and aborts.
    Lock hold(big_lock());
    comm->finalizing = true;
    comm->async = ncclInProgress;
    return ncclInProgress;
  }
  flush_operations(comm);
  Lock hold(big_lock());
  comm->state = ncclComm::State::Finalized;
  return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (comm == nullptr) return ncclSuccess;  // as in NCCL
  if (const ncclResult_t r = check_known(comm, "ncclCommDestroy", true); r != ncclSuccess) return r;
  if (comm->async != ncclSuccess && comm->async != ncclInProgress) {
    // NCCL 2.28 returns here from inside the group it opened, without closing it.
    leave_group_open();
    return nccl_fail(comm->async, "ncclCommDestroy: the communicator holds an asynchronous error (" + comm->failure +
                                      "); NCCL 2.28 returns from inside its own group without closing it, so this "
                                      "thread's later NCCL calls (an ncclCommAbort included) are swallowed: only "
                                      "ncclCommAbort may free a failed communicator");
  }
  // As in NCCL: a communicator still initializing only aborts.
  if (const ncclResult_t r = ensure_ready(comm, "ncclCommDestroy"); r != ncclSuccess) return r;
  flush_operations(comm);
  Lock hold(big_lock());
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Comm_free(&comm->control);  // never used by queued operations
  if (!finalized && !comm->abandoned_requests) MPI_Comm_free(&comm->mpi);
  comm->state = ncclComm::State::Destroyed;
  return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm) {
  if (comm == nullptr) return ncclSuccess;
  if (const ncclResult_t r = check_known(comm, "ncclCommAbort", true); r != ncclSuccess) return r;
  if (swallow_abort(comm)) return ncclSuccess;
  Lock hold(big_lock());
  if (comm->state == ncclComm::State::Ready && !comm->init) tell_peers_aborted(comm);
  // MPI cannot cancel a posted collective: its request and staging memory are abandoned, and
  // the MPI communicator is leaked rather than freed under it. Likewise an initialization's.
  cancel_operations(comm);
  if (comm->init) withdraw(comm->init);
  comm->init.reset();
  comm->state = ncclComm::State::Aborted;
  return ncclSuccess;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  if (asyncError == nullptr) return nccl_fail(ncclInvalidArgument, "ncclCommGetAsyncError: asyncError is null");
  if (const ncclResult_t r = check_known(comm, "ncclCommGetAsyncError", true); r != ncclSuccess) return r;
  // Where NCCL's background threads would have progressed, the emulation does on each poll.
  Lock hold(big_lock());
  if (comm->init) progress_init(comm);
  if (comm->launch) complete_launch(comm);
  if (comm->finalizing && !operations_pending(comm)) {
    comm->finalizing = false;
    comm->async = ncclSuccess;
    comm->state = ncclComm::State::Finalized;
  }
  if (comm->state == ncclComm::State::Ready && comm->async == ncclSuccess) notice_peer_abort(comm);
  *asyncError = comm->async;
  return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  if (count == nullptr) return nccl_fail(ncclInvalidArgument, "ncclCommCount: count is null");
  if (const ncclResult_t r = check_known(comm, "ncclCommCount", true); r != ncclSuccess) return r;
  if (const ncclResult_t r = ensure_ready(comm, "ncclCommCount"); r != ncclSuccess) return r;
  *count = comm->nranks;
  return ncclSuccess;
}

ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device) {
  if (device == nullptr) return nccl_fail(ncclInvalidArgument, "ncclCommCuDevice: device is null");
  if (const ncclResult_t r = check_known(comm, "ncclCommCuDevice", true); r != ncclSuccess) return r;
  if (const ncclResult_t r = ensure_ready(comm, "ncclCommCuDevice"); r != ncclSuccess) return r;
  *device = comm->device;
  return ncclSuccess;
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  if (rank == nullptr) return nccl_fail(ncclInvalidArgument, "ncclCommUserRank: rank is null");
  if (const ncclResult_t r = check_known(comm, "ncclCommUserRank", true); r != ncclSuccess) return r;
  if (const ncclResult_t r = ensure_ready(comm, "ncclCommUserRank"); r != ncclSuccess) return r;
  *rank = comm->rank;
  return ncclSuccess;
}

const char* ncclGetErrorString(ncclResult_t result) {
  switch (result) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
  }
}

const char* ncclGetLastError(ncclComm_t /*comm*/) {
  // NCCL keeps one process-wide message; the copy keeps the pointer valid until the next call.
  static thread_local std::string copy;
  Lock hold(big_lock());
  copy = g_last_error;
  return copy.c_str();
}

}  // extern "C"

/// Test hook: how many communicators this process created (live, destroyed or aborted).
extern "C" int mpidist_emu_nccl_communicators() {
  std::lock_guard<std::recursive_mutex> hold(mpidist_emu::big_lock());
  return static_cast<int>(mpidist_emu::comms().size());
}
