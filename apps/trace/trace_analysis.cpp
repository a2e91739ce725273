// What a job's dumps say went wrong, and who never joined.
#include "trace_analysis.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "core/json.hpp"  // lib/core/json.hpp: the library's JSON string quoting
#include "json_reader.hpp"

namespace mpidist::trace {
namespace {

using mpidist::detail::json_string;

// A communicator is its name and its members (world ranks, in group order); an empty member
// list stands for a communicator no dump listed any more (freed before the dump).
using CommKey = std::pair<std::string, std::vector<int>>;

struct Seen {
  int rank;
  const Entry* entry;
};

// Everything known about one communicator: the calls per sequence number, and per member the
// sequence it had started (from "communicators") and the oldest sequence its ring still holds.
struct CommRecord {
  std::map<std::uint64_t, std::vector<Seen>> calls;
  std::map<int, std::uint64_t> started;
  std::map<int, std::uint64_t> oldest;
  std::vector<int> members;
};

// The dumps are sorted by rank (make_dump_set).
const Dump* dump_of(const DumpSet& set, int rank) {
  const auto it = std::lower_bound(set.dumps.begin(), set.dumps.end(), rank,
                                   [](const Dump& d, int r) { return d.rank < r; });
  return it != set.dumps.end() && it->rank == rank ? &*it : nullptr;
}

// Which communicator an entry's name means on the dump's rank: the one its dump lists, else the
// only one of that name any dump lists, else one known by name alone.
CommKey resolve(const Dump& d, const std::string& name, const std::map<std::string, std::set<std::vector<int>>>& known) {
  for (const auto& c : d.communicators)
    if (c.name == name) return {name, c.ranks};
  const auto it = known.find(name);
  if (it != known.end() && it->second.size() == 1) return {name, *it->second.begin()};
  return {name, {}};
}

std::map<CommKey, CommRecord> collect(const DumpSet& set) {
  std::map<std::string, std::set<std::vector<int>>> known;
  for (const auto& d : set.dumps)
    for (const auto& c : d.communicators) known[c.name].insert(c.ranks);
  std::map<CommKey, CommRecord> comms;
  for (const auto& d : set.dumps) {
    for (const auto& c : d.communicators) comms[{c.name, c.ranks}].started[d.rank] = c.sequence;
    for (const auto& e : d.entries) {
      if (is_p2p(e.op)) continue;  // outside the sequence: pending_p2p
      auto& rec = comms[resolve(d, e.comm, known)];
      auto& seen = rec.calls[e.seq];
      // A name reused by a later communicator of the same members: the newer call wins.
      auto same = std::find_if(seen.begin(), seen.end(), [&](const Seen& s) { return s.rank == d.rank; });
      if (same != seen.end())
        same->entry = &e;
      else
        seen.push_back({d.rank, &e});
      auto [oldest, fresh] = rec.oldest.emplace(d.rank, e.seq);
      if (!fresh) oldest->second = std::min(oldest->second, e.seq);
    }
  }
  for (auto& [key, rec] : comms) {
    rec.members = key.second;
    if (rec.members.empty()) {  // members unknown: those that recorded calls on it
      std::set<int> ranks;
      for (const auto& [seq, seen] : rec.calls)
        for (const auto& s : seen) ranks.insert(s.rank);
      rec.members.assign(ranks.begin(), ranks.end());
    }
    for (auto& [seq, seen] : rec.calls)
      std::sort(seen.begin(), seen.end(), [](const Seen& a, const Seen& b) { return a.rank < b.rank; });
  }
  return comms;
}

// A member without an entry at `seq` dropped it from its ring when it started that sequence
// number (or later) or when its ring holds only later calls on the communicator.
bool dropped(const CommRecord& rec, int rank, std::uint64_t seq) {
  const auto started = rec.started.find(rank);
  if (started != rec.started.end() && started->second >= seq) return true;
  const auto oldest = rec.oldest.find(rank);
  return oldest != rec.oldest.end() && oldest->second > seq;
}

const Entry* entry_of(const std::vector<Seen>& seen, int rank) {
  for (const auto& s : seen)
    if (s.rank == rank) return s.entry;
  return nullptr;
}

// Incomplete: a member that left a dump did not complete it (a member without a dump cannot
// say; one that dropped it from its ring has moved past it).
bool incomplete(const DumpSet& set, const CommRecord& rec, std::uint64_t seq, const std::vector<Seen>& seen) {
  for (int r : rec.members) {
    if (dump_of(set, r) == nullptr) continue;
    const Entry* e = entry_of(seen, r);
    if (e != nullptr ? !e->completed() : !dropped(rec, r, seq)) return true;
  }
  return false;
}

// How long before its rank's dump the call started: comparable across ranks, whose clocks are
// not, because the ranks dump at about the same moment (watchdog, launcher's SIGTERM).
std::int64_t age(const DumpSet& set, const Seen& s) {
  const Dump* d = dump_of(set, s.rank);
  return d->now_ns - std::min(d->now_ns, s.entry->start_ns);
}

// The call most members made at that sequence number (the lowest rank's on a tie).
Call majority_call(const std::vector<Seen>& seen) {
  std::vector<std::pair<Call, int>> tally;
  for (const auto& s : seen) {
    const Call c = call_of(*s.entry);
    auto it = std::find_if(tally.begin(), tally.end(), [&](const auto& t) { return t.first == c; });
    if (it == tally.end())
      tally.emplace_back(c, 1);
    else
      ++it->second;
  }
  auto best = tally.begin();
  for (auto it = tally.begin(); it != tally.end(); ++it)
    if (it->second > best->second) best = it;
  return best->first;
}

EntryRef ref_of(const Entry& e) { return EntryRef{e.comm, e.seq, call_of(e), e.state}; }

Absent absent(const DumpSet& set, int rank) {
  Absent a;
  a.rank = rank;
  const Dump* d = dump_of(set, rank);
  a.has_dump = d != nullptr;
  if (d == nullptr) return a;
  a.host = d->host;
  for (auto it = d->entries.rbegin(); it != d->entries.rend(); ++it) {
    if (it->completed()) {
      a.last_completed = ref_of(*it);
      break;
    }
  }
  if (!d->entries.empty() && !d->entries.back().completed()) a.current = ref_of(d->entries.back());
  return a;
}

Incomplete report_incomplete(const DumpSet& set, const CommKey& key, const CommRecord& rec, std::uint64_t seq,
                             const std::vector<Seen>& seen) {
  Incomplete inc;
  inc.comm = key.first;
  inc.members = rec.members;
  inc.seq = seq;
  inc.call = majority_call(seen);
  for (int r : rec.members) {
    if (const Entry* e = entry_of(seen, r)) {
      Reached reached{r, e->state, std::nullopt};
      if (!(call_of(*e) == inc.call)) reached.other_call = call_of(*e);
      inc.reached.push_back(std::move(reached));
    } else if (dump_of(set, r) != nullptr && dropped(rec, r, seq)) {
      inc.unknown.push_back(r);
    } else {
      inc.never_joined.push_back(absent(set, r));
    }
  }
  return inc;
}

std::vector<CallGroup> group_calls(const std::vector<Seen>& seen) {
  std::vector<CallGroup> groups;
  for (const auto& s : seen) {
    const Call c = call_of(*s.entry);
    auto it = std::find_if(groups.begin(), groups.end(), [&](const CallGroup& g) { return g.call == c; });
    if (it == groups.end())
      groups.push_back({{s.rank}, c});
    else
      it->ranks.push_back(s.rank);
  }
  return groups;
}

}  // namespace

namespace {

// The pending sends and receives, each with what its peer's dump says of the other side.
std::vector<PendingP2P> pending_p2p(const DumpSet& set) {
  std::map<std::string, std::set<std::vector<int>>> known;
  for (const auto& d : set.dumps)
    for (const auto& c : d.communicators) known[c.name].insert(c.ranks);
  std::vector<PendingP2P> out;
  for (const auto& d : set.dumps) {
    for (const auto& e : d.entries) {
      if (!is_p2p(e.op) || e.completed() || e.state == "failed") continue;
      const CommKey key = resolve(d, e.comm, known);
      const auto& members = key.second;
      // Group ranks to world ranks (an unknown member list: the world's numbering).
      auto world_of = [&](std::int64_t r) { return r >= 0 && static_cast<std::size_t>(r) < members.size() ? members[r] : static_cast<int>(r); };
      const auto me_in_group = std::find(members.begin(), members.end(), d.rank);
      const std::int64_t me = members.empty() ? d.rank : me_in_group - members.begin();
      PendingP2P p{d.rank, e.comm, call_of(e), e.state,
                   static_cast<double>(d.now_ns - std::min(d.now_ns, e.start_ns)) / 1e9, ""};
      const bool receiving = e.op == "recv";
      if (e.root < 0) {
        p.peer = "any rank may send it";
      } else if (const Dump* peer = dump_of(set, world_of(e.root)); peer == nullptr) {
        p.peer = "rank " + std::to_string(e.root) + " left no dump";
      } else {
        const char* other = receiving ? "send" : "recv";
        const Entry* match = nullptr;
        for (const auto& pe : peer->entries)
          if (pe.op == other && pe.comm == e.comm && (pe.root == me || pe.root < 0) &&
              (pe.type == e.type || pe.type == "any tag" || e.type == "any tag"))
            match = &pe;
        const Absent a = absent(set, peer->rank);
        const std::string doing = a.current ? "now in " + describe(a.current->call) +
                                                  (a.current->seq ? " #" + std::to_string(a.current->seq) : "") +
                                                  " on " + a.current->comm
                                            : "in no mpidist call";
        p.peer = "rank " + std::to_string(e.root) + " " +
                 (match ? std::string("has a matching ") + other + " (" + match->state + ")"
                        : std::string("has no ") + other + (receiving ? " to" : " from") + " rank " + std::to_string(me) +
                              " with " + e.type + " in its recorder") +
                 "; it is " + doing;
      }
      out.push_back(std::move(p));
    }
  }
  return out;
}

}  // namespace

bool is_p2p(const std::string& op) { return op == "send" || op == "recv"; }

Call call_of(const Entry& e) { return Call{e.op, e.count, e.dtype, e.root, e.reduce, e.type}; }

std::string describe(const Call& c) {
  if (is_p2p(c.op))
    return c.op + " " + std::to_string(c.count) + " " + c.dtype + (c.op == "send" ? " to " : " from ") +
           (c.root >= 0 ? "rank " + std::to_string(c.root) : std::string("any rank")) + " (" + c.type + ")";
  std::string out = c.op;
  if (c.count > 0 || !c.dtype.empty()) out += " " + std::to_string(c.count);
  if (!c.dtype.empty()) out += " " + c.dtype;
  if (!c.type.empty()) out += " " + c.type;
  if (!c.reduce.empty()) out += " " + c.reduce;
  if (c.root >= 0) out += " root " + std::to_string(c.root);
  return out;
}

std::string rank_list(const std::vector<int>& ranks) {
  std::vector<int> sorted = ranks;
  std::sort(sorted.begin(), sorted.end());
  std::string out;
  for (std::size_t i = 0; i < sorted.size();) {
    std::size_t j = i;
    while (j + 1 < sorted.size() && sorted[j + 1] == sorted[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += std::to_string(sorted[i]);
    if (j > i) out += (j == i + 1 ? "," : "-") + std::to_string(sorted[j]);
    i = j + 1;
  }
  return out;
}

Findings analyze(const DumpSet& set) {
  Findings f;
  f.dir = set.dir;
  f.world_size = set.world_size;
  f.missing_dumps = set.missing;
  for (const auto& d : set.dumps)
    f.dumps.push_back({d.rank, d.host, d.pid, d.reason, d.message, d.recorded, d.capacity, d.dropped()});

  const auto comms = collect(set);
  // The first incomplete collective: the one that started longest before the dumps; ties go to
  // the lower sequence number, then the communicator's name.
  const CommKey* first_key = nullptr;
  std::uint64_t first_seq = 0;
  std::tuple<std::int64_t, std::uint64_t> first_rank{0, 0};
  for (const auto& [key, rec] : comms) {
    for (const auto& [seq, seen] : rec.calls) {
      if (!incomplete(set, rec, seq, seen)) continue;
      std::int64_t oldest = 0;
      for (const auto& s : seen) oldest = std::max(oldest, age(set, s));
      const std::tuple<std::int64_t, std::uint64_t> rank{-oldest, seq};
      if (first_key == nullptr || rank < first_rank) {
        first_key = &key;
        first_seq = seq;
        first_rank = rank;
      }
      break;  // later calls on this communicator wait behind this one
    }
  }
  if (first_key != nullptr) {
    const auto& rec = comms.at(*first_key);
    f.first_incomplete = report_incomplete(set, *first_key, rec, first_seq, rec.calls.at(first_seq));
  }

  for (const auto& [key, rec] : comms)
    for (const auto& [seq, seen] : rec.calls) {
      auto groups = group_calls(seen);
      if (groups.size() > 1) f.mismatches.push_back({key.first, seq, std::move(groups)});
    }
  f.pending_p2p = pending_p2p(set);
  return f;
}

namespace {

std::string ranks_word(const std::vector<int>& ranks) {
  return (ranks.size() == 1 ? "rank " : "ranks ") + rank_list(ranks);
}

std::string ref_text(const EntryRef& e) {
  const std::string where = e.seq > 0 ? "#" + std::to_string(e.seq) + " on " + e.comm : e.comm;  // p2p: no number
  return where + ": " + describe(e.call) + " (" + e.state + ")";
}

std::string first_line(const std::string& text) {
  const auto end = text.find('\n');
  return end == std::string::npos ? text : text.substr(0, end) + " ...";
}

}  // namespace

std::string format_text(const Findings& f) {
  std::string out = "mpidist-trace: " + f.dir + ": " + std::to_string(f.world_size) + " ranks, " +
                    std::to_string(f.dumps.size()) + " dumps\n";
  for (const auto& d : f.dumps) {
    out += "  rank " + std::to_string(d.rank) + " (" + d.host + ", pid " + std::to_string(d.pid) + "): " + d.reason;
    // The library's messages often start with the reason already ("watchdog: all_reduce #4 ...").
    std::string message = first_line(d.message);
    if (message.rfind(d.reason + ": ", 0) == 0) message.erase(0, d.reason.size() + 2);
    if (!message.empty()) out += ": " + message;
    out += "\n";
    if (d.dropped > 0)
      out += "    its ring dropped the " + std::to_string(d.dropped) + " oldest of " + std::to_string(d.recorded) +
             " calls (capacity " + std::to_string(d.capacity) + ")\n";
  }
  if (!f.missing_dumps.empty())
    out += "  " + ranks_word(f.missing_dumps) + ": no dump (killed, e.g. SIGKILL, or never got to write one)\n";

  if (!f.first_incomplete) {
    out += "every recorded collective completed on every member that left a dump\n";
  } else {
    const auto& inc = *f.first_incomplete;
    out += "first incomplete collective: #" + std::to_string(inc.seq) + " on " + inc.comm + ": " + describe(inc.call) +
           "\n";
    out += "  members: " + ranks_word(inc.members) + "\n";
    std::string reached;
    for (const auto& r : inc.reached) {
      if (!reached.empty()) reached += ", ";
      reached += std::to_string(r.rank) + " (" + r.state;
      if (r.other_call) reached += ", but called " + describe(*r.other_call);
      reached += ")";
    }
    out += "  reached it: " + (reached.empty() ? std::string("none") : reached) + "\n";
    if (inc.never_joined.empty()) {
      out += "  never joined: none\n";
    } else {
      std::vector<int> ranks;
      for (const auto& a : inc.never_joined) ranks.push_back(a.rank);
      out += "  never joined: " + ranks_word(ranks) + "\n";
      for (const auto& a : inc.never_joined) {
        out += "    rank " + std::to_string(a.rank);
        if (!a.has_dump) {
          out += ": no dump\n";
          continue;
        }
        out += " (" + a.host + "): ";
        out += "last completed " + (a.last_completed ? ref_text(*a.last_completed) : std::string("none"));
        out += "; now in " + (a.current ? ref_text(*a.current) : std::string("no collective")) + "\n";
      }
    }
    if (!inc.unknown.empty())
      out += "  unknown (dropped from ring): " + ranks_word(inc.unknown) + "\n";
  }

  if (f.mismatches.empty()) {
    out += "no mismatched calls\n";
  } else {
    out += "mismatched calls:\n";
    for (const auto& m : f.mismatches) {
      out += "  #" + std::to_string(m.seq) + " on " + m.comm + ": ";
      for (std::size_t i = 0; i < m.groups.size(); ++i) {
        if (i > 0) out += "; ";
        out += ranks_word(m.groups[i].ranks) + " " + describe(m.groups[i].call);
      }
      out += "\n";
    }
  }
  if (!f.pending_p2p.empty()) {
    out += "point-to-point still pending:\n";
    char waited[32];
    for (const auto& p : f.pending_p2p) {
      std::snprintf(waited, sizeof waited, "%.1f", p.waited_s);
      out += "  rank " + std::to_string(p.rank) + ": " + describe(p.call) + " on " + p.comm + ", " + p.state +
             " " + waited + " s before its dump; " + p.peer + "\n";
    }
  }
  return out;
}

namespace {

std::string json_ranks(const std::vector<int>& ranks) {
  std::string out = "[";
  for (std::size_t i = 0; i < ranks.size(); ++i) out += (i ? "," : "") + std::to_string(ranks[i]);
  return out + "]";
}

std::string json_call(const Call& c) {
  return "{\"op\":" + json_string(c.op) + ",\"count\":" + std::to_string(c.count) + ",\"dtype\":" + json_string(c.dtype) +
         ",\"root\":" + std::to_string(c.root) + ",\"reduce\":" + json_string(c.reduce) +
         ",\"type\":" + json_string(c.type) + ",\"description\":" + json_string(describe(c)) + "}";
}

std::string json_ref(const std::optional<EntryRef>& e) {
  if (!e) return "null";
  return "{\"comm\":" + json_string(e->comm) + ",\"seq\":" + std::to_string(e->seq) + ",\"call\":" + json_call(e->call) +
         ",\"state\":" + json_string(e->state) + "}";
}

}  // namespace

std::string format_json(const Findings& f) {
  std::string out = "{\"format\":\"mpidist-trace-analysis\",\"version\":1,\"dir\":" + json_string(f.dir) +
                    ",\"world_size\":" + std::to_string(f.world_size) + ",\"dumps\":[";
  for (std::size_t i = 0; i < f.dumps.size(); ++i) {
    const auto& d = f.dumps[i];
    out += std::string(i ? "," : "") + "{\"rank\":" + std::to_string(d.rank) + ",\"host\":" + json_string(d.host) +
           ",\"pid\":" + std::to_string(d.pid) + ",\"reason\":" + json_string(d.reason) +
           ",\"message\":" + json_string(d.message) + ",\"recorded\":" + std::to_string(d.recorded) +
           ",\"capacity\":" + std::to_string(d.capacity) + ",\"dropped\":" + std::to_string(d.dropped) + "}";
  }
  out += "],\"missing_dumps\":" + json_ranks(f.missing_dumps) + ",\"first_incomplete\":";
  if (!f.first_incomplete) {
    out += "null";
  } else {
    const auto& inc = *f.first_incomplete;
    out += "{\"comm\":" + json_string(inc.comm) + ",\"members\":" + json_ranks(inc.members) +
           ",\"seq\":" + std::to_string(inc.seq) + ",\"call\":" + json_call(inc.call) + ",\"reached\":[";
    for (std::size_t i = 0; i < inc.reached.size(); ++i) {
      const auto& r = inc.reached[i];
      out += std::string(i ? "," : "") + "{\"rank\":" + std::to_string(r.rank) + ",\"state\":" + json_string(r.state) +
             ",\"other_call\":" + (r.other_call ? json_call(*r.other_call) : "null") + "}";
    }
    out += "],\"never_joined\":[";
    for (std::size_t i = 0; i < inc.never_joined.size(); ++i) {
      const auto& a = inc.never_joined[i];
      out += std::string(i ? "," : "") + "{\"rank\":" + std::to_string(a.rank) +
             ",\"has_dump\":" + (a.has_dump ? "true" : "false") + ",\"host\":" + json_string(a.host) + ",\"last_completed\":" + json_ref(a.last_completed) +
             ",\"current\":" + json_ref(a.current) + "}";
    }
    out += "],\"unknown\":" + json_ranks(inc.unknown) + "}";
  }
  out += ",\"mismatches\":[";
  for (std::size_t i = 0; i < f.mismatches.size(); ++i) {
    const auto& m = f.mismatches[i];
    out += std::string(i ? "," : "") + "{\"comm\":" + json_string(m.comm) + ",\"seq\":" + std::to_string(m.seq) +
           ",\"groups\":[";
    for (std::size_t g = 0; g < m.groups.size(); ++g)
      out += std::string(g ? "," : "") + "{\"ranks\":" + json_ranks(m.groups[g].ranks) +
             ",\"call\":" + json_call(m.groups[g].call) + "}";
    out += "]}";
  }
  out += "],\"pending_p2p\":[";
  for (std::size_t i = 0; i < f.pending_p2p.size(); ++i) {
    const auto& p = f.pending_p2p[i];
    out += std::string(i ? "," : "") + "{\"rank\":" + std::to_string(p.rank) + ",\"comm\":" + json_string(p.comm) +
           ",\"call\":" + json_call(p.call) + ",\"state\":" + json_string(p.state) +
           ",\"waited_s\":" + std::to_string(p.waited_s) + ",\"peer\":" + json_string(p.peer) + "}";
  }
  return out + "]}\n";
}

}  // namespace mpidist::trace
