// finalize()'s last consistency check of every communicator's calls.
#include "watch/final_check.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "core/context.hpp"
#include "core/mpi_check.hpp"
#include "core/rank_prefix.hpp"
#include "core/text_collectives.hpp"
#include "watch/call_mismatch.hpp"
#include "watch/call_scope.hpp"
#include "watch/job_end.hpp"
#include "watch/peer_view.hpp"

namespace mpidist::detail {
namespace {

struct Progress {
  std::uint64_t key, done, hash;
};
struct Break {
  std::uint64_t key, seq;  // {0, 0}: none
};
// A rank's progress on every communicator it tracks, and the calls where one broke here
// (broken_calls(): every tracked communicator's, and the last, whose communicator may be freed).
struct Table {
  std::array<Progress, tracked_communicators> comms;
  std::array<Break, tracked_communicators + 1> breaks;
};

Table snapshot(const RankRecord& record) {
  Table table{};
  for (std::size_t i = 0; i < tracked_communicators; ++i) {
    const auto& slot = record.header.comms[i];
    table.comms[i].key = slot.key.load(std::memory_order_acquire);
    if (table.comms[i].key != 0) read_progress(slot, table.comms[i].done, table.comms[i].hash);
  }
  const auto breaks = broken_calls(record);
  for (std::size_t i = 0; i < breaks.size() && i < table.breaks.size(); ++i)
    table.breaks[i] = {breaks[i].first, breaks[i].second};
  return table;
}

// "seq hash description" per completed call on `key` still in this rank's ring.
std::string history(const RankRecord& record, std::uint64_t key) {
  std::string text;
  const auto recorded = record.header.recorded.load();
  const auto capacity = record.header.capacity;
  for (auto id = oldest_held(recorded, capacity); id <= recorded; ++id) {
    const auto e = read_entry(record, id);
    if (e.valid && e.comm_key == key && e.seq != 0 && (e.state == CallState::Completed || e.state == CallState::Failed))
      text += std::to_string(e.seq) + " " + std::to_string(e.hash) + " " + describe_call(e) +
              (e.state == CallState::Failed ? " (failed here)" : "") + "\n";
  }
  return text;
}

std::string ranks_text(const std::vector<int>& ranks) {
  std::string text = ranks.size() == 1 ? "rank " : "ranks ";
  for (std::size_t i = 0; i < ranks.size(); ++i) text += (i ? "," : "") + std::to_string(ranks[i]);
  return text;
}

// Where the members of `key` parted, from their histories (indexed by world rank; "" for
// non-members), and each member's finished count.
std::string where_they_parted(const std::vector<std::string>& histories, const std::vector<int>& members,
                              const std::vector<std::uint64_t>& done, const std::string& name) {
  std::vector<std::map<std::uint64_t, std::pair<std::string, std::string>>> calls(members.size());
  std::uint64_t first = 0, last = 0;
  for (std::size_t m = 0; m < members.size(); ++m) {
    std::istringstream lines(histories[static_cast<std::size_t>(members[m])]);
    std::string line;
    while (std::getline(lines, line)) {
      std::istringstream fields(line);
      std::uint64_t seq = 0;
      std::string hash, description;
      fields >> seq >> hash;
      std::getline(fields >> std::ws, description);
      calls[m][seq] = {hash, description};
      first = first == 0 ? seq : std::min(first, seq);
      last = std::max(last, seq);
    }
  }
  for (std::uint64_t seq = first; seq <= last && first != 0; ++seq) {
    std::map<std::string, std::vector<int>> by_call;  // description (with hash) -> member ranks
    std::vector<int> absent, unknown;
    for (std::size_t m = 0; m < members.size(); ++m) {
      const auto it = calls[m].find(seq);
      if (it != calls[m].end())
        by_call[it->second.second + "\t" + it->second.first].push_back(static_cast<int>(m));
      else if (done[m] < seq)
        absent.push_back(static_cast<int>(m));
      else
        unknown.push_back(static_cast<int>(m));
    }
    if (by_call.size() <= 1 && absent.empty()) continue;
    std::string text = "#" + std::to_string(seq) + " on " + name + ":";
    const char* separator = " ";
    for (const auto& [call, ranks] : by_call) {
      text += separator + ranks_text(ranks) + " " + call.substr(0, call.find('\t'));
      separator = "; ";
    }
    for (const int m : absent)
      text += separator + ("rank " + std::to_string(m)) + " never joined it (it finished " + std::to_string(done[static_cast<std::size_t>(m)]) +
              " calls on " + name + ")",
          separator = "; ";
    if (!unknown.empty()) text += separator + ranks_text(unknown) + " unknown (left the flight recorder)";
    return text;
  }
  std::string text = "on " + name + " the ranks finished different numbers of calls or different calls:";
  for (std::size_t m = 0; m < members.size(); ++m) text += " rank " + std::to_string(m) + " finished " + std::to_string(done[m]) + ";";
  text.pop_back();
  return text + " (the calls where they parted have left the flight recorder)";
}

// A rank's record of a call where a communicator broke, as every rank receives it.
struct HeldCall {
  EntrySnapshot entry;       // not valid where the rank holds no record of it
  std::int32_t comm_rank = -1;
};

// The call where each communicator first broke (the lowest of its members' breaks), the same list
// on every rank.
std::vector<std::pair<std::uint64_t, std::uint64_t>> first_breaks(const std::vector<Table>& all) {
  std::map<std::uint64_t, std::uint64_t> first;
  for (const Table& table : all)
    for (const Break& b : table.breaks) {
      if (b.key == 0) continue;
      const auto [it, added] = first.emplace(b.key, b.seq);
      if (!added) it->second = std::min(it->second, b.seq);
    }
  return {first.begin(), first.end()};
}

// A rank that returned from a call where a communicator broke on another rank, which made it with
// other arguments and whose data it received (call_mismatch.hpp): the report, and in `reporter` the
// rank that prints it (the one with the wrong result); "" when none. Collective over the world
// where a communicator broke.
std::string wrong_completion(Context& ctx, const std::vector<std::pair<std::uint64_t, std::uint64_t>>& breaks,
                             int& reporter) {
  if (breaks.empty()) return "";
  std::vector<HeldCall> mine(breaks.size());
  for (std::size_t i = 0; i < breaks.size(); ++i) {
    const CommDescriptor* comm = ctx.recorder->find(breaks[i].first);
    if (comm == nullptr) continue;
    mine[i] = {find_call(ctx.recorder->record(), breaks[i].first, breaks[i].second), comm->rank};
  }
  const int size = ctx.world->topology.size;
  std::vector<HeldCall> held(breaks.size() * static_cast<std::size_t>(size));
  const auto bytes = static_cast<int>(breaks.size() * sizeof(HeldCall));
  MPIDIST_MPI_CHECK(MPI_Allgather(mine.data(), bytes, MPI_BYTE, held.data(), bytes, MPI_BYTE, ctx.world->control));
  const auto at = [&](int rank, std::size_t i) -> const HeldCall& { return held[static_cast<std::size_t>(rank) * breaks.size() + i]; };
  for (std::size_t i = 0; i < breaks.size(); ++i)
    for (int failed = 0; failed < size; ++failed)
      for (int completed = 0; completed < size; ++completed) {
        const HeldCall &f = at(failed, i), &c = at(completed, i);
        if (!completed_wrongly(c.entry, c.comm_rank, f.entry, f.comm_rank)) continue;
        reporter = completed;
        return "a rank returned from a call that another rank made differently, and failed: " +
               wrong_completion_text(ctx, c.entry, completed, f.entry, failed);
      }
  return "";
}

}  // namespace

void check_at_finalize(Context& ctx) {
  Group& world = *ctx.world;
  const int size = world.topology.size;
  if (size == 1 || !ctx.recorder) return;
  const Table mine = snapshot(ctx.recorder->record());
  std::vector<Table> all(static_cast<std::size_t>(size));
  {
    CallScope scope(world, Fingerprint{"finalize"});
    MPIDIST_MPI_CHECK(MPI_Allgather(&mine, sizeof(Table), MPI_BYTE, all.data(), sizeof(Table), MPI_BYTE, world.control));
  }
  // Every rank holds the same table, so every rank finds the same first disagreement.
  // A communicator on which a call raised an Error somewhere is left out of the hash comparison
  // (that Error was the report), but not a rank that returned wrongly from the call where it broke.
  const auto breaks = first_breaks(all);
  auto failed_somewhere = [&breaks](std::uint64_t key) {
    return std::any_of(breaks.begin(), breaks.end(), [key](const auto& b) { return b.first == key; });
  };
  std::uint64_t bad_key = 0;
  for (int r = 0; r < size && bad_key == 0; ++r)
    for (const Progress& p : all[static_cast<std::size_t>(r)].comms) {
      if (p.key == 0 || failed_somewhere(p.key)) continue;
      for (const Table& other : all)
        for (const Progress& q : other.comms)
          if (q.key == p.key && (q.done != p.done || q.hash != p.hash)) bad_key = p.key;
      if (bad_key != 0) break;
    }
  std::string where;
  int reporter = 0;
  if (bad_key != 0) {
    std::vector<int> members;  // world ranks holding the communicator, in its rank order
    std::vector<std::uint64_t> done;
    const CommDescriptor* comm = ctx.recorder->find(bad_key);
    const std::string name = comm ? comm->name : ctx.recorder->comm_name(bad_key);
    std::vector<int> order;
    if (comm) order = comm->world_ranks;
    for (int r = 0; r < size && !comm; ++r) order.push_back(r);  // not a member here: world order
    for (const int r : order)
      for (const Progress& p : all[static_cast<std::size_t>(r)].comms)
        if (p.key == bad_key) members.push_back(r), done.push_back(p.done);
    const auto histories = all_gather_text(world.control, history(ctx.recorder->record(), bad_key));
    where = "the ranks of " + name + " did not make the same collectives: " +
            where_they_parted(histories, members, done, name);
    reporter = members.front();
  } else {
    where = wrong_completion(ctx, breaks, reporter);
    if (where.empty()) return;
  }
  const std::string report = "consistency check at finalize: " + where + "\n";
  // Reporting from here on, as the watchdog's reports do: a SIGTERM from another rank ending the job
  // lets this dump stand instead of writing its own.
  ctx.recorder->record().header.reported.store(1, std::memory_order_release);
  const bool dumped = ctx.recorder->dump("consistency", report.c_str());
  if (ctx.topology.rank == reporter) {
    std::fprintf(stderr, "mpidist: %s%s%s  ending the job (MPI_Abort)\n", rank_prefix().c_str(), report.c_str(),
                 dumped ? ("  flight recorder: " + ctx.recorder->dump_path() + "\n").c_str() : "");
    std::fflush(stderr);
  }
  MPI_Barrier(world.control);  // the report is out before anyone ends the job
  end_job_after_report(ctx, world.comm, true);
}

}  // namespace mpidist::detail
