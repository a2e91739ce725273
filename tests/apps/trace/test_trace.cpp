// mpidist-trace over hand-written dump sets (tests/apps/trace/cases/, one directory per scenario):
// the report names the right collective, the missing ranks and what they did instead, and every
// mismatch; --json says the same in a form tools read back; unusable input exits 2, clearly.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>

#include "json_reader.hpp"
#include "trace_analysis.hpp"
#include "trace_dump.hpp"

namespace fs = std::filesystem;
using mpidist::trace::Json;

namespace {

std::string cases_dir() { return std::getenv("TRACE_CASES"); }
std::string case_dir(const std::string& name) { return cases_dir() + "/" + name; }

struct TraceRun {
  int status;
  std::string out;  // stdout and stderr
};

TraceRun run_trace(const std::string& args) {
  const std::string command = std::string(std::getenv("MPIDIST_TRACE")) + " " + args + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  std::string out;
  char buffer[4096];
  std::size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), out};
}

TraceRun analyze_text(const std::string& name) { return run_trace(case_dir(name)); }

Json analyze_json(const std::string& name) {
  const TraceRun run = run_trace("--json " + case_dir(name));
  EXPECT_EQ(run.status, 0) << run.out;
  return mpidist::trace::parse_json(run.out, "mpidist-trace --json output");
}

void expect_line(const std::string& out, const std::string& line) {
  EXPECT_NE(out.find(line + "\n"), std::string::npos) << "missing line: " << line << "\nin:\n" << out;
}

const Json& field(const Json& j, const char* key) {
  const Json* v = j.find(key);
  if (v == nullptr) throw std::runtime_error(std::string("no field ") + key);
  return *v;
}
std::uint64_t num(const Json& j, const char* key) { return field(j, key).magnitude(); }
std::string str(const Json& j, const char* key) { return field(j, key).as_string(); }
std::vector<int> ranks(const Json& j, const char* key) {
  std::vector<int> out;
  for (const auto& r : field(j, key).as_array()) out.push_back(static_cast<int>(r.magnitude()));
  return out;
}

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A fresh directory with copies of a case's dumps, to break.
fs::path scratch_copy(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("mpidist-trace-test-" + std::to_string(getpid()) + "-" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  if (!name.empty() && fs::exists(case_dir(name)))
    for (const auto& f : fs::directory_iterator(case_dir(name))) fs::copy_file(f.path(), dir / f.path().filename());
  return dir;
}

void write(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

}  // namespace

TEST(TraceReport, SkippedBarrierNamesTheMissingRankAndWhatItDidInstead) {
  const TraceRun run = analyze_text("skipped_barrier");
  ASSERT_EQ(run.status, 0) << run.out;
  expect_line(run.out, "first incomplete collective: #5 on world: barrier");
  expect_line(run.out, "  reached it: 0 (started), 2 (started), 3 (started)");
  expect_line(run.out, "  never joined: rank 1");
  expect_line(run.out,
              "    rank 1 (node-a): last completed #4 on world: all_reduce 1024 float32 sum (completed); now in #2 on "
              "world/split(color 1): all_gather 16 float32 (started)");
  expect_line(run.out, "no mismatched calls");

  const Json j = analyze_json("skipped_barrier");
  const Json& inc = field(j, "first_incomplete");
  EXPECT_EQ(str(inc, "comm"), "world");
  EXPECT_EQ(num(inc, "seq"), 5u);
  EXPECT_EQ(str(field(inc, "call"), "op"), "barrier");
  const auto& absent = field(inc, "never_joined").as_array();
  ASSERT_EQ(absent.size(), 1u);
  EXPECT_EQ(num(absent[0], "rank"), 1u);
  EXPECT_EQ(str(field(field(absent[0], "current"), "call"), "op"), "all_gather");
  EXPECT_EQ(str(field(absent[0], "current"), "comm"), "world/split(color 1)");
  EXPECT_EQ(num(field(absent[0], "last_completed"), "seq"), 4u);
}

TEST(TraceReport, DtypeMismatchIsNamedThoughEverythingCompleted) {
  const TraceRun run = analyze_text("dtype_mismatch");
  ASSERT_EQ(run.status, 0) << run.out;
  expect_line(run.out, "every recorded collective completed on every member that left a dump");
  expect_line(run.out, "  #3 on world: ranks 0,2 all_reduce 1024 float32 sum; rank 1 all_reduce 1024 int32 sum");
  const Json j = analyze_json("dtype_mismatch");
  EXPECT_TRUE(field(j, "first_incomplete").is(Json::Kind::Null));
  const auto& mismatches = field(j, "mismatches").as_array();
  ASSERT_EQ(mismatches.size(), 1u);
  const auto& groups = field(mismatches[0], "groups").as_array();
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(ranks(groups[0], "ranks"), (std::vector<int>{0, 2}));
  EXPECT_EQ(str(field(groups[1], "call"), "dtype"), "int32");
}

TEST(TraceReport, RootMismatch) {
  const TraceRun run = analyze_text("root_mismatch");
  ASSERT_EQ(run.status, 0) << run.out;
  expect_line(run.out, "  #2 on world: ranks 0,1 broadcast 256 float32 root 0; rank 2 broadcast 256 float32 root 1");
  EXPECT_EQ(field(analyze_json("root_mismatch"), "mismatches").as_array().size(), 1u);
}

TEST(TraceReport, AllReduceAgainstBroadcastAtThreeRanks) {
  const TraceRun run = analyze_text("allreduce_vs_broadcast");
  ASSERT_EQ(run.status, 0) << run.out;
  expect_line(run.out, "first incomplete collective: #7 on world: all_reduce 1024 float32 sum");
  expect_line(run.out,
              "  reached it: 0 (started), 1 (started, but called broadcast 1024 float32 root 0), 2 (started)");
  expect_line(run.out, "  never joined: none");
  expect_line(run.out, "  #7 on world: ranks 0,2 all_reduce 1024 float32 sum; rank 1 broadcast 1024 float32 root 0");
  const Json j = analyze_json("allreduce_vs_broadcast");
  const auto& reached = field(field(j, "first_incomplete"), "reached").as_array();
  ASSERT_EQ(reached.size(), 3u);
  EXPECT_EQ(str(field(reached[1], "other_call"), "op"), "broadcast");
  EXPECT_TRUE(field(reached[0], "other_call").is(Json::Kind::Null));
}

TEST(TraceReport, KilledRankWithoutDumpIsSaidSo) {
  const TraceRun run = analyze_text("sigkilled_rank");
  ASSERT_EQ(run.status, 0) << run.out;
  expect_line(run.out, "  rank 2: no dump (killed, e.g. SIGKILL, or never got to write one)");
  expect_line(run.out, "first incomplete collective: #12 on world: all_reduce 1024 float32 sum");
  expect_line(run.out, "  never joined: rank 2");
  expect_line(run.out, "    rank 2: no dump");
  const Json j = analyze_json("sigkilled_rank");
  EXPECT_EQ(ranks(j, "missing_dumps"), (std::vector<int>{2}));
  const auto& absent = field(field(j, "first_incomplete"), "never_joined").as_array();
  ASSERT_EQ(absent.size(), 1u);
  EXPECT_FALSE(field(absent[0], "has_dump").as_bool());
  // Calls that every rank with a dump completed are not blamed on the rank without one.
  EXPECT_EQ(num(field(j, "first_incomplete"), "seq"), 12u);
}

TEST(TraceReport, RingOverflowIsNotMissing) {
  const TraceRun run = analyze_text("ring_overflow");
  ASSERT_EQ(run.status, 0) << run.out;
  expect_line(run.out, "    its ring dropped the 5 oldest of 9 calls (capacity 4)");
  expect_line(run.out, "first incomplete collective: #10 on world: barrier");
  expect_line(run.out, "  never joined: rank 0");
  expect_line(run.out, "no mismatched calls");
  const Json j = analyze_json("ring_overflow");
  EXPECT_EQ(num(field(j, "first_incomplete"), "seq"), 10u);
  EXPECT_EQ(num(field(j, "dumps").as_array()[0], "dropped"), 5u);
}

TEST(TraceReport, DroppedEntriesOfAStuckCollectiveAreUnknownNotMissing) {
  // Rank 0's ring kept only its last 4 calls; rank 1 is stuck in #10, which rank 0 started
  // (its world sequence says 10) but no longer holds: unknown, not "never joined".
  const auto dir = scratch_copy("ring_overflow");
  std::string rank0 = read(dir / "mpidist-trace-rank0.json");
  rank0.replace(rank0.find("\"sequence\": 9"), 13, "\"sequence\": 10");
  write(dir / "mpidist-trace-rank0.json", rank0);
  const TraceRun run = run_trace(dir.string());
  ASSERT_EQ(run.status, 0) << run.out;
  expect_line(run.out, "  unknown (dropped from ring): rank 0");
  expect_line(run.out, "  never joined: none");
  fs::remove_all(dir);
}

TEST(TraceReport, SplitGroupStuckWhileWorldIsFine) {
  const TraceRun run = analyze_text("split_stuck");
  ASSERT_EQ(run.status, 0) << run.out;
  expect_line(run.out, "first incomplete collective: #3 on world/split(color 1): all_reduce 64 float32 sum");
  expect_line(run.out, "  members: ranks 1,3");
  expect_line(run.out, "  reached it: 1 (started)");
  expect_line(run.out,
              "    rank 3 (node-b): last completed #2 on world/split(color 1): all_reduce 64 float32 sum (completed); now in no "
              "collective");
  const Json j = analyze_json("split_stuck");
  EXPECT_EQ(ranks(field(j, "first_incomplete"), "members"), (std::vector<int>{1, 3}));
  EXPECT_TRUE(field(j, "mismatches").as_array().empty());
}

TEST(TraceReport, JsonOutputCarriesEveryDump) {
  const Json j = analyze_json("skipped_barrier");
  EXPECT_EQ(str(j, "format"), "mpidist-trace-analysis");
  EXPECT_EQ(num(j, "world_size"), 4u);
  const auto& dumps = field(j, "dumps").as_array();
  ASSERT_EQ(dumps.size(), 4u);
  EXPECT_EQ(str(dumps[0], "reason"), "watchdog");
  EXPECT_NE(str(dumps[0], "message").find("\nranks not reached: 1"), std::string::npos);  // escapes survive
}

TEST(TraceInput, MalformedInputExitsTwoWithTheFileAndTheField) {
  struct Case {
    std::string what, replace, with, message;
  };
  const std::vector<Case> cases = {
      {"seq as text", "\"seq\": 5", "\"seq\": \"5\"", "'entries[4].seq' must be a non-negative integer"},
      {"unknown state", "\"state\": \"started\"", "\"state\": \"running\"", "'running' is not queued"},
      {"wrong format", "\"mpidist-trace\"", "\"something-else\"", "'format' is not \"mpidist-trace\""},
      {"newer version", "\"version\": 1", "\"version\": 2", "'version' 2 is not supported"},
      {"rank past world", "\"rank\": 0,\n", "\"rank\": 9,\n", "'rank' 9 is out of range"},
      {"comment", "{\n", "{ // note\n", "invalid JSON at byte 2"},
      {"missing field", "\"host\": \"node-a\",", "", "'host' is missing"},
  };
  for (const auto& c : cases) {
    const auto dir = scratch_copy("skipped_barrier");
    std::string text = read(dir / "mpidist-trace-rank0.json");
    const auto at = text.find(c.replace);
    ASSERT_NE(at, std::string::npos) << c.what;
    text.replace(at, c.replace.size(), c.with);
    write(dir / "mpidist-trace-rank0.json", text);
    const TraceRun run = run_trace(dir.string());
    EXPECT_EQ(run.status, 2) << c.what << ": " << run.out;
    EXPECT_NE(run.out.find("mpidist-trace-rank0.json"), std::string::npos) << c.what << ": " << run.out;
    EXPECT_NE(run.out.find(c.message), std::string::npos) << c.what << ": " << run.out;
    fs::remove_all(dir);
  }
}

TEST(TraceInput, TruncatedDumpAtAnyByteExitsTwo) {
  // What a process killed mid-write leaves behind.
  const auto dir = scratch_copy("allreduce_vs_broadcast");
  const std::string text = read(dir / "mpidist-trace-rank1.json");
  for (std::size_t cut = 0; cut + 2 < text.size(); cut += 53) {
    write(dir / "mpidist-trace-rank1.json", text.substr(0, cut));
    const TraceRun run = run_trace(dir.string());
    EXPECT_EQ(run.status, 2) << "cut at " << cut << ": " << run.out;
    EXPECT_NE(run.out.find("mpidist-trace-rank1.json: "), std::string::npos) << run.out;
  }
  fs::remove_all(dir);
}

TEST(TraceInput, DirectoryProblemsExitTwo) {
  auto run = run_trace("/nonexistent/trace/dir");
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(run.out.find("/nonexistent/trace/dir: not a directory"), std::string::npos) << run.out;

  const auto empty = scratch_copy("");
  run = run_trace(empty.string());
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(run.out.find("no mpidist-trace-rank<N>.json dumps"), std::string::npos) << run.out;
  fs::remove_all(empty);

  // Dumps of two jobs in one directory.
  const auto mixed = scratch_copy("sigkilled_rank");
  fs::copy_file(case_dir("dtype_mismatch") + "/mpidist-trace-rank2.json", mixed / "mpidist-trace-rank2.json");
  run = run_trace(mixed.string());
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(run.out.find("dumps of different jobs"), std::string::npos) << run.out;
  fs::remove_all(mixed);

  // A file whose name and content disagree.
  const auto renamed = scratch_copy("root_mismatch");
  fs::rename(renamed / "mpidist-trace-rank2.json", renamed / "mpidist-trace-rank7.json");
  run = run_trace(renamed.string());
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(run.out.find("the file name says rank 7 but it holds rank 2"), std::string::npos) << run.out;
  fs::remove_all(renamed);

  EXPECT_EQ(run_trace("").status, 1);  // usage
}

TEST(TraceJson, ParserLimitsAndEscapes) {
  using mpidist::trace::parse_json;
  EXPECT_THROW(parse_json(std::string(1000, '['), "deep"), mpidist::trace::JsonError);
  EXPECT_THROW(parse_json("[1,]", "t"), mpidist::trace::JsonError);
  EXPECT_THROW(parse_json("\"a\x01\"", "t"), mpidist::trace::JsonError);
  EXPECT_THROW(parse_json("\"\\ud800\\u0041\"", "t"), mpidist::trace::JsonError);
  EXPECT_EQ(parse_json("\"\\u00e9\\ud83d\\ude00\"", "t").as_string(), "\xc3\xa9\xf0\x9f\x98\x80");
  const Json big = parse_json("18446744073709551615", "t");
  EXPECT_EQ(big.magnitude(), UINT64_MAX);
  EXPECT_TRUE(parse_json("18446744073709551616", "t").is(Json::Kind::Number));  // past uint64: not exact
  EXPECT_EQ(mpidist::trace::rank_list({5, 0, 2, 3, 4, 7, 8}), "0,2-5,7,8");
}
